/* Store life cycle: create, setup, init (join as a local service), teardown, destroy; buffer registration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "extent.h"
#include "fork_guard.h"
#include "host_id.h"
#include "lg.h"
#include "mmc/mmc.h"
#include "peers.h"
#include "ssd.h"
#include "store.h"
#include "store_gva.h"
#include "wire.h"

_Static_assert(MMC_WORLD_SIZE_MAX == MMC_RANKS_MAX && MMC_REPLICA_MAX == MMC_WIRE_REPLICAS &&
                   MMC_KEY_MAX == MMC_WIRE_KEY_MAX && MMC_BATCH_MAX == MMC_WIRE_KEYS_MAX,
               "the header's limits are the wire's");

mmc_store *mmc_create(void)
{
	mmc_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	fork_guard_init();
	s->fork_gen = fork_generation();
	pthread_mutex_init(&s->life, NULL);
	pthread_mutex_init(&s->ident_lock, NULL);
	atomic_init(&s->state, ST_CREATED);
	return s;
}

bool store_ident(struct mmc_store *s, uint32_t *rank, uint64_t *incarnation)
{
	bool registered;

	pthread_mutex_lock(&s->ident_lock);
	registered = s->registered;
	if (registered) {
		*rank = s->rank;
		*incarnation = s->incarnation;
	}
	pthread_mutex_unlock(&s->ident_lock);
	return registered;
}

static void ident_set(struct mmc_store *s, bool registered, uint32_t rank, uint64_t incarnation)
{
	pthread_mutex_lock(&s->ident_lock);
	s->registered = registered;
	s->rank = rank;
	s->incarnation = incarnation;
	pthread_mutex_unlock(&s->ident_lock);
}

/*
 * Whether s is a copy a child forked without exec got of its parent's store. Its threads did not come along, its
 * connection and endpoint are the parent's (a frame sent on them would be taken for the parent's), and its locks
 * may have been held by a parent thread at the fork: nothing in it may be touched, only left (logged once).
 */
static bool forked_copy(const struct mmc_store *s, const char *call)
{
	static atomic_bool told;

	if (s->fork_gen == fork_generation())
		return false;
	if (!atomic_exchange(&told, true))
		lg_warn(
		    "%s: this store was made before this process was forked from its parent; it is the parent's and "
		    "cannot be used or torn down here: a child makes a store of its own",
		    call);
	return true;
}

struct store_call store_call_begin(struct mmc_store *s)
{
	if (s)
		atomic_fetch_add(&s->calls, 1); /* before store_check_ready loads the state: see mmc_teardown */
	return (struct store_call){s};
}

void store_call_end(struct store_call *c)
{
	if (c->s)
		atomic_fetch_sub(&c->s->calls, 1);
}

/* Waits until no call is in progress on s (its state no longer lets new ones in). A call is bounded by timeout_ms and
 * rma_timeout_ms, except a transfer stalled on a provider that cannot close a connection, which waits for its peer
 * (mmc.h's caveats), and this with it. A teardown is rare: a short sleep between looks. */
static void wait_calls(struct mmc_store *s)
{
	while (atomic_load(&s->calls))
		nanosleep(&(struct timespec){0, 1000000}, NULL);
}

bool store_retries(const struct mmc_store *s)
{
	return s->conf.c.retry_ms && atomic_load(&s->state) == ST_READY;
}

int store_check_ready(const struct mmc_store *s)
{
	if (!s)
		return MMC_INVALID_PARAM;
	if (forked_copy(s, "mmc"))
		return MMC_CLIENT_NOT_INIT;
	return atomic_load(&s->state) == ST_READY ? 0 : MMC_CLIENT_NOT_INIT;
}

bool store_key_ok(const mmc_store *s, const char *key)
{
	return key && key[0] && memchr(key, '\0', s->key_max + 1);
}

/* A tenant's keys are stored after its tag: a key the tag would push past MMC_KEY_MAX is refused here, with the
 * call, rather than alone by the server while the rest of its batch is stored. */
static size_t key_max_of(const struct client_conf *c)
{
	const char *t = c->cred.tenant;

	return t[0] && strcmp(t, "default") != 0 ? MMC_KEY_MAX - 2 - strlen(t) : MMC_KEY_MAX;
}

