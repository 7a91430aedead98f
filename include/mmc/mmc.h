/*
 * mmc — a distributed KV-cache store for LLM inference.
 *
 * This header is the whole contract of libmmc. It mirrors the MemCache ObjectStore API with plain C calls on an
 * opaque handle, so one process may hold several stores.
 *
 * Overview
 * --------
 * A store is created with mmc_create(), configured with mmc_setup() and started with mmc_init(). A store started
 * with init_bm = true maps a DRAM pool of mmc_local_config.dram_size bytes, registers it with libfabric and lends
 * it to the cluster as a *local service*; mmc-metaserver places objects in the pools of all local services. Bytes
 * move one-sided (RMA write on put, RMA read on get) between the caller's buffer and the pool that holds the
 * object; only metadata goes to the meta server.
 *
 * Keys are NUL-terminated strings of 1..255 bytes. An object is written once: putting a key that already exists
 * returns MMC_OK and keeps the first value.
 *
 * Return values
 * -------------
 * Every call returns MMC_OK (0) or a negative MMC_* code (never a positive errno). mmc_is_exist() returns 1 / 0 /
 * negative. Batch calls return 0 when the call was accepted and store one code per key in results[]; a negative
 * return rejects the whole call and every results[i] holds that code.
 *
 * Threading
 * ---------
 * Every call on a started store is thread-safe; calls from many threads run concurrently and share one meta
 * connection (requests are pipelined) and one fabric endpoint. mmc_setup(), mmc_init(), mmc_teardown() and
 * mmc_destroy() must not race with other calls on the same store.
 *
 * Caveats
 * -------
 * - After fork(), the child must not use a store created by the parent (threads, sockets and fabric resources do
 *   not survive fork); create a new one.
 * - A buffer passed to mmc_register_buffer() must stay mapped until mmc_unregister_buffer() or mmc_teardown().
 * - Data calls block until the bytes have moved or failed. Meta round trips are bounded by
 *   mmc_local_config.timeout_ms (default 60 s); waiting for a lost meta server is bounded by retry_ms.
 * - A read lease (taken implicitly by every get, explicitly by mmc_batch_add_lease()) pins the object's memory
 *   until it is released or expires; a reader whose lease expired before its copy finished gets MMC_LEASE_EXPIRED
 *   rather than bytes that may have been reused.
 * - With mmc_local_config.verify_checksum, a get whose bytes differ from the CRC32C its writer committed returns
 *   MMC_CHECKSUM_MISMATCH instead of wrong bytes; only put/get forms carry checksums, not the GVA flow.
 * - Without an accelerator, "device" buffers (the L in L2G / G2L) are host memory.
 */
#ifndef MMC_MMC_H
#define MMC_MMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mmc/mmc_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MMC_BUILDING_LIBRARY)
#define MMC_API __attribute__((visibility("default")))
#else
#define MMC_API
#endif

/** @name Error codes (the seed's table, plus MMC_LEASE_EXPIRED and MMC_CHECKSUM_MISMATCH) */
/**@{*/
#define MMC_OK                       0
#define MMC_ERROR                    (-1)
#define MMC_INVALID_PARAM            (-3000)
#define MMC_MALLOC_FAILED            (-3001)
#define MMC_NEW_OBJECT_FAILED        (-3002)
#define MMC_NOT_STARTED              (-3003)
#define MMC_TIMEOUT                  (-3004)
#define MMC_REPEAT_CALL              (-3005)
#define MMC_DUPLICATED_OBJECT        (-3006)
#define MMC_OBJECT_NOT_EXISTS        (-3007)
#define MMC_NOT_INITIALIZED          (-3008)
#define MMC_NET_SEQ_DUP              (-3009)
#define MMC_NET_SEQ_NOT_FOUND        (-3010)
#define MMC_ALREADY_NOTIFIED         (-3011)
#define MMC_INTERNAL_ERROR           (-3012)
#define MMC_EXCEED_CAPACITY          (-3013)
#define MMC_LINK_NOT_FOUND           (-3014)
#define MMC_NET_REQ_HANDLE_NOT_FOUND (-3015)
#define MMC_NOT_ENOUGH_MEMORY        (-3016)
#define MMC_NOT_CONNECTED_META       (-3017)
#define MMC_NOT_CONNECTED_LOCAL      (-3018)
#define MMC_CLIENT_NOT_INIT          (-3019)
#define MMC_UNMATCHED_STATE          (-3101)
#define MMC_UNMATCHED_KEY            (-3102)
#define MMC_UNMATCHED_RET            (-3103)
#define MMC_LEASE_NOT_EXPIRED        (-3104)
#define MMC_META_BACKUP_ERROR        (-3105) /**< the meta server could not make the change durable (LMDB commit failed) */
#define MMC_LEASE_EXPIRED            (-3106)
#define MMC_CHECKSUM_MISMATCH        (-3109) /**< mmc: the bytes read differ from the writer's checksum */
/**@}*/

