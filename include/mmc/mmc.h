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
 * Keys are NUL-terminated strings of 1..MMC_KEY_MAX bytes. An object is written once: putting a key that already
 * exists returns MMC_OK and keeps the first value. A put of a key that another put is still writing waits for that
 * put (up to timeout_ms): MMC_OK once that value is stored, its own value stored if that put fails.
 *
 * Return values
 * -------------
 * Every call returns MMC_OK (0) or a negative MMC_* code (never a positive errno). mmc_is_exist() returns 1 / 0 /
 * negative. Batch calls return 0 when the call was accepted and store one code per key in results[]; a negative
 * return rejects the whole call and every results[i] holds that code, except where n itself is refused (over
 * MMC_BATCH_MAX): then results[] is not written. Each function lists every code it returns.
 * Four of them come from talking to the meta server and appear wherever a call does:
 * - MMC_NOT_CONNECTED_META: the meta server is unreachable, and did not come back within
 *   mmc_local_config.retry_ms (0: fail at once), or the connection was lost while the call needed it;
 * - MMC_TIMEOUT: a round trip took longer than mmc_local_config.timeout_ms; for the data calls also an RMA that
 *   made no progress for rma_timeout_ms (its peer died or refuses connections);
 * - MMC_INTERNAL_ERROR: a reply libmmc cannot decode (a meta server of another version);
 * - MMC_MALLOC_FAILED: this process, or the meta server for the call, ran out of memory.
 * A store whose meta server guards its port with a cluster secret (ock.mmc.client.auth_token) or TLS gets
 * MMC_NOT_AUTHORIZED from mmc_init() when its credentials are missing or wrong; once connected, no later call
 * can get it. Codes marked "reserved" below are never returned: they keep MemCache sources compiling.
 *
 * Threading
 * ---------
 * Every call on an initialised store is thread-safe; calls from many threads run concurrently and share one meta
 * connection (requests are pipelined) and one fabric endpoint. Leases, GVA allocations and registered buffers
 * belong to the store, not to the thread that made them: any thread of the store may use or release them. The
 * life-cycle calls mmc_setup(), mmc_init(), mmc_teardown() and mmc_destroy() serialise with each other on one store.
 * mmc_teardown() may run while other threads are in calls on the store: it waits for those calls to end, and calls
 * made after it began fail with MMC_CLIENT_NOT_INIT. mmc_setup(), mmc_init() and mmc_destroy() must not race with
 * any other call on it (mmc_destroy() frees it). Different stores are independent. libmmc runs its own threads
 * (docs/architecture.md, "Threads"); the log handler may be called on them (mmc_set_log_handler()).
 *
 * Caveats
 * -------
 * - A store belongs to the process that made it. A child forked without exec (Python's multiprocessing) has a copy
 *   of its parent's store but none of its threads, and shares its connection and endpoint: there, mmc_setup() and
 *   mmc_init() on that copy return MMC_INVALID_PARAM, every other call MMC_CLIENT_NOT_INIT, and mmc_destroy()
 *   frees nothing (the parent's service, objects and files are untouched; the child's copy of the memory goes
 *   with the child). The child makes a store of its own. The child also keeps no lock on the parent's pool and
 *   SSD files, and has no mapping of the parent's pool.
 * - A buffer passed to mmc_register_buffer() must stay mapped until mmc_unregister_buffer() or mmc_teardown().
 * - Which calls block, and for how long: every meta round trip is bounded by mmc_local_config.timeout_ms
 *   (default 60 s), and by the meta server's heartbeat timeout (default 10 s) when the server answers nothing at
 *   all (paused, hung): the store then drops its connection and the call fails with MMC_NOT_CONNECTED_META.
 *   Waiting for a lost meta connection is bounded by retry_ms (default 0). Data calls also block until their
 *   bytes have moved or failed, each stalled RMA for at most rma_timeout_ms (default 10 s). A put may wait at the
 *   meta server for leased memory to be released (ock.mmc.meta.evict_wait_ms, default 2 s); mmc_prefetch_keys() and
 *   mmc_evict_keys() wait for the SSD I/O. mmc_init() waits for the TCP connect (at most 5 s) and two round trips,
 *   mmc_teardown() for one and for libmmc's threads to stop. mmc_register_buffer() and mmc_unregister_buffer() wait
 *   for the store's transfers in progress; mmc_set_log_handler() for handler calls on other threads.
 * - A read lease (taken implicitly by every get, explicitly by mmc_batch_add_lease()) pins the object's memory
 *   until it is released or expires; a reader whose lease expired before its copy finished gets MMC_LEASE_EXPIRED
 *   rather than bytes that may have been reused. A GVA write lease (mmc_batch_malloc()) pins its space until
 *   mmc_batch_write_finish() or its expiry.
 * - With mmc_local_config.verify_checksum, a get whose bytes differ from the CRC32C its writer committed returns
 *   MMC_CHECKSUM_MISMATCH instead of wrong bytes; only put/get forms carry checksums, not the GVA flow.
 * - A data call writes into the caller's buffers only while it runs: a transfer it gave up on (MMC_TIMEOUT after
 *   rma_timeout_ms, or a prefix read's deadline) has had its connection cut before the call returns, so a peer that
 *   answers late cannot land bytes in a buffer the caller reuses. libmmc cuts it by shutting down this process's TCP
 *   socket to the peer (tcp; when the peer dialled this process and so did another process on its host, a stall
 *   cuts all of that host's, a prefix read's deadline none: that call then waits for its reads to land), or by
 *   libfabric's own close (fi_av_remove with FI_AV_REMOVE_CLEANUP: verbs). With a provider that can do neither
 *   (shm), a stalled call waits for its peer instead of returning. Cutting makes
 *   the other operations on that connection fail once (MMC_ERROR or MMC_TIMEOUT; the next ones reconnect), also
 *   those of another transport of this process to the same peer; the next operation to a cut peer first waits for
 *   the dead connection to go (2 ms). libmmc sets FI_OFI_RXM_CM_PROGRESS_INTERVAL=1000 and FI_AV_REMOVE_CLEANUP=1
 *   before libfabric starts, unless the environment has them; an application that starts libfabric itself before
 *   mmc_init() must set them too (in its environment, before libfabric starts): without the first that wait is
 *   20 ms, without the second a stalled call over verbs waits for its peer.
 * - Without an accelerator, "device" buffers (the L in L2G / G2L) are host memory.
 * - This header is versioned: mmc_local_config grows only at its end and carries its layout version; the value
 *   structs (mmc_replicate_config, mmc_key_info) never change layout.
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

/**
 * @name Error codes
 * MMC_ERRNO_MAP is the one list of the codes: XX(name, value, text, when) for each. The values are ABI and never
 * change; mmc_strerror() answers "name: text" and mmc_err_name() the name; "when" says which calls return it. The
 * seed's table, plus MMC_LEASE_EXPIRED, MMC_CHECKSUM_MISMATCH, MMC_NOT_AUTHORIZED and MMC_NOT_LEADER. "reserved":
 * never returned by any call of this library (kept so MemCache sources compile); tests/unit/error_codes.py checks that
 * no code path uses one, that every other code has one, and that docs/api.md documents each. Every code lies in
 * -3999..0. The codes are enum mmc_errno constants, not macros: `#ifdef MMC_TIMEOUT` does not see them.
 */
/**@{*/
/* clang-format off */
#define MMC_ERRNO_MAP(XX)                                                                                              \
	XX(MMC_OK, 0, "success",                                                                                       \
	   "no error")                                                                                                 \
	XX(MMC_ERROR, -1, "generic error",                                                                             \
	   "the fabric (libfabric) or the OS failed; the log says how")                                                \
	XX(MMC_INVALID_PARAM, -3000, "invalid parameter",                                                              \
	   "a bad argument or configuration; nothing was done")                                                        \
	XX(MMC_MALLOC_FAILED, -3001, "memory allocation failed",                                                       \
	   "out of memory, here or at the meta server")                                                                \
	XX(MMC_NEW_OBJECT_FAILED, -3002, "object creation failed",                                                     \
	   "reserved")                                                                                                 \
	XX(MMC_NOT_STARTED, -3003, "service not started",                                                              \
	   "mmc_get_local_service_id() of a client-only store")                                                        \
	XX(MMC_TIMEOUT, -3004, "operation timed out",                                                                  \
	   "a meta round trip over timeout_ms, an RMA stalled rma_timeout_ms")                                         \
	XX(MMC_REPEAT_CALL, -3005, "repeated call",                                                                    \
	   "mmc_setup() on an initialised store")                                                                      \
	XX(MMC_DUPLICATED_OBJECT, -3006, "object already exists",                                                      \
	   "wire only (the key exists): puts answer MMC_OK instead")                                                   \
	XX(MMC_OBJECT_NOT_EXISTS, -3007, "object does not exist",                                                      \
	   "the key is absent, or not readable yet")                                                                   \
	XX(MMC_NOT_INITIALIZED, -3008, "not initialized",                                                              \
	   "reserved (mmc answers MMC_CLIENT_NOT_INIT)")                                                               \
	XX(MMC_NET_SEQ_DUP, -3009, "duplicate network sequence number",                                                \
	   "reserved")                                                                                                 \
	XX(MMC_NET_SEQ_NOT_FOUND, -3010, "network sequence number not found",                                          \
	   "reserved")                                                                                                 \
	XX(MMC_ALREADY_NOTIFIED, -3011, "already notified",                                                            \
	   "reserved")                                                                                                 \
	XX(MMC_INTERNAL_ERROR, -3012, "internal error",                                                                \
	   "a reply libmmc cannot decode")                                                                             \
	XX(MMC_EXCEED_CAPACITY, -3013, "capacity limit exceeded",                                                      \
	   "mmc_init(): the cluster already has world_size local services")                                            \
	XX(MMC_LINK_NOT_FOUND, -3014, "link not found",                                                                \
	   "the service holding the bytes is gone, or remote with another provider")                                   \
	XX(MMC_NET_REQ_HANDLE_NOT_FOUND, -3015, "network request handle not found",                                    \
	   "reserved")                                                                                                 \
	XX(MMC_NOT_ENOUGH_MEMORY, -3016, "not enough memory in the pool",                                              \
	   "no room in the pools, even after eviction")                                                                \
	XX(MMC_NOT_CONNECTED_META, -3017, "not connected to the meta server",                                          \
	   "the meta server is unreachable (after retry_ms)")                                                          \
	XX(MMC_NOT_CONNECTED_LOCAL, -3018, "not connected to the local service",                                       \
	   "reserved")                                                                                                 \
	XX(MMC_CLIENT_NOT_INIT, -3019, "client not initialized",                                                       \
	   "a call before mmc_init(), after mmc_teardown(), or in a forked child")                                     \
	XX(MMC_UNMATCHED_STATE, -3101, "state mismatch",                                                               \
	   "wire only (another put is still writing the key): the put waits for it")                                   \
	XX(MMC_UNMATCHED_KEY, -3102, "key mismatch",                                                                   \
	   "a commit or write-finish the meta server has no allocation for")                                           \
	XX(MMC_UNMATCHED_RET, -3103, "return value mismatch",                                                          \
	   "reserved")                                                                                                 \
	XX(MMC_LEASE_NOT_EXPIRED, -3104, "lease not expired",                                                          \
	   "reserved")                                                                                                 \
	XX(MMC_META_BACKUP_ERROR, -3105, "metadata backup failed",                                                     \
	   "the meta server could not make the change durable (LMDB)")                                                 \
	XX(MMC_LEASE_EXPIRED, -3106, "the lease expired before the copy finished",                                     \
	   "a copy outlived its lease, or the server that granted it")                                                 \
	XX(MMC_CHECKSUM_MISMATCH, -3109, "the bytes read differ from the object's checksum",                           \
	   "mmc: the bytes read differ from the writer's checksum")                                                    \
	XX(MMC_NOT_AUTHORIZED, -3110, "the meta server refused this process's credentials",                            \
	   "mmc: the meta server refused this process's credentials")                                                  \
	XX(MMC_NOT_LEADER, -3120, "the meta server stands by (leader election); ask the leader",                       \
	   "mmc: that meta server stands by; libmmc moves to the leader")
/* clang-format on */

#define MMC_ERRNO_ENUM_(name, value, text, when) name = (value),
/** Every MMC_* code; calls return them as int. */
enum mmc_errno { MMC_ERRNO_MAP(MMC_ERRNO_ENUM_) };
#undef MMC_ERRNO_ENUM_
/**@}*/

/** @name Limits and array sizes (every array in this header is sized by one of these) */
/**@{*/
#define MMC_KEY_MAX        255   /**< longest key in bytes, without the NUL (a tenant's store: 253 - its name) */
#define MMC_BATCH_MAX      16384 /**< most keys in one batch call */
#define MMC_LAYERS_MAX     255   /**< most buffers per key in the layer calls */
#define MMC_REPLICA_MAX    8     /**< most replicas of one object: mmc_replicate_config, mmc_key_info arrays */
#define MMC_WORLD_SIZE_MAX 1024  /**< most local services in a cluster (mmc_local_config.world_size) */
#define MMC_DEVICE_ID_MAX  383   /**< highest device_id mmc_init() accepts */
#define MMC_URL_SIZE       1024  /**< bytes of the URL fields of mmc_local_config, with the NUL */
#define MMC_PATH_SIZE      1024  /**< bytes of the path fields of mmc_local_config, with the NUL */
#define MMC_PROTOCOL_SIZE  64    /**< bytes of mmc_local_config.protocol, with the NUL */
#define MMC_LOG_LEVEL_SIZE 16    /**< bytes of mmc_local_config.log_level, with the NUL */
#define MMC_TOKEN_SIZE     256   /**< bytes of mmc_local_config.auth_token, with the NUL */
#define MMC_TLS_PATH_SIZE  256   /**< bytes of the tls_*_path fields of mmc_local_config, with the NUL */
#define MMC_TENANT_SIZE    17    /**< bytes of mmc_local_config.tenant, with the NUL */
#define MMC_LOG_LINE_MAX   1024  /**< bytes of one log line handed to the log handler, with its NUL */
/**@}*/

/*
 * The media and copy-direction enums name the values; the calls keep the integer parameters they always had
 * (uint8_t / uint16_t media, int32_t direct, mmc_key_info.type uint16_t): an enum's size is the compiler's choice,
 * and C++ would refuse a plain integer where an enum is expected, so typed parameters would change the ABI and break
 * callers. Values are ABI, as the error codes'.
 */

/** Where a replica lives (mmc_key_info.type, mmc_batch_malloc()'s media, the prefetch and evict media pairs). */
typedef enum mmc_media {
	MMC_MEDIA_HBM = 0,  /**< accelerator memory (only with an accelerator) */
	MMC_MEDIA_DRAM = 1, /**< the local services' DRAM pools */
	MMC_MEDIA_SSD = 2,  /**< the SSD tier (ock.mmc.local_service.ssd.path) */
} mmc_media;

/**
 * Copy directions (the seed's smem_bm_copy_type values), the direct parameter of puts, gets and mmc_batch_copy().
 * "L" is device-local memory, "H" host memory, "G" the global pool. Without an accelerator L and H are both host
 * memory. Puts accept the "to global" directions (L2G, H2G, L2GH, H2GH, AUTO), gets the "from global" ones (G2L, G2H,
 * GH2L, GH2H, AUTO); G2G is refused by put and get. mmc_batch_copy() accepts both sets and picks the way from it.
 */
typedef enum mmc_copy_direction {
	MMC_COPY_L2G = 0,
	MMC_COPY_G2L = 1,
	MMC_COPY_G2H = 2,
	MMC_COPY_H2G = 3,
	MMC_COPY_L2GH = 4,
	MMC_COPY_GH2L = 5,
	MMC_COPY_GH2H = 6,
	MMC_COPY_H2GH = 7,
	MMC_COPY_G2G = 8,
	MMC_COPY_AUTO = 9,
} mmc_copy_direction;

/** Log levels for mmc_set_log_handler() and mmc_local_config.log_level ("debug", "info", "warn", "error"). */
enum mmc_log_level { MMC_LOG_DEBUG = 0, MMC_LOG_INFO = 1, MMC_LOG_WARN = 2, MMC_LOG_ERROR = 3 };

/** A store: one client, and with init_bm one local service. Opaque. */
typedef struct mmc_store mmc_store;

/**
 * The layout of mmc_local_config this header describes. It grows by one whenever fields are appended; the library
 * accepts every version up to its own.
 */
#define MMC_LOCAL_CONFIG_VERSION 3

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
	char config_path[MMC_PATH_SIZE];
	/** Meta server, "tcp://host:port" (ock.mmc.meta_service_url). Default tcp://127.0.0.1:5000. With leader
	 * election, up to 16 comma-separated addresses: libmmc talks to whichever leads and follows it after a
	 * failover (docs/operations.md, "High availability"). */
	char meta_service_url[MMC_URL_SIZE];
	/** Accepted for compatibility; mmc exchanges fabric addresses through the meta server. */
	char config_store_url[MMC_URL_SIZE];
	/** "debug", "info", "warn" (default) or "error" (ock.mmc.log_level). The level is process-wide: the most
	 *  verbose of all configured stores' levels applies (see mmc_set_log_handler()). */
	char log_level[MMC_LOG_LEVEL_SIZE];
	/** Most local services in the cluster, 1..MMC_WORLD_SIZE_MAX (ock.mmc.local_service.world_size). Default 256.
	 */
	uint32_t world_size;
	/** The network provider for local services on other hosts (ock.mmc.local_service.protocol): "host_tcp",
	 *  "host_rdma", "auto" (the best there is), or "host_shm" (none: only services on this host). Services on this
	 *  host are always reached by memcpy through their mapped pool (ock.mmc.client.host_path). Default "auto". */
	char protocol[MMC_PROTOCOL_SIZE];
	/** Fabric interface as "tcp://ip[:port]"; empty: the provider's choice (ock.mmc.local_service.hcom_url). */
	char hcom_url[MMC_URL_SIZE];
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
	 *  Lookups and removes in flight when it was lost are sent again, and puts in flight are put again from the
	 *  start, within this time. Default 0: fail at once with MMC_NOT_CONNECTED_META. */
	uint32_t retry_ms;
	/** Heartbeat period to the meta server in ms (ock.mmc.client.heartbeat_ms). Default 1000. */
	uint32_t heartbeat_ms;
	/** SSD tier backing file or block device (ock.mmc.local_service.ssd.path); empty: no SSD tier. A missing file
	 *  is created (not under /dev, not through a symbolic link); a block device is opened exclusively (O_EXCL: not
	 *  while mounted or held by another process); a file or device whose first 4 KiB hold neither an SSD tier's
	 *  label nor zeros is someone else's data, and mmc_init refuses it (MMC_INVALID_PARAM). */
	char ssd_path[MMC_PATH_SIZE];
	/** SSD tier size (ock.mmc.local_service.ssd.size), at least 8 KiB: its first 4 KiB hold the file's label (its
	 *  identity, by which a restarted service adopts the SSD keys it holds). */
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
	/* ---- layout version 2: the keys that were configuration-file only ---- */
	/** Local services on this host are reached by memcpy through their mapped pool (ock.mmc.client.host_path);
	 *  the environment variable MMC_HOST_PATH (on / off) overrides it. Default true. */
	bool host_path;
	/** The cluster secret the meta server asks for (ock.mmc.client.auth_token), at least 16 bytes; empty: none.
	 *  Set it or auth_token_file, not both. */
	char auth_token[MMC_TOKEN_SIZE];
	/** A file holding the cluster secret (ock.mmc.client.auth_token_file); a bare file name is one of
	 *  $CREDENTIALS_DIRECTORY (systemd credentials) when that is set. Read by mmc_setup(), which fails with
	 *  MMC_INVALID_PARAM when every user may open it (its mode must be o-rwx). */
	char auth_token_file[MMC_PATH_SIZE];
	/** TLS on the meta connection (ock.mmc.tls.enable); needs tls_ca_path. Default false. */
	bool tls_enable;
	/** CA the meta server's certificate must chain to (ock.mmc.tls.ca.path). */
	char tls_ca_path[MMC_TLS_PATH_SIZE];
	/** Certificate revocation list checked on every handshake (ock.mmc.tls.ca.crl.path); empty: none. */
	char tls_crl_path[MMC_TLS_PATH_SIZE];
	/** This store's certificate, for a server that wants one (ock.mmc.tls.cert.path); goes with tls_key_path. */
	char tls_cert_path[MMC_TLS_PATH_SIZE];
	/** Its private key (ock.mmc.tls.key.path), optionally encrypted. */
	char tls_key_path[MMC_TLS_PATH_SIZE];
	/** A file holding the key's passphrase (ock.mmc.tls.key.pass.path). */
	char tls_key_pass_path[MMC_TLS_PATH_SIZE];
	/* ---- layout version 3 ---- */
	/** The tenant this store connects as (ock.mmc.client.tenant): 1 to 16 letters, digits, '_' or '-'; empty (or
	 *  "default"): the default tenant. auth_token (or auth_token_file) is then that tenant's secret, not the
	 * cluster secret. Every key this store names is in the tenant's namespace (docs/operations.md, Tenants). */
	char tenant[MMC_TENANT_SIZE];
} mmc_local_config;