/* Resolves cfg (NULL: defaults and $MMC_LOCAL_CONFIG_PATH) and, only when it is good, makes it the store's. The
 * store's log level replaces its previous one in the process-wide rule (lg_level_hold). Caller holds life. */
static int configure(struct mmc_store *s, const mmc_local_config *cfg, const char *who)
{
	struct client_conf *next = malloc(sizeof(*next));
	char err[512];
	int rc;

	if (!next)
		return MMC_MALLOC_FAILED;
	rc = local_config_resolve(cfg, next, err, sizeof(err));
	if (rc) {
		lg_error("%s: %s", who, err);
		free(next);
		return rc;
	}
	if (s->has_conf)
		lg_level_release(s->conf.log_level);
	s->conf = *next;
	s->key_max = key_max_of(&s->conf);
	free(next);
	lg_level_hold(s->conf.log_level);
	s->has_conf = true;
	return 0;
}

static void unconfigure(struct mmc_store *s)
{
	if (s->has_conf)
		lg_level_release(s->conf.log_level);
	s->has_conf = false;
}

int mmc_setup(mmc_store *s, const mmc_local_config *cfg)
{
	int rc;

	if (!s || forked_copy(s, "mmc_setup"))
		return MMC_INVALID_PARAM;
	pthread_mutex_lock(&s->life);
	if (atomic_load(&s->state) == ST_READY) {
		rc = MMC_REPEAT_CALL;
		goto out;
	}
	rc = configure(s, cfg, "mmc_setup");
	if (rc == 0)
		atomic_store(&s->state, ST_SETUP);
out:
	pthread_mutex_unlock(&s->life);
	return rc;
}

static int decode_register(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	mmc_ServiceInfo *info = c->arg;
	pb_istream_t st = pb_istream_from_buffer(data, len);

	if (body != WB_SERVICE_INFO || !pb_decode(&st, mmc_ServiceInfo_fields, info))
		return MMC_INTERNAL_ERROR;
	return info->result;
}

/* Joins (or rejoins, with the rank and incarnation we had) the cluster as a local service; *kept: it rejoined as the
 * same rank and incarnation. */
static int register_service(struct mmc_store *s, bool rejoin, bool *kept)
{
	mmc_Register r = mmc_Register_init_zero;
	mmc_ServiceInfo info = mmc_ServiceInfo_init_zero;
	struct mcall c = {.decode = decode_register, .arg = &info, .bypass = true};
	size_t alen;
	const void *addr = fabric_addr(s->fab, &alen);
	uint32_t rank = 0;
	uint64_t incarnation = 0;
	int rc;

	/* a rejoin asks for the identity it had; only this thread (init, then the keeper) ever changes it */
	if (!rejoin || !store_ident(s, &rank, &incarnation))
		rejoin = false;
	r.rank = rejoin ? (int32_t)rank : -1;
	r.incarnation = rejoin ? incarnation : 0;
	if (rejoin) {
		memcpy(r.secret.bytes, s->secret, s->secret_len);
		r.secret.size = (pb_size_t)s->secret_len;
	}
	memcpy(r.fabric_addr.bytes, addr, alen);
	r.fabric_addr.size = (pb_size_t)alen;
	snprintf(r.provider, sizeof(r.provider), "%s", fabric_provider(s->fab));
	r.segments_count = 1;
	r.segments[0].media = MMC_MEDIA_DRAM;
	r.segments[0].size = s->pool.size;
	r.segments[0].base_addr = fabric_virt_addr(s->fab) ? (uint64_t)(uintptr_t)s->pool.base : 0;
	r.segments[0].key = s->pool_mr[0].key;
	if (s->pool.shared) { /* same-host peers map the file instead of using the fabric (host_map.h) */
		r.segments[0].host_key = atomic_load(&s->pool.host.hdr->key);
		snprintf(r.pool_path, sizeof(r.pool_path), "%s", s->pool.host.path);
		snprintf(r.boot_id, sizeof(r.boot_id), "%s", host_boot_id());
		/* until the reply names our incarnation, no same-host peer may copy (a late writer of an old one) */
		host_pool_set_incarnation(&s->pool.host, 0);
	}
	if (s->ssd) { /* not reachable by RMA: the service itself moves its bytes */
		r.segments_count = 2;
		r.segments[1].media = MMC_MEDIA_SSD;
		r.segments[1].size = ssd_size(s->ssd);
		snprintf(r.ssd_path, sizeof(r.ssd_path), "%s", s->conf.c.ssd_path);
		memcpy(r.ssd_id.bytes, ssd_id(s->ssd), MMC_WIRE_SSD_ID);
		r.ssd_id.size = MMC_WIRE_SSD_ID;
	}
	r.world_size = s->conf.c.world_size;
	rc = meta_call(s->meta, WB_REGISTER, mmc_Register_fields, &r, &c);
	if (rc)
		return rc;
	*kept = rejoin && info.rank == rank && info.incarnation == incarnation;
	if (rejoin && !*kept)
		lg_warn("the meta server did not keep local service %u (incarnation %llu); joined again as %u", rank,
		        (unsigned long long)incarnation, info.rank);
	memcpy(s->secret, info.secret.bytes, info.secret.size);
	s->secret_len = info.secret.size;
	ident_set(s, true, info.rank, info.incarnation);
	if (s->pool.shared)
		host_pool_set_incarnation(&s->pool.host, info.incarnation);
	return 0;
}