/** @name Limits */
/**@{*/
#define MMC_KEY_MAX        255   /**< longest key in bytes, without the NUL */
#define MMC_BATCH_MAX      16384 /**< most keys in one batch call */
#define MMC_LAYERS_MAX     255   /**< most buffers per key in the layer calls */
#define MMC_REPLICA_MAX    8     /**< most replicas of one object */
#define MMC_URL_SIZE       1024
#define MMC_PROTOCOL_SIZE  64
#define MMC_LOG_LEVEL_SIZE 16
#define MMC_LOG_LINE_MAX   1024 /**< bytes of one log line handed to the log handler, with its NUL */
/**@}*/

/** @name Media */
/**@{*/
#define MMC_MEDIA_HBM  0
#define MMC_MEDIA_DRAM 1
#define MMC_MEDIA_SSD  2
/**@}*/

/**
 * @name Copy directions (the seed's smem_bm_copy_type values)
 * "L" is device-local memory, "H" host memory, "G" the global pool. Without an accelerator L and H are both host
 * memory. Puts accept the "to global" directions (L2G, H2G, L2GH, H2GH, AUTO), gets the "from global" ones (G2L, G2H,
 * GH2L, GH2H, AUTO); G2G is refused by put and get. mmc_batch_copy() accepts both sets and picks the way from it.
 */
/**@{*/
#define MMC_COPY_L2G  0
#define MMC_COPY_G2L  1
#define MMC_COPY_G2H  2
#define MMC_COPY_H2G  3
#define MMC_COPY_L2GH 4
#define MMC_COPY_GH2L 5
#define MMC_COPY_GH2H 6
#define MMC_COPY_H2GH 7
#define MMC_COPY_G2G  8
#define MMC_COPY_AUTO 9
/**@}*/

/** Log levels for mmc_set_log_handler() and mmc_local_config.log_level ("debug", "info", "warn", "error"). */
enum mmc_log_level { MMC_LOG_DEBUG = 0, MMC_LOG_INFO = 1, MMC_LOG_WARN = 2, MMC_LOG_ERROR = 3 };

/** A store: one client, and with init_bm one local service. Opaque. */
typedef struct mmc_store mmc_store;

/**
 * The layout of mmc_local_config this header describes. It grows by one whenever fields are appended; the library
 * accepts every version up to its own.
 */
#define MMC_LOCAL_CONFIG_VERSION 1

/**
 * Local configuration, mirroring the seed's local_config. Fill it with mmc_default_local_config() (or
 * mmc_local_config_init()) and override what you need; never build one from scratch.
 *
 * Versioned (libgit2 style): the first field, version, says which layout the caller was compiled with. Fields are
 * only ever appended, and each addition bumps MMC_LOCAL_CONFIG_VERSION. mmc_setup() reads only the bytes the
 * caller's version has and takes the built-in defaults for the fields added since, so a program built against an
 * older header keeps working with a newer library; a version the library does not know (0, garbage, or newer than
 * the library) is refused with MMC_INVALID_PARAM instead of being read past its end.
 */
