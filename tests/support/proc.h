/*
 * Test processes: a real mmc-metaserver on free ports in a fresh directory, and mmc-test-node processes (local
 * services driven line by line over pipes). Every start has a stop that also runs when a test fails (Criterion
 * runs each test in its own process; children get SIGKILL from prctl(PR_SET_PDEATHSIG) if the test dies).
 */
#ifndef MMC_TEST_PROC_H
#define MMC_TEST_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "redis_proc.h"

struct metaserver {
	pid_t pid;
	char dir[256];      /* data dir, removed by metaserver_cleanup() */
	uint16_t rpc_port;  /* fixed after the first start, so restarts keep the address */
	uint16_t http_port; /* KVCM, when it listens */
	uint16_t admin_port;
	char url[64];    /* tcp://127.0.0.1:PORT */
	char ready[512]; /* the ready line */
	char log[300];   /* stderr of the server */
	int ready_ms;    /* how long a start may take to print its ready line (0: 10 s); a store of 10^7+ objects
	                    loads for longer than that */
	/* MMC_TEST_META_STORE=redis: the server's metadata store, a private redis-server started with it (appendfsync
	 * from MMC_TEST_REDIS_FSYNC, default always), kept across restarts, stopped by metaserver_cleanup() */
	struct redis_proc redis;
};

/* Starts mmc-metaserver with --data-dir and `--env k=v` for each extra (NULL-terminated, may be NULL; an extra
 * that starts with "--", such as "--config=FILE", goes on the command line as it is), on a Redis store under
 * MMC_TEST_META_STORE=redis. Returns 0 when the server printed its ready line. */
int metaserver_start(struct metaserver *m, const char *const *extra);
/* Starts it again on the same data dir and rpc port (after a stop or a kill). */
int metaserver_restart(struct metaserver *m, const char *const *extra);
/* SIGTERM and wait; returns the exit status (0 expected). */
int metaserver_stop(struct metaserver *m);
void metaserver_kill(struct metaserver *m);
/* Stops if running and removes the data dir. Returns -1 (and prints the log) when the server's log holds a
 * sanitizer report, so tests built with -Db_sanitize catch errors in the server too. */
int metaserver_cleanup(struct metaserver *m);

struct node {
	pid_t pid;
	FILE *in, *out;
};

/* Starts an mmc-test-node with environment extras ("K=V", NULL-terminated, may be NULL). */
int node_start(struct node *n, const char *const *env);
/* Sends one command line and reads one reply line into reply. Returns 0, or -1 when the node died. */
int node_cmd(struct node *n, char *reply, size_t len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Sends "quit" and waits. */
int node_stop(struct node *n);
void node_kill(struct node *n);

/*
 * Starts path with argv and envp, its stdin and stdout on pipes (*to_child, *from_child), killed if this process
 * dies. Safe from a multi-threaded process: the child makes only async-signal-safe calls before execve().
 * Returns the pid, or -1.
 */
pid_t proc_spawn_piped(const char *path, char *const argv[], char *const envp[], int *to_child, int *from_child);

/* Whether a line of the server's log holds needle. */
bool metaserver_log_has(const struct metaserver *m, const char *needle);

/* The number after "label:" in /proc/<pid>/<file> ("status", "io"); 0 if unknown. status gives kB. */
uint64_t proc_number(pid_t pid, const char *file, const char *label);
/* Resident set of pid in bytes, from /proc/<pid>/status (anonymous + file: LMDB's map counts). 0 if unknown. */
uint64_t proc_rss_bytes(pid_t pid);
/* User + system CPU time of pid (tid 0: all its threads) or of its thread tid, in seconds, from /proc (clock-tick
 * resolution); -1 if unknown. */
double proc_cpu_seconds(pid_t pid, pid_t tid);

/* CLOCK_MONOTONIC in milliseconds: how long a test's step took. */
uint64_t proc_now_ms(void);

/* A port nobody listens on right now. */
uint16_t free_port(void);
/* Removes dir and everything under it (a test's or a benchmark's scratch directory); errors are ignored. */
void proc_remove_dir(const char *dir);

#endif
