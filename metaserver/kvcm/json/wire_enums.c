#include "wire_enums.h"

#include <string.h>

#define ENUM(var, tname, ...)                                                                                          \
	static const int var##_v[] = {__VA_ARGS__};                                                                    \
	const struct enum_desc var = {tname, (int)(sizeof(var##_v) / sizeof(int)), var##_v, var##_n}

static const char *const enum_error_code_n[] = {
    "UNSPECIFIED",
    "OK",
    "UNSUPPORTED",
    "INTERNAL_ERROR",
    "SERVICE_NOT_READY",
    "INVALID_ARGUMENT",
    "DUPLICATE_ENTITY",
    "REACH_MAX_ENTITY_CAPACITY",
    "INSTANCE_NOT_EXIST",
    "SERVER_NOT_LEADER",
    "NODE_NOT_REGISTERED",
    "SNAPSHOT_IN_PROGRESS",
    "SNAPSHOT_RATE_LIMITED",
    "SNAPSHOT_REQUIRED",
    "IO_ERROR",
    "UNKNOWN_ERROR",
    "ERROR_MAX",
};
ENUM(enum_error_code, "ErrorCode", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 20, 100, 65535);

static const char *const enum_storage_type_n[] = {
    "ST_UNSPECIFIED", "ST_3FS",   "ST_MOONCAKE",          "ST_TAIRMEMPOOL",     "ST_NFS",
    "ST_VCNS_3FS",    "ST_DUMMY", "ST_EVENT_REPORT_L1P5", "ST_EVENT_REPORT_L2", "ST_TAIRMEMPOOL_SSD",
    "ST_MMC",
};
ENUM(enum_storage_type, "StorageType", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16);

static const char *const enum_cls_n[] = {"CLS_NOT_FOUND", "CLS_NEW", "CLS_WRITING", "CLS_SERVING", "CLS_DELETING"};
ENUM(enum_cls, "CacheLocationStatus", 0, 1, 2, 3, 4);

static const char *const enum_query_type_n[] = {"QT_UNSPECIFIED", "QT_BATCH_GET", "QT_PREFIX_MATCH",
                                                "QT_REVERSE_ROLL_SW_MATCH", "QT_PREFIX_MATCH_WITH_MAMBA"};
ENUM(enum_query_type, "QueryType", 0, 1, 2, 3, 4);

static const char *const enum_trim_strategy_n[] = {"TS_UNSPECIFIED", "TS_REMOVE_ALL_CACHE", "TS_REMOVE_ALL_META",
                                                   "TS_TIMESTAMP"};
ENUM(enum_trim_strategy, "TrimStrategy", 0, 1, 2, 3);

static const char *const enum_reclaim_policy_n[] = {"POLICY_UNSPECIFIED", "POLICY_LRU", "POLICY_LFU", "POLICY_TTL"};
ENUM(enum_reclaim_policy, "ReclaimPolicy", 0, 1, 2, 3);

/* GROUP_LRU first: the value of an absent field (a canonical form's default is the first value listed) */
static const char *const enum_budget_policy_n[] = {"GROUP_LRU", "USAGE_PROPORTIONAL", "FIXED_PER_INSTANCE"};
ENUM(enum_budget_policy, "InstanceReclaimBudgetPolicy", 2, 0, 1);

static const char *const enum_prefer_strategy_n[] = {
    "CPS_UNSPECIFIED",
    "CPS_ALWAYS_3FS",
    "CPS_PREFER_3FS",
    "CPS_ALWAYS_MOONCAKE",
    "CPS_PREFER_MOONCAKE",
    "CPS_ALWAYS_TAIR_MEMPOOL",
    "CPS_PREFER_TAIR_MEMPOOL",
    "CPS_ALWAYS_VCNS_3FS",
    "CPS_PREFER_VCNS_3FS",
    "CPS_ALWAYS_TAIR_MEMPOOL_SSD",
    "CPS_PREFER_TAIR_MEMPOOL_SSD",
};
ENUM(enum_prefer_strategy, "CachePreferStrategy", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10);

static const char *const enum_event_type_n[] = {"EVENT_UNSPECIFIED",   "EVENT_NODE_REGISTER", "EVENT_BLOCK_ADD",
                                                "EVENT_BLOCK_DELETE",  "EVENT_HOST_DOWN",     "EVENT_HEARTBEAT",
                                                "EVENT_BLOCK_SNAPSHOT"};
ENUM(enum_event_type, "ReportEventType", 0, 1, 2, 3, 4, 5, 6);

static const char *const enum_select_strategy_n[] = {"LSS_UNSPECIFIED", "LSS_V6D_PREFIX", "LSS_V6D_COVERAGE",
                                                     "LSS_WEIGHTED_RANDOM"};
ENUM(enum_select_strategy, "LocationSelectStrategy", 0, 1, 2, 3);

const char *enum_name(const struct enum_desc *e, int v)
{
	for (int i = 0; i < e->count; i++)
		if (e->values[i] == v)
			return e->names[i];
	return NULL;
}

bool enum_value(const struct enum_desc *e, const char *name, int *v)
{
	for (int i = 0; i < e->count; i++) {
		if (strcmp(e->names[i], name) == 0) {
			*v = e->values[i];
			return true;
		}
	}
	return false;
}

static const struct {
	const char *kind;
	int type;
} kinds[] = {
    {"file", ST_NFS},
    {"hf3fs", ST_3FS},
    {"vcns_hf3fs", ST_VCNS_3FS},
    {"mooncake", ST_MOONCAKE},
    {"pace", ST_TAIRMEMPOOL},
    {"pace_ssd", ST_TAIRMEMPOOL_SSD},
    {"dummy", ST_DUMMY},
    {"mmc", ST_MMC},
    {"event_report_l1p5", ST_EVENT_REPORT_L1P5},
    {"event_report_l2", ST_EVENT_REPORT_L2},
};

bool storage_type_parse(const char *s, int *type)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(kinds[i].kind, s) == 0) {
			*type = kinds[i].type;
			return true;
		}
	}
	return enum_value(&enum_storage_type, s, type);
}

const char *storage_type_kind(int type)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].type == type)
			return kinds[i].kind;
	return "unknown";
}