typedef struct mmc_local_config {
	/** MMC_LOCAL_CONFIG_VERSION of the caller's header; set by mmc_default_local_config(). Always first. */
	uint32_t version;
	/** A `key = value` file with ock.mmc.* keys; when set, its values override the fields below. */
	char config_path[1024];
	/** Meta server, "tcp://host:port" (ock.mmc.meta_service_url). Default tcp://127.0.0.1:5000. */
	char meta_service_url[1024];
	/** Accepted for compatibility; mmc exchanges fabric addresses through the meta server. */
	char config_store_url[1024];
	/** "debug", "info", "warn" (default) or "error" (ock.mmc.log_level). The level is process-wide: the most
	 *  verbose of all configured stores' levels applies (see mmc_set_log_handler()). */
	char log_level[16];
	/** Most local services in the cluster, 1..1024 (ock.mmc.local_service.world_size). Default 256. */
	uint32_t world_size;
	/** "host_tcp", "host_shm", "host_rdma" or "auto" (ock.mmc.local_service.protocol). Default "auto". */
	char protocol[64];
	/** Fabric interface as "tcp://ip[:port]"; empty: the provider's choice (ock.mmc.local_service.hcom_url). */
	char hcom_url[1024];
	/** DRAM pool lent to the cluster, rounded up to 2 MiB (ock.mmc.local_service.dram.size). Default 1 GiB. */
	uint64_t dram_size;
	/** HBM pool; must be 0 without an accelerator (ock.mmc.local_service.hbm.size). */
	uint64_t hbm_size;
	/** Upper bound of dram_size over all processes, >= dram_size (ock.mmc.local_service.max.dram.size). */
	uint64_t max_dram_size;
	/** Upper bound of hbm_size over all processes (ock.mmc.local_service.max.hbm.size). */
	uint64_t max_hbm_size;
	/* ---- fields below are mmc additions; appended only ---- */
	/** Lease time for gets and GVA leases in ms; 0: the meta server's ock.mmc.meta.lease_ttl_ms. */
	uint64_t lease_ttl_ms;
	/** Bound on one meta round trip in ms (ock.mmc.client.timeout.seconds * 1000). Default 60000. */
	uint32_t timeout_ms;
	/** How long a call waits for a lost meta connection to come back, ms (ock.mmc.client.retry_milliseconds).
	 *  Default 0: fail at once with MMC_NOT_CONNECTED_META. */
	uint32_t retry_ms;
	/** Heartbeat period to the meta server in ms (ock.mmc.client.heartbeat_ms). Default 1000. */
	uint32_t heartbeat_ms;
	/** SSD tier backing file or block device (ock.mmc.local_service.ssd.path); empty: no SSD tier. */
	char ssd_path[1024];
	/** SSD tier size (ock.mmc.local_service.ssd.size). */
	uint64_t ssd_size;
	/** An RMA that makes no progress this long (its peer died mid-transfer), or that the provider will not take
	 *  this long (a peer that refuses connections), fails its key with MMC_TIMEOUT
	 *  (ock.mmc.client.rma_timeout_ms). Default 10000. */
	uint32_t rma_timeout_ms;
	/** End-to-end object checksums (ock.mmc.client.verify_checksum). Default false. When true, every put computes
	 *  the CRC32C of the object's bytes (all layers, in order, so a get may split them differently) and commits
	 *  it with the object; every get of an object that has a checksum recomputes it over the bytes received and
	 *  fails the key with MMC_CHECKSUM_MISMATCH when they differ. Objects written without a checksum are read
	 *  unverified. The GVA flow (mmc_batch_malloc(), mmc_batch_copy(), mmc_batch_write_finish()) neither writes
	 *  nor checks one. Costs one pass over the bytes per put and per get (docs/performance.md). */
	bool verify_checksum;
} mmc_local_config;