/**
 * A global virtual address: one byte of one local service's pool, in 64 bits (the service's rank + 1 in bits
 * 63..48, the media in 47..46, the offset in 45..0), so 0 is never a valid GVA. mmc_batch_malloc() and
 * mmc_get_key_info() hand them out for an object's first byte; gva + n addresses its byte n. The one type every
 * GVA in this header has; an integer, not a pointer: it is not dereferenceable in this process.
 */
typedef uint64_t mmc_gva;

/**
 * Replica policy of a put. Zero-initialised means one replica placed by policy. A plain value struct of fixed
 * layout (it never grows: arrays of it are not versioned).
 */
typedef struct mmc_replicate_config {
	uint16_t replica_num;     /**< 1..MMC_REPLICA_MAX; 0 means 1 */
	uint16_t preferred_count; /**< entries used in preferred_local_service_ids, <= replica_num */
	int32_t preferred_local_service_ids[MMC_REPLICA_MAX]; /**< each listed service gets a replica */
} mmc_replicate_config;

/**
 * What the meta server knows of a key. size == 0 means the key is absent. A plain value struct of fixed layout (it
 * never grows: mmc_batch_get_key_info() fills arrays of it).
 */
typedef struct mmc_key_info {
	uint64_t size;                  /**< object bytes */
	uint32_t blob_num;              /**< replicas (entries used below) */
	uint32_t loc[MMC_REPLICA_MAX];  /**< local service id of each replica */
	uint16_t type[MMC_REPLICA_MAX]; /**< media of each replica (an mmc_media) */
	mmc_gva gva[MMC_REPLICA_MAX];   /**< first byte of each replica (see mmc_batch_copy()) */
} mmc_key_info;

