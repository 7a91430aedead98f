/*
 * The meta server's state. One event-loop thread owns everything reachable from struct meta; nothing here is
 * locked because nothing here is shared.
 */
#ifndef MMC_META_H
#define MMC_META_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "list.h"
#include "server_conf.h"
#include "tenants.h"
#include "wire_limits.h"

struct allocator;
struct conn;
struct event_base;
struct meta_policy;
struct meta_rpc;
struct persist;
struct persist_table;

#define MEDIA_COUNT 3 /* MMC_MEDIA_HBM, _DRAM, _SSD */

/* The object lists (objects.h): an object is on at most one, through struct object.link. */
enum olist {
	OLIST_LRU,                               /* + media: READABLE objects, most recent (highest stamp) first */
	OLIST_PENDING = OLIST_LRU + MEDIA_COUNT, /* ALLOCATED objects */
	OLIST_ZOMBIES,                           /* removed, still leased or being written */
	OLIST_MOVING,                            /* being demoted (off their LRU meanwhile) */
	OLIST_COUNT
};

/* One pool a local service lends. */
struct segment {
	uint32_t media;
	uint64_t size;
	uint64_t base;
	uint64_t key;
	uint64_t host_key; /* the host path's key (0: same-host peers cannot map this segment) */
	struct allocator *alloc;
};

/* A local service: identified by rank and incarnation, never by rank alone. */
struct service {
	uint32_t rank;
	uint64_t incarnation;
	struct session *session;     /* NULL while detached (after a server restart, until it re-registers) */
	uint64_t rejoin_deadline_ms; /* detached: unmounted after this */
	uint64_t writable_after_ms;  /* rejoined a restarted server: placement skips it until then */
	char host[256];
	uint32_t pid;
	uint8_t fabric_addr[MMC_WIRE_ADDR_MAX];
	uint32_t addr_len;
	char provider[64];
	char ssd_path[1024]; /* the SSD tier's file, for the logs */
	/* the SSD tier file's identity: a restarted service adopts this one's SSD keys only from the same file */
	uint8_t ssd_id[MMC_WIRE_SSD_ID];
	bool has_ssd_id;
	char boot_id[40];    /* with host: which kernel it runs under (same-host peers map pool_path) */
	char pool_path[128]; /* its DRAM pool's shared file, "" when private */
	uint32_t nsegs;
	struct segment segs[MMC_WIRE_SEGMENTS];
	struct list orphan_link; /* meta.orphans: an SSD tier whose service left (rank is then UINT32_MAX) */
	uint32_t orphan_of;      /* an orphan: the rank its blobs' records name (its record's key; kept from others) */
	bool revived;            /* loaded from an orphan's record: made an orphan again once its objects are in */
	uint64_t nblobs;         /* blobs placed here (a service that leaves walks the object table for them) */
	uint32_t slot;           /* in service_slots: what its blobs name it by */
	struct list quarantine;  /* space a given-up write may still reach (quarantine.h) */
};

/* One connection's identity: leases and pending writes belong to a session. */
struct session {
	uint64_t id;
	char host[256];
	uint32_t pid;
	struct service *svc; /* the local service this connection registered, if any */
	struct conn *conn;
	struct extent *extents; /* allocation extents it holds (policy/extents.c), NULL: none */
	uint32_t tenant;        /* its index in meta.tenants, as its hello proved (0: the default tenant) */
	uint32_t minor;         /* the minor wire version its hello named: what its store understands */
	bool allocated; /* it was given an allocation (a put's or GVA): its close looks for its unfinished ones */
};

/* Blob offsets are multiples of this (the allocator's granule, ALLOC_ALIGN): a blob keeps offset / BLOB_GRANULE. */
#define BLOB_GRANULE 4096u

/*
 * One replica of an object: 8 bytes. Its service is a slot of service_slots (a service keeps its slot while it
 * exists, detached or orphaned), so a blob needs no pointer; 0 once its service left. Read and set it with the
 * blob_* helpers (objects.h).
 */
struct blob {
	uint64_t page : 46; /* offset / BLOB_GRANULE */
	uint64_t media : 2;
	uint64_t svc : 16;
};

/* Every service by its slot (services.c): what struct blob.svc names. Slot 0 is never used. */
#define SERVICE_SLOTS 65536
extern struct service *service_slots[SERVICE_SLOTS];

static inline struct service *blob_svc(const struct blob *b)
{
	return service_slots[b->svc];
}

static inline uint64_t blob_offset(const struct blob *b)
{
	return (uint64_t)b->page * BLOB_GRANULE;
}

/* A read lease of one session on one object: its gets' count (nested gets of one session nest) and its add_lease
 * pin, apart, so that neither's release ends the other (the threads of one store share a session). Lease records live
 * in a table of their own (objects.c) and link by index. */
#define LEASE_COUNT_MAX 0x7fffffffu
struct lease {
	uint32_t next;       /* the object's next lease, 0: none */
	uint32_t count : 31; /* gets not released yet; saturates at LEASE_COUNT_MAX */
	uint32_t added : 1;  /* an add_lease pin, until remove_lease */
	uint32_t gen;        /* this record's number (never 0): a release naming another one is not for it */
	uint64_t session;
	uint64_t expiry_ms;
};

