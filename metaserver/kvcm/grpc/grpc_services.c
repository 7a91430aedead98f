#include "grpc_services.h"

#include "admin_service.pb-c.h"
#include "api.h"
#include "debug_service.pb-c.h"
#include "grpc_server.h"
#include "kvcm_state.h"
#include "meta_service.pb-c.h"
#include "mmc/mmc.h"

/* one table row per line: clang-format 14 would break each braced macro over four */
/* clang-format off */
#define META_SERVICE  {&kv_cache_manager__proto__meta__meta_service__descriptor, meta_routes, false, false}
#define ADMIN_SERVICE {&kv_cache_manager__proto__admin__admin_service__descriptor, admin_routes, false, true}
#define DEBUG_SERVICE {&kv_cache_manager__proto__debug__debug_service__descriptor, admin_routes, true, true}
#define END           {NULL, NULL, false, false}
/* clang-format on */

static const struct grpc_service meta_services[] = {META_SERVICE, END};
static const struct grpc_service admin_services[] = {ADMIN_SERVICE, DEBUG_SERVICE, END};
static const struct grpc_service all_services[] = {META_SERVICE, ADMIN_SERVICE, DEBUG_SERVICE, END};

int grpc_servers_start(struct kvcm *k, struct meta_err *e)
{
	if (!k->conf.grpc_enabled)
		return 0;
	/* the reference serves all three on the MetaService port when admin_rpc_port names it (its test harness does
	 * that); 0 stays any free port, for each */
	if (k->conf.admin_rpc_port == k->conf.rpc_port && k->conf.rpc_port) {
		if (grpc_server_start(&k->grpc, k, k->conf.rpc_bind, (uint16_t)k->conf.rpc_port, all_services, false,
		                      &k->rpc_port, e))
			return MMC_ERROR;
		k->admin_rpc_port = k->rpc_port;
		return 0;
	}
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