/** Log handler: level is an mmc_log_level, msg a NUL-terminated line without newline, valid during the call. The
 *  contract it runs under is at mmc_set_log_handler(). */
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
 * Sets one key of a client configuration file from its text, as a `key = value` line of the file named by
 * config_path would: the same keys (docs/configuration.md lists them), the same parsing ("64MB", "2.5GB", true /
 * false, seconds for *.seconds keys) and the same bounds. So every key has an API route, and bindings need not know
 * the struct's fields: ock.mmc.local_service.dram.size = "64MB" sets conf->dram_size to 67108864. A key that names
 * an address (meta_service_url, hcom_url) or a protocol is also checked as mmc_setup() would; checks that weigh
 * several fields against each other (dram_size <= max_dram_size, ...) stay with mmc_setup(). The MemCache keys a
 * file accepts and ignores are checked and ignored here too (MMC_OK, conf unchanged); MemCache's SSD keys
 * (ock.mmc.local_service.storage.enabled, ubsio.disk.path, ubsio.standalone.*) take effect only together, in a file.
 *
 * @param conf  [in,out] filled by mmc_default_local_config() or mmc_local_config_init(); only the bytes of its
 *              version are read or written, and only the field of key is changed
 * @param key   [in] the full key, e.g. "ock.mmc.local_service.dram.size"
 * @param value [in] its text, e.g. "64MB"; copied, not kept
 * @return MMC_OK; MMC_INVALID_PARAM (conf, key or value NULL; a conf->version this library does not know; an
 *         unknown key; a bad value or one out of the key's bounds; a key whose field conf's version lacks; a
 *         MemCache SSD key) with a log line that names the key and what it takes, conf unchanged;
 *         MMC_MALLOC_FAILED, conf unchanged.
 * Thread-safe for different conf; calls on one conf must not race.
 */
