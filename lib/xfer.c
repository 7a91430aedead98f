#include "xfer.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "clock.h"
#include "copy_stream.h"
#include "host_map.h"
#include "lg.h"
#include "mmc/mmc.h"
#include "peers.h"
#include "per_key.h"
#include "store.h"

#define WINDOW    128               /* RMA ops in flight per call */
#define CHUNK     ((size_t)4 << 20) /* larger pieces are split so transfers pipeline */
#define HOST_USED 64 /* same-host pools one call checks after copying; beyond, each copy is checked at once */
#define SEEN      8
#define FENCES    16 /* peers one call writes to without allocating */

/* Registrations made for one call when the provider needs local MRs and the buffer was not registered: as many as
 * the call has buffers (a layer-wise get may have thousands). */
struct temp_reg {
	struct fab_mr mr;
	uintptr_t addr;
	size_t len;
};

struct temp_regs {
	struct temp_reg *v;
	size_t n, cap;
};

/* A same-host pool this call copied to or from, checked again once every copy is done. */
struct host_used {
	struct host_map *map; /* a reference of this call */
	uint32_t rank;
	uint64_t key, incarnation;
};

/* The last write of this call to one peer: where its fence read goes. */
struct fence {
	fi_addr_t fa;
	uint32_t rank;
	uint64_t raddr, rkey;
	int err; /* the fence read's: every key written to rank fails with it */
};

/* A fence read's tag: its index in fences[], with this bit to tell it from a key's. */
#define FENCE_TAG (UINT32_C(1) << 31)

/* One call's state, on its caller's stack: a transfer allocates only for what outgrows it. */
struct xfer_ctx {
	struct mmc_store *s;
	struct xfer_key *keys; /* key i at PER_KEY(keys, i, stride) */
	size_t nkeys, stride;
	struct temp_regs temp;
	struct fence *fences; /* one per peer written to: fence_buf, or allocated beyond FENCES targets */
	size_t nfences;
	struct fence fence_buf[FENCES];
	/* peers resolved during this call: the peer cache's lock is taken once per service, not once per key */
	struct peer seen[SEEN]; /* each holds a reference to its map */
	unsigned nseen;
	struct host_used used[HOST_USED];
	unsigned nused;
	uint64_t *used_by; /* per key, the bits of used[] its copies went through (allocated on first use) */
	const struct xfer_hook *hook;
	uint64_t deadline_ms;    /* the call's, or 0 */
	uint64_t await_until_ms; /* await_until(), once asked */
	bool stream;             /* copies bypass the cache: a put, or a get too large to stay there */
	uint32_t *pending;       /* with hook->landed: per key, RMAs in flight (plus POSTING until all are posted) */
};

#define POSTING (UINT32_C(1) << 31) /* in pending[]: the key's RMAs are still being posted */

static struct xfer_key *key_at(const struct xfer_ctx *x, size_t i)
{
	return &PER_KEY(x->keys, i, x->stride);
}

/* A key keeps its first error. */
static void key_fail(struct xfer_ctx *x, size_t i, int err)
{
	if (key_at(x, i)->result == 0)
		key_at(x, i)->result = err;
}

static void key_landed(struct xfer_ctx *x, size_t i)
{
	if (key_at(x, i)->result == 0)
		x->hook->landed(x->hook->arg, i);
}

static void op_done(void *arg, uint32_t tag, int err)
{
	struct xfer_ctx *x = arg;

	if (tag & FENCE_TAG) {
		x->fences[tag & ~FENCE_TAG].err = err;
		return;
	}
	if (err)
		key_fail(x, tag, err);
	if (x->pending && --x->pending[tag] == 0)
		key_landed(x, tag);
}