/** Replica policy of a put. Zero-initialised means one replica placed by policy. */
typedef struct mmc_replicate_config {
	uint16_t replica_num;                   /**< 1..8; 0 means 1 */
	uint16_t preferred_count;               /**< entries used in preferred_local_service_ids, <= replica_num */
	int32_t preferred_local_service_ids[8]; /**< each listed service gets a replica */
} mmc_replicate_config;

/** What the meta server knows of a key. size == 0 means the key is absent. */
typedef struct mmc_key_info {
	uint64_t size;     /**< object bytes */
	uint32_t blob_num; /**< replicas (entries used below) */
	uint32_t loc[8];   /**< local service id of each replica */
	uint16_t type[8];  /**< media of each replica (MMC_MEDIA_*) */
	uint64_t gva[8];   /**< global address of each replica (see mmc_batch_copy()) */
} mmc_key_info;

/** Log handler: level is an mmc_log_level, msg a NUL-terminated line without newline, valid during the call. */
typedef void (*mmc_log_fn)(int level, const char *msg);

/**
 * Fills *cfg with the built-in defaults of layout `version` and sets cfg->version: meta tcp://127.0.0.1:5000,
 * protocol "auto", world_size 256, dram_size 1 GiB, max_dram_size 64 GiB, log_level "warn", timeout 60 s,
 * heartbeat 1 s, rma_timeout 10 s (docs/configuration.md lists every default). Writes only the bytes that version
 * has.
 *
 * @param cfg     [out] caller-owned, at least as large as that version's mmc_local_config
 * @param version [in] MMC_LOCAL_CONFIG_VERSION
 * @return MMC_OK; MMC_INVALID_PARAM (cfg NULL, or a version this library does not know: 0, or newer than it —
 *         cfg is left untouched). Thread-safe.
 */
MMC_API int mmc_local_config_init(mmc_local_config *cfg, uint32_t version);

/**
 * Returns the built-in defaults for this header's layout (mmc_local_config_init() with
 * MMC_LOCAL_CONFIG_VERSION). Inline, so that the struct is sized by the caller's header, never by the library's.
 * Against a library older than this header the result has version 0, which mmc_setup() refuses. Thread-safe.
 */
static inline mmc_local_config mmc_default_local_config(void)
{
	mmc_local_config c;

	memset(&c, 0, sizeof(c));
	mmc_local_config_init(&c, MMC_LOCAL_CONFIG_VERSION);
	return c;
}

/**
 * Allocates a store. Returns NULL only when memory is exhausted. The caller owns it and frees it with
 * mmc_destroy(). Thread-safe.
 */
MMC_API mmc_store *mmc_create(void);

/**
 * Checks and records the configuration used by mmc_init(). When cfg->config_path is set (or cfg is NULL and the
 * environment variable MMC_LOCAL_CONFIG_PATH names a file) the `key = value` file is loaded on top of cfg.
 * Unknown keys and bad values fail with a log line that names the key.
 *
 * @param s   [in] store from mmc_create()
 * @param cfg [in] configuration, copied; NULL: defaults plus MMC_LOCAL_CONFIG_PATH
 * @return MMC_OK; MMC_INVALID_PARAM (s NULL, a bad field, a bad or unreadable file); MMC_REPEAT_CALL after
 *         mmc_init() (tear down first).
 * Not thread-safe with other calls on the same store.
 */
MMC_API int mmc_setup(mmc_store *s, const mmc_local_config *cfg);