MMC_API int mmc_config_set(mmc_local_config *conf, const char *key, const char *value);

/**
 * Allocates a store.
 * @return the store, owned by the caller until mmc_destroy(); NULL only when memory is exhausted. Thread-safe.
 */
MMC_API mmc_store *mmc_create(void);

/**
 * Checks and records the configuration used by mmc_init(). When cfg->config_path is set (or cfg is NULL and the
 * environment variable MMC_LOCAL_CONFIG_PATH names a file) the `key = value` file is loaded on top of cfg.
 * Unknown keys and bad values fail with a log line that names the key. A failed call changes nothing: the store
 * keeps the configuration of its previous successful mmc_setup(), if any. May be called again before mmc_init().
 *
 * @param s   [in] store from mmc_create()
 * @param cfg [in] configuration, read during the call only (the bytes its version has, see mmc_local_config);
 *            NULL: defaults plus MMC_LOCAL_CONFIG_PATH
 * @return MMC_OK; MMC_INVALID_PARAM (s NULL, a cfg->version this library does not know, a bad field, a bad or
 *         unreadable file, a store made before this process was forked); MMC_REPEAT_CALL after mmc_init() (tear
 *         down first); MMC_MALLOC_FAILED.
 * Not thread-safe with other calls on the same store; thread-safe across stores.
 */
MMC_API int mmc_setup(mmc_store *s, const mmc_local_config *cfg);

/**
 * Connects to the meta server and, with init_bm, maps the DRAM pool, registers it and joins the cluster as a
 * local service. Without a prior mmc_setup() the configuration comes from MMC_LOCAL_CONFIG_PATH, else defaults.
 * Starts the store's threads (docs/architecture.md, "Threads"). On failure everything it started is stopped again
 * and the store can be set up and initialised anew.
 *
 * @param device_id [in] accelerator id (0..MMC_DEVICE_ID_MAX); recorded only on hosts without one
 * @param init_bm   [in] true: lend a pool (local service); false: client only, nothing is lent
 * @return MMC_OK (also when already initialised with the same device_id and init_bm); MMC_INVALID_PARAM (s NULL,
 *         device_id, already initialised with another device_id or init_bm, dram_size 0 with init_bm, a
 *         bad configuration from MMC_LOCAL_CONFIG_PATH, an SSD tier path that cannot be opened or sized, or that
 *         another local service uses);
 *         MMC_NOT_CONNECTED_META (the meta server cannot be reached: no retry here); MMC_TIMEOUT (it did not
 *         answer the hello or the registration within timeout_ms); MMC_MALLOC_FAILED (the pool cannot be mapped,
 *         or memory ran out); MMC_EXCEED_CAPACITY (the cluster already has world_size local services);
 *         MMC_ERROR (the fabric cannot be opened or the pool registered, a thread cannot start);
 *         MMC_NOT_AUTHORIZED (the meta server wants the cluster secret, ock.mmc.client.auth_token, and this
 *         process has none or another one; or this process has one and the server could not prove it knows it;
 *         or a TLS handshake failed: the log says which); MMC_INVALID_PARAM also for a meta server of another
 *         major wire version (the log names both), and for a store made before this process was forked;
 *         MMC_META_BACKUP_ERROR (init_bm: the meta server could not make the registration durable, e.g. its Redis
 *         store is down); MMC_INTERNAL_ERROR.
 * Not thread-safe with other calls on the same store; thread-safe across stores.
 */
MMC_API int mmc_init(mmc_store *s, uint32_t device_id, bool init_bm);

/**
 * Leaves the cluster cleanly (the meta server drops this service's objects; other services keep theirs), stops
 * the threads, closes the fabric and unmaps the pool. The store can be set up and initialised again. Blocks for
 * the unregistration round trip (at most timeout_ms; its failure is not reported: the meta server also drops a
 * service whose connection closes) and for the threads to stop.
 * @return MMC_OK (also when not initialised); MMC_INVALID_PARAM for NULL; MMC_CLIENT_NOT_INIT, doing nothing, for a
 *         store made before this process was forked (the parent's: see "Caveats").
 * May run while other threads are in calls on the same store: it waits for them to end. Those waiting for a lost
 * meta connection (retry_ms) or for another writer of their key fail at once; the others end as "Caveats" says
 * (a meta round trip, an RMA). Calls made after it began return MMC_CLIENT_NOT_INIT. Serialises with the other
 * life-cycle calls.
 */
MMC_API int mmc_teardown(mmc_store *s);

/**
 * Tears down if needed and frees the store; s is invalid afterwards. NULL is ignored. In a child forked after the
 * store was made, frees nothing and leaves the parent's store alone (see "Caveats").
 * Not thread-safe with other calls on the same store; thread-safe across stores.
 */