static void *local_desc(struct xfer_ctx *x, void *buf, size_t len, int *rc)
{
	const struct regbuf *r = regbufs_find(&x->s->regs, buf, len);
	struct temp_regs *t = &x->temp;
	void *grown;

	*rc = 0;
	if (r)
		return r->mr.desc;
	if (!fabric_local_mr(x->s->fab))
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].addr == (uintptr_t)buf && t->v[i].len >= len)
			return t->v[i].mr.desc;
	grown = array_grow(t->v, &t->cap, t->n + 1, sizeof(*t->v), 16);
	/* this process's own limit (memory, RLIMIT_MEMLOCK), not a peer's fault: its coordinates are kept */
	if (!grown || fabric_mr_reg(x->s->fab, buf, len, false, &((struct temp_reg *)grown)[t->n].mr)) {
		t->v = grown ? grown : t->v;
		*rc = MMC_MALLOC_FAILED;
		return NULL;
	}
	t->v = grown;
	t->v[t->n].addr = (uintptr_t)buf;
	t->v[t->n].len = len;
	return t->v[t->n++].mr.desc;
}

static int seg_of(const struct peer *p, uint32_t media, uint64_t *base, uint64_t *key, uint64_t *size)
{
	/* an SSD segment is no RMA target (its service moves its bytes; it is registered with no key): a target on it
	 * is the meta server's mistake, and an RMA there would go to whatever key 0 names at the peer */
	if (media == MMC_MEDIA_SSD)
		return MMC_INTERNAL_ERROR;
	for (uint32_t i = 0; i < p->nsegs; i++) {
		if (p->segs[i].media == media) {
			*base = p->segs[i].base;
			*key = p->segs[i].key;
			*size = p->segs[i].size;
			return 0;
		}
	}
	return MMC_LINK_NOT_FOUND;
}

/*
 * The blob is at p in memory this process has mapped: its own pool, or a same-host pool. A put streams around the
 * cache (the writer never reads the pool back, and a reader comes later); a get streams only when it is larger than
 * the cache, and otherwise leaves the bytes there for the caller, who reads them next. Measured both ways with
 * mmc-bench at 64 KiB x 16: this rule gave put 2.9-3.1x and get 2.3-2.5x Redis; memcpy for every call that fits
 * the cache gave 2.1x and 2.5-2.6x.
 */
/* Bytes a same-host copy moves between two looks at whether its space is still what it was granted as. */
#define COPY_RUN ((size_t)4 << 20)

/* The space a copy goes to is still its grant's: the pool still the blob's incarnation under its key (a mapped
 * pool), and a write's grant still held (the lease hook: the meta connection it came on). 0, or why not. */
static int still_granted(const struct xfer_ctx *x, int write, const struct peer *p, const struct xfer_target *t,
                         size_t key)
{
	if (p->map && !host_map_current(p->map, p->host_key, t->incarnation))
		return MMC_LINK_NOT_FOUND;
	return write && x->hook && x->hook->lease ? x->hook->lease(x->hook->arg, key) : 0;
}

/* The fabric's lease check of a post: the hook's, for the key the post's tag names (none for a fence). */
static int post_lease(void *arg, uint32_t tag)
{
	const struct xfer_ctx *x = arg;

	return x->hook->lease(x->hook->arg, tag & FENCE_TAG ? XFER_NO_KEY : tag);
}

/*
 * Copies key k to or from the pool bytes at dst (a same-host pool, mapped or our own), looking again at
 * still_granted before each COPY_RUN bytes, across its pieces: a copy held up between two (a long one, a
 * descheduled thread) puts no more bytes into space that the owner's new incarnation, or a restarted meta server, may
 * have given to other keys once its rejoin grace ended. What is at risk is one run, not the key. Returns 0 or
 * still_granted's answer.
 */
static int copy_pieces(const struct xfer_ctx *x, char *dst, int write, size_t key, const struct peer *p,
                       const struct xfer_target *t)
{
	const struct xfer_key *k = key_at(x, key);
	void *(*copy)(void *, const void *, size_t) = x->stream ? copy_stream : memcpy;
	size_t since = 0; /* bytes since the last look; the caller looked before the first */

	for (uint32_t i = 0; i < k->npieces; i++) {
		char *buf = k->pieces[i].buf;

		for (size_t done = 0, n; done < k->pieces[i].len; done += n, dst += n, since += n) {
			int rc = since < COPY_RUN ? 0 : still_granted(x, write, p, t, key);

			if (rc)
				return rc;
			since %= COPY_RUN;
			n = k->pieces[i].len - done < COPY_RUN - since ? k->pieces[i].len - done : COPY_RUN - since;
			if (write)
				copy(dst, buf + done, n);
			else
				copy(buf + done, dst, n);
		}
	}
	return 0;
}