/**
 * Connects to the meta server and, with init_bm, maps the DRAM pool, registers it and joins the cluster as a
 * local service. Without a prior mmc_setup() the configuration comes from MMC_LOCAL_CONFIG_PATH, else defaults.
 *
 * @param device_id [in] accelerator id (0..383); recorded only on hosts without one
 * @param init_bm   [in] true: lend a pool (local service); false: client only, nothing is lent
 * @return MMC_OK (also when already initialised); MMC_INVALID_PARAM; MMC_NOT_CONNECTED_META when the meta server
 *         cannot be reached; MMC_MALLOC_FAILED when the pool cannot be mapped; MMC_EXCEED_CAPACITY when the
 *         cluster already has world_size local services; MMC_ERROR when the fabric cannot be opened.
 * Not thread-safe with other calls on the same store.
 */
MMC_API int mmc_init(mmc_store *s, uint32_t device_id, bool init_bm);

/**
 * Leaves the cluster cleanly (the meta server drops this service's objects; other services keep theirs), stops
 * the threads, closes the fabric and unmaps the pool. The store can be set up and initialised again.
 * @return MMC_OK; MMC_INVALID_PARAM for NULL. Not thread-safe with other calls on the same store.
 */
MMC_API int mmc_teardown(mmc_store *s);

/** Tears down if needed and frees the store. NULL is ignored. */
MMC_API void mmc_destroy(mmc_store *s);

/**
 * Registers caller memory with the fabric so puts and gets use it zero-copy. Unregistered buffers also work,
 * through a staging copy or a temporary registration. Overlapping registrations are allowed.
 * @param buf  [in] start; must stay mapped until unregistered or torn down
 * @param size [in] bytes, > 0
 * @return MMC_OK; MMC_INVALID_PARAM (NULL, 0); MMC_CLIENT_NOT_INIT; MMC_ERROR (fabric refused). Thread-safe.
 */
MMC_API int mmc_register_buffer(mmc_store *s, void *buf, size_t size);

/**
 * Undoes mmc_register_buffer() for exactly (buf, size).
 * @return MMC_OK; MMC_INVALID_PARAM (NULL, 0, or not registered); MMC_CLIENT_NOT_INIT. Thread-safe, but the caller
 *         must not unregister a buffer that a concurrent call is using.
 */
MMC_API int mmc_unregister_buffer(mmc_store *s, void *buf, size_t size);

/**
 * Stores size bytes at buf under key. A single put prefers the caller's own pool.
 * @param direct [in] MMC_COPY_H2G (the seed's default), L2G, L2GH, H2GH or AUTO
 * @param rc     [in] replica policy, NULL: one replica
 * @return MMC_OK (also when the key exists: the first value is kept); MMC_INVALID_PARAM (key, buf, size 0, direct,
 *         rc, or a preferred service that does not exist); MMC_NOT_ENOUGH_MEMORY (no room even after eviction and
 *         a bounded wait for leased memory, or fewer services than replicas; nothing is stored);
 *         MMC_UNMATCHED_KEY (the meta server restarted between allocation and commit: nothing is stored);
 *         MMC_META_BACKUP_ERROR (the meta server could not commit the object's metadata to disk: it is readable
 *         until the meta server restarts, then gone; a retry answers MMC_OK only once it is on disk);
 * MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META; MMC_TIMEOUT; MMC_ERROR (the fabric failed; nothing is stored).
 * Thread-safe.
 */
MMC_API int mmc_put_from(mmc_store *s, const char *key, const void *buf, size_t size, int32_t direct,
                         const mmc_replicate_config *rc);

/**
 * Reads the object stored under key into buf; size must equal the object size.
 * @param direct [in] MMC_COPY_G2H (the seed's default), G2L, GH2L, GH2H or AUTO
 * @return MMC_OK; MMC_OBJECT_NOT_EXISTS (absent or not yet readable); MMC_INVALID_PARAM (key, buf, size differs
 *         from the object, direct); MMC_LEASE_EXPIRED (the copy outlived its lease; buf content is undefined);
 *         MMC_CHECKSUM_MISMATCH (verify_checksum is on and the bytes received differ from the checksum the
 *         writer committed: buf content is undefined; the object stays stored, so a retry reads the same bytes
 *         unless another replica is picked); MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META; MMC_TIMEOUT;
 *         MMC_ERROR (fabric). Thread-safe.
 */
