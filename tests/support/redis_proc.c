#include "redis_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glob.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

int redis_proc_cmd(const struct redis_proc *r, const char *cmd, char *reply, size_t len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(r->port)};
	struct pollfd p;
	char line[1024];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t n = -1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	snprintf(line, sizeof(line), "%s\r\n", cmd);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    write(fd, line, strlen(line)) == (ssize_t)strlen(line)) {
		p = (struct pollfd){.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) == 1)
			n = read(fd, line, sizeof(line) - 1);
	}
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	snprintf(reply, len, "%s", line);
	return 0;
}

static int spawn(struct redis_proc *r)
{
	char port[8], exe[256];
	const char *env = getenv("MMC_REDIS_SERVER");
	char pong[64];

	snprintf(port, sizeof(port), "%u", r->port);
	snprintf(exe, sizeof(exe), "%s", env && *env ? env : "/usr/bin/redis-server");
	r->pid = fork();
	if (r->pid == 0) {
		char logf[96];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		snprintf(logf, sizeof(logf), "%s/redis.log", r->dir);
		execl(exe, "redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", r->dir, "--save", "",
		      "--appendonly", "yes", "--appendfsync", r->appendfsync, "--logfile", logf,
		      "--enable-debug-command", "local", (char *)NULL);
		_exit(127);
	}
	if (r->pid < 0)
		return -1;
	for (int i = 0; i < 200; i++) { /* 10 s: the loaded machine may be slow to start it */
		if (redis_proc_cmd(r, "PING", pong, sizeof(pong)) == 0 && strcmp(pong, "+PONG") == 0)
			return 0;
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
			break;
		usleep(50000);
	}
	redis_proc_kill(r);
	return -1;
}

/*
 * The directories of runs that died without their cleanup (a bench stopped with ^C, a test killed by its timeout):
 * each names its process in `owner`, and one whose process is gone is removed. A bench's store at 10^7 objects
 * left a gigabyte in each. A directory without an owner file (older runs) or of a live process is left alone.
 */
static void sweep_stale(void)
{
	glob_t g;

	if (getenv("MMC_TEST_KEEP") || glob("/tmp/mmc-redis-*/owner", GLOB_NOSORT, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");
		long pid = 0;

		if (!f)
			continue;
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			proc_remove_dir(dirname(g.gl_pathv[i]));
	}
	globfree(&g);
}

/* Names this process in dir/owner, for sweep_stale. */
static int write_owner(const char *dir)
{
	char path[96];
	FILE *f;

	snprintf(path, sizeof(path), "%s/owner", dir);
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, "%ld\n", (long)getpid());
	return fclose(f) ? -1 : 0;
}

int redis_proc_start(struct redis_proc *r, const char *appendfsync)
{
	memset(r, 0, sizeof(*r));
	sweep_stale();
	snprintf(r->dir, sizeof(r->dir), "/tmp/mmc-redis-XXXXXX");
	snprintf(r->appendfsync, sizeof(r->appendfsync), "%s", appendfsync ? appendfsync : "always");
	if (!mkdtemp(r->dir) || write_owner(r->dir))
		return -1;
	for (int tries = 0; tries < 5; tries++) {
		r->port = free_port();
		snprintf(r->uri, sizeof(r->uri), "redis://127.0.0.1:%u", r->port);
		if (spawn(r) == 0)
			return 0;
	}
	return -1;
}

int redis_proc_restart(struct redis_proc *r)
{
	for (int tries = 0; tries < 50; tries++) {
		if (spawn(r) == 0)
			return 0;
		usleep(100000); /* the port may still be held by the old socket */
	}
	return -1;
}

void redis_proc_kill(struct redis_proc *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	r->pid = 0;
}

void redis_proc_cleanup(struct redis_proc *r)
{
	redis_proc_kill(r);
	if (r->dir[0] && !getenv("MMC_TEST_KEEP"))
		proc_remove_dir(r->dir);
	r->dir[0] = '\0';
}