/* Until when copies wait for a same-host owner to read its Register's answer: the call's deadline, and never later
 * than an RMA may stall from the call's first look at a same-host pool. One limit for the whole call: a batch of
 * keys in a pool whose owner never gets its answer waits once, not once a key. */
static uint64_t await_until(struct xfer_ctx *x)
{
	if (!x->await_until_ms) {
		uint64_t until = clock_ms() + x->s->conf.c.rma_timeout_ms;

		x->await_until_ms = x->deadline_ms && x->deadline_ms < until ? x->deadline_ms : until;
	}
	return x->await_until_ms;
}

/* Registers map as used by key i; checks the pool at its first use in this call. */
static int host_note(struct xfer_ctx *x, size_t i, const struct peer *p, const struct xfer_target *t, bool *later)
{
	unsigned u = 0;

	while (u < x->nused && x->used[u].map != p->map)
		u++;
	*later = u < HOST_USED;
	if (u < x->nused)
		goto mark;
	if (!host_map_await(p->map, p->host_key, t->incarnation, await_until(x))) {
		if (x->deadline_ms && clock_ms() >= x->deadline_ms)
			return MMC_TIMEOUT; /* the caller's deadline ended the wait: no fault of the pool, which stays
			                       known */
		peers_forget(x->s, t->rank, p->map);
		return MMC_LINK_NOT_FOUND; /* the owner left, or is not (any more) the incarnation the blob is in */
	}
	if (u == HOST_USED || (!x->used_by && !(x->used_by = calloc(x->nkeys, sizeof(*x->used_by))))) {
		*later = false;
		return 0;
	}
	x->used[x->nused++] = (struct host_used){host_map_ref(p->map), t->rank, p->host_key, t->incarnation};
mark:
	if (*later)
		x->used_by[i] |= UINT64_C(1) << u;
	return 0;
}

/*
 * Same host, another process: the blob is in a pool we mapped. Each copy starts only while the pool's header still
 * names the blob's incarnation and key; whether the owner survived the copy is checked when the call's copies are
 * done (host_check), or at once when this call has too many pools to remember.
 */
/* A copy in this process's memory goes only where the pool is: a target the meta server got wrong (a bug, a
 * hostile server) would otherwise read or write whatever lies past it. */
static bool in_pool(const struct xfer_key *k, const struct xfer_target *t, size_t pool_size)
{
	size_t total = 0;

	for (uint32_t j = 0; j < k->npieces; j++) {
		if (k->pieces[j].len > pool_size - total)
			return false;
		total += k->pieces[j].len;
	}
	return t->media == MMC_MEDIA_DRAM && t->offset <= pool_size && total <= pool_size - t->offset;
}

static int copy_host(struct xfer_ctx *x, int write, size_t i, const struct peer *p, const struct xfer_target *t)
{
	struct xfer_key *k = key_at(x, i);
	bool later;
	int rc;

	if (!in_pool(k, t, p->map->size))
		return MMC_INTERNAL_ERROR;
	if ((rc = host_note(x, i, p, t, &later)))
		return rc;
	/* again after host_note, which may have waited: a write's grant may have ended meanwhile */
	if ((rc = still_granted(x, write, p, t, i)))
		return rc;
	if ((rc = copy_pieces(x, p->map->base + t->offset, write, i, p, t)))
		return rc;
	return later || host_map_usable(p->map, p->host_key, t->incarnation) ? 0 : MMC_LINK_NOT_FOUND;
}

/*
 * After the call's copies: a pool whose owner died or changed incarnation meanwhile fails every key that went
 * through it, so a key reads MMC_OK only from a pool that was its incarnation's from before to after the copy.
 */