/*
 * After a lost connection, space granted before it may go to other keys once this service is back, and a write
 * granted before (a put that waited, a GVA copy into a range malloc'ed before) must not land there. A restarted meta
 * server knows nothing of its predecessor's placements; the same server unmounted this service if it saw the
 * connection close (or the heartbeats stop), and then it joins again as a new incarnation whose whole pool is free.
 * Either way the keys the grants were made under are closed before anyone else can be given that space: the
 * provider refuses them at this end (tcp, verbs), and other stores learn the new one with the new server or
 * incarnation.
 *
 * But a server that had not seen the connection close yet keeps the service as it was (a half-open connection): its
 * grants stand, and stores that never lost their own connection keep using the old key. So every attempt to
 * register again does so under a fresh key, and keeps the older ones open (up to POOL_KEYS in all) until the
 * server's answer says which case it is: a new incarnation closes them, the same one leaves them open. Keeper thread.
 */
static void close_old_keys(struct mmc_store *s)
{
	for (unsigned i = 1; i < s->npool_mr; i++)
		fabric_mr_close(&s->pool_mr[i]);
	s->npool_mr = s->npool_mr ? 1 : 0;
}

static void close_all_keys(struct mmc_store *s)
{
	close_old_keys(s);
	if (s->npool_mr)
		fabric_mr_close(&s->pool_mr[0]);
	s->npool_mr = 0;
}

static void drop_unconfirmed(struct mmc_store *s)
{
	unsigned i = s->npool_mr - 1;

	while (i > 1 && s->pool_mr[i].key == s->confirmed_key)
		i--;
	fabric_mr_close(&s->pool_mr[i]);
	memmove(&s->pool_mr[i], &s->pool_mr[i + 1], (s->npool_mr - i - 1) * sizeof(s->pool_mr[0]));
	s->npool_mr--;
}

/*
 * A key of this attempt's own, in pool_mr[0]. The keys kept open beside it may be what the provider cannot afford
 * (verbs pins the pool again for each, against RLIMIT_MEMLOCK): then they are closed first, and grants under them
 * fail. false: no key could be made, and the service must not register (under an old key, a write granted before
 * would land in space given to new puts).
 */
static bool fresh_key(struct mmc_store *s)
{
	struct fab_mr fresh;

	if (fabric_mr_reg(s->fab, s->pool.base, s->pool.size, true, &fresh)) {
		if (!s->npool_mr)
			return false;
		lg_warn("cannot register the pool beside its %u older keys; closing them first", s->npool_mr);
		close_all_keys(s);
		if (fabric_mr_reg(s->fab, s->pool.base, s->pool.size, true, &fresh))
			return false;
	}
	if (s->npool_mr && fresh.key == s->pool_mr[0].key)
		lg_warn("the provider gave the pool the same key again: writes granted before the lost meta connection "
		        "are not fenced");
	if (s->npool_mr == POOL_KEYS) /* full: the oldest key no answer confirmed (a Register whose answer was lost) */
		drop_unconfirmed(s);
	memmove(&s->pool_mr[1], &s->pool_mr[0], s->npool_mr * sizeof(s->pool_mr[0]));
	s->pool_mr[0] = fresh;
	s->npool_mr++;
	return true;
}

