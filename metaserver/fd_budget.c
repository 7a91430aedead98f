#include "fd_budget.h"

#include <stdio.h>
#include <sys/resource.h>

#include "kvcm/kvcm.h"
#include "kvcm/model/kvcm_conf.h"
#include "log.h"

/* The HTTP ports' limit is one key for both ports (KVCM and admin). */
#define HTTP_PORTS 2

static uint64_t wanted(const struct meta_conf *c)
{
	return (uint64_t)c->max_connections + HTTP_PORTS * (uint64_t)kvcm_conf()->max_connections + FD_BUDGET_RESERVED;
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

void fd_budget_apply(struct meta_conf *c)
{
	uint64_t need = wanted(c), have = raise_soft(need), room, rpc, http;
	uint32_t http_was = kvcm_conf()->max_connections;
	char v[32], err[256];

	if (have >= need)
		return;
	/* share what is left between the ports in the proportions configured, at least one connection each */
	room = have > FD_BUDGET_RESERVED + 1 + HTTP_PORTS ? have - FD_BUDGET_RESERVED : 1 + HTTP_PORTS;
	rpc = room * c->max_connections / (need - FD_BUDGET_RESERVED);
	http = (room - rpc) / HTTP_PORTS;
	rpc = rpc ? rpc : 1;
	http = http ? http : 1;
	log_warn("op=start warning=fd_limit rlimit_nofile=%llu needed=%llu ock.mmc.meta.max_connections=%u->%llu "
	         "kvcm.service.max_connections=%u->%llu hint=\"raise the limit (ulimit -n, LimitNOFILE=) to keep the "
	         "configured limits\"",
	         (unsigned long long)have, (unsigned long long)need, c->max_connections, (unsigned long long)rpc,
	         http_was, (unsigned long long)http);
	c->max_connections = (uint32_t)rpc;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)http);
	if (kvcm_conf_set("kvcm.service.max_connections", v, err, sizeof(err)))
		log_warn("op=start warning=fd_limit err=\"%s\"", err);
}