static void host_check(struct xfer_ctx *x)
{
	for (unsigned u = 0; u < x->nused; u++) {
		struct host_used *h = &x->used[u];

		if (!host_map_usable(h->map, h->key, h->incarnation)) {
			lg_warn("host path: local service %u left during a transfer; failing its keys", h->rank);
			peers_forget(x->s, h->rank, h->map);
			for (size_t i = 0; i < x->nkeys; i++)
				if (x->used_by[i] >> u & 1)
					key_fail(x, i, MMC_LINK_NOT_FOUND);
		}
		host_map_unref(h->map);
	}
}

static void note_fence(struct xfer_ctx *x, const struct peer *p, uint64_t raddr, uint64_t rkey)
{
	size_t i = 0;

	while (i < x->nfences && x->fences[i].fa != p->fa)
		i++;
	if (i == x->nfences)
		x->nfences++;
	x->fences[i] = (struct fence){p->fa, p->rank, raddr, rkey, 0};
}

/*
 * One small read per peer after the writes: it completes once every earlier write to that peer has landed. Until
 * it has, a write's own completion proves nothing (its bytes may still be lost with its connection), so a fence
 * that fails fails every key written to that peer, not only the last.
 */
static void post_fences(struct xfer_ctx *x, struct fab_batch *b)
{
	void *desc, *scratch = fabric_scratch(x->s->fab, &desc);

	for (size_t i = 0; i < x->nfences; i++) {
		struct fence *f = &x->fences[i];
		struct iovec iov = {scratch, 8};
		int rc = fab_batch_post(b, false, &iov, &desc, 1, f->fa, f->raddr, f->rkey, FENCE_TAG | (uint32_t)i);

		if (rc)
			f->err = rc;
	}
}

static void fences_check(struct xfer_ctx *x)
{
	for (size_t i = 0; i < x->nfences; i++) {
		if (!x->fences[i].err)
			continue;
		for (size_t k = 0; k < x->nkeys; k++) {
			const struct xfer_key *key = key_at(x, k);

			for (uint32_t r = 0; !key->skip && r < key->ntargets; r++)
				if (key->targets[r].rank == x->fences[i].rank)
					key_fail(x, k, x->fences[i].err);
		}
	}
}

/* The RMA being built: up to iov_limit local pieces for one contiguous remote range. */
struct gather {
	struct iovec iov[FAB_IOV_MAX];
	void *desc[FAB_IOV_MAX];
	size_t count, total, limit;
	uint64_t off; /* remote offset of its first byte */
};

static int flush(struct xfer_ctx *x, struct fab_batch *b, int write, uint32_t tag, const struct peer *p,
                 struct gather *g, uint64_t base, uint64_t key, uint64_t size)
{
	int rc;

	if (!g->count)
		return 0;
	if (g->off > size || g->total > size - g->off)
		return MMC_INTERNAL_ERROR;
	if (x->pending)
		x->pending[tag]++; /* before the post: completions are reaped inside later posts */
	rc = fab_batch_post(b, write, g->iov, g->desc, g->count, p->fa, base + g->off, key, tag);
	if (rc && x->pending)
		x->pending[tag]--;
	if (rc == 0 && x->fences) /* its 8-byte read stays inside the pool: a write of under 8 bytes may end it */
		note_fence(x, p, base + (g->off <= size - 8 ? g->off : size - 8), key);
	g->off += g->total;
	g->count = g->total = 0;
	return rc;
}

/*
 * Posts a key's pieces to one target. Pieces adjacent in the caller's memory are merged, others are gathered up to
 * the provider's iov limit per RMA (a layer list of 122 buffers is ~31 operations, not 122), and no RMA exceeds
 * CHUNK so large transfers pipeline.
 */
