/* One workload thread of a worker process, and the owner's record of its keys. Private to the worker. */
#ifndef MMC_SOAK_THREAD_H
#define MMC_SOAK_THREAD_H

#include <mmc/mmc.h>

#include "soak.h"

/*
 * What the owner knows of one of its keys. Only the owner puts or removes it, one call at a time, so after each
 * call it knows which versions a read may legitimately return: those in [lo, hi]. (An object is written once: a
 * put of a key that still exists answers MMC_OK and keeps the older version, hence a range.)
 */
struct key_state {
	uint64_t lo;      /* oldest legitimate version: the first put since the last acknowledged remove; 0: none */
	uint64_t hi;      /* newest version put (acknowledged or not) */
	uint64_t gone_hi; /* hi when the key was last seen absent: a later hit at or below it is a resurrection */
	bool removed;     /* an acknowledged remove and no put since: any hit is a stale read */
	bool doubt;       /* hi's put failed (timeout, lost server, MMC_META_BACKUP_ERROR): it may or may not exist */
	uint32_t hi_from_ms, hi_to_ms; /* when hi's put was called and returned, from the start of the run */
};

enum soak_class {
	CLASS_CORRECT,
	CLASS_CORRUPT,
	CLASS_STALE,
	CLASS_OLDER,
	CLASS_RESURRECTED,
	CLASS_DOUBTFUL,
};

struct soak_thread {
	const struct soak_run *run;
	mmc_store *s;
	uint32_t writer;
	uint32_t counter; /* of this writer's versions */
	uint64_t rng;
	struct key_state *own; /* run->keys.per_writer entries */
	unsigned char *putbuf, *getbuf;
	size_t budget; /* bytes of each buffer: bounds the bytes of one batch */
	struct soak_counts *c;
	uint32_t gen; /* the last SOAK_VERIFY this thread swept for */
	int notes;    /* violations described so far */
};

static inline uint64_t soak_rand(struct soak_thread *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

/* ---- the owner's record (soak_check.c) ---- */
void state_put(struct key_state *s, uint64_t version, int rc, uint32_t from_ms, uint32_t to_ms);
void state_remove(struct key_state *s, int rc);
/* Classifies one read result (rc, and on MMC_OK the bytes in buf) and counts it. */
void soak_check_read(struct soak_thread *t, const struct soak_key *k, enum soak_op op, int rc, const void *buf);

/* ---- operations (soak_ops.c) ---- */
/* One step of the workload in phase ph. */
void soak_step(struct soak_thread *t, enum soak_phase ph);
/* Reads every key this thread owns and its share of the shared keys once. */
void soak_sweep(struct soak_thread *t);

#endif
