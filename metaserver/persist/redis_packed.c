#include "redis_packed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hash.h"
#include "hmap.h"
#include "mmc/mmc.h"

#define ENTRY_HEAD    8u
#define NONE          UINT32_MAX
#define REWRITE_MAX   64u /* blocks read and rewritten per commit (a 4096-id batch fills 64): a commit stays short */
#define SLACK         32u /* dead entries a block may carry before it is rewritten, whatever its live ones */
#define BITS_WORDS    (PACKED_SLOTS / 64)
#define BLOCK_KEY_MAX 80u

struct bstate {
	uint64_t live[BITS_WORDS]; /* slots whose newest entry is a put */
	uint32_t entries;          /* entries in the string */
	bool listed;               /* in the set of block numbers */
	bool full;                 /* its last slot was written: no new id comes to it */
	bool sealed;               /* rewritten since it was full */
};

struct block {
	struct hmap_node node;
	uint64_t no;
	struct bstate s;
	bool queued;  /* on the rewrite list */
	bool damaged; /* its string ends in bytes that are no entry: rewritten before anything is appended to it */
};

/* A block the current plan changes: its state once the plan commits, and the slots the plan puts. */
struct staged {
	struct block *b;
	struct bstate next;
	uint64_t put[BITS_WORDS];
	bool rewritten; /* taken off the rewrite list by this plan */
};

struct keyed_op {
	uint64_t no;
	uint32_t i; /* in the batch: the order within a block */
};

struct packed {
	char *set_key, *count_key, *block_prefix;
	struct hmap blocks;
	bool known;      /* blocks say what the store holds: a load read it all and only this writer wrote since */
	uint64_t live;   /* records, when known */
	uint64_t *queue; /* blocks to rewrite or delete, by number */
	size_t nqueue, capqueue;
	uint64_t *reads;               /* the blocks the next plan rewrites from what they hold */
	size_t nreads, capreads, upto; /* upto: the part of the queue the next plan takes, damaged blocks aside */
	struct staged *st;
	size_t nst, capst;
	struct keyed_op *ko;
	size_t capko;
};

/* Ids are the server's, not a client's: no flood to fear, but hmap's rule is one keyed hash for every table. */
static uint64_t block_hash_no(uint64_t no)
{
	return hash_bytes(&no, sizeof(no));
}

static uint64_t block_hash(const struct hmap_node *n)
{
	return block_hash_no(hmap_entry(n, struct block, node)->no);
}

void rplan_init(struct rplan *r)
{
	memset(r, 0, sizeof(*r));
	arena_init(&r->arena);
}

void rplan_reset(struct rplan *r)
{
	r->n = 0;
	arena_reset(&r->arena);
}

void rplan_fini(struct rplan *r)
{
	arena_fini(&r->arena);
	free(r->w);
	memset(r, 0, sizeof(*r));
}

int rplan_add(struct rplan *r, const char *cmd, const char *key, size_t klen, const void *a0, size_t l0, const void *a1,
              size_t l1, int nargs)
{
	struct rwrite *w = array_grow(r->w, &r->cap, r->n + 1, sizeof(*w), 64);

	if (!w)
		return MMC_MALLOC_FAILED;
	r->w = w;
	r->w[r->n++] = (struct rwrite){cmd, key, klen, {a0, a1}, {l0, l1}, nargs};
	return 0;
}

static char *join(const char *a, const char *b, const char *c)
{
	size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s%s", a, b, c);
	return s;
}

struct packed *packed_new(const char *prefix, const char *name)
{
	struct packed *p = calloc(1, sizeof(*p));
	char *base = p ? join(prefix, "p:", name) : NULL;

	if (!base) {
		free(p);
		return NULL;
	}
	p->set_key = base;
	p->count_key = join(base, "#", "");
	p->block_prefix = join(base, ":", "");
	hmap_init(&p->blocks, block_hash, 64);
	if (!p->count_key || !p->block_prefix || strlen(p->block_prefix) + 21 > BLOCK_KEY_MAX) {
		packed_free(p);
		return NULL;
	}
	return p;
}

void packed_forget(struct packed *p)
{
	hmap_foreach(&p->blocks, n)
	{
		hmap_remove(&p->blocks, n, block_hash(n));
		free(hmap_entry(n, struct block, node));
	}
	hmap_free(&p->blocks);
	p->known = false;
	p->live = 0;
	p->nqueue = p->nreads = p->nst = 0;
}

