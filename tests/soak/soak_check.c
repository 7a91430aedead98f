/*
 * Read classification. The bytes alone tell a corrupt read (another key's header, or a body that is not the
 * header's version); the owner's record of its key tells the rest (stale, older, resurrected). Shared keys and
 * other writers' keys can only be checked for self-consistency: several writers race on them, or their owner is
 * another thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak_thread.h"

void state_put(struct key_state *s, uint64_t version, int rc, uint32_t from_ms, uint32_t to_ms)
{
	s->hi_from_ms = from_ms;
	s->hi_to_ms = to_ms;
	/* a failed put may still have stored its version: it joins the legitimate range, flagged as doubtful */
	if (s->removed || s->lo == 0)
		s->lo = version;
	s->hi = version;
	s->removed = false;
	s->doubt = rc != MMC_OK;
}

void state_remove(struct key_state *s, int rc)
{
	if (rc == MMC_OK) {
		/* acknowledged, so durable: no version up to hi may come back */
		s->removed = true;
		s->lo = 0;
		s->doubt = false;
		s->gone_hi = 0;
	} else if (rc == MMC_OBJECT_NOT_EXISTS) {
		s->gone_hi = s->hi; /* evicted; an eviction is not acknowledged, so it may be undone by a restart */
	}
	/* any other error: the remove may or may not have happened; keeping the range misses nothing legitimate */
}

static enum soak_class state_hit(struct key_state *s, uint64_t version)
{
	if (version > s->hi || version == 0)
		return CLASS_CORRUPT; /* a version of this writer that was never put */
	if (s->removed)
		return CLASS_STALE;
	if (version < s->lo)
		return CLASS_OLDER;
	if (version <= s->gone_hi) {
		s->gone_hi = 0; /* back once; from now on it is simply present */
		return CLASS_RESURRECTED;
	}
	return s->doubt && version == s->hi ? CLASS_DOUBTFUL : CLASS_CORRECT;
}

static enum soak_class classify(struct soak_thread *t, const struct soak_key *k, uint64_t version)
{
	uint32_t w = soak_version_writer(version);

	if ((uint32_t)version == 0)
		return CLASS_CORRUPT;
	if (k->owner == SOAK_SHARED)
		return w < t->run->keys.writers ? CLASS_CORRECT : CLASS_CORRUPT;
	if (w != k->owner)
		return CLASS_CORRUPT; /* only the owner writes its keys */
	if (k->owner != t->writer)
		return CLASS_CORRECT;
	return state_hit(&t->own[k->idx], version);
}

static const char *class_name(enum soak_class cl)
{
	static const char *const names[] = {"correct",       "CORRUPT",     "STALE-after-remove",
	                                    "OLDER-VERSION", "resurrected", "doubtful"};

	return names[cl];
}

static void version_text(char *buf, size_t len, uint64_t v)
{
	snprintf(buf, len, "w%u#%u", soak_version_writer(v), (uint32_t)v);
}

/* Where a torn body differs from the header's version: the range, how much, and the first word found/expected. */
static void torn_text(char *buf, size_t len, const unsigned char *got, const struct soak_key *k, uint64_t version,
                      size_t bad)
{
	unsigned char *want = malloc(k->size);
	size_t last = bad, differ = 0, zero = 0;
	uint64_t f = 0, e = 0;

	if (!want) {
		snprintf(buf, len, "body differs from byte %zu", bad);
		return;
	}
	soak_value_fill(want, k, version);
	for (size_t i = bad; i < k->size; i++) {
		if (got[i] == want[i])
			continue;
		last = i;
		differ++;
		zero += got[i] == 0;
	}
	memcpy(&f, got + bad, k->size - bad < 8 ? k->size - bad : 8);
	memcpy(&e, want + bad, k->size - bad < 8 ? k->size - bad : 8);
	snprintf(buf, len,
	         "body differs in bytes %zu..%zu (%zu differ, %zu of them 0), found %016" PRIx64
	         " expected %016" PRIx64,
	         bad, last, differ, zero, f, e);
	free(want);
}

/* What the bytes were: the header, or why there was no header of this key. */
static void bytes_text(char *buf, size_t len, const void *bytes, const struct soak_key *k, enum soak_bytes b,
                       uint64_t version, size_t bad)
{
	uint64_t h[2];
	char v[32], torn[200];

	memcpy(h, bytes, sizeof(h));
	version_text(v, sizeof(v), version);
	if (b == SOAK_BYTES_OTHER_KEY) {
		snprintf(buf, len,
		         "bytes 0..15 %016" PRIx64 " %016" PRIx64 " are not a header of this key (id %016" PRIx64 ")",
		         h[0], h[1], k->id);
	} else if (b == SOAK_BYTES_TORN) {
		torn_text(torn, sizeof(torn), bytes, k, version, bad);
		snprintf(buf, len, "version %s, %s", v, torn);
	} else {
		snprintf(buf, len, "version %s", v);
	}
}