static int post_pieces(struct xfer_ctx *x, struct fab_batch *b, int write, uint32_t tag, const struct peer *p,
                       const struct xfer_target *t)
{
	struct xfer_key *k = key_at(x, tag);
	struct gather g = {.limit = fabric_iov_limit(x->s->fab), .off = t->offset};
	uint64_t base, key, size;
	int rc = seg_of(p, t->media, &base, &key, &size);

	for (uint32_t i = 0; i < k->npieces && rc == 0; i++) {
		char *buf = k->pieces[i].buf;
		size_t left = k->pieces[i].len;
		void *desc = local_desc(x, buf, left, &rc);

		while (left && rc == 0) {
			size_t n = left < CHUNK - g.total ? left : CHUNK - g.total;
			struct iovec *last = g.count ? &g.iov[g.count - 1] : NULL;

			if (last && (char *)last->iov_base + last->iov_len == buf && g.desc[g.count - 1] == desc) {
				last->iov_len += n;
			} else if (g.count == g.limit) {
				rc = flush(x, b, write, tag, p, &g, base, key, size);
				continue;
			} else {
				g.iov[g.count] = (struct iovec){buf, n};
				g.desc[g.count++] = desc;
			}
			g.total += n;
			buf += n;
			left -= n;
			if (g.total == CHUNK)
				rc = flush(x, b, write, tag, p, &g, base, key, size);
		}
	}
	return rc ? rc : flush(x, b, write, tag, p, &g, base, key, size);
}

static void fail_keys(struct xfer_ctx *x, int code)
{
	for (size_t i = 0; i < x->nkeys; i++)
		if (!key_at(x, i)->skip)
			key_fail(x, i, code);
}

/* *out stays valid (its map mapped) until the call ends. */
static int peer_of(struct xfer_ctx *x, const struct xfer_target *t, struct peer *out)
{
	unsigned n = x->nseen < SEEN ? x->nseen : SEEN;
	struct peer *slot;
	int rc;

	for (unsigned i = 0; i < n; i++) {
		if (x->seen[i].rank == t->rank && x->seen[i].incarnation == t->incarnation) {
			*out = x->seen[i];
			return 0;
		}
	}
	slot = &x->seen[x->nseen % SEEN];
	if (x->nseen >= SEEN)
		peer_release(slot); /* a copy in flight holds its own reference through used[] */
	rc = peers_get(x->s, t->rank, t->incarnation, slot);
	if (rc) {
		memset(slot, 0, sizeof(*slot));
		return rc;
	}
	x->nseen++;
	*out = *slot;
	return 0;
}

/* Posts every target of key i (a read has one); with landed, reports it at once if nothing is left in flight. */
static void post_key(struct xfer_ctx *x, struct fab_batch *b, int write, size_t i)
{
	struct xfer_key *k = key_at(x, i);

	if (x->pending)
		x->pending[i] = POSTING;
	for (uint32_t r = 0; r < k->ntargets && k->result == 0; r++) {
		struct peer p;
		int rc = peer_of(x, &k->targets[r], &p);

		/* after peer_of: it may have waited for a new meta connection and learned the pool's new key from it */
		if (rc == 0 && write && x->hook && x->hook->lease)
			rc = x->hook->lease(x->hook->arg, i);
		if (rc == 0 && p.self && !in_pool(k, &k->targets[r], x->s->pool.size))
			rc = MMC_INTERNAL_ERROR;
		else if (rc == 0 && p.self)
			rc = copy_pieces(x, (char *)x->s->pool.base + k->targets[r].offset, write, i, &p,
			                 &k->targets[r]);
		else if (rc == 0 && p.map)
			rc = copy_host(x, write, i, &p, &k->targets[r]);
		else if (rc == 0)
			rc = post_pieces(x, b, write, (uint32_t)i, &p, &k->targets[r]);
		if (rc)
			k->result = rc;
	}
	if (x->pending && (x->pending[i] -= POSTING) == 0)
		key_landed(x, i);
}

/*
 * A key whose RMA failed forgets its peers' coordinates, so that the next call asks the meta server for them again:
 * the pool may have been registered again under a new key (its service reconnected) while this store's own
 * connection stayed up, and nothing else would tell it. Not once the call's own deadline has passed: its keys
 * timed out for the caller's sake, not the peer's, and a reader that misses deadlines under load would otherwise
 * ask the meta server again for every peer it missed them on.
 */
