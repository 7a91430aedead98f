#include "proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/*
 * The path to exec, resolved before fork(): tests fork from multi-threaded processes, where the child may only make
 * async-signal-safe calls (no PATH search, no malloc, no putenv) before execve().
 */
static const char *binary(const char *env, const char *fallback, char *buf, size_t len)
{
	const char *p = getenv(env), *path = getenv("PATH");

	if (p && *p)
		fallback = p;
	if (strchr(fallback, '/') || !path)
		return fallback;
	for (const char *dir = path; *dir;) {
		size_t n = strcspn(dir, ":");

		snprintf(buf, len, "%.*s/%s", (int)n, dir, fallback);
		if (access(buf, X_OK) == 0)
			return buf;
		dir += n + (dir[n] == ':');
	}
	return fallback;
}

/* environ plus extras ("K=V"), built before fork(). The caller frees the array (not the strings). */
static char **environment_with(const char *const *extra)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[k])
		k++;
	env = calloc(n + k + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < k; i++)
		env[i] = (char *)extra[i];
	for (size_t i = 0; i < n; i++)
		env[k + i] = environ[i];
	return env;
}

bool metaserver_log_has(const struct metaserver *m, const char *needle)
{
	FILE *f = fopen(m->log, "r");
	char line[4096];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

uint64_t proc_number(pid_t pid, const char *file, const char *label)
{
	char path[64], line[128];
	unsigned long long n = 0;
	size_t len = strlen(label);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, label, len) == 0 && line[len] == ':' && sscanf(line + len + 1, "%llu", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

uint64_t proc_rss_bytes(pid_t pid)
{
	return proc_number(pid, "status", "VmRSS") << 10;
}

double proc_cpu_seconds(pid_t pid, pid_t tid)
{
	char path[64], buf[2048], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* fields 14 and 15, counted after the ")" that ends the command name (which may hold spaces) */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

uint64_t proc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint16_t free_port(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint16_t port = 0;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Reads one line from fd within ms; returns its length or -1. */
static int read_line_fd(int fd, char *buf, size_t len, int ms)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, ms) != 1)
			return -1;
		r = read(fd, buf + n, 1);
		if (r != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return (int)n;
}

static uint16_t field_port(const char *line, const char *name)
{
	const char *p = strstr(line, name);

	if (!p)
		return 0;
	p += strlen(name);
	if (strncmp(p, "tcp://", 6) == 0)
		p = strrchr(p, ':') + 1;
	return (uint16_t)atoi(p);
}

static int spawn_metaserver(struct metaserver *m, const char *const *extra)
{
	const char *argv[64];
	char url[96], dd[300], exe[4096], store[128];
	int out[2], argc = 0, log;
	pid_t pid;

	snprintf(url, sizeof(url), "ock.mmc.meta_service_url=tcp://127.0.0.1:%u", m->rpc_port);
	snprintf(dd, sizeof(dd), "%s/data", m->dir);
	snprintf(m->log, sizeof(m->log), "%s/metaserver.log", m->dir);
	argv[argc++] = binary("MMC_METASERVER", "mmc-metaserver", exe, sizeof(exe));
	argv[argc++] = "--data-dir";
	argv[argc++] = dd;
	argv[argc++] = "--env";
	argv[argc++] = url;
	/* tests run in parallel: the KV Cache Manager listens on free ports too, on loopback (extras may override) */
	argv[argc++] = "--env";
	argv[argc++] = "kvcm.service.http_port=0";
	argv[argc++] = "--env";
	argv[argc++] = "kvcm.service.admin_http_port=0";
	argv[argc++] = "--env";
	argv[argc++] = "kvcm.service.bind=127.0.0.1";
	argv[argc++] = "--env";
	argv[argc++] = "kvcm.service.rpc_port=0";
	argv[argc++] = "--env";
	argv[argc++] = "kvcm.service.admin_rpc_port=0";
	if (m->redis.pid > 0) {
		snprintf(store, sizeof(store), "ock.mmc.meta.store_uri=%s", m->redis.uri);
		argv[argc++] = "--env";
		argv[argc++] = store;
	}
	for (int i = 0; extra && extra[i] && argc < 60; i++) {
		if (strncmp(extra[i], "--", 2) != 0)
			argv[argc++] = "--env";
		argv[argc++] = extra[i];
	}
	argv[argc] = NULL;
	if (pipe2(out, O_CLOEXEC))
		return -1;
	log = open(m->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		if (log >= 0)
			dup2(log, 2);
		close(out[0]);
		execve(argv[0], (char *const *)argv, environ);
		_exit(127);
	}
	if (log >= 0)
		close(log);
	close(out[1]);
	m->pid = pid;
	if (pid < 0 || read_line_fd(out[0], m->ready, sizeof(m->ready), m->ready_ms > 0 ? m->ready_ms : 10000) < 0 ||
	    strncmp(m->ready, "mmc-metaserver ready", 20) != 0) {
		close(out[0]);
		if (pid > 0)
			metaserver_kill(m);
		return -1;
	}
	close(out[0]);
	m->rpc_port = field_port(m->ready, "rpc=");
	m->http_port = field_port(m->ready, "http=");
	m->admin_port = field_port(m->ready, "admin=");
	snprintf(m->url, sizeof(m->url), "tcp://127.0.0.1:%u", m->rpc_port);
	return 0;
}

int metaserver_start(struct metaserver *m, const char *const *extra)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->dir, sizeof(m->dir), "/tmp/mmc-test-XXXXXX");
	if (!mkdtemp(m->dir))
		return -1;
	if (getenv("MMC_TEST_META_STORE") && strcmp(getenv("MMC_TEST_META_STORE"), "redis") == 0 &&
	    redis_proc_start(&m->redis, getenv("MMC_TEST_REDIS_FSYNC")))
		return -1;
	/* a fixed port (not :0) so a restarted server is where its clients reconnect */
	for (int tries = 0; tries < 5; tries++) {
		m->rpc_port = free_port();
		if (spawn_metaserver(m, extra) == 0)
			return 0;
	}
	return -1;
}

