/* The soak run's meta server. All calls: parent process only. */
#ifndef MMC_SOAK_SERVER_H
#define MMC_SOAK_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "proc.h"
#include "soak.h"

struct soak_server {
	struct metaserver m;
	char env[3][64]; /* --env settings, the same at every restart */
	const char *extra[4];
	uint64_t evictions; /* mmc_evictions_total summed over the server's lives */
};

/* Starts the server on a fresh data dir and a free port, with the options' log level and eviction thresholds;
 * 0 or -1. */
int server_start(struct soak_server *sv, const struct soak_opts *o);
/* SIGKILL (after reading its eviction counter), and a restart on the same data dir and port. */
void server_kill(struct soak_server *sv);
int server_restart(struct soak_server *sv);
/* Stops it and removes the data dir; -1 when its log holds a sanitizer report. */
int server_cleanup(struct soak_server *sv);
/* Reads one sample of /metrics ("name" or "name{labels}"); 0 or -1. */
int server_metric(const struct soak_server *sv, const char *name, uint64_t *out);
/* Waits until the attached services lend at least bytes of DRAM (all live workers rejoined); 0 or -1. */
int server_wait_attached(const struct soak_server *sv, uint64_t bytes, int timeout_ms);

#endif