MMC_API void mmc_destroy(mmc_store *s);

/**
 * Registers caller memory with the fabric so puts and gets use it zero-copy. Unregistered buffers also work,
 * through a staging copy or a temporary registration. Overlapping registrations are allowed.
 * @param buf  [in] start; the caller keeps ownership, and it must stay mapped until unregistered or torn down
 * @param size [in] bytes, > 0
 * @return MMC_OK; MMC_INVALID_PARAM (s NULL, buf NULL, size 0, or a range past the end of the address space);
 *         MMC_CLIENT_NOT_INIT; MMC_ERROR (the fabric refused the registration); MMC_MALLOC_FAILED.
 * Thread-safe; waits for the store's transfers in progress to end (each holds the registrations while it runs).
 */
MMC_API int mmc_register_buffer(mmc_store *s, void *buf, size_t size);

/**
 * Undoes mmc_register_buffer() for exactly (buf, size).
 * @return MMC_OK; MMC_INVALID_PARAM (s NULL, buf NULL, size 0, or (buf, size) not registered); MMC_CLIENT_NOT_INIT.
 * Thread-safe; waits for the store's transfers in progress to end, so none of them loses the registration under
 * it. A call started afterwards on the buffer uses a staging copy or a temporary registration.
 */
MMC_API int mmc_unregister_buffer(mmc_store *s, void *buf, size_t size);

/**
 * Stores size bytes at buf under key. A single put prefers the caller's own pool.
 * @param key    [in] 1..MMC_KEY_MAX bytes, NUL-terminated; read during the call only
 * @param buf    [in] size bytes, read during the call only (not retained)
 * @param direct [in] MMC_COPY_H2G (the seed's default), L2G, L2GH, H2GH or AUTO
 * @param rc     [in] replica policy, NULL: one replica
 * @return MMC_OK (also when the key exists: the first value is kept); MMC_INVALID_PARAM (s, key, buf, size 0,
 *         direct, rc, or a preferred service that does not exist); MMC_CLIENT_NOT_INIT; MMC_NOT_ENOUGH_MEMORY (no
 *         room even after eviction and a bounded wait for leased memory, or fewer services than replicas; nothing
 *         is stored); MMC_UNMATCHED_KEY (the meta server restarted between allocation and commit, and retry_ms is
 *         0: nothing is stored; with retry_ms the put is made again); MMC_META_BACKUP_ERROR (the meta server could not
 * commit the object's metadata to disk: it is readable until the meta server restarts, then gone; a retry answers
 * MMC_OK only once it is on disk); MMC_NOT_CONNECTED_META (also: the connection was lost between allocation and commit
 * and did not come back for the put to be made again within retry_ms; nothing is stored); MMC_TIMEOUT; MMC_ERROR (the
 * fabric failed; nothing is stored); MMC_LINK_NOT_FOUND (a replica's service went away, also during the copy, or is on
 * another host with another network provider); MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR. Thread-safe. Concurrent puts of
 * one key store one value (the first to allocate); the others wait for it to be stored, up to timeout_ms (then
 * MMC_TIMEOUT), and store their own value if that first put fails.
 */
MMC_API int mmc_put_from(mmc_store *s, const char *key, const void *buf, size_t size, int32_t direct,
                         const mmc_replicate_config *rc);

/**
 * Reads the object stored under key into buf; size must equal the object size.
 * @param buf    [out] size bytes, written during the call only; on error its content is undefined
 * @param direct [in] MMC_COPY_G2H (the seed's default), G2L, GH2L, GH2H or AUTO
 * @return MMC_OK; MMC_OBJECT_NOT_EXISTS (absent or not yet readable); MMC_INVALID_PARAM (s, key, buf, size differs
 *         from the object, direct); MMC_CLIENT_NOT_INIT; MMC_LEASE_EXPIRED (the copy outlived its lease);
 *         MMC_CHECKSUM_MISMATCH (verify_checksum is on and the bytes received differ from the checksum the writer
 *         committed: the object stays stored, so a retry reads the same bytes unless another replica is picked);
 *         MMC_NOT_ENOUGH_MEMORY (the object is on SSD and no DRAM could be found to read it into);
 *         MMC_NOT_CONNECTED_META; MMC_TIMEOUT; MMC_ERROR (fabric, or the SSD read); MMC_LINK_NOT_FOUND (the
 *         replica's service went away, also during the copy: no byte of another incarnation is returned as good);
 *         MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR.
 * Thread-safe.
 */
MMC_API int mmc_get_into(mmc_store *s, const char *key, void *buf, size_t size, int32_t direct);

/**
 * Removes key. New readers miss at once; memory under a read lease is freed when the lease ends. Acknowledged once
 * the removal is durable. A key allocated by mmc_batch_malloc() and not finished yet, within its write lease, is not
 * removed (MMC_OBJECT_NOT_EXISTS: nothing readable), as if the remove came before the malloc: copies into it may be
 * on their way.
 * @return MMC_OK; MMC_OBJECT_NOT_EXISTS; MMC_INVALID_PARAM (s, key); MMC_CLIENT_NOT_INIT; MMC_META_BACKUP_ERROR
 *         (the removal is not on disk: the key reappears if the meta server restarts); MMC_NOT_CONNECTED_META;
 *         MMC_TIMEOUT; MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR.
 * Thread-safe.
 */
MMC_API int mmc_remove(mmc_store *s, const char *key);

/**
 * @return 1 when key has a readable replica, 0 when not, else a negative code: MMC_INVALID_PARAM (s, key);
 *         MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META; MMC_TIMEOUT; MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR.
 * Thread-safe.
 */
MMC_API int mmc_is_exist(mmc_store *s, const char *key);

/**
 * Fills *out with the key's size and replicas (location, media, GVA). An absent key gives MMC_OK and size 0.
 * @param flag [in] reserved, 0
 * @param out  [out] caller-owned
 * @return MMC_OK; MMC_INVALID_PARAM (s, key, out NULL); MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META; MMC_TIMEOUT;
 *         MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR. On error *out is zeroed.
 * Thread-safe.
 */
MMC_API int mmc_get_key_info(mmc_store *s, const char *key, uint32_t flag, mmc_key_info *out);

/**
 * Puts n keys: one allocate and one commit round trip to the meta server, every RMA write in flight together.
 * Keys are spread over services by free space. A key repeated in one batch is stored once (first wins); both
 * slots report MMC_OK.
 * @param keys,bufs,sizes [in] n entries each, read during the call only
 * @param n       [in] 1..MMC_BATCH_MAX
 * @param results [out] n codes, as mmc_put_from()
 * @return MMC_OK when accepted; MMC_INVALID_PARAM (s, n, NULL arrays, any bad key, buffer, size, direct or rc:
 *         nothing is stored); MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META, MMC_TIMEOUT, MMC_INTERNAL_ERROR (the
 *         allocation round trip failed, or the connection was lost before the writes: nothing is stored);
 *         MMC_META_BACKUP_ERROR (the allocation re-recorded an existing key and could not make it durable);
 *         MMC_MALLOC_FAILED.
 * Thread-safe.
 */
MMC_API int mmc_batch_put_from(mmc_store *s, const char *const *keys, const void *const *bufs, const size_t *sizes,
                               size_t n, int32_t direct, const mmc_replicate_config *rc, int *results);

