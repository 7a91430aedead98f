/* The private side of mmc_store, shared by the lib/store_*.c files. */
#ifndef MMC_STORE_H
#define MMC_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fabric.h"
#include "local_config.h"
#include "meta_conn.h"
#include "peers.h"
#include "pool.h"
#include "regbuf.h"
#include "wire_limits.h"

/* Registrations of the pool kept at once: the current key and the older ones a kept rejoin leaves honored. */
#define POOL_KEYS 4

enum store_state { ST_CREATED = 0, ST_SETUP = 1, ST_READY = 2 };

struct gva_tracker;  /* store_gva.c */
struct extent_cache; /* extent.c */
struct ssd;          /* ssd.c */

struct mmc_store {
	pthread_mutex_t life; /* setup / init / teardown */
	_Atomic int state;
	_Atomic unsigned calls; /* calls in progress (STORE_CALL): mmc_teardown waits for them */
	unsigned fork_gen;      /* the fork generation it was made in (fork_guard.h): another is a forked child's */
	struct client_conf conf;
	size_t key_max; /* MMC_KEY_MAX, less a tenant's tag (0xFF name 0xFF) the server puts before each key */
	bool has_conf;
	bool init_bm;
	uint32_t device_id;

	struct meta_conn *meta;
	struct fabric *fab;
	struct regbufs regs;
	struct peers peers;

	/* local service */
	struct pool pool;
	/* the pool's registrations: [0] the key the meta server knows, a new one at each attempt to register again;
	 * the others older ones still honored while their grants may stand (fresh_key) */
	struct fab_mr pool_mr[POOL_KEYS];
	unsigned npool_mr;
	uint64_t confirmed_key; /* the key the last Register answer published: what stores have cached */
	uint64_t server_run;    /* the meta server process the pool's key was published to */
	struct ssd *ssd;        /* the SSD tier, when configured */
	/* The local service's identity: written by mmc_init and by the keeper thread when it rejoins after a
	 * reconnect, read by any caller (mmc_get_local_service_id, the peer cache's "is this my pool"). A leaf lock. */
	pthread_mutex_t ident_lock;
	bool registered;
	uint32_t rank;
	uint64_t incarnation;
	/* what a rejoin of (rank, incarnation) must present: from the Register reply; only the registering thread
	 * (init, then the keeper) reads or writes it */
	uint8_t secret[MMC_WIRE_MAC];
	size_t secret_len;

	struct gva_tracker *gva;
	struct extent_cache *extents; /* extent.c: allocation extents of one-round-trip puts */
};

/* Reads the local service's identity under its lock; false (and *rank, *incarnation untouched) when not
 * registered. */
bool store_ident(struct mmc_store *s, uint32_t *rank, uint64_t *incarnation);

/* Common checks of every data and metadata call. */
int store_check_ready(const struct mmc_store *s);

/* Whether a call may go again after a lost connection (retry_ms, and the store not being torn down). */
bool store_retries(const struct mmc_store *s);

/*
 * A call in progress on a store, from the first line of every exported call but the life-cycle ones to its return
 * (the cleanup attribute ends it on every return path). mmc_teardown takes the store out of ST_READY and then waits
 * until no call is in progress, so that another thread's call never finds the store's parts freed under it: it has
 * either begun before (and is waited for) or sees the state and fails with MMC_CLIENT_NOT_INIT. Two atomic
 * operations per call, none per key.
 */
struct store_call {
	struct mmc_store *s;
};

struct store_call store_call_begin(struct mmc_store *s);
void store_call_end(struct store_call *c);

#define STORE_CALL(s) struct store_call store_call_ __attribute__((cleanup(store_call_end))) = store_call_begin(s)
bool store_key_ok(const mmc_store *s, const char *key);

#endif