MMC_API int mmc_get_into(mmc_store *s, const char *key, void *buf, size_t size, int32_t direct);

/**
 * Removes key. New readers miss at once; memory under a read lease is freed when the lease ends.
 * @return MMC_OK; MMC_OBJECT_NOT_EXISTS; MMC_INVALID_PARAM; MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META.
 * Thread-safe.
 */
MMC_API int mmc_remove(mmc_store *s, const char *key);

/**
 * @return 1 when key has a readable replica, 0 when not, else a negative code (MMC_INVALID_PARAM,
 *         MMC_CLIENT_NOT_INIT, MMC_NOT_CONNECTED_META, MMC_TIMEOUT). Thread-safe.
 */
MMC_API int mmc_is_exist(mmc_store *s, const char *key);

/**
 * Fills *out with the key's size and replicas (location, media, GVA). An absent key gives MMC_OK and size 0.
 * @param flag [in] reserved, 0
 * @return MMC_OK; MMC_INVALID_PARAM (key, out NULL); MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META. On error *out is
 *         zeroed. Thread-safe.
 */
MMC_API int mmc_get_key_info(mmc_store *s, const char *key, uint32_t flag, mmc_key_info *out);

/**
 * Puts n keys: one allocate and one commit round trip to the meta server, every RMA write in flight together.
 * Keys are spread over services by free space. A key repeated in one batch is stored once (first wins); both
 * slots report MMC_OK.
 * @param keys,bufs,sizes [in] n entries each
 * @param n       [in] 1..MMC_BATCH_MAX
 * @param results [out] n codes, as mmc_put_from()
 * @return MMC_OK when accepted; MMC_INVALID_PARAM (n, NULL arrays, any bad key, buffer, size or direct: nothing is
 *         stored); MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META. Thread-safe.
 */
MMC_API int mmc_batch_put_from(mmc_store *s, const char *const *keys, const void *const *bufs, const size_t *sizes,
                               size_t n, int32_t direct, const mmc_replicate_config *rc, int *results);

/**
 * Gets n keys with one meta round trip and every RMA read in flight together.
 * @param results [out] n codes, as mmc_get_into()
 * @return as mmc_batch_put_from(). Thread-safe.
 */
MMC_API int mmc_batch_get_into(mmc_store *s, const char *const *keys, void *const *bufs, const size_t *sizes, size_t n,
                               int32_t direct, int *results);

/** Removes n keys; results[i] as mmc_remove(). @return as mmc_batch_put_from(). Thread-safe. */
MMC_API int mmc_batch_remove(mmc_store *s, const char *const *keys, size_t n, int *results);

/** results[i] = 1 / 0 / negative, as mmc_is_exist(). @return as mmc_batch_put_from(). Thread-safe. */
MMC_API int mmc_batch_is_exist(mmc_store *s, const char *const *keys, size_t n, int *results);

/** Fills out[i] as mmc_get_key_info(). @return MMC_OK or a whole-call error (out zeroed). Thread-safe. */
MMC_API int mmc_batch_get_key_info(mmc_store *s, const char *const *keys, size_t n, uint32_t flag, mmc_key_info *out);

/**
 * Moves keys from SSD to DRAM now (rewarm). Only src MMC_MEDIA_SSD, dst MMC_MEDIA_DRAM and flags 0 are accepted.
 * A key already in DRAM is a success.
 * @return MMC_OK; MMC_INVALID_PARAM (media pair, flags, keys); else the first per-key error (each is logged).
 */
MMC_API int mmc_prefetch_keys(mmc_store *s, const char *const *keys, size_t n, uint8_t src_media, uint8_t dst_media,
                              uint32_t flags);

/**
 * Moves keys from DRAM to SSD now; with no SSD configured the DRAM copy is removed (the seed's rule). Only src
 * MMC_MEDIA_DRAM, dst MMC_MEDIA_SSD and flags 0 are accepted.
 * @return as mmc_prefetch_keys().
 */
