/* Which gRPC services each port serves, and the wiring of the two gRPC listeners into the KVCM. */
#ifndef MMC_KVCM_GRPC_SERVICES_H
#define MMC_KVCM_GRPC_SERVICES_H

#include <stddef.h>

struct kvcm;
struct meta_err;

/* Starts the MetaService listener (kvcm.service.rpc_port) and the admin one (AdminService and DebugService on
 * kvcm.service.admin_rpc_port), or one listener for all three when both keys name the same port, unless
 * kvcm.service.enable_grpc is false. */
int grpc_servers_start(struct kvcm *k, struct meta_err *e);
void grpc_servers_stop(struct kvcm *k);

#endif
