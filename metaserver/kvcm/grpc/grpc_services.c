#include "grpc_services.h"

#include "admin_service.pb-c.h"
#include "api.h"
#include "debug_service.pb-c.h"
#include "grpc_server.h"
#include "kvcm_state.h"
#include "meta_service.pb-c.h"
#include "mmc/mmc.h"

static const struct grpc_service meta_services[] = {
    {&kv_cache_manager__proto__meta__meta_service__descriptor, meta_routes, false},
    {NULL, NULL, false},
};

static const struct grpc_service admin_services[] = {
    {&kv_cache_manager__proto__admin__admin_service__descriptor, admin_routes, false},
    {&kv_cache_manager__proto__debug__debug_service__descriptor, admin_routes, true},
    {NULL, NULL, false},
};

int grpc_servers_start(struct kvcm *k, struct meta_err *e)
{
	if (!k->conf.grpc_enabled)
		return 0;
	if (grpc_server_start(&k->grpc, k, k->conf.rpc_bind, (uint16_t)k->conf.rpc_port, meta_services, false,
	                      &k->rpc_port, e) ||
	    grpc_server_start(&k->admin_grpc, k, k->conf.rpc_bind, (uint16_t)k->conf.admin_rpc_port, admin_services,
	                      true, &k->admin_rpc_port, e))
		return MMC_ERROR;
	return 0;
}

void grpc_servers_stop(struct kvcm *k)
{
	grpc_server_stop(k->grpc);
	grpc_server_stop(k->admin_grpc);
	k->grpc = k->admin_grpc = NULL;
}