static int on_reconnect(void *owner, const struct meta_session *sess)
{
	struct mmc_store *s = owner;
	bool kept = false;
	int rc;

	if (!s->init_bm)
		return 0;
	/* sess is this hello's (meta_conn_session() gives the last connection's until this returns); another run: no
	 * grant made before stands, and no old key needs to stay open beside the fresh one */
	if (sess->server_run != s->server_run) {
		close_all_keys(s);
		if (s->pool.shared) /* the same fence for same-host peers, whose copies check the header's key */
			host_pool_rekey(&s->pool.host);
		s->server_run = sess->server_run;
	}
	if (!fresh_key(s)) {
		lg_error("cannot register the pool under a fresh key; the local service rejoins once it can");
		return MMC_ERROR;
	}
	ssd_fence(s->ssd); /* a move the lost server asked for must not land after the rejoin */
	if ((rc = register_service(s, true, &kept))) {
		/* the server may have handled it and only its answer been lost: a new incarnation, which takes puts
		 * once its grace ends, while grants on the old one stand under the old keys. They go now; had the
		 * server kept the service instead, writes under them fail until the next attempt's answer names the
		 * fresh key. */
		close_old_keys(s);
		return rc;
	}
	/* unmounted: the new incarnation takes no puts for rejoin_write_grace_ms, time enough to close the old keys */
	if (!kept)
		close_old_keys(s);
	s->confirmed_key = s->pool_mr[0].key;
	return 0;
}

static int start_local_service(struct mmc_store *s)
{
	bool kept;
	int rc;

	if (s->conf.c.dram_size == 0) {
		lg_error("mmc_init: a local service needs dram_size > 0");
		return MMC_INVALID_PARAM;
	}
	if ((rc = pool_map(&s->pool, s->conf.c.dram_size, s->conf.host_path)))
		return rc;
	if (fabric_mr_reg(s->fab, s->pool.base, s->pool.size, true, &s->pool_mr[0]))
		return MMC_ERROR;
	s->npool_mr = 1;
	if (s->conf.c.ssd_path[0]) {
		if ((rc = ssd_open(&s->ssd, s->conf.c.ssd_path, s->conf.c.ssd_size)) ||
		    (rc = ssd_start(s->ssd, s->meta, s->pool.base, s->pool.size)))
			return rc;
		meta_conn_on_task(s->meta, ssd_on_task, s->ssd);
	}
	rc = register_service(s, false, &kept);
	s->confirmed_key = s->pool_mr[0].key;
	if (rc)
		lg_error("mmc_init: the meta server refused the local service: %s", mmc_strerror(rc));
	return rc;
}

static void stop_all(struct mmc_store *s)
{
	ssd_stop(s->ssd); /* its worker answers on the connection */
	meta_conn_close(s->meta);
	s->meta = NULL;
	ssd_close(s->ssd); /* after the connection: no task can arrive any more */
	s->ssd = NULL;
	gva_tracker_free(s->gva);
	s->gva = NULL;
	extent_cache_free(s->extents);
	s->extents = NULL;
	if (s->fab) {
		regbufs_fini(&s->regs);
		close_all_keys(s);
		peers_fini(&s->peers);
		fabric_close(s->fab);
		s->fab = NULL;
	}
	pool_unmap(&s->pool);
	ident_set(s, false, 0, 0);
}

static int init_locked(struct mmc_store *s, uint32_t device_id, bool init_bm)
{
	int rc;

	if (!s->has_conf && (rc = configure(s, NULL, "mmc_init")))
		return rc;
	s->init_bm = init_bm;
	s->device_id = device_id;
	if (!(s->gva = gva_tracker_new()) || !(s->extents = extent_cache_new()))
		return MMC_MALLOC_FAILED;
	if ((rc = fabric_open(&s->fab, s->conf.c.protocol, s->conf.c.hcom_url)))
		return rc;
	regbufs_init(&s->regs);
	peers_init(&s->peers);
	if ((rc = meta_conn_open(&s->meta, &s->conf))) {
		lg_error("mmc_init: cannot connect to the meta server at %s: %s", s->conf.c.meta_service_url,
		         mmc_strerror(rc));
		return rc;
	}
	if (init_bm) {
		struct meta_session sess;

		meta_conn_session(s->meta, &sess);
		s->server_run = sess.server_run;
		if ((rc = start_local_service(s)))
			return rc;
	}
	return meta_conn_start(s->meta, on_reconnect, s);
}