/**
 * Gets n keys with one meta round trip and every RMA read in flight together.
 * @param results [out] n codes, as mmc_get_into()
 * @return MMC_OK when accepted; MMC_INVALID_PARAM; MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META; MMC_TIMEOUT;
 *         MMC_INTERNAL_ERROR; MMC_MALLOC_FAILED (as mmc_batch_put_from()). Thread-safe.
 */
MMC_API int mmc_batch_get_into(mmc_store *s, const char *const *keys, void *const *bufs, const size_t *sizes, size_t n,
                               int32_t direct, int *results);

/**
 * Removes n keys; results[i] is MMC_OK or MMC_OBJECT_NOT_EXISTS.
 * @return MMC_OK when accepted; MMC_INVALID_PARAM; MMC_CLIENT_NOT_INIT; MMC_META_BACKUP_ERROR (the removals are not
 *         on disk, see mmc_remove()); MMC_NOT_CONNECTED_META; MMC_TIMEOUT; MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR.
 * Thread-safe.
 */
MMC_API int mmc_batch_remove(mmc_store *s, const char *const *keys, size_t n, int *results);

/**
 * Removes every readable object whose key matches regex, a POSIX extended regular expression (regcomp with
 * REG_EXTENDED) searched anywhere in the key: "^model/" for a prefix, "" is refused (see mmc_remove_all()), and so are
 * bounded repetition ("{m,n}": write a literal brace as "[{]") and back-references, whose compiling or matching
 * could hold the meta server for seconds. The server gives the walk a quarter of its heartbeat timeout (2.5 s by
 * default) at most: a pattern slow to match over many keys stops there, with MMC_TIMEOUT. Objects
 * still being written are left alone; memory under a read lease is freed when the lease ends. One meta round trip;
 * the meta server walks its whole index (about 1 s per 10^6 objects, during which it serves nothing else), so this
 * is for administration, not the data path. Acknowledged once the removals are durable.
 * @param regex   [in] 1..1023 bytes, read during the call only
 * @param removed [out] how many objects were removed (set on MMC_OK only)
 * @return MMC_OK; MMC_INVALID_PARAM (s, regex, removed, an empty or too long pattern, or one the meta server cannot
 *         compile or refuses); MMC_TIMEOUT (no answer in timeout_ms, or the walk ran out of its time: what matched
 *         before is removed); MMC_CLIENT_NOT_INIT; MMC_META_BACKUP_ERROR (see mmc_remove()); MMC_NOT_CONNECTED_META;
 *         MMC_TIMEOUT; MMC_INTERNAL_ERROR.
 * Thread-safe.
 */
MMC_API int mmc_remove_by_regex(mmc_store *s, const char *regex, uint64_t *removed);

/**
 * Removes every readable object, as mmc_remove_by_regex() with a pattern that matches every key.
 * @param removed [out] how many objects were removed (set on MMC_OK only)
 * @return as mmc_remove_by_regex(). Thread-safe.
 */
MMC_API int mmc_remove_all(mmc_store *s, uint64_t *removed);

/**
 * results[i] = 1 or 0, as mmc_is_exist().
 * @return MMC_OK when accepted; MMC_INVALID_PARAM; MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META; MMC_TIMEOUT;
 *         MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR. Thread-safe.
 */
MMC_API int mmc_batch_is_exist(mmc_store *s, const char *const *keys, size_t n, int *results);

/**
 * Fills out[i] as mmc_get_key_info().
 * @param out [out] n entries, caller-owned
 * @return MMC_OK; MMC_INVALID_PARAM; MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META; MMC_TIMEOUT; MMC_MALLOC_FAILED;
 *         MMC_INTERNAL_ERROR; on error every out[i] is zeroed. Thread-safe.
 */
MMC_API int mmc_batch_get_key_info(mmc_store *s, const char *const *keys, size_t n, uint32_t flag, mmc_key_info *out);

/**
 * Moves keys from SSD to DRAM now (rewarm) and waits until they are there. Only src MMC_MEDIA_SSD, dst
 * MMC_MEDIA_DRAM and flags 0 are accepted. A key already in DRAM is a success.
 * @param keys [in] n keys, 1..MMC_BATCH_MAX, read during the call only
 * @return MMC_OK; MMC_INVALID_PARAM (s, media pair, flags, keys, n); MMC_CLIENT_NOT_INIT; MMC_META_BACKUP_ERROR
 *         (a move is done but not durable); MMC_NOT_CONNECTED_META; MMC_TIMEOUT (the moves outlasted timeout_ms;
 *         they go on at the meta server); MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR; else the first per-key error, each
 *         of which is logged: MMC_OBJECT_NOT_EXISTS, MMC_NOT_ENOUGH_MEMORY (no DRAM to rewarm into), MMC_ERROR (the
 *         SSD read failed).
 * Thread-safe. Moves of one key requested concurrently (by any store) are done once; every caller waits for it.
 */
MMC_API int mmc_prefetch_keys(mmc_store *s, const char *const *keys, size_t n, uint8_t src_media, uint8_t dst_media,
                              uint32_t flags);

/**
 * Moves keys from DRAM to SSD now and waits until they are there; with no SSD on the key's service (or no room on
 * it) the DRAM copy is removed instead (the seed's rule). Only src MMC_MEDIA_DRAM, dst MMC_MEDIA_SSD and flags 0
 * are accepted. A key already on SSD is a success.
 * @return as mmc_prefetch_keys(), the per-key errors being MMC_OBJECT_NOT_EXISTS and MMC_ERROR (the SSD write
 *         failed).
 * Thread-safe, as mmc_prefetch_keys().
 */
MMC_API int mmc_evict_keys(mmc_store *s, const char *const *keys, size_t n, uint8_t src_media, uint8_t dst_media,
                           uint32_t flags);

/**
 * Grants or extends a read lease on each key for this store, for use by mmc_batch_copy() in a read direction.
 * Repeating it for a key extends the same lease; one mmc_batch_remove_lease() releases it.
 * @param lease_ttl_ms [in] 0: the meta server's ock.mmc.meta.lease_ttl_ms
 * @param results [out] per key MMC_OK, MMC_OBJECT_NOT_EXISTS or MMC_MALLOC_FAILED
 * @return MMC_OK when accepted; MMC_INVALID_PARAM (s, keys, n, results NULL); MMC_CLIENT_NOT_INIT;
 *         MMC_NOT_CONNECTED_META; MMC_TIMEOUT; MMC_MALLOC_FAILED (leases the server granted in the call run out at
 *         their TTL); MMC_INTERNAL_ERROR (every results[i] holds it).
 * Thread-safe. The lease is the store's: any of its threads may copy under it or release it. Calls of one store
 * to this function run side by side; one to mmc_batch_remove_lease() waits for those in flight, and those asked
 * after it wait for it, so that a key's add and remove reach the server in the order the store records them.
 */
MMC_API int mmc_batch_add_lease(mmc_store *s, const char *const *keys, size_t n, uint64_t lease_ttl_ms, int *results);

/**
 * Releases the read leases mmc_batch_add_lease() took on keys. A get running on another thread keeps its own lease
 * (a get's lease ends with its call), and a get's end leaves these leases in place.
 * @return MMC_OK; MMC_LEASE_EXPIRED (a key had no such lease, or it had already expired, by this store's clock or
 *         by the server, which does not keep leases across its restart or a failover; the others are released
 *         anyway. A call retried on a new connection counts a lease the server no longer has as released: its
 *         first try may have released it); MMC_INVALID_PARAM (s, keys, n); MMC_CLIENT_NOT_INIT; MMC_NOT_CONNECTED_META;
 * MMC_TIMEOUT; MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR. Thread-safe; a copy under one of these leases still running on
 * another thread may then fail with MMC_LEASE_EXPIRED or read reused bytes: release only what no thread is reading.
 */
