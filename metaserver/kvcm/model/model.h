/*
 * The KVCM data model (reference kvcm.md §3): storages, instance groups, instances, and per instance an index of
 * blocks, each holding cache locations. Everything here belongs to the event-loop thread.
 */
#ifndef MMC_KVCM_MODEL_H
#define MMC_KVCM_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"
#include "list.h"
#include "wire_enums.h"

#define KVCM_NAME_MAX   256 /* instance ids, group and storage names, spec names */
#define KVCM_LOC_ID_LEN 8

struct kvcm;

/* A storage back-end (admin-managed, global). cfg is its canonical admin StorageConfig. */
struct storage {
	struct list link;
	char *name;
	int type; /* enum st_type */
	bool available;
	json_t *cfg;           /* canonical StorageConfig */
	const char *root_path; /* file, dummy: inside cfg */
	uint32_t key_count_per_file;
	const char *key_prefix; /* mmc */
	uint64_t nlocations;    /* live locations on it: it cannot be removed while any remain */
};

/* Byte and key usage of an instance or a group (reference §5.3). pending: already handed to the deleter. */
struct usage {
	uint64_t bytes, bytes_by_type[ST_COUNT];
	uint64_t keys;
	uint64_t pending_bytes, pending_by_type[ST_COUNT];
	uint64_t pending_keys;
};

struct group {
	struct list link;
	char *name;
	json_t *cfg; /* canonical InstanceGroup */
	/* fields of cfg the server acts on */
	int64_t version;
	int64_t max_instance_count;
	int64_t capacity;
	int64_t type_capacity[ST_COUNT]; /* <= 0: no limit for that type */
	double used_percentage;
	int64_t delay_before_delete_ms;
	int64_t max_key_count;
	int prefer; /* CachePreferStrategy */
	uint32_t ninstances;
	struct usage use;
};

struct spec_info {
	char *name;
	int64_t size;
};

struct spec_group {
	char *name;
	uint32_t nspecs;
	uint32_t *specs; /* indices into the instance's spec_info */
};

struct block;

struct instance {
	struct hmap_node hlink; /* in kvcm.instances, by id */
	char *id;
	uint64_t uid; /* persistent number: the prefix of its block records */
	/* nonzero: its data lives under "<id>~<dir_uid>", not "<id>" (registered again while an earlier instance of its
	 * id was still being deleted, whose deletes must not reach its files) */
	uint64_t dir_uid;
	struct group *group;
	json_t *info; /* canonical InstanceInfo (without the group-derived quota name) */
	int32_t block_size;
	int default_query_type;
	uint32_t nspecs;
	struct spec_info *specs;
	uint32_t nspec_groups;
	struct spec_group *spec_groups;
	struct hmap blocks; /* the block index: key -> block (blocks.n of them) */
	struct list lru;    /* blocks by last write, oldest first */
	struct usage use;
	uint32_t refs;           /* pending deletes and sessions that still point here */
	uint32_t open_sessions;  /* its write sessions not finished: kvcm.write_session.max_sessions_per_instance */
	bool removed;            /* out of the registry; freed when refs drops to 0 */
	struct list zombie_link; /* removed: on kvcm.zombie_instances until freed */
};

/* The id of a location: its 8 random chars, or an event-report location's kvs#... key. */
#define location_name(l) ((l)->er_key ? (l)->er_key : (l)->id)

struct loc_spec {
	const char *name;
	const char *uri;
};

/* One copy of a block in one storage (reference §3.2 state machine). Strings live in the same allocation. */
struct location {
	struct location *next;
	struct storage *storage;
	uint64_t create_time_us;
	uint64_t bytes; /* sum of the specs' size= params: usage accounting */
	char *json;     /* the CacheLocation message, rendered on first read (it never changes) */
	uint32_t json_len;
	char id[KVCM_LOC_ID_LEN + 1];
	const char *er_key; /* event-report locations: kvs#<type>#<medium>#<host> (in the allocation); NULL else */
	uint8_t status;     /* enum cls */
	uint8_t type;       /* enum st_type */
	bool pending;       /* handed to the deleter */
	uint16_t nspecs;
	struct loc_spec specs[];
};

struct block {
	struct hmap_node hlink; /* first: the link a prefetch fetches is the block */
	int64_t key;
	struct list lru_link;
	uint64_t lru_time_us;
	int64_t prev_key; /* the key before it in the write that created it (BP#prev_key) */
	bool has_prev;
	bool pending_key; /* every location handed to the deleter: counted in usage.pending_keys */
	struct location *locs;
};

#endif
