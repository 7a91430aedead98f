/* Which handler answers which path, on which port. */
#include "api.h"
#include "fault_injection.h"
#include "key_reader.h"

#define I ROUTE_INSTANCE
#define A ROUTE_ADMIN
#define D (ROUTE_ADMIN | ROUTE_DEBUG)
#define R ROUTE_READ
#define N ROUTE_ANY_NODE

static const struct route_reader report_event_reader = {api_report_event_read, api_report_event_release};

const struct route meta_routes[] = {
    {"registerInstance", api_register_instance, api_register_instance_empty, 0, NULL},
    {"getInstanceInfo", api_get_instance_info, api_get_instance_info_empty, R, NULL},
    {"getCacheLocation", api_get_cache_location, api_get_cache_location_empty, I | R, &block_keys_reader},
    {"getCacheLocationLen", api_get_cache_location_len, api_get_cache_location_len_empty, I | R, &block_keys_reader},
    {"startWriteCache", api_start_write_cache, api_start_write_cache_empty, I, NULL},
    {"finishWriteCache", api_finish_write_cache, NULL, I, NULL},
    {"removeCache", api_remove_cache, NULL, I, NULL},
    {"trimCache", api_trim_cache, NULL, I, NULL},
    {"getCacheMeta", api_get_cache_meta, api_get_cache_meta_empty, I | R, NULL},
    {"getCacheMetaDetail", api_get_cache_meta_detail, api_get_cache_meta_detail_empty, I | R, NULL},
    {"getClusterInfo", api_get_cluster_info, api_get_cluster_info_empty, R | N, NULL},
    {"reportEvent", api_report_event, api_report_event_empty, I, &report_event_reader},
    {"getHostCacheState", api_get_host_cache_state, api_get_host_cache_state_empty, I | R, &block_cache_keys_reader},
    {"getCacheLocationsByBackend", api_get_cache_locations_by_backend, api_get_cache_locations_by_backend_empty, I | R,
     NULL},
    {NULL, NULL, NULL, 0, NULL},
};

const struct route admin_routes[] = {
    {"addStorage", admin_add_storage, NULL, A, NULL},
    {"listStorage", admin_list_storage, NULL, A | R, NULL},
    {"enableStorage", admin_enable_storage, NULL, A, NULL},
    {"disableStorage", admin_disable_storage, NULL, A, NULL},
    {"removeStorage", admin_remove_storage, NULL, A, NULL},
    {"updateStorage", admin_update_storage, NULL, A, NULL},
    {"createInstanceGroup", admin_create_group, NULL, A, NULL},
    {"getInstanceGroup", admin_get_group, NULL, A | R, NULL},
    {"updateInstanceGroup", admin_update_group, NULL, A, NULL},
    {"listInstanceGroup", admin_list_groups, NULL, A | R, NULL},
    {"removeInstanceGroup", admin_remove_group, NULL, A, NULL},
    {"registerInstance", admin_register_instance, NULL, A, NULL},
    {"getInstanceInfo", api_get_instance_info, NULL, A | R, NULL},
    {"listInstanceInfo", admin_list_instances, NULL, A | R, NULL},
    {"removeInstance", admin_remove_instance, NULL, A, NULL},
    {"getCacheMeta", api_get_cache_meta, api_get_cache_meta_empty, A | I | R, NULL},
    {"removeCache", api_remove_cache, NULL, A | I, NULL},
    {"checkHealth", admin_check_health, NULL, A | R | N, NULL},
    {"getManagerClusterInfo", admin_get_manager_cluster_info, NULL, A | R | N, NULL},
    {"getLeaderElectorConfig", admin_get_leader_elector_config, NULL, A | R | N, NULL},
    {"updateLeaderElectorConfig", admin_update_leader_elector_config, NULL, A | R | N, NULL},
    {"leaderDemote", admin_leader_demote, NULL, A | R | N, NULL},
    {"genConfigSnapshot", admin_gen_config_snapshot, NULL, A | R, NULL},
    {"loadConfigSnapshot", admin_load_config_snapshot, NULL, A, NULL},
    {"getMetrics", admin_get_metrics, NULL, A | R, NULL},
    {"updateLogger", admin_update_logger, NULL, A, NULL},
    {"addAccount", admin_add_account, NULL, A, NULL},
    {"deleteAccount", admin_delete_account, NULL, A, NULL},
    {"listAccount", admin_list_accounts, NULL, A | R, NULL},
    {"injectFault", admin_inject_fault, NULL, D, NULL},
    {"removeFault", admin_remove_fault, NULL, D, NULL},
    {"clearFaults", admin_clear_faults, NULL, D, NULL},
    {"debugClock", admin_debug_clock, NULL, D, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

/* The reference's own debug HTTP port (http_port + 3000) serves these only. */
const struct route debug_routes[] = {
    {"injectFault", admin_inject_fault, NULL, D, NULL},
    {"removeFault", admin_remove_fault, NULL, D, NULL},
    {"clearFaults", admin_clear_faults, NULL, D, NULL},
    {"debugClock", admin_debug_clock, NULL, D, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

const struct text_route admin_text_routes[] = {
    {"/get_all_segments", master_get_all_segments},
    {NULL, NULL},
};
