/*
 * The baseline of `mmc-bench meta`: a private redis-server (persistence off) holding the same keys as the leader's
 * index, asked what the leader is asked, one pipeline per call of `batch` keys over one connection, from one
 * thread: EXISTS (batch_is_exist), GET of a TINY-byte value (get_key_info: a lookup that answers with a record),
 * SET of fresh keys and then their DELs, untimed (put_meta and its removes). Redis's CPU time per key is read from
 * /proc as the leader's is. Redis does less per key than the leader (no placement, no lease, no LRU order, no
 * record to commit), so the ratio says how the leader's cost stands to that of a lean single-threaded server whose
 * cost per key is little more than the socket, the parse and a hash lookup.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_meta.h"
#include "bench_redis.h"

struct meta_redis {
	struct redis_server srv;
	redisContext *c;
	size_t n; /* keys 0 .. n-1 are in Redis */
	const char **argv;
	size_t *argl;
	char (*names)[KEY_CHARS];
	int cap; /* commands argv/argl/names hold */
};

static const char value[TINY] = "a record's worth of metadata";

struct meta_redis *meta_redis_start(int batch)
{
	struct meta_redis *r = calloc(1, sizeof(*r));
	int cap = batch > FILL_CHUNK ? batch : FILL_CHUNK;

	if (!r)
		return NULL;
	r->cap = cap;
	r->argv = calloc((size_t)cap * 3, sizeof(*r->argv));
	r->argl = calloc((size_t)cap * 3, sizeof(*r->argl));
	r->names = calloc((size_t)cap, sizeof(*r->names));
	if (!r->argv || !r->argl || !r->names || redis_start(&r->srv, false) || !(r->c = redis_connect(r->srv.port))) {
		meta_redis_stop(r);
		return NULL;
	}
	return r;
}

void meta_redis_stop(struct meta_redis *r)
{
	if (!r)
		return;
	if (r->c)
		redisFree(r->c);
	if (r->srv.pid > 0)
		redis_stop(&r->srv);
	free(r->argv);
	free(r->argl);
	free(r->names);
	free(r);
}

pid_t meta_redis_pid(const struct meta_redis *r)
{
	return r->srv.pid;
}

/* Appends cmd on each of the n keys in r->names to the pipeline, with the value when argc is 3 (SET). */
static void append_all(struct meta_redis *r, const char *cmd, int argc, int n)
{
	for (int i = 0; i < n; i++) {
		const char **a = r->argv + 3 * i;
		size_t *l = r->argl + 3 * i;

		a[0] = cmd;
		l[0] = strlen(cmd);
		a[1] = r->names[i];
		l[1] = strlen(r->names[i]);
		a[2] = value;
		l[2] = sizeof(value);
		redisAppendCommandArgv(r->c, argc, a, l);
	}
}

/* Reads n replies; each must be what op answers for a key that is there. 0 or -1. */
static int replies(struct meta_redis *r, enum meta_redis_op op, int n)
{
	int rc = 0;

	for (int i = 0; i < n; i++) {
		redisReply *rep;

		if (redisGetReply(r->c, (void **)&rep) != REDIS_OK)
			return -1;
		switch (op) {
		case META_REDIS_EXISTS:
			rc |= rep->type != REDIS_REPLY_INTEGER || rep->integer != 1;
			break;
		case META_REDIS_GET:
			rc |= rep->type != REDIS_REPLY_STRING || rep->len != sizeof(value);
			break;
		default: /* SET answers a status, DEL an integer */
			rc |= rep->type == REDIS_REPLY_ERROR || rep->type == REDIS_REPLY_NIL;
		}
		freeReplyObject(rep);
	}
	return rc ? -1 : 0;
}

int meta_redis_fill(struct meta_redis *r, size_t n)
{
	while (r->n < n) {
		int m = n - r->n < FILL_CHUNK ? (int)(n - r->n) : FILL_CHUNK;

		for (int i = 0; i < m; i++)
			key_name(r->names[i], r->n + (size_t)i);
		append_all(r, "SET", 3, m);
		if (replies(r, META_REDIS_SET, m))
			return -1;
		r->n += (size_t)m;
	}
	return 0;
}

static int one_call(struct meta_redis *r, enum meta_redis_op op, int batch, int seq, unsigned *seed,
                    struct samples *out)
{
	static const char *const cmd[] = {"EXISTS", "GET", "SET"};
	double t0;
	int rc;

	for (int i = 0; i < batch; i++)
		if (op == META_REDIS_SET)
			snprintf(r->names[i], KEY_CHARS, "t/%d/%d", seq, i);
		else
			key_name(r->names[i], (size_t)rand_r(seed) % r->n);
	t0 = now_s();
	append_all(r, cmd[op], op == META_REDIS_SET ? 3 : 2, batch);
	rc = replies(r, op, batch);
	samples_add(out, now_s() - t0);
	if (rc || op != META_REDIS_SET)
		return rc;
	append_all(r, "DEL", 2, batch);
	return replies(r, META_REDIS_SET, batch);
}

int meta_redis_measure(struct meta_redis *r, enum meta_redis_op op, int batch, double seconds, struct samples *out)
{
	unsigned seed = 12345;
	double end = now_s() + seconds;
	int rc = batch > r->cap || !r->n ? -1 : 0;

	for (int seq = 0; rc == 0 && (now_s() < end || out->n < 3); seq++)
		rc = one_call(r, op, batch, seq, &seed, out);
	if (rc)
		fprintf(stderr, "mmc-bench meta: a Redis call of the baseline failed\n");
	return rc;
}