int metaserver_restart(struct metaserver *m, const char *const *extra)
{
	for (int tries = 0; tries < 50; tries++) {
		if (spawn_metaserver(m, extra) == 0)
			return 0;
		usleep(100000); /* the port may still be held by the old socket */
	}
	return -1;
}

int metaserver_stop(struct metaserver *m)
{
	int status = -1;

	if (m->pid <= 0)
		return 0;
	kill(m->pid, SIGTERM);
	waitpid(m->pid, &status, 0);
	m->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void metaserver_kill(struct metaserver *m)
{
	if (m->pid > 0) {
		kill(m->pid, SIGKILL);
		waitpid(m->pid, NULL, 0);
	}
	m->pid = 0;
}

static int log_is_clean(const char *path)
{
	char line[1024];
	int clean = 1;
	FILE *f = fopen(path, "r");

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "runtime error") || strstr(line, "Sanitizer") || strstr(line, "assertion failed"))
			clean = 0;
		if (!clean)
			fputs(line, stderr);
	}
	fclose(f);
	return clean;
}

void proc_remove_dir(const char *dir)
{
	char cmd[320];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
	}
}

int metaserver_cleanup(struct metaserver *m)
{
	int clean;

	if (m->pid > 0)
		metaserver_stop(m);
	redis_proc_cleanup(&m->redis);
	clean = m->log[0] ? log_is_clean(m->log) : 1;
	if (m->dir[0] && !getenv("MMC_TEST_KEEP"))
		proc_remove_dir(m->dir);
	return clean ? 0 : -1;
}

pid_t proc_spawn_piped(const char *path, char *const argv[], char *const envp[], int *to_child, int *from_child)
{
	int in[2], out[2];
	pid_t pid;

	/* close-on-exec: a process spawned later (a restarted server) must not inherit the write end of this child's
	 * stdin, or the child never sees EOF and never stops (dup2 onto 0 and 1 clears the flag for the child) */
	if (pipe2(in, O_CLOEXEC))
		return -1;
	if (pipe2(out, O_CLOEXEC)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execve(path, argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (pid < 0) {
		close(in[1]);
		close(out[0]);
		return -1;
	}
	*to_child = in[1];
	*from_child = out[0];
	return pid;
}

int node_start(struct node *n, const char *const *env)
{
	char exe[4096], *argv[] = {"mmc-test-node", NULL};
	const char *path = binary("MMC_TEST_NODE", "mmc-test-node", exe, sizeof(exe));
	char **envp = environment_with(env);
	int in, out;
	pid_t pid = envp ? proc_spawn_piped(path, argv, envp, &in, &out) : -1;

	free(envp);
	if (pid < 0)
		return -1;
	n->pid = pid;
	n->in = fdopen(in, "w");
	n->out = fdopen(out, "r");
	return n->in && n->out ? 0 : -1;
}

int node_cmd(struct node *n, char *reply, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(n->in, fmt, ap);
	va_end(ap);
	fputc('\n', n->in);
	if (fflush(n->in) || !fgets(reply, (int)len, n->out)) {
		reply[0] = '\0';
		return -1;
	}
	reply[strcspn(reply, "\n")] = '\0';
	return 0;
}

int node_stop(struct node *n)
{
	int status = -1;

	if (n->pid <= 0)
		return 0;
	fprintf(n->in, "quit\n");
	fflush(n->in);
	waitpid(n->pid, &status, 0);
	fclose(n->in);
	fclose(n->out);
	n->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A process killed with SIGKILL leaves its libfabric shm regions ("<pid>:<domain>:<ep>") behind. */
static void remove_shm_of(pid_t pid)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -f /dev/shm/%d:* 2>/dev/null", (int)pid);
	if (system(cmd)) {
	}
}

void node_kill(struct node *n)
{
	if (n->pid <= 0)
		return;
	kill(n->pid, SIGKILL);
	waitpid(n->pid, NULL, 0);
	remove_shm_of(n->pid);
	fclose(n->in);
	fclose(n->out);
	n->pid = 0;
}