/* Reads the key once more: tells bytes that are wrong in the pool from a read that delivered wrong bytes. */
static void reread_text(struct soak_thread *t, const struct soak_key *k, const void *first, char *buf, size_t len)
{
	void *again = calloc(1, k->size);
	int rc = again ? mmc_get_into(t->s, k->name, again, k->size, MMC_COPY_G2H) : MMC_MALLOC_FAILED;
	uint64_t v;
	size_t bad;

	if (rc != MMC_OK)
		snprintf(buf, len, "; read again: %s", mmc_strerror(rc));
	else if (soak_value_check(again, k, &v, &bad) == SOAK_BYTES_OK)
		snprintf(buf, len, "; read again: correct, version w%u#%u", soak_version_writer(v), (uint32_t)v);
	else
		snprintf(buf, len, "; read again: %s wrong bytes",
		         memcmp(again, first, k->size) ? "other" : "the same");
	free(again);
}

/* One stderr line per violation, for the first few: enough to find the key in the server log. */
static void note(struct soak_thread *t, const struct soak_key *k, enum soak_op op, enum soak_class cl,
                 const void *bytes, enum soak_bytes b, uint64_t version, size_t bad)
{
	const struct key_state *s = k->owner == t->writer ? &t->own[k->idx] : NULL;
	uint64_t now = soak_now_ms(), since = atomic_load(&t->run->shm->since_ms);
	char what[400], rec[200] = "", after[64] = "", again[96] = "", lo[32], hi[32];

	if (t->notes++ >= SOAK_NOTES)
		return;
	bytes_text(what, sizeof(what), bytes, k, b, version, bad);
	if (s) {
		version_text(lo, sizeof(lo), s->lo);
		version_text(hi, sizeof(hi), s->hi);
		snprintf(rec, sizeof(rec), "; owner's record lo=%s hi=%s%s%s, hi put %.2f..%.2f s", lo, hi,
		         s->removed ? " removed" : "", s->doubt ? " (hi's put failed)" : "", s->hi_from_ms / 1e3,
		         s->hi_to_ms / 1e3);
	}
	if (cl == CLASS_CORRUPT)
		reread_text(t, k, bytes, again, sizeof(again));
	if (since)
		snprintf(after, sizeof(after), ", %.2f s after the last meta restart", (double)(now - since) / 1e3);
	fprintf(stderr, "soak: %s op=%s key=\"%s\" size=%" PRIu64 ": %s%s%s; at %.2f s%s\n", class_name(cl),
	        soak_op_name(op), k->name, k->size, what, rec, again, (double)(now - t->run->shm->t0_ms) / 1e3, after);
}

static bool violation(enum soak_class cl)
{
	return cl == CLASS_CORRUPT || cl == CLASS_STALE || cl == CLASS_OLDER;
}

static void count_class(struct soak_counts *c, enum soak_class cl, enum soak_op op)
{
	switch (cl) {
	case CLASS_CORRECT:
		c->correct++;
		break;
	case CLASS_CORRUPT:
		c->corrupt++;
		c->corrupt_op[op]++;
		break;
	case CLASS_STALE:
		c->stale++;
		break;
	case CLASS_OLDER:
		c->older++;
		break;
	case CLASS_RESURRECTED:
		c->resurrected++;
		break;
	case CLASS_DOUBTFUL:
		c->doubtful++;
		break;
	}
}

void soak_check_read(struct soak_thread *t, const struct soak_key *k, enum soak_op op, int rc, const void *buf)
{
	enum soak_bytes b = SOAK_BYTES_OK;
	enum soak_class cl;
	uint64_t version = 0;
	size_t bad = 0;

	soak_count(t->c, op, rc);
	if (rc == MMC_OBJECT_NOT_EXISTS) {
		t->c->miss++;
		if (k->owner == t->writer)
			t->own[k->idx].gone_hi = t->own[k->idx].hi;
		return;
	}
	if (rc != MMC_OK)
		return; /* counted by code; the read says nothing about the key */
	t->c->bytes_read += k->size;
	b = soak_value_check(buf, k, &version, &bad);
	cl = b == SOAK_BYTES_OK ? classify(t, k, version) : CLASS_CORRUPT;
	count_class(t->c, cl, op);
	if (violation(cl) || (t->run->opts.verbose && cl != CLASS_CORRECT))
		note(t, k, op, cl, buf, b, version, bad);
}
