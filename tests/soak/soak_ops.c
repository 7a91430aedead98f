/*
 * The workload's operations. A batch is laid out back to back in the thread's put or get buffer; keys in one
 * batch are distinct (a key repeated in a put batch is stored once, which would blur the owner's record).
 */
#include <string.h>

#include "soak_thread.h"

struct batch {
	size_t n;
	struct soak_key keys[SOAK_BATCH];
	uint64_t versions[SOAK_BATCH];
	const char *names[SOAK_BATCH];
	void *bufs[SOAK_BATCH];
	size_t sizes[SOAK_BATCH];
	int results[SOAK_BATCH];
	/* the layer calls: each key's bytes split into layers[i] pieces of its buffer */
	size_t layers[SOAK_BATCH];
	void *lbuf[SOAK_BATCH][SOAK_LAYERS];
	size_t lsize[SOAK_BATCH][SOAK_LAYERS];
	void *const *lbufs[SOAK_BATCH];
	const size_t *lsizes[SOAK_BATCH];
};

/* Percentages of own and shared keys when picking; the rest are other writers' keys (read only). */
struct mix {
	unsigned own, shared;
};

static void pick(struct soak_thread *t, struct mix m, struct soak_key *k)
{
	const struct soak_keys *ks = &t->run->keys;
	unsigned r = (unsigned)(soak_rand(t) % 100);
	uint32_t owner = t->writer;

	if (r >= m.own && r < m.own + m.shared) {
		soak_key_make(ks, SOAK_SHARED, (uint32_t)(soak_rand(t) % ks->shared), k);
		return;
	}
	if (r >= m.own + m.shared)
		owner = (uint32_t)(soak_rand(t) % ks->writers);
	soak_key_make(ks, owner, (uint32_t)(soak_rand(t) % ks->per_writer), k);
}

static bool in_batch(const struct batch *b, const struct soak_key *k)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->keys[i].id == k->id)
			return true;
	return false;
}

/* Appends k at offset *off of base if it fits in the budget. */
static bool add(struct soak_thread *t, struct batch *b, const struct soak_key *k, unsigned char *base, size_t *off)
{
	if (b->n == SOAK_BATCH || *off + k->size > t->budget)
		return false;
	b->keys[b->n] = *k;
	b->names[b->n] = b->keys[b->n].name;
	b->bufs[b->n] = base + *off;
	b->sizes[b->n] = k->size;
	b->n++;
	*off += (k->size + 63) & ~(size_t)63;
	return true;
}

static void fill(struct soak_thread *t, struct batch *b, size_t want, struct mix m, unsigned char *base)
{
	size_t off = 0;
	struct soak_key k;

	b->n = 0;
	for (size_t tries = 0; b->n < want && tries < 4 * want; tries++) {
		pick(t, m, &k);
		if (!in_batch(b, &k))
			add(t, b, &k, base, &off);
	}
}

/* Splits each key's buffer into 1..SOAK_LAYERS pieces at random cuts, so layer boundaries fall anywhere. */
static void split_layers(struct soak_thread *t, struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		size_t left = b->sizes[i], at = 0, l = 0;
		size_t want = 1 + (size_t)(soak_rand(t) % SOAK_LAYERS);

		for (; l + 1 < want && left > 1; l++) {
			size_t piece = 1 + (size_t)(soak_rand(t) % (left - 1));

			b->lbuf[i][l] = (unsigned char *)b->bufs[i] + at;
			b->lsize[i][l] = piece;
			at += piece;
			left -= piece;
		}
		b->lbuf[i][l] = (unsigned char *)b->bufs[i] + at;
		b->lsize[i][l] = left;
		b->layers[i] = l + 1;
		b->lbufs[i] = b->lbuf[i];
		b->lsizes[i] = b->lsize[i];
	}
}

/* A rejected call leaves its code in every slot (as documented); set it anyway so a slip is not counted as OK. */
static void whole_call(struct batch *b, int rc)
{
	for (size_t i = 0; rc < 0 && i < b->n; i++)
		b->results[i] = rc;
}

