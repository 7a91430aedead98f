/*
 * Keys and values. A value is a header (version, key id) and a body that is a pattern seeded by both, so a reader
 * can tell "another key's bytes", "a torn or overwritten body" and "an older version" apart from one read.
 */
#include "soak.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pattern.h"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

uint64_t soak_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Mean of the log-uniform distribution on [lo, hi]: the key count that gives the wanted bytes. */
static double mean_size(double lo, double hi)
{
	return hi > lo ? (hi - lo) / log(hi / lo) : lo;
}

void soak_keys_init(struct soak_keys *k, const struct soak_opts *o)
{
	double bytes = o->key_factor * (double)o->pool_bytes * o->procs;
	double keys = bytes / mean_size((double)o->min_size, (double)o->max_size);

	k->writers = (uint32_t)(o->procs * o->threads);
	k->seed = o->seed;
	k->min_size = o->min_size;
	k->max_size = o->max_size;
	/* a quarter of the bytes in shared keys; enough keys of each kind that batches find distinct ones */
	k->shared = (uint32_t)fmax(64, keys / 4);
	k->per_writer = (uint32_t)fmax(64, keys * 3 / 4 / k->writers);
}

void soak_key_make(const struct soak_keys *k, uint32_t owner, uint32_t idx, struct soak_key *out)
{
	double u;

	out->owner = owner;
	out->idx = idx;
	out->id = mix64(k->seed ^ mix64(((uint64_t)owner << 32 | idx) + 0x9e3779b97f4a7c15ull));
	u = (double)(mix64(out->id) >> 11) * 0x1p-53;
	out->size = (uint64_t)((double)k->min_size * pow((double)k->max_size / (double)k->min_size, u));
	if (out->size < k->min_size)
		out->size = k->min_size;
	if (out->size > k->max_size)
		out->size = k->max_size;
	if (owner == SOAK_SHARED)
		snprintf(out->name, sizeof(out->name), "soak/s/%u", idx);
	else
		snprintf(out->name, sizeof(out->name), "soak/w%u/%u", owner, idx);
}

static uint64_t body_seed(uint64_t id, uint64_t version)
{
	return id ^ mix64(version);
}

void soak_value_fill(void *buf, const struct soak_key *key, uint64_t version)
{
	unsigned char *p = buf;

	memcpy(p, &version, 8);
	memcpy(p + 8, &key->id, 8);
	pattern_fill(p + SOAK_HEADER, key->size - SOAK_HEADER, body_seed(key->id, version));
}

enum soak_bytes soak_value_check(const void *buf, const struct soak_key *key, uint64_t *version, size_t *bad)
{
	const unsigned char *p = buf;
	size_t body = key->size - SOAK_HEADER, at;
	uint64_t id;

	memcpy(version, p, 8);
	memcpy(&id, p + 8, 8);
	if (id != key->id) {
		*bad = 8;
		return SOAK_BYTES_OTHER_KEY;
	}
	at = pattern_check(p + SOAK_HEADER, body, body_seed(key->id, *version));
	*bad = SOAK_HEADER + at;
	return at == body ? SOAK_BYTES_OK : SOAK_BYTES_TORN;
}
