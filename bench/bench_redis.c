#include "bench_redis.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "proc.h"

redisContext *redis_connect(uint16_t port)
{
	redisContext *c = redisConnect("127.0.0.1", port);

	if (c && c->err) {
		redisFree(c);
		return NULL;
	}
	return c;
}

int redis_start(struct redis_server *r, bool fsync)
{
	char port[16];
	redisContext *c = NULL;

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/mmc-bench-redis-XXXXXX");
	if (!mkdtemp(r->dir))
		return -1;
	r->port = free_port();
	snprintf(port, sizeof(port), "%u", r->port);
	fflush(NULL); /* else the child's freopen writes out what this process had buffered, a second time */
	r->pid = fork();
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		freopen("/dev/null", "w", stdout);
		execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
		       "--appendonly", fsync ? "yes" : "no", "--appendfsync", "always", "--protected-mode", "no",
		       "--dir", r->dir, "--loglevel", "warning", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && r->pid > 0 && !(c = redis_connect(r->port)); i++)
		usleep(50000);
	if (!c) {
		fprintf(stderr, "mmc-bench: redis-server did not start (is it installed?)\n");
		redis_stop(r);
		return -1;
	}
	redisFree(c);
	return 0;
}

void redis_stop(struct redis_server *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		waitpid(r->pid, NULL, 0);
	}
	r->pid = 0;
	if (r->dir[0])
		proc_remove_dir(r->dir);
	r->dir[0] = '\0';
}

struct rjob {
	const struct redis_server *r;
	const struct shape *sh;
	int batch, id, rc;
	double seconds;
	pthread_barrier_t *bar;
	struct samples set, get;
};

static int set_batch(redisContext *c, struct rjob *j, char **bufs)
{
	redisReply *rep;
	int rc = 0;

	for (int i = 0; i < j->batch; i++)
		redisAppendCommand(c, "SET r/%d/%d %b", j->id, i, bufs[i], j->sh->block);
	for (int i = 0; i < j->batch; i++) {
		if (redisGetReply(c, (void **)&rep) != REDIS_OK)
			return -1;
		rc |= rep->type != REDIS_REPLY_STATUS;
		freeReplyObject(rep);
	}
	return rc;
}

static int get_batch(redisContext *c, struct rjob *j, char **bufs)
{
	redisReply *rep;
	int rc = 0;

	for (int i = 0; i < j->batch; i++)
		redisAppendCommand(c, "GET r/%d/%d", j->id, i);
	for (int i = 0; i < j->batch; i++) {
		if (redisGetReply(c, (void **)&rep) != REDIS_OK)
			return -1;
		if (rep->type == REDIS_REPLY_STRING && rep->len == j->sh->block)
			memcpy(bufs[i], rep->str, rep->len);
		else
			rc = -1;
		freeReplyObject(rep);
	}
	return rc;
}

static void *rjob_main(void *arg)
{
	struct rjob *j = arg;
	redisContext *c = redis_connect(j->r->port);
	char **bufs = calloc((size_t)j->batch, sizeof(*bufs));
	double end;

	for (int i = 0; bufs && i < j->batch; i++)
		if ((bufs[i] = malloc(j->sh->block)))
			memset(bufs[i], i + 1, j->sh->block);
	j->rc = c && bufs ? set_batch(c, j, bufs) : -1;
	pthread_barrier_wait(j->bar);
	end = now_s() + j->seconds;
	while (j->rc == 0 && (now_s() < end || j->set.n < 3)) {
		double t0 = now_s(), t1;

		j->rc = set_batch(c, j, bufs);
		t1 = now_s();
		j->rc = j->rc ? j->rc : get_batch(c, j, bufs);
		samples_add(&j->set, t1 - t0);
		samples_add(&j->get, now_s() - t1);
	}
	for (int i = 0; bufs && i < j->batch; i++)
		free(bufs[i]);
	free(bufs);
	if (c)
		redisFree(c);
	return NULL;
}

int redis_measure(const struct redis_server *r, const struct shape *sh, int batch, int threads, double seconds,
                  double *set_gbs, double *get_gbs)
{
	struct rjob *j = calloc((size_t)threads, sizeof(*j));
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	struct samples set = {0}, get = {0};
	pthread_barrier_t bar;
	int rc = 0;

	*set_gbs = *get_gbs = 0;
	if (!j || !th) {
		free(j);
		free(th);
		return -1;
	}
	pthread_barrier_init(&bar, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		j[i] = (struct rjob){.r = r, .sh = sh, .batch = batch, .id = i, .seconds = seconds, .bar = &bar};
		pthread_create(&th[i], NULL, rjob_main, &j[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		rc |= j[i].rc;
		samples_merge(&set, &j[i].set);
		samples_merge(&get, &j[i].get);
	}
	if (rc == 0) {
		*set_gbs = (double)threads * batch * sh->block / samples_median(&set) / 1e9;
		*get_gbs = (double)threads * batch * sh->block / samples_median(&get) / 1e9;
	}
	samples_free(&set);
	samples_free(&get);
	pthread_barrier_destroy(&bar);
	free(j);
	free(th);
	return rc;
}