/* Links of an object list (objects.h): handles of the neighbours; a list's head is a sentinel record. */
struct olink {
	uint32_t prev, next;
};

/* The most tier tasks one object may have in flight (its busy field's width): a reader past them waits. */
#define OBJECT_BUSY_MAX 255u

/*
 * An object: 56 bytes, its blobs, its key. Records live in the slab (slab.h) and link to each other by handle; what
 * a lookup and an LRU touch read (hnext, link, tag, keylen, state, the key) is in the record's first two cache
 * lines. Fields that only some states use share their bits: a put being written has no LRU stamp and no record in
 * the store, a removed object neither. Numbers are 48 bits: 2.8 * 10^14 objects, LRU touches, sessions or persist
 * batches per server run, sizes up to 256 TiB, ms clocks for 8900 years.
 */
struct object {
	uint32_t hnext;    /* index chain: the next record's handle, 0 at the end */
	uint32_t self;     /* this record's handle */
	struct olink link; /* READABLE: LRU of its media; ALLOCATED: pending; REMOVING: zombies; demoting: moving */
	uint32_t leases;   /* its first lease record (objects.c), 0: none */
	uint32_t checksum; /* of the object's bytes, as the writer committed it */
	uint64_t size : 48, keylen : 8, nblobs : 8;
	uint64_t id : 48;          /* unique per server run: tells a re-put key from the object a lease was taken on */
	uint64_t state : 8;        /* enum mmc_blob_state, the same for all blobs; OBJECT_FREE, OBJECT_HEAD */
	uint64_t in_index : 1;     /* in the key index */
	uint64_t persisted : 1;    /* has a record in the metadata store */
	uint64_t gva : 1;          /* allocated by batch_malloc (write finished explicitly) */
	uint64_t promoting : 1;    /* an SSD -> DRAM rewarm is in flight */
	uint64_t stamp_dirty : 1;  /* stamp is newer than the one in its record: written at the next checkpoint */
	uint64_t unfinished : 1;   /* REMOVING: an unfinished put's, whose writes may still land (quarantined) */
	uint64_t counted : 1, : 1; /* in its tenant's counts (tenant_count): from the index until its space is freed */
	union {
		struct {
			uint64_t stamp : 48; /* READABLE: meta.lru_clock when it last went to its LRU's head (lru.h) */
			uint64_t checksum_type : 8; /* MMC_WIRE_CHECKSUM_* of checksum; NONE: unverified */
			uint64_t busy : 8; /* tier tasks in flight that read or write its bytes: OBJECT_BUSY_MAX */
		};
		struct {
			uint64_t write_session : 48, : 16; /* ALLOCATED, REMOVING: its writer, 0 when done */
		};
	};
	union {
		struct {
			uint64_t rec_seq : 48; /* READABLE: its record's batch; 0: loaded from the store (durable) */
			uint64_t tag : 16;     /* the top bits of its key's hash: most chain misses stop here */
		};
		struct {
			uint64_t write_expiry_ms : 48, : 16; /* ALLOCATED: reclaimed after this (GVA), 0: never */
		};
		struct {
			uint64_t unlink_seq : 48, : 16; /* REMOVING: the batch that unlinks every record of it */
		};
	};
	struct blob blobs[]; /* nblobs entries, then keylen + 1 key bytes */
};

/* Marks in struct object.state of records that are not objects. */
#define OBJECT_FREE 0xff /* given back to the slab */
#define OBJECT_HEAD 0xfe /* an object list's sentinel */

static inline char *object_key(struct object *o)
{
	return (char *)&o->blobs[o->nblobs];
}

/*
 * One of the key index's tables: which one a key is in, 8 bits of its hash say. Each doubles on its own, so a
 * doubling rehashes 1/256 of the objects: one table for all stalled the loop for 7 s at 8.4 * 10^6 objects.
 */
#define INDEX_SHARDS 256

struct index_shard {
	uint32_t *buckets; /* mask + 1 of them, each a record handle (0: none) */
	uint32_t mask;
	uint32_t count; /* objects in it */
};

/* Why the RPC port closed a connection that never got in, or cut one off (rpc/conn.c, rpc/auth.c). */
enum rpc_refusal {
	RPC_REFUSED_CREDENTIALS,   /* a missing or wrong cluster secret, or a request before the hello */
	RPC_REFUSED_WIRE_VERSION,  /* another major wire version */
	RPC_REFUSED_HELLO_TIMEOUT, /* not through the hello in ock.mmc.meta.hello_timeout_ms */
	RPC_REFUSED_DISPLACED,     /* closed before its hello to make room for a new connection */
	RPC_REFUSED_LIMIT,         /* over ock.mmc.meta.max_connections */
	RPC_REFUSED_INPUT_BUDGET,  /* its frame would pass ock.mmc.meta.max_buffered_input */
	RPC_REFUSED_EARLY_FRAME,   /* before its hello, a frame larger than MMC_WIRE_HELLO_FRAME_MAX */
	RPC_REFUSED_TLS,           /* its TLS handshake failed: no client certificate, one the CA did not sign, ... */
	RPC_REFUSED_COUNT
};

