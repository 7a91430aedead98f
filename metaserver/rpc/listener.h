/*
 * The RPC port's listener: binds the configured address (host names and IPv6 through getaddrinfo), refuses to expose
 * a port without credentials, fits new connections under ock.mmc.meta.max_connections, and survives running out of
 * descriptors. Loop thread only.
 */
#ifndef MMC_RPC_LISTENER_H
#define MMC_RPC_LISTENER_H

#include <stddef.h>
#include <stdint.h>

struct meta;

/*
 * Listens on host:port (a name, an IPv4 or an IPv6 literal, resolved by getaddrinfo; port 0: any) and writes the
 * address bound, as tcp://ADDR:PORT, to bound. Refuses (MMC_INVALID_PARAM, logged with the key to set) a
 * non-loopback address without credentials (ock.mmc.meta.auth_token, or TLS that verifies client certificates)
 * unless ock.mmc.meta.allow_insecure_bind is set.
 */
int rpc_listen(struct meta *m, const char *host, uint16_t port, char *bound, size_t boundlen);
void rpc_stop_listening(struct meta *m);

#endif