static void forget_failed_peers(struct xfer_ctx *x, uint64_t deadline_ms)
{
	bool late = deadline_ms && clock_ms() >= deadline_ms;

	for (size_t i = 0; i < x->nkeys; i++) {
		const struct xfer_key *k = key_at(x, i);

		if (k->skip || (k->result != MMC_ERROR && (k->result != MMC_TIMEOUT || late)))
			continue;
		for (uint32_t r = 0; r < k->ntargets; r++)
			peers_forget(x->s, k->targets[r].rank,
			             NULL); /* RMA entries only: a mapped pool checks itself */
	}
}

static size_t call_bytes(const struct xfer_ctx *x)
{
	size_t total = 0;

	for (size_t i = 0; i < x->nkeys; i++) {
		const struct xfer_key *k = key_at(x, i);

		for (uint32_t j = 0; !k->skip && j < k->npieces; j++)
			total += k->pieces[j].len;
	}
	return total;
}

/* Room for the call's per-key and per-peer bookkeeping; false when out of memory. */
static bool ctx_alloc(struct xfer_ctx *x, int write)
{
	size_t targets = 0;

	if (!write && x->hook && x->hook->landed && !(x->pending = calloc(x->nkeys, sizeof(*x->pending))))
		return false;
	if (!write || !fabric_fence_by_read(x->s->fab))
		return true;
	for (size_t i = 0; i < x->nkeys; i++)
		targets += key_at(x, i)->skip ? 0 : key_at(x, i)->ntargets;
	x->fences = targets <= FENCES ? x->fence_buf : malloc(targets * sizeof(*x->fences));
	return x->fences != NULL;
}

void xfer_run(struct mmc_store *s, int write, struct xfer_key *keys, size_t n, size_t stride,
              const struct xfer_hook *hook)
{
	xfer_run_until(s, write, keys, n, stride, hook, 0);
}

void xfer_run_until(struct mmc_store *s, int write, struct xfer_key *keys, size_t n, size_t stride,
                    const struct xfer_hook *hook, uint64_t deadline_ms)
{
	struct fab_batch b;
	struct xfer_ctx x = {
	    .s = s, .keys = keys, .nkeys = n, .stride = stride, .hook = hook, .deadline_ms = deadline_ms};

	for (size_t i = 0; i < n; i++)
		key_at(&x, i)->result = 0;
	peers_sweep(s);
	x.stream = write || copy_should_stream(call_bytes(&x));
	if (!ctx_alloc(&x, write) || fab_batch_init(&b, s->fab, WINDOW, s->conf.c.rma_timeout_ms, op_done, &x)) {
		fail_keys(&x, MMC_MALLOC_FAILED);
		goto out;
	}
	fab_batch_deadline(&b, deadline_ms);
	if (write && hook && hook->lease)
		fab_batch_lease(&b, post_lease, &x);
	pthread_rwlock_rdlock(&s->regs.lock);
	for (size_t i = 0; i < n; i++) {
		if (key_at(&x, i)->skip)
			continue;
		if (deadline_ms && clock_ms() >= deadline_ms) /* a host path copy would start late: start none */
			key_at(&x, i)->result = MMC_TIMEOUT;
		else
			post_key(&x, &b, write, i);
	}
	if (x.fences)
		post_fences(&x, &b);
	if (hook && hook->posted)
		hook->posted(hook->arg);
	fab_batch_wait(&b);
	fab_batch_fini(&b);
	fences_check(&x);
	host_check(&x);
	forget_failed_peers(&x, deadline_ms);
	pthread_rwlock_unlock(&s->regs.lock);
	for (size_t i = 0; i < x.temp.n; i++)
		fabric_mr_close(&x.temp.v[i].mr);
	free(x.temp.v);
out:
	for (unsigned i = 0; i < (x.nseen < SEEN ? x.nseen : SEEN); i++)
		peer_release(&x.seen[i]);
	free(x.used_by);
	free(x.pending);
	if (x.fences != x.fence_buf)
		free(x.fences);
}
