/* Which handler answers which path, on which port. */
#include "api.h"

#define I ROUTE_INSTANCE
#define A ROUTE_ADMIN

const struct route meta_routes[] = {
    {"registerInstance", api_register_instance, api_register_instance_empty, 0},
    {"getInstanceInfo", api_get_instance_info, api_get_instance_info_empty, 0},
    {"getCacheLocation", api_get_cache_location, api_get_cache_location_empty, I},
    {"getCacheLocationLen", api_get_cache_location_len, api_get_cache_location_len_empty, I},
    {"startWriteCache", api_start_write_cache, api_start_write_cache_empty, I},
    {"finishWriteCache", api_finish_write_cache, NULL, I},
    {"removeCache", api_remove_cache, NULL, I},
    {"trimCache", api_trim_cache, NULL, I},
    {"getCacheMeta", api_get_cache_meta, api_get_cache_meta_empty, I},
    {"getCacheMetaDetail", api_get_cache_meta_detail, api_get_cache_meta_detail_empty, I},
    {"getClusterInfo", api_get_cluster_info, api_get_cluster_info_empty, 0},
    {"reportEvent", api_report_event, api_report_event_empty, I},
    {"getHostCacheState", api_get_host_cache_state, api_get_host_cache_state_empty, I},
    {"getCacheLocationsByBackend", api_get_cache_locations_by_backend, api_get_cache_locations_by_backend_empty, I},
    {NULL, NULL, NULL, 0},
};

const struct route admin_routes[] = {
    {"addStorage", admin_add_storage, NULL, A},
    {"listStorage", admin_list_storage, NULL, A},
    {"enableStorage", admin_enable_storage, NULL, A},
    {"disableStorage", admin_disable_storage, NULL, A},
    {"removeStorage", admin_remove_storage, NULL, A},
    {"createInstanceGroup", admin_create_group, NULL, A},
    {"getInstanceGroup", admin_get_group, NULL, A},
    {"updateInstanceGroup", admin_update_group, NULL, A},
    {"listInstanceGroup", admin_list_groups, NULL, A},
    {"removeInstanceGroup", admin_remove_group, NULL, A},
    {"registerInstance", admin_register_instance, NULL, A},
    {"getInstanceInfo", api_get_instance_info, NULL, A},
    {"listInstanceInfo", admin_list_instances, NULL, A},
    {"removeInstance", admin_remove_instance, NULL, A},
    {"getCacheMeta", api_get_cache_meta, api_get_cache_meta_empty, A | I},
    {"removeCache", api_remove_cache, NULL, A | I},
    {"checkHealth", admin_check_health, NULL, A},
    {NULL, NULL, NULL, 0},
};