/* Why a local service was unmounted (services.c maps service_unmount's reason to one): only UNMOUNT_UNREGISTER is an
 * engine that left cleanly; every other one lost its single-replica keys without being asked to. */
enum unmount_reason {
	UNMOUNT_UNREGISTER,   /* mmc_destroy / teardown: the engine said goodbye */
	UNMOUNT_EOF,          /* its connection closed without an unregister: the process died or was killed */
	UNMOUNT_HEARTBEAT,    /* silent past ock.mmc.meta.heartbeat_timeout_ms: hung, stopped, or cut off */
	UNMOUNT_NO_REJOIN,    /* after a restart or failover, not back within ock.mmc.meta.rejoin_timeout_ms */
	UNMOUNT_POOL_CHANGED, /* it rejoined with another pool than the one its objects are in */
	UNMOUNT_OTHER,        /* its connection was cut for a protocol error, TLS, memory, ... */
	UNMOUNT_COUNT
};

struct meta_stats {
	uint64_t requests[64]; /* by Frame body case */
	uint64_t evictions;
	uint64_t unmounts[UNMOUNT_COUNT];
	uint64_t rpc_refused[RPC_REFUSED_COUNT];
	uint64_t quarantined_total; /* ranges set aside because a given-up write may still reach them */
	uint64_t spin_caught;       /* request reads the loop met polling, not woken for (daemon/loop.h) */
	uint64_t spin_ns;           /* CPU time of its polls that found nothing to do */
};

/*
 * The object store's state, which every layer from state/ up reads. What only the layers above need is theirs: the
 * policy layer's queues and moves (struct meta_policy, policy/meta_policy.h) and the RPC port (struct meta_rpc,
 * rpc/meta_rpc.h) are reached through the two opaque pointers; the daemon (daemon/server.h) allocates all three and
 * wires them. A field that several layers use lives here, in the lowest of them.
 */
struct meta {
	struct meta_conf conf;
	struct meta_policy *policy; /* policy/meta_policy.h; NULL in a test of the state layer alone */
	struct meta_rpc *rpc;       /* rpc/meta_rpc.h; NULL without an RPC port */
	/* the moves svc was making will not be answered, so they fail now (tier.c sets it): called by service_unmount
	 * before a service goes, and when its store registers again on a new connection while the old one was still
	 * open (a half-open one; the store dropped what came on it) */
	void (*moves_lost)(struct meta *m, struct service *svc);
	/* called when space was given back, so requests waiting for room can retry (policy_init sets it) */
	void (*space_freed)(struct meta *m);
	/* the object store's deadline sweep (main.c sets it): the debug clock runs it after moving the clock */
	void (*sweep)(struct meta *m);
	struct event_base *base;
	struct persist *persist;
	struct persist_table *db_objects, *db_services, *db_info;
	struct persist_table *db_objects_keyed; /* a format-2 store's records, which the load moves to db_objects */

	/* services */
	struct service *ranks[MMC_RANKS_MAX];
	uint32_t nservices;
	uint32_t rank_hi; /* every rank in use is below this: loops over services stop here, not at 1024 */
	uint64_t next_incarnation;
	uint64_t next_object_id;
	uint64_t object_id_ceiling; /* ids below it are reserved in the store (object_next_id) */
	uint64_t object_id_seq;     /* the batch writing the ceiling, until it lands (0: none in flight) */
	/* the data dir's key of the services' rejoin secrets (service_secret.c) */
	uint8_t service_key[32];
	struct list orphans; /* SSD segments of services that left, waiting to be adopted (services.c, tier.c) */

	/* object index: INDEX_SHARDS chained hash tables of record handles, each growing on its own */
	struct index_shard shards[INDEX_SHARDS];
	uint64_t nobjects;
	uint32_t lists[OLIST_COUNT]; /* the object lists' sentinels (objects.h) */
	/* the removed objects still pinned (OLIST_ZOMBIES) by key, chained through hnext: a release or a commit that
	 * names one finds it without walking them all */
	struct {
		uint32_t *buckets; /* mask + 1 of them, each a record handle (0: none) */
		uint32_t mask, n;
	} zombies;
	uint64_t lru_clock;     /* the newest object stamp (lru.h) */
	uint64_t lru_saved;     /* every stamp up to this one is in its record */
	uint64_t lru_saved_ms;  /* when the last LRU checkpoint ran */
	uint64_t hold_kick_seq; /* newest batch whose commit kicks parked requests (space held until it lands) */

	struct tenants tenants; /* ock.mmc.meta.tenants_file (tenants.h); n == 0: none configured */

	struct arena arena; /* per request, reset after each: the RPC layer's decoding, the policy layer's batches */
	uint32_t nconns;    /* libmmc connections (the RPC layer counts them, the metrics report them) */
	struct meta_stats stats;
};

#endif