void packed_relist(struct packed *p)
{
	hmap_foreach(&p->blocks, n)
	{
		hmap_entry(n, struct block, node)->s.listed = false;
	}
}

void packed_free(struct packed *p)
{
	if (!p)
		return;
	packed_forget(p);
	free(p->set_key);
	free(p->count_key);
	free(p->block_prefix);
	free(p->queue);
	free(p->reads);
	free(p->st);
	free(p->ko);
	free(p);
}

bool packed_known(const struct packed *p)
{
	return p->known;
}

uint64_t packed_live(const struct packed *p)
{
	return p->live;
}

const char *packed_set_key(const struct packed *p)
{
	return p->set_key;
}

const char *packed_count_key(const struct packed *p)
{
	return p->count_key;
}

size_t packed_block_key(const struct packed *p, uint64_t no, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s%llu", p->block_prefix, (unsigned long long)no);

	return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static uint64_t id_of(const void *key)
{
	const unsigned char *k = key;
	uint64_t id = 0;

	for (int i = 0; i < PACKED_KEY; i++)
		id = id << 8 | k[i];
	return id;
}

uint64_t packed_block_of(const void *key)
{
	return id_of(key) / PACKED_SLOTS;
}

static struct block *find(struct packed *p, uint64_t no)
{
	uint64_t h = block_hash_no(no);

	hmap_foreach_hash(&p->blocks, h, n)
	{
		struct block *b = hmap_entry(n, struct block, node);

		if (b->no == no)
			return b;
	}
	return NULL;
}

static struct block *find_or_add(struct packed *p, uint64_t no)
{
	struct block *b = find(p, no);

	if (b)
		return b;
	if (!(b = calloc(1, sizeof(*b))))
		return NULL;
	b->no = no;
	if (hmap_insert(&p->blocks, &b->node, block_hash_no(no))) {
		free(b);
		return NULL;
	}
	return b;
}

static unsigned popcount(const uint64_t *w)
{
	unsigned n = 0;

	for (unsigned i = 0; i < BITS_WORDS; i++)
		n += (unsigned)__builtin_popcountll(w[i]);
	return n;
}

static void set_bit(uint64_t *w, unsigned i, bool on)
{
	if (on)
		w[i / 64] |= UINT64_C(1) << (i % 64);
	else
		w[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

/*
 * Worth a rewrite (or, with nothing live, a delete): most of its entries are dead; or it just became full. Redis
 * gives a string that APPEND extends room for twice what it needs (a block's new ids come in two or three commits):
 * one SET of a full block from its live entries gives the memory back, once per PACKED_SLOTS ids.
 */
static bool due(const struct bstate *s)
{
	unsigned live = popcount(s->live);

	return (live == 0 && (s->entries || s->listed)) || s->entries > 2 * live + SLACK || (s->full && !s->sealed);
}

static void queue(struct packed *p, struct block *b)
{
	uint64_t *q;

	if (b->queued || !(q = array_grow(p->queue, &p->capqueue, p->nqueue + 1, sizeof(*q), 64)))
		return; /* out of memory: it stays as it is, which is correct, only larger */
	p->queue = q;
	p->queue[p->nqueue++] = b->no;
	b->queued = true;
}

/* Slot i's newest entry in a block's string: offset and length of its value, len NONE when there is none or it is
 * a delete. Returns the number of entries read: a damaged tail (a slot out of range, a length past the end) ends
 * the string there, as if it had never been appended. */
struct slot {
	uint32_t off, len;
};

static uint32_t replay(struct rbytes v, struct slot s[PACKED_SLOTS], bool *damaged)
{
	const unsigned char *p = v.p;
	uint32_t entries = 0;
	size_t off = 0;

	for (unsigned i = 0; i < PACKED_SLOTS; i++)
		s[i] = (struct slot){0, NONE}; /* off 0: no entry (an entry's value starts past its head) */
	for (; !v.nil && v.n - off >= ENTRY_HEAD;) {
		uint32_t len = (uint32_t)p[off + 4] | (uint32_t)p[off + 5] << 8 | (uint32_t)p[off + 6] << 16 |
		               (uint32_t)p[off + 7] << 24;
		bool put = p[off + 1] == 'P';

		if (p[off] >= PACKED_SLOTS || (put ? len : 0) > v.n - off - ENTRY_HEAD || len == NONE)
			break; /* not an entry: what follows cannot be read either */
		s[p[off]].off = (uint32_t)(off + ENTRY_HEAD);
		s[p[off]].len = put ? len : NONE;
		off += ENTRY_HEAD + (put ? len : 0);
		entries++;
	}
	*damaged = !v.nil && off != v.n;
	return entries;
}

static void entry_head(unsigned char *h, unsigned slot, bool put, size_t len)
{
	h[0] = (unsigned char)slot;
	h[1] = put ? 'P' : 'D';
	h[2] = h[3] = 0;
	h[4] = (unsigned char)len;
	h[5] = (unsigned char)(len >> 8);
	h[6] = (unsigned char)(len >> 16);
	h[7] = (unsigned char)(len >> 24);
}

static void want_read(struct packed *p, uint64_t no)
{
	uint64_t *g = array_grow(p->reads, &p->capreads, p->nreads + 1, sizeof(*g), REWRITE_MAX);

	if (g) { /* else it waits for a later plan (a damaged block too: appends to it are refused meanwhile) */
		p->reads = g;
		p->reads[p->nreads++] = no;
	}
}

const uint64_t *packed_to_read(struct packed *p, size_t *n)
{
	size_t plain = 0;

	p->nreads = p->upto = 0;
	for (size_t i = 0; p->known && i < p->nqueue; i++) {
		struct block *b = find(p, p->queue[i]);

		if (b && b->damaged && popcount(b->s.live))
			want_read(p, b->no);
	}
	for (; p->known && p->upto < p->nqueue && plain < REWRITE_MAX; p->upto++) {
		struct block *b = find(p, p->queue[p->upto]);

		if (b && !b->damaged && popcount(b->s.live)) {
			want_read(p, b->no);
			plain++;
		}
	}
	*n = p->nreads;
	return p->reads;
}

static struct staged *stage(struct packed *p, struct block *b)
{
	struct staged *s;

	for (size_t i = p->nst; i-- > 0;) /* the plan stages blocks in runs: the one wanted is usually the last */
		if (p->st[i].b == b)
			return &p->st[i];
	if (!(s = array_grow(p->st, &p->capst, p->nst + 1, sizeof(*s), 16)))
		return NULL;
	p->st = s;
	s = &p->st[p->nst++];
	memset(s, 0, sizeof(*s));
	s->b = b;
	s->next = b->s;
	return s;
}

/* A rewrite of block b from what Redis holds (v): its live entries in slot order, or its deletion. */
static int plan_rewrite(struct packed *p, struct rplan *r, struct block *b, struct rbytes v)
{
	struct slot sl[PACKED_SLOTS];
	struct staged *s = stage(p, b);
	char *key = arena_alloc(&r->arena, BLOCK_KEY_MAX);
	size_t klen, bytes = 0;
	unsigned char *out, *o;

	if (!s || !key)
		return MMC_MALLOC_FAILED;
	klen = packed_block_key(p, b->no, key, BLOCK_KEY_MAX);
	replay(v, sl, &(bool){false});
	for (unsigned i = 0; i < PACKED_SLOTS; i++)
		bytes += sl[i].len == NONE ? 0 : ENTRY_HEAD + sl[i].len;
	s->rewritten = true;
	memset(s->next.live, 0, sizeof(s->next.live));
	s->next.entries = 0;
	s->next.sealed = s->next.full;
	if (!bytes)
		return rplan_add(r, "DEL", key, klen, NULL, 0, NULL, 0, 0);
	if (!(out = o = arena_alloc(&r->arena, bytes)))
		return MMC_MALLOC_FAILED;
	for (unsigned i = 0; i < PACKED_SLOTS; i++) {
		if (sl[i].len == NONE)
			continue;
		entry_head(o, i, true, sl[i].len);
		memcpy(o + ENTRY_HEAD, (const char *)v.p + sl[i].off, sl[i].len);
		o += ENTRY_HEAD + sl[i].len;
		set_bit(s->next.live, i, true);
		s->next.entries++;
	}
	return rplan_add(r, "SET", key, klen, out, bytes, NULL, 0, 1);
}

/* The due blocks with nothing live are deleted without a read; the others are rewritten from reads. */
static int plan_due(struct packed *p, struct rplan *r, const struct rbytes *reads)
{
	int rc = 0;

	for (size_t i = 0; i < p->nqueue && rc == 0; i++) {
		struct block *b = find(p, p->queue[i]);
		size_t k = 0;

		if (!b || (i >= p->upto && !b->damaged))
			continue;
		while (k < p->nreads && p->reads[k] != b->no)
			k++;
		if (k < p->nreads)
			rc = plan_rewrite(p, r, b, reads[k]);
		else if (!popcount(b->s.live))
			rc = plan_rewrite(p, r, b, (struct rbytes){.nil = true});
	}
	return rc;
}

static int ko_cmp(const void *x, const void *y)
{
	const struct keyed_op *a = x, *b = y;

	return a->no != b->no ? (a->no > b->no) - (a->no < b->no) : (a->i > b->i) - (a->i < b->i);
}

/* One APPEND of the run ko[from, to) of ops on one block. */
static int plan_run(struct packed *p, struct rplan *r, const struct persist_op *ops, size_t from, size_t to)
{
	uint64_t no = p->ko[from].no;
	struct block *b = p->known ? find_or_add(p, no) : NULL;
	struct staged *s = b ? stage(p, b) : NULL;
	char *key = arena_alloc(&r->arena, BLOCK_KEY_MAX), *num;
	size_t klen, bytes = 0;
	unsigned char *out, *o;
	int rc;

	if ((p->known && !s) || !key)
		return MMC_MALLOC_FAILED;
	if (b && b->damaged && !s->rewritten) /* what it appended would follow bytes a load stops at */
		return MMC_ERROR;
	klen = packed_block_key(p, no, key, BLOCK_KEY_MAX);
	for (size_t k = from; k < to; k++)
		bytes += ENTRY_HEAD + (ops[p->ko[k].i].del ? 0 : ops[p->ko[k].i].vlen);
	if (!(out = o = arena_alloc(&r->arena, bytes)))
		return MMC_MALLOC_FAILED;
	for (size_t k = from; k < to; k++) {
		const struct persist_op *op = &ops[p->ko[k].i];
		unsigned slot = (unsigned)(id_of(op->key) % PACKED_SLOTS);

		entry_head(o, slot, !op->del, op->del ? 0 : op->vlen);
		if (!op->del)
			memcpy(o + ENTRY_HEAD, op->val, op->vlen);
		o += ENTRY_HEAD + (op->del ? 0 : op->vlen);
		if (s) {
			set_bit(s->next.live, slot, !op->del);
			set_bit(s->put, slot, !op->del);
			s->next.entries++;
			s->next.full |= slot == PACKED_SLOTS - 1;
		}
	}
	if ((rc = rplan_add(r, "APPEND", key, klen, out, bytes, NULL, 0, 1)))
		return rc;
	if (s && s->next.listed)
		return 0;
	/* listed here when the block is new (or, not known, maybe new: SADD twice is harmless) */
	if (!(num = arena_alloc(&r->arena, 24)))
		return MMC_MALLOC_FAILED;
	if (s)
		s->next.listed = true;
	return rplan_add(r, "SADD", p->set_key, strlen(p->set_key), num,
	                 (size_t)snprintf(num, 24, "%llu", (unsigned long long)no), NULL, 0, 1);
}

/* Blocks the plan leaves empty leave the set; the count follows what the plan does. */
static int plan_tail(struct packed *p, struct rplan *r)
{
	uint64_t live = p->live;
	char *num;
	int rc;

	for (size_t i = 0; i < p->nst; i++) {
		struct staged *s = &p->st[i];
		char *n;

		live = live - popcount(s->b->s.live) + popcount(s->next.live);
		if (s->next.entries || !s->next.listed)
			continue;
		if (!(n = arena_alloc(&r->arena, 24)))
			return MMC_MALLOC_FAILED;
		s->next.listed = false;
		if ((rc = rplan_add(r, "SREM", p->set_key, strlen(p->set_key), n,
		                    (size_t)snprintf(n, 24, "%llu", (unsigned long long)s->b->no), NULL, 0, 1)))
			return rc;
	}
	if (!(num = arena_alloc(&r->arena, 24)))
		return MMC_MALLOC_FAILED;
	return rplan_add(r, "SET", p->count_key, strlen(p->count_key), num,
	                 (size_t)snprintf(num, 24, "%llu", (unsigned long long)live), NULL, 0, 1);
}

int packed_plan(struct packed *p, struct rplan *r, uint32_t table, const struct persist_op *ops, size_t nops,
                const struct rbytes *reads)
{
	struct keyed_op *ko;
	size_t n = 0;
	int rc = 0;

	p->nst = 0;
	if (nops && !(ko = array_grow(p->ko, &p->capko, nops, sizeof(*ko), 256)))
		return MMC_MALLOC_FAILED;
	if (nops)
		p->ko = ko;
	for (size_t i = 0; i < nops; i++) {
		if (ops[i].table != table)
			continue;
		if (ops[i].klen != PACKED_KEY)
			return MMC_INVALID_PARAM;
		p->ko[n++] = (struct keyed_op){packed_block_of(ops[i].key), (uint32_t)i};
	}
	qsort(p->ko, n, sizeof(*p->ko), ko_cmp);
	if (p->known)
		rc = plan_due(p, r, reads); /* before the appends: a rewrite must not drop them */
	else /* this writer cannot keep the count: the next one that counts loads the table instead */
		rc = rplan_add(r, "DEL", p->count_key, strlen(p->count_key), NULL, 0, NULL, 0, 0);
	for (size_t from = 0, to; from < n && rc == 0; from = to) {
		for (to = from + 1; to < n && p->ko[to].no == p->ko[from].no; to++)
			;
		rc = plan_run(p, r, ops, from, to);
	}
	return rc || !p->known ? rc : plan_tail(p, r);
}

/* Drops the blocks no longer due off the list, and those the plan left empty off the table. */
static void settle(struct packed *p)
{
	size_t k = 0;

	for (size_t i = 0; i < p->nqueue; i++) {
		struct block *b = find(p, p->queue[i]);

		if (b && !b->s.entries && !b->s.listed && !b->queued) {
			hmap_remove(&p->blocks, &b->node, block_hash_no(b->no));
			free(b);
		} else if (b && b->queued) {
			p->queue[k++] = p->queue[i];
		}
	}
	p->nqueue = k;
}

void packed_done(struct packed *p, bool ok)
{
	for (size_t i = 0; i < p->nst; i++) {
		struct staged *s = &p->st[i];
		struct bstate *cur = &s->b->s;

		p->live -= popcount(cur->live);
		if (ok) {
			*cur = s->next;
			if (s->rewritten) { /* still on the list (settle drops it) only if due again */
				s->b->queued = due(cur);
				s->b->damaged = false;
			}
		} else { /* a put that failed may still have landed: a record until a delete says otherwise */
			for (unsigned w = 0; w < BITS_WORDS; w++)
				cur->live[w] |= s->put[w];
			/* and so may its SREM (Redis ran the EXEC, then WAIT fell short of replicas, or one command of
			 * it failed): listed again by the next append, or that append's records would be in no block a
			 * load reads */
			cur->listed = false;
		}
		p->live += popcount(cur->live);
		if (!s->b->queued && due(cur))
			queue(p, s->b);
	}
	if (ok)
		settle(p);
	p->nst = 0;
}

void packed_load_begin(struct packed *p)
{
	packed_forget(p);
}

int packed_load_block(struct packed *p, uint64_t no, struct rbytes v, persist_scan_fn fn, void *arg)
{
	struct slot sl[PACKED_SLOTS];
	struct block *b = find_or_add(p, no);
	unsigned char key[PACKED_KEY];
	int rc = 0;

	if (!b)
		return MMC_MALLOC_FAILED;
	b->s.entries = replay(v, sl, &b->damaged);
	b->s.listed = true;
	b->s.full = b->s.sealed = sl[PACKED_SLOTS - 1].off != 0; /* a load cannot tell: taken as tight */
	for (unsigned i = 0; i < PACKED_SLOTS && rc == 0; i++) {
		uint64_t id = no * PACKED_SLOTS + i;

		if (sl[i].len == NONE)
			continue;
		set_bit(b->s.live, i, true);
		p->live++;
		for (int k = 0; k < PACKED_KEY; k++)
			key[k] = (unsigned char)(id >> (8 * (PACKED_KEY - 1 - k)));
		rc = fn(arg, key, PACKED_KEY, (const char *)v.p + sl[i].off, sl[i].len);
	}
	if (due(&b->s) || b->damaged)
		queue(p, b);
	return rc;
}

void packed_load_end(struct packed *p)
{
	p->known = true;
}

int packed_find(struct rbytes v, const void *key, const void **val, size_t *len)
{
	struct slot sl[PACKED_SLOTS];
	unsigned i = (unsigned)(id_of(key) % PACKED_SLOTS);

	replay(v, sl, &(bool){false});
	if (sl[i].len == NONE)
		return MMC_OBJECT_NOT_EXISTS;
	*val = (const char *)v.p + sl[i].off;
	*len = sl[i].len;
	return 0;
}