static void put_call(struct soak_thread *t, struct batch *b, enum soak_op op)
{
	int rc;

	if (op == OP_PUT) {
		b->results[0] = mmc_put_from(t->s, b->names[0], b->bufs[0], b->sizes[0], MMC_COPY_H2G, NULL);
		return;
	}
	if (op == OP_BATCH_PUT) {
		rc = mmc_batch_put_from(t->s, b->names, (const void *const *)b->bufs, b->sizes, b->n, MMC_COPY_H2G,
		                        NULL, b->results);
	} else {
		split_layers(t, b);
		rc = mmc_batch_put_from_layers(t->s, b->names, (const void *const *const *)b->lbufs, b->lsizes,
		                               b->layers, b->n, MMC_COPY_H2G, NULL, b->results);
	}
	whole_call(b, rc);
}

static void do_put(struct soak_thread *t, enum soak_op op, size_t want)
{
	struct batch b;
	uint32_t from, to;

	fill(t, &b, op == OP_PUT ? 1 : want, (struct mix){70, 30}, t->putbuf);
	for (size_t i = 0; i < b.n; i++) {
		b.versions[i] = soak_version(t->writer, ++t->counter);
		soak_value_fill(b.bufs[i], &b.keys[i], b.versions[i]);
	}
	if (b.n == 0)
		return;
	t->c->calls[op]++;
	from = (uint32_t)(soak_now_ms() - t->run->shm->t0_ms);
	put_call(t, &b, op);
	to = (uint32_t)(soak_now_ms() - t->run->shm->t0_ms);
	for (size_t i = 0; i < b.n; i++) {
		soak_count(t->c, op, b.results[i]);
		if (b.keys[i].owner == t->writer)
			state_put(&t->own[b.keys[i].idx], b.versions[i], b.results[i], from, to);
		if (b.results[i] == MMC_OK)
			t->c->bytes_put += b.sizes[i];
	}
}

/* A read that reports MMC_OK but moves no bytes must not pass on what an earlier read left in the buffer. */
static void poison(struct batch *b)
{
	static const uint64_t zero;

	for (size_t i = 0; i < b->n; i++)
		for (size_t off = 0; off + 8 <= b->sizes[i]; off += 4096)
			memcpy((unsigned char *)b->bufs[i] + off, &zero, 8);
	for (size_t i = 0; i < b->n; i++)
		memset(b->bufs[i], 0, SOAK_HEADER);
}

static void get_batch(struct soak_thread *t, struct batch *b, enum soak_op op)
{
	int rc;

	poison(b);
	t->c->calls[op]++;
	if (op == OP_GET) {
		b->results[0] = mmc_get_into(t->s, b->names[0], b->bufs[0], b->sizes[0], MMC_COPY_G2H);
	} else if (op == OP_BATCH_GET) {
		rc = mmc_batch_get_into(t->s, b->names, b->bufs, b->sizes, b->n, MMC_COPY_G2H, b->results);
		whole_call(b, rc);
	} else {
		split_layers(t, b);
		rc = mmc_batch_get_into_layers(t->s, b->names, b->lbufs, b->lsizes, b->layers, b->n, MMC_COPY_G2H,
		                               b->results);
		whole_call(b, rc);
	}
	for (size_t i = 0; i < b->n; i++)
		soak_check_read(t, &b->keys[i], op, b->results[i], b->bufs[i]);
}

static void do_get(struct soak_thread *t, enum soak_op op, size_t want)
{
	struct batch b;

	fill(t, &b, op == OP_GET ? 1 : want, (struct mix){60, 30}, t->getbuf);
	if (b.n)
		get_batch(t, &b, op);
}