MMC_API int mmc_batch_remove_lease(mmc_store *s, const char *const *keys, size_t n);

/**
 * Allocates n objects for the one-copy GVA flow. Each stays invisible to readers until mmc_batch_write_finish();
 * if this store neither finishes nor renews it within the write lease, the space is reclaimed.
 * @param sizes [in] n object sizes, > 0
 * @param media [in] MMC_MEDIA_DRAM; MMC_MEDIA_HBM is refused (MMC_INVALID_PARAM): no service of this build lends
 *        accelerator memory, so no key could be placed there
 * @param lease_ttl_ms [in] write lease, 0: ock.mmc.meta.lease_ttl_ms
 * @param gvas [out] n entries: the GVA of each object's first byte; 0 when that key could not be allocated (no
 *             room, or it exists unfinished with another size: the reason is not reported per key). A key that
 *             already exists gives its GVA; if it is already readable, copies into it are skipped; if this
 *             store is still writing it (an earlier entry of the batch, another thread's malloc), the first
 *             malloc's write lease goes on and copies into it write that allocation; if another store is, copies
 *             are refused: mmc_batch_copy() with MMC_INVALID_PARAM (this store holds no grant for the range),
 *             mmc_batch_copy_keys() with MMC_LEASE_EXPIRED for that key.
 * @return MMC_OK when accepted; MMC_INVALID_PARAM (s, keys, n, sizes, gvas, media); MMC_CLIENT_NOT_INIT;
 *         MMC_NOT_CONNECTED_META; MMC_TIMEOUT; MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR. On any error every gvas[i]
 *         is 0 (gvas not NULL, n within MMC_BATCH_MAX).
 * Thread-safe; the allocation is the store's: any of its threads may copy into it and finish it.
 */
MMC_API int mmc_batch_malloc(mmc_store *s, const char *const *keys, const size_t *sizes, size_t n, uint16_t media,
                             uint64_t lease_ttl_ms, mmc_gva *gvas);

/**
 * Copies between GVA ranges and local buffers. A write direction (L2G, H2G, L2GH, H2GH) copies into ranges this
 * store allocated with mmc_batch_malloc() that are still unfinished (ranges of an already readable object are
 * skipped); a read direction (G2L, G2H, GH2L, GH2H) copies from ranges of keys this store holds a lease on.
 * gvas[i] may point anywhere inside an object (GVA plus offset). Ranges are not whole objects, so reads are never
 * checked against an object's checksum (mmc_local_config.verify_checksum), and objects published by
 * mmc_batch_write_finish() carry none. A range is checked against this store's live grants, not against the key
 * the caller got its GVA for: once that key's lease ended, the space may be granted to this store again for
 * another object, and a copy of the old GVA moves that object's bytes. mmc_batch_copy_keys() checks the grant.
 * @param gvas  [in] n GVAs, each the start of one range
 * @param bufs  [in] n local buffers (read for a write direction, written for a read), used during the call only
 * @param sizes [in] n range sizes, > 0
 * @param n     [in] 0..MMC_BATCH_MAX * MMC_LAYERS_MAX
 * @param flag  [in] reserved, ignored
 * @return MMC_OK (also for n == 0); MMC_INVALID_PARAM (s, direct, NULL, zero size, a range outside what this store
 *         allocated or leased, a range on the SSD tier — mmc_prefetch_keys() brings it to DRAM —: nothing is
 *         copied; a read lease that ended more than a minute ago counts as never taken); MMC_CLIENT_NOT_INIT;
 *         MMC_LEASE_EXPIRED (a read outlived its
 *         read lease: a read whose lease was over before the call reads nothing, one that outlived it midway may
 *         have written reused bytes into bufs; or a write came after its write lease ran out — the space may
 *         belong to another object, so nothing more is written, checked before each of the call's writes — or
 *         the meta server connection that granted the lease was lost, or that server has been silent for three
 *         quarters of its heartbeat timeout: a successor may have given the space away); MMC_ERROR (fabric);
 *         MMC_TIMEOUT (an RMA stalled, or looking up the range's service took too long); MMC_LINK_NOT_FOUND (the
 *         range's service went away); MMC_NOT_CONNECTED_META, MMC_INTERNAL_ERROR (looking up the range's
 *         service); MMC_MALLOC_FAILED.
 * Thread-safe: copies into disjoint parts of one allocation may run on several threads at once.
 */
MMC_API int mmc_batch_copy(mmc_store *s, const mmc_gva *gvas, void *const *bufs, const size_t *sizes, size_t n,
                           int32_t direct, uint32_t flag);

/**
 * mmc_batch_copy() of keys' ranges, each key's ranges under the grant the caller was given them by: keys[i], and the
 * GVA mmc_batch_malloc() returned for it, or for a read the mmc_key_info gva[] of the replica it leased (gvas[i]). A
 * key whose grant is not there any more moves nothing: that happens when the caller's allocation or lease ended and
 * the space was granted to this store again, for another key or for the same key at another place, where a plain
 * copy of the old GVA would move that object's bytes. A caller that keeps GVAs for a while and cannot tell when its
 * leases end (one asked with lease_ttl_ms 0 lasts the server's ock.mmc.meta.lease_ttl_ms) copies this way. Each key
 * fails alone; the others' ranges move.
 * @param keys    [in] n keys, read during the call only
 * @param gvas    [in] n GVAs: the start of each key's object, as its grant gave it
 * @param counts  [in] n range counts; key i's ranges come next in offsets, bufs and sizes, in key order
 * @param offsets [in] each range's offset in its key's object
 * @param bufs    [in] each range's local buffer (read for a write direction, written for a read), used during the
 *                call only
 * @param sizes   [in] each range's size, > 0; the range lies in the object
 * @param n       [in] 0..MMC_BATCH_MAX keys, with at most MMC_BATCH_MAX * MMC_LAYERS_MAX ranges in all
 * @param results [out] n codes: MMC_OK; MMC_INVALID_PARAM (a bad keys[i] (NULL, empty, longer than MMC_KEY_MAX) or
 *                gvas[i], a range with a NULL buffer or no bytes, past the object, or on the SSD tier);
 * MMC_LEASE_EXPIRED (the grant ended: nothing of the key moved; or a read outlived its lease, or the meta server
 *                connection that granted it was lost or went silent, as mmc_batch_copy() says); MMC_ERROR, MMC_TIMEOUT,
 * MMC_LINK_NOT_FOUND, MMC_MALLOC_FAILED as mmc_batch_copy() says them
 * @return MMC_OK with results[] (also for n == 0); MMC_INVALID_PARAM (s, a NULL array, n or the ranges over their
 *         limits, direct), MMC_CLIENT_NOT_INIT, MMC_MALLOC_FAILED: then results[] is not written.
 * Thread-safe, as mmc_batch_copy().
 */
MMC_API int mmc_batch_copy_keys(mmc_store *s, const char *const *keys, const mmc_gva *gvas, const uint32_t *counts,
                                const uint64_t *offsets, void *const *bufs, const size_t *sizes, size_t n,
                                int32_t direct, uint32_t flag, int *results);