int mmc_init(mmc_store *s, uint32_t device_id, bool init_bm)
{
	int rc;

	if (!s || device_id > MMC_DEVICE_ID_MAX || forked_copy(s, "mmc_init"))
		return MMC_INVALID_PARAM;
	pthread_mutex_lock(&s->life);
	if (atomic_load(&s->state) == ST_READY) {
		/* a second init asking for another device or another role would be answered as if it were granted */
		uint32_t dev = s->device_id;
		bool bm = s->init_bm;

		pthread_mutex_unlock(&s->life);
		if (dev == device_id && bm == init_bm)
			return 0;
		lg_warn("init: the store is initialised with device_id=%u init_bm=%d; call mmc_teardown() first", dev,
		        bm);
		return MMC_INVALID_PARAM;
	}
	rc = init_locked(s, device_id, init_bm);
	if (rc)
		stop_all(s);
	else
		atomic_store(&s->state, ST_READY);
	pthread_mutex_unlock(&s->life);
	return rc;
}

int mmc_teardown(mmc_store *s)
{
	if (!s)
		return MMC_INVALID_PARAM;
	if (forked_copy(s, "mmc_teardown"))
		return MMC_CLIENT_NOT_INIT;
	pthread_mutex_lock(&s->life);
	if (atomic_load(&s->state) == ST_READY) {
		uint32_t rank;
		uint64_t incarnation;

		atomic_store(&s->state, ST_CREATED);
		meta_conn_closing(s->meta); /* none of them waits for a lost connection any more */
		wait_calls(s);              /* calls of other threads: they end before anything of the store is freed */
		if (store_ident(s, &rank, &incarnation)) {
			mmc_Unregister u = mmc_Unregister_init_zero;
			struct mcall c = {.decode = meta_decode_reply};

			meta_call(s->meta, WB_UNREGISTER, mmc_Unregister_fields, &u, &c);
		}
		stop_all(s);
	}
	atomic_store(&s->state, ST_CREATED);
	unconfigure(s);
	pthread_mutex_unlock(&s->life);
	return 0;
}

void mmc_destroy(mmc_store *s)
{
	if (!s || forked_copy(s, "mmc_destroy"))
		return; /* the child's copy of the parent's memory: the child's exit frees it */
	mmc_teardown(s);
	pthread_mutex_destroy(&s->ident_lock);
	pthread_mutex_destroy(&s->life);
	free(s);
}

int mmc_register_buffer(mmc_store *s, void *buf, size_t size)
{
	STORE_CALL(s);
	int rc = store_check_ready(s);

	if (rc)
		return rc;
	if (!buf || !size || size > UINTPTR_MAX - (uintptr_t)buf) /* a range that wraps matches every address */
		return MMC_INVALID_PARAM;
	return regbufs_add(&s->regs, s->fab, buf, size);
}

int mmc_unregister_buffer(mmc_store *s, void *buf, size_t size)
{
	STORE_CALL(s);
	int rc = store_check_ready(s);

	if (rc)
		return rc;
	if (!buf || !size)
		return MMC_INVALID_PARAM;
	return regbufs_del(&s->regs, buf, size);
}

int mmc_get_local_service_id(mmc_store *s, uint32_t *id)
{
	STORE_CALL(s);
	uint64_t incarnation;
	int rc;

	if (!s || !id)
		return MMC_INVALID_PARAM;
	if ((rc = store_check_ready(s)))
		return rc;
	/* a client-only store has no identity; a local service always has one while ready (a rejoin replaces it
	 * whole, under the lock) */
	if (!s->init_bm || !store_ident(s, id, &incarnation))
		return MMC_NOT_STARTED;
	return 0;
}
