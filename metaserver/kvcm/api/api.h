/*
 * The KVCM HTTP APIs: MetaService handlers (port kvcm.service.http_port) and admin handlers
 * (kvcm.service.admin_http_port), and their route tables. Each handler has an _empty companion that writes the
 * response's own fields at their defaults, used for error replies (every field is always printed, §1.4).
 */
#ifndef MMC_KVCM_API_H
#define MMC_KVCM_API_H

#include "http.h"

extern const struct route meta_routes[];
extern const struct route admin_routes[];
extern const struct route debug_routes[]; /* the DebugService's, alone */
/* GET pages of the admin port that are not JSON calls: the Mooncake master's (master_compat.c) */
extern const struct text_route admin_text_routes[];

/* The AccountRole enum's wire names (accounts.c), for the accounts API and the config snapshot alike. */
extern const struct enum_desc enum_role;

#define API(name)                                                                                                      \
	void api_##name(struct call *c);                                                                               \
	void api_##name##_empty(struct jw *w)

API(register_instance);
API(get_instance_info);
API(get_cache_location);
API(get_cache_location_len);
API(start_write_cache);
API(get_cache_meta);
API(get_cache_meta_detail);
API(get_cluster_info);
void api_finish_write_cache(struct call *c);
void api_remove_cache(struct call *c);
void api_trim_cache(struct call *c);
void api_report_event(struct call *c);
void api_report_event_empty(struct jw *w);
bool api_report_event_read(struct call *c, const char *body, size_t len);
void api_report_event_release(void *parsed);
void api_get_host_cache_state(struct call *c);
void api_get_host_cache_state_empty(struct jw *w);
void api_get_cache_locations_by_backend(struct call *c);
void api_get_cache_locations_by_backend_empty(struct jw *w);

/* admin */
void admin_add_storage(struct call *c);
void admin_list_storage(struct call *c);
void admin_enable_storage(struct call *c);
void admin_disable_storage(struct call *c);
void admin_remove_storage(struct call *c);
void admin_update_storage(struct call *c);
void admin_create_group(struct call *c);
void admin_get_group(struct call *c);
void admin_update_group(struct call *c);
void admin_list_groups(struct call *c);
void admin_remove_group(struct call *c);
void admin_register_instance(struct call *c);
void admin_list_instances(struct call *c);
void admin_remove_instance(struct call *c);
/* leader election (leader.c): answered by a standby too */
void admin_check_health(struct call *c);
void admin_get_manager_cluster_info(struct call *c);
void admin_get_leader_elector_config(struct call *c);
void admin_update_leader_elector_config(struct call *c);
void admin_leader_demote(struct call *c);
void admin_gen_config_snapshot(struct call *c);  /* config_snapshot.c */
void admin_load_config_snapshot(struct call *c); /* config_snapshot.c */
void admin_get_metrics(struct call *c);          /* admin_metrics.c */
void admin_update_logger(struct call *c);        /* logger_level.c */
/* accounts (accounts.c) */
void admin_add_account(struct call *c);
void admin_delete_account(struct call *c);
void admin_list_accounts(struct call *c);
/* debug service (debug_clock.c) */
void admin_debug_clock(struct call *c);
/* the Mooncake master's pages (master_compat.c) */
int master_get_all_segments(struct kvcm *k, struct evbuffer *out);

#endif