MMC_API int mmc_evict_keys(mmc_store *s, const char *const *keys, size_t n, uint8_t src_media, uint8_t dst_media,
                           uint32_t flags);

/**
 * Grants or extends a read lease on each key for this store, for use by mmc_batch_copy() in a read direction.
 * Repeating it for a key extends the same lease; one mmc_batch_remove_lease() releases it.
 * @param lease_ttl_ms [in] 0: the meta server's ock.mmc.meta.lease_ttl_ms
 * @param results [out] per key MMC_OK or MMC_OBJECT_NOT_EXISTS
 * @return as mmc_batch_put_from(). Thread-safe.
 */
MMC_API int mmc_batch_add_lease(mmc_store *s, const char *const *keys, size_t n, uint64_t lease_ttl_ms, int *results);

/**
 * Releases the read leases this store holds on keys.
 * @return MMC_OK; MMC_LEASE_EXPIRED when a key's lease was missing or had already expired (the others are
 *         released anyway); MMC_INVALID_PARAM.
 */
MMC_API int mmc_batch_remove_lease(mmc_store *s, const char *const *keys, size_t n);

/**
 * Allocates n objects for the one-copy GVA flow. Each stays invisible to readers until mmc_batch_write_finish();
 * if this store neither finishes nor renews it within the write lease, the space is reclaimed.
 * @param media [in] MMC_MEDIA_DRAM (MMC_MEDIA_HBM only with an accelerator)
 * @param lease_ttl_ms [in] write lease, 0: ock.mmc.meta.lease_ttl_ms
 * @param gvas [out] start GVA per key; 0 when that key failed. A key that already exists returns its GVA.
 * @return MMC_OK when accepted; MMC_INVALID_PARAM; MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META.
 */
MMC_API int mmc_batch_malloc(mmc_store *s, const char *const *keys, const size_t *sizes, size_t n, uint16_t media,
                             uint64_t lease_ttl_ms, uintptr_t *gvas);

/**
 * Copies between GVA ranges and local buffers. A write direction (L2G, H2G, L2GH, H2GH) copies into ranges this
 * store allocated with mmc_batch_malloc() that are still unfinished (ranges of an already readable object are
 * skipped); a read direction (G2L, G2H, GH2L, GH2H) copies from ranges of keys this store holds a lease on.
 * gvas[i] may point anywhere inside an object (GVA plus offset). Ranges are not whole objects, so reads are never
 * checked against an object's checksum (mmc_local_config.verify_checksum), and objects published by
 * mmc_batch_write_finish() carry none.
 * @param flag [in] reserved, ignored
 * @return MMC_OK; MMC_INVALID_PARAM (direct, NULL, zero size, a range outside what this store allocated or leased:
 *         nothing is copied); MMC_LEASE_EXPIRED (a read outlived its read lease, or a write came after its write
 *         lease ran out — the space may belong to another object, so nothing is written); MMC_ERROR (fabric).
 *         n == 0 is MMC_OK. Thread-safe.
 */
MMC_API int mmc_batch_copy(mmc_store *s, void *const *gvas, void *const *bufs, const size_t *sizes, size_t n,
                           int32_t direct, uint32_t flag);

/**
 * Publishes (write_results[i] == 0) or drops (non-zero) each key allocated by mmc_batch_malloc().
 * @param results [out] per key MMC_OK (also for an already readable key) or MMC_UNMATCHED_KEY (never allocated)
 * @return as mmc_batch_put_from().
 */
MMC_API int mmc_batch_write_finish(mmc_store *s, const char *const *keys, const int32_t *write_results, size_t n,
                                   int *results);

/**
 * Gathers `layers` buffers into one object (layer i at offset sum(sizes[0..i-1])).
 * @param layers [in] 1..MMC_LAYERS_MAX
 * @return as mmc_put_from().
 */
