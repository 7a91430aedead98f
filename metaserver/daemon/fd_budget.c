#include "fd_budget.h"

#include <stdio.h>
#include <sys/resource.h>

#include "kvcm_conf.h"
#include "log.h"

/* The KVCM's limit is one key for each of its ports: HTTP and admin HTTP, and, when on, gRPC and admin gRPC. */
static uint64_t kvcm_ports(void)
{
	return kvcm_conf()->grpc_enabled ? 4 : 2;
}

/* Raises the soft limit as far as the hard one allows towards need. Returns the soft limit in force. */
static uint64_t raise_soft(uint64_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return need; /* nothing known: trust the configuration */
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		struct rlimit up = rl;

		up.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
	}
	return rl.rlim_cur == RLIM_INFINITY ? need : (uint64_t)rl.rlim_cur;
}

uint32_t fd_budget_fit(const struct meta_conf *c)
{
	uint64_t http = kvcm_ports() * (uint64_t)kvcm_conf()->max_connections;
	uint64_t need = c->max_connections + http + FD_BUDGET_RESERVED, have = raise_soft(need), room, http_fds, rpc;

	if (have >= need)
		return c->max_connections;
	room = have > FD_BUDGET_RESERVED ? have - FD_BUDGET_RESERVED : 0;
	/* what the HTTP ports will keep: their limits, or half of the room once they lower themselves */
	http_fds = http < room / 2 ? http : room / 2;
	rpc = room - http_fds;
	if (rpc >= c->max_connections)
		return c->max_connections;
	rpc = rpc ? rpc : 1;
	log_warn("op=start warning=fd_limit rlimit_nofile=%llu needed=%llu ock.mmc.meta.max_connections=%u->%llu "
	         "hint=\"raise the limit (ulimit -n, LimitNOFILE=) to keep the configured limits\"",
	         (unsigned long long)have, (unsigned long long)need, c->max_connections, (unsigned long long)rpc);
	return (uint32_t)rpc;
}