/**
 * Publishes (write_results[i] == 0) or drops (non-zero) each key allocated by mmc_batch_malloc(). Acknowledged once
 * durable.
 * A finish names an allocation, not only a key: the calling thread's latest mmc_batch_malloc() of the key, or,
 * when this thread allocated none, the key's latest allocation by this store.
 * @param results [out] per key MMC_OK (also for an already readable key) or MMC_UNMATCHED_KEY (never allocated by
 *                this store, reclaimed after its write lease, or removed and put again since)
 * @return MMC_OK when accepted; MMC_INVALID_PARAM (s, keys, n, write_results, results); MMC_CLIENT_NOT_INIT;
 *         MMC_META_BACKUP_ERROR (published but not durable, see mmc_put_from()); MMC_NOT_CONNECTED_META;
 *         MMC_TIMEOUT; MMC_MALLOC_FAILED; MMC_INTERNAL_ERROR (every results[i] holds it).
 * Thread-safe; finish a key only after every thread's copies into it have returned, and within its write lease.
 * A thread finishing its own allocation after the lease ran out gets MMC_UNMATCHED_KEY even where another thread
 * has allocated the key again; a thread finishing another thread's allocation late can still finish the newer
 * allocation of the key, written or not.
 */
MMC_API int mmc_batch_write_finish(mmc_store *s, const char *const *keys, const int32_t *write_results, size_t n,
                                   int *results);

/**
 * Gathers `layers` buffers into one object (layer i at offset sum(sizes[0..i-1])).
 * @param bufs,sizes [in] `layers` entries each, read during the call only
 * @param layers [in] 1..MMC_LAYERS_MAX
 * @return as mmc_put_from(), MMC_INVALID_PARAM also for layers, a NULL buffer or a zero size. Thread-safe.
 */
MMC_API int mmc_put_from_layers(mmc_store *s, const char *key, const void *const *bufs, const size_t *sizes,
                                size_t layers, int32_t direct, const mmc_replicate_config *rc);

/**
 * Scatters an object into `layers` buffers; the split may differ from the put's as long as the total matches.
 * @return as mmc_get_into(), MMC_INVALID_PARAM also for layers, a NULL buffer, a zero size, or a total that
 *         differs from the object. Thread-safe.
 */
MMC_API int mmc_get_into_layers(mmc_store *s, const char *key, void *const *bufs, const size_t *sizes, size_t layers,
                                int32_t direct);

/**
 * Batch of mmc_put_from_layers(): bufs[i] and sizes[i] hold layers[i] entries; results[i] as mmc_put_from().
 * @return as mmc_batch_put_from(). Thread-safe.
 */
MMC_API int mmc_batch_put_from_layers(mmc_store *s, const char *const *keys, const void *const *const *bufs,
                                      const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                                      const mmc_replicate_config *rc, int *results);

/**
 * Batch of mmc_get_into_layers(); results[i] as mmc_get_into().
 * @return as mmc_batch_get_into(). Thread-safe.
 */
MMC_API int mmc_batch_get_into_layers(mmc_store *s, const char *const *keys, void *const *const *bufs,
                                      const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                                      int *results);

/**
 * Reads the leading keys of a prefix that arrive within a deadline: what an engine loading a cached prefix wants,
 * which recomputes what does not come in time rather than wait for a slow or dying peer.
 *
 * keys[0..n) are the pages of one prefix, in order; key i goes into bufs[i] (sizes[i] bytes, the object's size).
 * One lookup, the reads in key order, one release, all within timeout_ms of the call: a read still in flight then
 * is given up (its connection closed first, so nothing of it lands afterwards), its lease released, and the call
 * returns. The connection is the store's: operations of this store's other calls on it at that moment fail
 * (MMC_ERROR or MMC_TIMEOUT; the next ones reconnect), so a deadline that often expires mid-read costs the other
 * threads too. Keys after the first one missing (or of another size) are not read.
 * @param landed [out] how many leading keys landed complete (and verified, with verify_checksum) in time: bufs[0..
 *        *landed) hold their objects; the content of the other buffers is unspecified (they may be partly written)
 * @return MMC_OK, with *landed from 0 (nothing in time, a lookup that did not answer in time included) to n;
 *         MMC_INVALID_PARAM (arguments as mmc_batch_get_into(), landed NULL), MMC_CLIENT_NOT_INIT,
 *         MMC_NOT_CONNECTED_META (no meta server, after waiting at most until the deadline), and *landed 0.
 *         Blocks at most timeout_ms plus a scheduling slice (except with a provider that cannot close connections:
 *         mmc.h's caveats). Thread-safe.
 */
MMC_API int mmc_batch_get_into_prefix(mmc_store *s, const char *const *keys, void *const *bufs, const size_t *sizes,
                                      size_t n, int32_t direct, uint32_t timeout_ms, size_t *landed);

/**
 * mmc_batch_get_into_prefix() into layer lists, as mmc_batch_get_into_layers() reads them.
 * @return as mmc_batch_get_into_prefix(). Thread-safe.
 */
MMC_API int mmc_batch_get_into_layers_prefix(mmc_store *s, const char *const *keys, void *const *const *bufs,
                                             const size_t *const *sizes, const size_t *layers, size_t n, int32_t direct,
                                             uint32_t timeout_ms, size_t *landed);

/**
 * Reports this store's local service id, stable for the life of the service and never reused for another live
 * service. A meta server restart that outlasts ock.mmc.meta.rejoin_timeout_ms forgets the service: when the store
 * reconnects it joins again under a new id (logged as a warning), which later calls report.
 * @param id [out] caller-owned
 * @return MMC_OK; MMC_INVALID_PARAM (s or id NULL); MMC_CLIENT_NOT_INIT; MMC_NOT_STARTED (a client-only store).
 * Thread-safe; never blocks on the network.
 */
MMC_API int mmc_get_local_service_id(mmc_store *s, uint32_t *id);

/**
 * Names a code and says what it means ("MMC_NOT_ENOUGH_MEMORY: not enough memory in the pool"); unknown codes give
 * "unknown error".
 * @return static storage, never NULL. Thread-safe; may be called from a log handler.
 */
MMC_API const char *mmc_strerror(int code);

/**
 * The name of a code as MMC_ERRNO_MAP spells it ("MMC_TIMEOUT"), for logs and bindings that map codes to their own
 * names.
 * @return static storage; NULL for a code that is not in MMC_ERRNO_MAP, so a caller can tell the known codes apart.
 * Thread-safe; may be called from a log handler.
 */
MMC_API const char *mmc_err_name(int code);

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
 *   mmc_err_name(), mmc_version(), mmc_version_number() and mmc_set_log_handler(): any other call may deadlock (on
 *   the meta reader thread, a call that waits for a reply only that thread can deliver never returns). A line libmmc
 *   logs while the same thread is inside the handler is dropped, so logging never re-enters it.
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

/**
 * Returns MMC_VERSION_STRING of the library actually loaded (static storage). Thread-safe; may be called from a log
 * handler.
 */
MMC_API const char *mmc_version(void);

/**
 * Returns MMC_VERSION_HEX of the library actually loaded (0xMMmmpp: 0.1.0 is 0x000100), for comparing versions
 * without parsing mmc_version(). Thread-safe; may be called from a log handler.
 */
MMC_API unsigned mmc_version_number(void);

#ifdef __cplusplus
}
#endif

#endif /* MMC_MMC_H */
