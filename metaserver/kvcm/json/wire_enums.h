/*
 * The KVCM wire enums (ErrorCode, StorageType, CacheLocationStatus, QueryType, ...) and their proto3-JSON names.
 * Requests may carry an enum as its name, as a number or as a quoted number; responses always print the name.
 */
#ifndef MMC_KVCM_WIRE_ENUMS_H
#define MMC_KVCM_WIRE_ENUMS_H

#include <stdbool.h>

enum kc_code {
	KC_UNSPECIFIED = 0,
	KC_OK = 1,
	KC_UNSUPPORTED = 2,
	KC_INTERNAL_ERROR = 3,
	KC_SERVICE_NOT_READY = 4,
	KC_INVALID_ARGUMENT = 5,
	KC_DUPLICATE_ENTITY = 6,
	KC_REACH_MAX_ENTITY_CAPACITY = 7,
	KC_INSTANCE_NOT_EXIST = 8,
	KC_SERVER_NOT_LEADER = 9,
	KC_NODE_NOT_REGISTERED = 10,
	KC_SNAPSHOT_IN_PROGRESS = 11,
	KC_SNAPSHOT_RATE_LIMITED = 13,
	KC_SNAPSHOT_REQUIRED = 14,
	KC_IO_ERROR = 20,
	KC_UNKNOWN_ERROR = 100,
};

enum st_type {
	ST_UNSPECIFIED = 0,
	ST_3FS = 1,
	ST_MOONCAKE = 2,
	ST_TAIRMEMPOOL = 3,
	ST_NFS = 4,
	ST_VCNS_3FS = 5,
	ST_DUMMY = 6,
	ST_EVENT_REPORT_L1P5 = 7,
	ST_EVENT_REPORT_L2 = 8,
	ST_TAIRMEMPOOL_SSD = 9,
	ST_MMC = 16, /* ours: blocks held in the mmc pool; far from the reference's numbers so both can grow */
	ST_COUNT = 17,
};

enum cls {
	CLS_NOT_FOUND = 0,
	CLS_NEW = 1,
	CLS_WRITING = 2,
	CLS_SERVING = 3,
	CLS_DELETING = 4,
};

enum query_type {
	QT_UNSPECIFIED = 0,
	QT_BATCH_GET = 1,
	QT_PREFIX_MATCH = 2,
	QT_REVERSE_ROLL_SW_MATCH = 3,
	QT_PREFIX_MATCH_WITH_MAMBA = 4,
};

enum select_strategy {
	LSS_UNSPECIFIED = 0,
	LSS_V6D_PREFIX = 1,
	LSS_V6D_COVERAGE = 2,
	LSS_WEIGHTED_RANDOM = 3,
};

enum trim_strategy {
	TS_UNSPECIFIED = 0,
	TS_REMOVE_ALL_CACHE = 1,
	TS_REMOVE_ALL_META = 2,
	TS_TIMESTAMP = 3,
};

/* One enum: its values and names (sparse values allowed). */
struct enum_desc {
	const char *type;
	int count;
	const int *values;
	const char *const *names;
};

extern const struct enum_desc enum_error_code, enum_storage_type, enum_cls, enum_query_type, enum_trim_strategy,
    enum_reclaim_policy, enum_budget_policy, enum_prefer_strategy, enum_event_type, enum_select_strategy;

/* The name of v, or NULL when v is not a value of e. */
const char *enum_name(const struct enum_desc *e, int v);
/* Looks a name up; returns false when it is not one of e's names. */
bool enum_value(const struct enum_desc *e, const char *name, int *v);

/* The storage type of an internal type name ("file", "mmc", "event_report_l2"...) or of a wire name. */
bool storage_type_parse(const char *s, int *type);
/* The internal name of a storage type ("file" for ST_NFS), or "unknown". */
const char *storage_type_kind(int type);

static inline const char *code_name(int code)
{
	const char *n = enum_name(&enum_error_code, code);

	return n ? n : "UNKNOWN_ERROR";
}

#endif
