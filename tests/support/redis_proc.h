/*
 * A private redis-server for tests and benchmarks: Debian's binary (or $MMC_REDIS_SERVER) on a free loopback port,
 * its append-only file in a fresh directory, fsynced as asked, killed with this process (PR_SET_PDEATHSIG). The
 * metadata store tests run the meta server against it. The directory names its process; a start removes those of
 * processes that died without redis_proc_cleanup().
 */
#ifndef MMC_TEST_REDIS_PROC_H
#define MMC_TEST_REDIS_PROC_H

#include <stdint.h>
#include <sys/types.h>

struct redis_proc {
	pid_t pid;
	uint16_t port;
	char dir[64];         /* AOF and log; removed by redis_proc_cleanup() */
	char appendfsync[16]; /* always, everysec or no */
	char uri[64];         /* redis://127.0.0.1:PORT */
};

/* Removes the directories of dead runs, then starts one with `appendfsync` (NULL: always) and waits until it
 * answers PING. Returns 0 or -1. */
int redis_proc_start(struct redis_proc *r, const char *appendfsync);
/* Starts it again on the same port and directory (it replays its AOF). Returns 0 or -1. */
int redis_proc_restart(struct redis_proc *r);
/* SIGKILL and wait. */
void redis_proc_kill(struct redis_proc *r);
/* Kills it if running and removes its directory. */
void redis_proc_cleanup(struct redis_proc *r);
/* Sends one inline command (no binary arguments) and copies the first reply line into reply. Returns 0 or -1. */
int redis_proc_cmd(const struct redis_proc *r, const char *cmd, char *reply, size_t len);

#endif
