/*
 * mmc-soak: a long-running workload against a real mmc-metaserver and several local services (issue 12). Every
 * value is a function of (key, version), every successful read is verified byte for byte, and the run SIGKILLs one
 * worker and, several times, the meta server (restarted on the same data dir and port). docs/testing.md explains
 * the counters.
 *
 * Processes: the parent starts the server and forks --procs workers; each worker is one local service driven by
 * --threads threads. They share one anonymous MAP_SHARED region (struct soak_shm): the parent steers the phases
 * there, and each thread keeps its counters in its own slot, which the parent sums once the workers are gone.
 */
#ifndef MMC_SOAK_H
#define MMC_SOAK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SOAK_MAX_PROCS   16
#define SOAK_MAX_THREADS 16
#define SOAK_MAX_WRITERS (SOAK_MAX_PROCS * SOAK_MAX_THREADS)
#define SOAK_BATCH       64         /* most keys in one batch call of the workload */
#define SOAK_LAYERS      4          /* most layers per key in the layer calls */
#define SOAK_HEADER      16         /* version (8 bytes), then key id (8 bytes) */
#define SOAK_SHARED      UINT32_MAX /* owner of the shared keys */
#define SOAK_NOTES       8          /* violations a thread describes on stderr; the rest are only counted */

struct soak_opts {
	int seconds, procs, threads, meta_kills;
	uint64_t pool_bytes, min_size, max_size;
	double kill_worker_at; /* seconds after the start; < 0: no worker is killed */
	double key_factor;     /* bytes of distinct keys / bytes of all pools */
	uint64_t seed;
	unsigned evict_high, evict_low; /* the server's eviction thresholds, %; 0: its defaults */
	int stalls;                     /* times a worker is SIGSTOPped for stall_ms, then SIGCONTinued */
	unsigned stall_ms;
	unsigned rma_timeout_ms; /* the workers' ock.mmc.client.rma_timeout_ms */
	bool plain_buffers;      /* odd threads leave their buffers unregistered (even ones register theirs) */
	char protocol[16];       /* "host_tcp" or "host_shm" */
	const char *metaserver;
	bool verbose;
};

/* The key space: the same in every process, derived from the options alone. */
struct soak_keys {
	uint32_t writers;    /* procs * threads; writer w is thread w % threads of process w / threads */
	uint32_t per_writer; /* keys each writer owns: only it puts and removes them */
	uint32_t shared;     /* keys everybody puts, removes and reads */
	uint64_t seed, min_size, max_size;
};

struct soak_key {
	uint32_t owner; /* a writer, or SOAK_SHARED */
	uint32_t idx;
	uint64_t id;   /* stored in every value of the key (bytes 8..15) */
	uint64_t size; /* every version of a key has the same size, so any reader knows it */
	char name[48];
};

/* ---- keys and values (soak_value.c) ---- */
void soak_keys_init(struct soak_keys *k, const struct soak_opts *o);
void soak_key_make(const struct soak_keys *k, uint32_t owner, uint32_t idx, struct soak_key *out);
/* version = writer << 32 | counter: a reader can tell whose write it sees */
static inline uint64_t soak_version(uint32_t writer, uint32_t counter)
{
	return (uint64_t)writer << 32 | counter;
}
static inline uint32_t soak_version_writer(uint64_t v)
{
	return (uint32_t)(v >> 32);
}
void soak_value_fill(void *buf, const struct soak_key *key, uint64_t version);

enum soak_bytes {
	SOAK_BYTES_OK,
	SOAK_BYTES_OTHER_KEY, /* the header names another key: someone else's bytes */
	SOAK_BYTES_TORN,      /* header fine, body is not that version's */
};
/* Checks buf against the key; *version gets the header's version, *bad the first wrong byte. */
enum soak_bytes soak_value_check(const void *buf, const struct soak_key *key, uint64_t *version, size_t *bad);

/* ---- the phases the parent steers ---- */
enum soak_phase {
	SOAK_RUN,    /* the mixed workload */
	SOAK_STORM,  /* puts only, big batches: eviction frees and reuses space all the time (a meta kill lands here) */
	SOAK_HOLD,   /* reads only: the server restarted, services are rejoining */
	SOAK_VERIFY, /* every thread reads all its keys once (then holds) */
	SOAK_STOP,
};

/* Operation kinds, counted per call. */
enum soak_op {
	OP_PUT,
	OP_BATCH_PUT,
	OP_BATCH_PUT_LAYERS,
	OP_GET,
	OP_BATCH_GET,
	OP_BATCH_GET_LAYERS,
	OP_REMOVE,
	OP_BATCH_REMOVE,
	OP_KINDS,
};

/* Result codes, counted per key: the MMC_* table, then "other". */
#define SOAK_CODES 30

/* What a thread counted: written by that thread only, read by the parent after the workers exited. */
struct soak_counts {
	uint64_t calls[OP_KINDS];
	uint64_t keys[OP_KINDS];
	uint64_t codes[OP_KINDS][SOAK_CODES];
	uint64_t other_code[OP_KINDS]; /* the last code that has no slot */
	uint64_t bytes_put, bytes_read;
	uint64_t correct;     /* MMC_OK and the right bytes */
	uint64_t miss;        /* MMC_OBJECT_NOT_EXISTS */
	uint64_t corrupt;     /* MMC_OK, bytes not any version of that key */
	uint64_t stale;       /* MMC_OK on the owner's key after its acknowledged remove, nothing put since */
	uint64_t older;       /* MMC_OK with a version from before the owner's last acknowledged remove */
	uint64_t resurrected; /* an owner's key seen absent and then back with an acknowledged version */
	uint64_t doubtful;    /* an owner's key returned a version whose put failed: its outcome was unknown */
	uint64_t corrupt_op[OP_KINDS];
	uint64_t sweeps; /* post-restart verification passes done */
	int init_rc;     /* mmc_init() of the process (slot of its thread 0) */
};

struct soak_shm {
	_Atomic int phase;
	_Atomic int go;            /* set once every worker has joined: the workload starts together */
	_Atomic int ready;         /* workers whose store is up */
	_Atomic uint32_t gen;      /* bumped for each SOAK_VERIFY */
	_Atomic uint32_t swept;    /* threads done with the current SOAK_VERIFY */
	_Atomic uint64_t since_ms; /* CLOCK_MONOTONIC ms of the last meta restart (for the violation notes) */
	_Atomic uint32_t dead;     /* bit p: worker p is gone (its keys are swept by the others) */
	uint64_t t0_ms;            /* CLOCK_MONOTONIC ms of the start of the workload */
	struct soak_counts slot[SOAK_MAX_WRITERS];
};

/* The run as every process sees it. */
struct soak_run {
	struct soak_opts opts;
	struct soak_keys keys;
	struct soak_shm *shm;
	const char *meta_url;
};

/* ---- workers (soak_worker.c) ---- */
/* The body of worker process p: never returns. */
void soak_worker_main(const struct soak_run *run, int p) __attribute__((noreturn));

/* ---- counters (soak_report.c) ---- */
int soak_code_slot(int code);
int soak_slot_code(int slot);
void soak_count(struct soak_counts *c, enum soak_op op, int code);
const char *soak_op_name(enum soak_op op);
/* Sums the slots, prints the summary; returns the number of violations (corrupt + stale + older). */
uint64_t soak_report(const struct soak_run *run, uint64_t evictions, struct soak_counts *total);

uint64_t soak_now_ms(void);

#endif