static void do_remove(struct soak_thread *t, enum soak_op op, size_t want)
{
	struct batch b;
	size_t off = 0;
	struct soak_key k;

	/* only the owner removes its keys (nothing else would keep its record true); anyone removes shared ones */
	b.n = 0;
	for (size_t tries = 0; b.n < (op == OP_REMOVE ? 1 : want) && tries < 4 * want; tries++) {
		pick(t, (struct mix){80, 20}, &k);
		if (!in_batch(&b, &k))
			add(t, &b, &k, t->getbuf, &off);
	}
	if (b.n == 0)
		return;
	t->c->calls[op]++;
	if (op == OP_REMOVE)
		b.results[0] = mmc_remove(t->s, b.names[0]);
	else
		whole_call(&b, mmc_batch_remove(t->s, b.names, b.n, b.results));
	for (size_t i = 0; i < b.n; i++) {
		soak_count(t->c, op, b.results[i]);
		if (b.keys[i].owner == t->writer)
			state_remove(&t->own[b.keys[i].idx], b.results[i]);
	}
}

static enum soak_op read_kind(unsigned r)
{
	return r % 3 == 0 ? OP_GET : r % 3 == 1 ? OP_BATCH_GET : OP_BATCH_GET_LAYERS;
}

void soak_step(struct soak_thread *t, enum soak_phase ph)
{
	unsigned r = (unsigned)(soak_rand(t) % 100);
	size_t n = 2 + (size_t)(soak_rand(t) % 7);

	if (ph == SOAK_STORM) { /* big put batches: every one evicts, and the freed space is written at once */
		do_put(t, r < 30 ? OP_BATCH_PUT_LAYERS : OP_BATCH_PUT, 8 + (size_t)(soak_rand(t) % 9));
		return;
	}
	if (ph != SOAK_RUN) {
		do_get(t, read_kind(r), n);
		return;
	}
	if (r < 12)
		do_put(t, OP_PUT, 1);
	else if (r < 24)
		do_put(t, OP_BATCH_PUT, n);
	else if (r < 30)
		do_put(t, OP_BATCH_PUT_LAYERS, n);
	else if (r < 83)
		do_get(t, read_kind(r), n);
	else if (r < 93)
		do_remove(t, OP_REMOVE, 1);
	else
		do_remove(t, OP_BATCH_REMOVE, n);
}

static void sweep_add(struct soak_thread *t, struct batch *b, size_t *off, uint32_t owner, uint32_t idx)
{
	struct soak_key k;

	soak_key_make(&t->run->keys, owner, idx, &k);
	if (add(t, b, &k, t->getbuf, off))
		return;
	get_batch(t, b, OP_BATCH_GET);
	b->n = 0;
	*off = 0;
	add(t, b, &k, t->getbuf, off);
}

static bool writer_live(const struct soak_thread *t, uint32_t w)
{
	return !(atomic_load(&t->run->shm->dead) & (1u << (w / (uint32_t)t->run->opts.threads)));
}

/*
 * Reads every key this thread owns, and its share (by rank among the live writers) of the shared keys and of the
 * keys whose owner is gone, so that together the live threads read every key once.
 */
void soak_sweep(struct soak_thread *t)
{
	const struct soak_keys *ks = &t->run->keys;
	struct batch b = {.n = 0};
	uint32_t rank = 0, live = 0;
	size_t off = 0;

	for (uint32_t w = 0; w < ks->writers; w++) {
		rank += w < t->writer && writer_live(t, w);
		live += writer_live(t, w);
	}
	for (uint32_t i = 0; i < ks->per_writer; i++)
		sweep_add(t, &b, &off, t->writer, i);
	for (uint32_t i = rank; i < ks->shared; i += live)
		sweep_add(t, &b, &off, SOAK_SHARED, i);
	for (uint32_t w = 0; w < ks->writers; w++)
		for (uint32_t i = 0; !writer_live(t, w) && i < ks->per_writer; i++)
			if ((w * ks->per_writer + i) % live == rank)
				sweep_add(t, &b, &off, w, i);
	if (b.n)
		get_batch(t, &b, OP_BATCH_GET);
	t->c->sweeps++;
}