MMC_API int mmc_put_from_layers(mmc_store *s, const char *key, const void *const *bufs, const size_t *sizes,
                                size_t layers, int32_t direct, const mmc_replicate_config *rc);

/**
 * Scatters an object into `layers` buffers; the split may differ from the put's as long as the total matches.
 * @return as mmc_get_into().
 */
MMC_API int mmc_get_into_layers(mmc_store *s, const char *key, void *const *bufs, const size_t *sizes, size_t layers,
                                int32_t direct);

/** Batch of mmc_put_from_layers(): bufs[i] and sizes[i] hold layers[i] entries. @return as mmc_batch_put_from(). */
MMC_API int mmc_batch_put_from_layers(mmc_store *s, const char *const *keys, const void *const *const *bufs,
                                      const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                                      const mmc_replicate_config *rc, int *results);

/** Batch of mmc_get_into_layers(). @return as mmc_batch_get_into(). */
MMC_API int mmc_batch_get_into_layers(mmc_store *s, const char *const *keys, void *const *const *bufs,
                                      const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                                      int *results);

/**
 * Reports this store's local service id, stable for the life of the service and never reused for another live
 * service.
 * @return MMC_OK; MMC_INVALID_PARAM (NULL); MMC_CLIENT_NOT_INIT; MMC_NOT_STARTED (client-only store).
 */
MMC_API int mmc_get_local_service_id(mmc_store *s, uint32_t *id);

/** Names a code ("MMC_NOT_ENOUGH_MEMORY: ..."); unknown codes give "unknown error". Static storage; thread-safe. */
MMC_API const char *mmc_strerror(int code);

/**
 * Sets the process-wide log handler; NULL restores the default, which writes warnings and errors to stderr as
 * "libmmc LEVEL: msg".
 *
 * The handler's contract:
 * - Which lines: those at or above the process-wide level, which is the most verbose mmc_local_config.log_level
 *   (ock.mmc.log_level) among the stores configured now — by mmc_setup(), or by mmc_init() without it, until
 *   mmc_teardown() — and "warn" when none is. Stores do not override each other: one set to "error" does not
 *   silence another's "debug", and the order of their mmc_setup() calls does not matter.
 * - When and where: synchronously, on the thread that met the event: an application thread inside a libmmc call,
 *   or one of libmmc's own threads (per store: the meta reader, the keeper, the fabric progress thread and, with an
 *   SSD tier, the SSD worker; docs/architecture.md lists them). Calls on several threads may overlap: the handler
 *   must be thread-safe.
 * - Locks: it may run while its thread holds libmmc's internal locks (a store's life lock in mmc_setup(),
 *   mmc_init() and mmc_teardown(), its buffer-registration lock during a transfer, its GVA-range lock during
 *   mmc_batch_malloc() and mmc_batch_add_lease()). So it must not call libmmc, except mmc_strerror(),
 *   mmc_version() and mmc_set_log_handler(): any other call may deadlock (on the meta reader thread, a call that
 *   waits for a reply only that thread can deliver never returns). A line libmmc logs while the same thread is
 *   inside the handler is dropped, so logging never re-enters it.
 * - It should return quickly: on a store's meta reader thread it delays every reply of that store.
 * - level is an enum mmc_log_level; msg is NUL-terminated, without a trailing newline, at most
 *   MMC_LOG_LINE_MAX - 1 bytes (longer lines are truncated) and valid only during the call.
 *
 * @param fn [in] the new handler, NULL for the default
 * Thread-safe. When it returns no other thread is still inside the previous handler and none will enter it again,
 * so what the old handler used may be released. Called from inside a handler it switches at once, without that
 * wait.
 */
MMC_API void mmc_set_log_handler(mmc_log_fn fn);

/** Returns MMC_VERSION_STRING of the library actually loaded. */
MMC_API const char *mmc_version(void);

#ifdef __cplusplus
}
#endif

#endif /* MMC_MMC_H */
