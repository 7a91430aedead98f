/*
 * The Redis store: a table is the hash "<prefix>t:<name>" (field = key, value = record), except a packed table (the
 * object records: redis_packed.h), whose records go many to a string; a batch is one pipelined MULTI, its writes,
 * EXEC (then WAIT for replicas, if asked), so Redis applies all of it or none and acknowledges it once, after its own
 * appendfsync. With a fence key the batch is one script instead that writes only while that key holds this server's
 * value (fenced_lua): a commit from a node that lost the lock fails, one whose lease was merely renewed meanwhile does
 * not. The connection is the writer thread's; when it breaks the batch is retried once on a fresh one (a batch of
 * whole-value puts, appends of them and deletes applies twice to the same result, and no later batch has flown),
 * then batches fail fast while reconnects back off.
 */
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "array.h"
#include "clock.h"
#include "log.h"
#include "mmc/mmc.h"
#include "persist_backend.h"
#include "redis_packed.h"
#include "store_uri.h"
#include "uri_mask.h"

#define BACKOFF_MIN_NS UINT64_C(50000000)   /* first retry of a lost Redis after 50 ms ... */
#define BACKOFF_MAX_NS UINT64_C(1000000000) /* ... doubling up to 1 s */
#define SCAN_COUNT     "1000"               /* HSCAN page at load */
#define FENCE_MAX      512
#define GET_WINDOW     64 /* blocks of a packed table asked for at once at load */

struct redis_store {
	struct persist_backend be;
	struct redis_uri uri;
	char shown[512]; /* the URI, redacted */
	char prefix[128];
	unsigned timeout_ms, wait_replicas, wait_timeout_ms;
	char *tkey[PERSIST_MAX_TABLES];
	redisContext *c;
	uint64_t next_try_ns, backoff_ns, failed_while_down;
	struct persist_fail_log refusal_log; /* refused commits */
	bool down;
	/* a connection made since the last plan: Redis may have come back without the newest writes (a restart without
	 * its append-only file, a failover to a replica behind), so the next append to each block lists it again
	 * (packed_relist) */
	bool new_conn;
	pthread_mutex_t mu; /* the fence: set on the loop, read by the writer */
	char fence_key[FENCE_MAX], fence_val[FENCE_MAX];
	struct packed *packed[PERSIST_MAX_TABLES]; /* NULL: a hash */
	struct rplan plan;                         /* the writes of the batch being committed */
	struct persist_op *opv;                    /* a batch's ops */
	size_t capopv;
	/* this connection at Redis (CLIENT ID, and its address as Redis sees it), and the one dropped before it, killed
	 * at Redis by the next connection before anything else goes (kill_stale) */
	long long client_id, stale_id;
	char client_addr[64], stale_addr[64];
	char run_id[48], stale_run_id[48]; /* INFO server's run_id: a restarted Redis numbers its clients afresh */
};

static struct redis_store *to_redis(struct persist_backend *be)
{
	return (struct redis_store *)be;
}

static void drop(struct redis_store *s)
{
	if (s->c && s->client_id) {
		s->stale_id = s->client_id;
		memcpy(s->stale_addr, s->client_addr, sizeof(s->stale_addr));
		memcpy(s->stale_run_id, s->run_id, sizeof(s->stale_run_id));
	}
	s->client_id = 0;
	if (s->c)
		redisFree(s->c);
	s->c = NULL;
}

/* One command on the connection; NULL (connection dropped, reason in err) when Redis did not answer. */
static redisReply *command(struct redis_store *s, int argc, const char **argv, char *err, size_t errlen)
{
	redisReply *r = redisCommandArgv(s->c, argc, argv, NULL);

	if (!r) {
		snprintf(err, errlen, "%s", s->c->errstr);
		drop(s);
	}
	return r;
}

/* A command whose error reply fails the handshake. */
static int checked(struct redis_store *s, int argc, const char **argv, char *err, size_t errlen)
{
	redisReply *r = command(s, argc, argv, err, errlen);
	int rc = 0;

	if (!r)
		return MMC_ERROR;
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s refused: %s", argv[0], r->str);
		rc = MMC_ERROR;
	}
	freeReplyObject(r);
	return rc;
}

/* AUTH and SELECT on a fresh connection. */
static int handshake(struct redis_store *s, char *err, size_t errlen)
{
	char db[16];
	const char *auth2[3] = {"AUTH", s->uri.user, s->uri.password}, *auth1[2] = {"AUTH", s->uri.password};
	const char *sel[2] = {"SELECT", db};

	snprintf(db, sizeof(db), "%d", s->uri.db);
	if (s->uri.password[0] &&
	    (s->uri.user[0] ? checked(s, 3, auth2, err, errlen) : checked(s, 2, auth1, err, errlen)))
		return MMC_ERROR;
	return s->uri.db ? checked(s, 2, sel, err, errlen) : 0;
}

/* The Redis process's run_id into s->run_id ("" when it cannot be read). */
static void read_run_id(struct redis_store *s)
{
	const char *argv[2] = {"INFO", "server"};
	redisReply *r = redisCommandArgv(s->c, 2, argv, NULL);
	const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "run_id:") : NULL;

	s->run_id[0] = '\0';
	if (at)
		sscanf(at + 7, "%47[0-9a-f]", s->run_id);
	freeReplyObject(r);
}

/* Redis's name for this connection: its id, and our end's address as Redis prints it (anetFormatAddr). */
static void remember_client(struct redis_store *s)
{
	const char *argv[2] = {"CLIENT", "ID"};
	struct sockaddr_storage a;
	socklen_t alen = sizeof(a);
	char ip[INET6_ADDRSTRLEN];
	redisReply *r = redisCommandArgv(s->c, 2, argv, NULL);
	unsigned port;

	s->client_id = 0;
	if (r && r->type == REDIS_REPLY_INTEGER && getsockname(s->c->fd, (struct sockaddr *)&a, &alen) == 0) {
		const void *in = a.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&a)->sin6_addr
		                                         : (const void *)&((struct sockaddr_in *)&a)->sin_addr;

		port = ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
		                                     : ((struct sockaddr_in *)&a)->sin_port);
		if (inet_ntop(a.ss_family, in, ip, sizeof(ip))) {
			snprintf(s->client_addr, sizeof(s->client_addr), a.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
			         ip, port);
			s->client_id = r->integer;
		}
	}
	if (!s->client_id)
		log_warn(
		    "op=redis_store store=\"%s\" err=\"CLIENT ID refused\": a batch on a connection that broke could "
		    "still land after later ones",
		    s->shown);
	freeReplyObject(r);
}

/*
 * The connection dropped before this one, ended at Redis before anything goes on this one. Its last batch may still
 * be on the way (a lost packet retransmitted, a queue in the network): landing after a later batch, it would bring
 * back records those deleted or overwrote (a freed object's record, over space given to another). Killed first,
 * whatever it still carries lands before this connection's first command or never. By id and address together, so
 * that a restarted Redis, which numbers its clients afresh, kills no other client. Returns 0, or MMC_ERROR when
 * Redis did not answer.
 */
static int kill_stale(struct redis_store *s, char *err, size_t errlen)
{
	char id[24];
	const char *argv[6] = {"CLIENT", "KILL", "ID", id, "ADDR", s->stale_addr};
	redisReply *r;

	if (!s->stale_id || !s->run_id[0] || strcmp(s->run_id, s->stale_run_id) != 0) {
		s->stale_id = 0; /* another Redis process (restarted): the old connection ended with the old one */
		return 0;
	}
	snprintf(id, sizeof(id), "%lld", s->stale_id);
	if (!(r = command(s, 6, argv, err, errlen)))
		return MMC_ERROR;
	if (r->type == REDIS_REPLY_INTEGER && r->integer > 0)
		log_info("op=redis_store store=\"%s\" killed_stale_connection=%s", s->shown, id);
	else if (r->type == REDIS_REPLY_ERROR)
		log_warn("op=redis_store store=\"%s\" err=\"CLIENT KILL refused: %s\": a batch on the connection that "
		         "broke could still land after later ones",
		         s->shown, r->str);
	freeReplyObject(r);
	s->stale_id = 0;
	return 0;
}

static int connect_now(struct redis_store *s, char *err, size_t errlen)
{
	struct timeval tv = {s->timeout_ms / 1000, (s->timeout_ms % 1000) * 1000};

	drop(s);
	s->c = redisConnectWithTimeout(s->uri.host, s->uri.port, tv);
	if (!s->c || s->c->err) {
		snprintf(err, errlen, "%s", s->c ? s->c->errstr : "out of memory");
		drop(s);
		return MMC_ERROR;
	}
	if (redisSetTimeout(s->c, tv) != REDIS_OK || redisEnableKeepAlive(s->c) != REDIS_OK) {
		snprintf(err, errlen, "cannot set socket options");
		drop(s);
		return MMC_ERROR;
	}
	if (handshake(s, err, errlen)) {
		drop(s);
		return MMC_ERROR;
	}
	read_run_id(s);
	if (kill_stale(s, err, errlen)) {
		drop(s);
		return MMC_ERROR;
	}
	remember_client(s);
	s->new_conn = true;
	return 0;
}

static void forget_packed(struct redis_store *s)
{
	for (int i = 0; i < PERSIST_MAX_TABLES; i++)
		if (s->packed[i])
			packed_forget(s->packed[i]);
	s->new_conn = false;
}

static void relist_packed(struct redis_store *s)
{
	for (int i = 0; i < PERSIST_MAX_TABLES; i++)
		if (s->packed[i])
			packed_relist(s->packed[i]);
	s->new_conn = false;
}

/* Redis went away (or came back): logged once each way, not once per failed batch. An attempt that failed pushes the
 * next one back; batches failing meanwhile do not. */
static void note_down(struct redis_store *s, const char *why)
{
	if (!s->down)
		log_error("op=redis_store state=down store=\"%s\" err=\"%s\" (writes fail with MMC_META_BACKUP_ERROR "
		          "until it returns; reads are served from memory)",
		          s->shown, why);
	s->down = true;
	s->backoff_ns = s->backoff_ns ? s->backoff_ns * 2 : BACKOFF_MIN_NS;
	if (s->backoff_ns > BACKOFF_MAX_NS)
		s->backoff_ns = BACKOFF_MAX_NS;
	s->next_try_ns = clock_ns() + s->backoff_ns;
}

static void note_up(struct redis_store *s)
{
	if (s->down)
		log_info("op=redis_store state=up store=\"%s\" failed_batches=%llu", s->shown,
		         (unsigned long long)s->failed_while_down);
	s->down = false;
	s->backoff_ns = 0;
	s->failed_while_down = 0;
}

/* A connection for the writer, unless Redis is down and its backoff has not passed. */
static bool ensure(struct redis_store *s)
{
	char err[256];

	if (s->c)
		return true;
	if (s->down && clock_ns() < s->next_try_ns)
		return false;
	if (connect_now(s, err, sizeof(err))) {
		note_down(s, err);
		return false;
	}
	return true;
}

/* A connection that broke under a batch: reconnect at once (Redis may be back already, as after a restart). */
static void broke(struct redis_store *s, const char *why)
{
	if (!s->down)
		log_warn("op=redis_store store=\"%s\" err=\"%s\" (reconnecting)", s->shown, why);
	s->next_try_ns = 0;
}

/* Reads one pipelined reply; false when the connection broke (then dropped). */
static bool next_reply(struct redis_store *s, redisReply **r, char *err, size_t errlen)
{
	void *v = NULL;

	if (redisGetReply(s->c, &v) != REDIS_OK || !v) {
		snprintf(err, errlen, "%s", s->c->errstr[0] ? s->c->errstr : "no reply");
		drop(s);
		return false;
	}
	*r = v;
	return true;
}

enum outcome { DONE, FAILED, BROKEN }; /* BROKEN: the connection broke, the batch may be retried */

/*
 * A fenced batch, as one script (atomic at Redis like MULTI/EXEC): it writes only while the lock key holds this
 * server's value. KEYS: each write's key, then the lock key; ARGV: the value, then per write its command and two
 * arguments (HSET takes both, DEL none, the others the first). It compares the value, not whether the key changed:
 * the leader's own lease renewals (PEXPIRE, every loop interval) touch the key, and a WATCH on it failed commits of
 * a healthy leader.
 */
static const char fenced_lua[] =
    "if redis.call('get', KEYS[#KEYS]) ~= ARGV[1] then return redis.error_reply('MMC_FENCED') end "
    "for i = 1, #KEYS - 1 do local c = ARGV[3 * i - 1] "
    "if c == 'HSET' then redis.call(c, KEYS[i], ARGV[3 * i], ARGV[3 * i + 1]) "
    "elseif c == 'DEL' then redis.call(c, KEYS[i]) "
    "else redis.call(c, KEYS[i], ARGV[3 * i]) end end "
    "return #KEYS - 1";

/* The argument vector of one command, for hiredis. */
struct args {
	const char **v;
	size_t *len;
};

static void arg_set(struct args *x, size_t i, const void *p, size_t n)
{
	x->v[i] = p;
	x->len[i] = n;
}

/* Queues the fenced batch's EVAL; false when out of memory. */
static bool append_fenced(struct redis_store *s, const struct rplan *r, const char *key, const char *want)
{
	size_t n = 5 + 4 * r->n, k = 3, a = 4 + r->n; /* k: the next of KEYS, a: of ARGV */
	struct args x = {malloc(n * sizeof(*x.v)), malloc(n * sizeof(*x.len))};
	bool ok = x.v && x.len;
	char nkeys[24];

	if (ok) {
		snprintf(nkeys, sizeof(nkeys), "%zu", r->n + 1);
		arg_set(&x, 0, "EVAL", 4);
		arg_set(&x, 1, fenced_lua, sizeof(fenced_lua) - 1);
		arg_set(&x, 2, nkeys, strlen(nkeys));
		arg_set(&x, a++, want, strlen(want));
		for (size_t i = 0; i < r->n; i++) {
			const struct rwrite *w = &r->w[i];

			arg_set(&x, k++, w->key, w->klen);
			arg_set(&x, a++, w->cmd, strlen(w->cmd));
			arg_set(&x, a++, w->nargs > 0 ? w->arg[0] : "", w->nargs > 0 ? w->alen[0] : 0);
			arg_set(&x, a++, w->nargs > 1 ? w->arg[1] : "", w->nargs > 1 ? w->alen[1] : 0);
		}
		arg_set(&x, k, key, strlen(key));
		redisAppendCommandArgv(s->c, (int)n, x.v, x.len);
	}
	free(x.v);
	free(x.len);
	return ok;
}

static void append_write(struct redis_store *s, const struct rwrite *w)
{
	const char *argv[4] = {w->cmd, w->key, w->arg[0], w->arg[1]};
	size_t len[4] = {strlen(w->cmd), w->klen, w->alen[0], w->alen[1]};

	redisAppendCommandArgv(s->c, 2 + w->nargs, argv, len);
}
/* EXEC's reply: an array with an error in it when a write failed inside the transaction (a key of the wrong type:
 * Redis applied the others, so the batch is not durable as a whole). */
static enum outcome exec_outcome(const redisReply *r, char *err, size_t errlen)
{
	if (r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "EXEC: the transaction was aborted");
		return FAILED;
	}
	for (size_t i = 0; i < r->elements; i++) {
		if (r->element[i]->type == REDIS_REPLY_ERROR) {
			snprintf(err, errlen, "write %zu of the batch: %s", i, r->element[i]->str);
			return FAILED;
		}
	}
	return DONE;
}

/* A script's refusal: the lock moved to another holder (or expired). Redis may put "ERR " in front. */
static void error_text(const redisReply *r, const char *fence_key, char *err, size_t errlen)
{
	if (fence_key[0] && strstr(r->str, "MMC_FENCED"))
		snprintf(err, errlen, "fenced: lock key \"%s\" no longer holds this server's value", fence_key);
	else
		snprintf(err, errlen, "%s", r->str);
}

/* Reads the batch's replies (MULTI's, each QUEUED, EXEC's; or the fenced script's) and WAIT's: every one, even
 * after an error, to keep the pipeline in step. result_at: the index of EXEC's or the script's reply. */
static enum outcome read_commit(struct redis_store *s, size_t result_at, const char *fence_key, char *err,
                                size_t errlen)
{
	enum outcome out = DONE;
	size_t n = result_at + 1 + (s->wait_replicas ? 1 : 0);
	redisReply *r;

	for (size_t i = 0; i < n; i++) {
		if (!next_reply(s, &r, err, errlen))
			return BROKEN;
		if (out == DONE && r->type == REDIS_REPLY_ERROR) {
			error_text(r, fence_key, err, errlen);
			out = FAILED;
		} else if (out == DONE && i == result_at && !fence_key[0]) {
			out = exec_outcome(r, err, errlen);
		} else if (out == DONE && i == result_at + 1 &&
		           (r->type != REDIS_REPLY_INTEGER || r->integer < (long long)s->wait_replicas)) {
			snprintf(err, errlen, "WAIT: %lld of %u replicas acknowledged", r->integer, s->wait_replicas);
			out = FAILED;
		}
		freeReplyObject(r);
	}
	return out;
}

/* The current strings of the blocks pk rewrites next, into reads (NULL when there are none). */
static enum outcome read_due(struct redis_store *s, struct packed *pk, redisReply ***replies, struct rbytes **reads,
                             size_t *n, char *err, size_t errlen)
{
	const uint64_t *nos = packed_to_read(pk, n);
	enum outcome out = DONE;
	char key[80];

	*replies = NULL;
	*reads = NULL;
	if (!*n)
		return DONE;
	*replies = calloc(*n, sizeof(**replies));
	*reads = calloc(*n, sizeof(**reads));
	if (!*replies || !*reads) {
		snprintf(err, errlen, "out of memory");
		return FAILED;
	}
	for (size_t i = 0; i < *n; i++) {
		const char *argv[2] = {"GET", key};
		size_t len[2] = {3, packed_block_key(pk, nos[i], key, sizeof(key))};

		redisAppendCommandArgv(s->c, 2, argv, len);
	}
	for (size_t i = 0; i < *n; i++) { /* every reply is read, even after a refusal: the pipeline stays in step */
		redisReply *r;

		if (!next_reply(s, &r, err, errlen))
			return BROKEN;
		(*replies)[i] = r;
		if (out == DONE && r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
			snprintf(err, errlen, "GET of a block: %s",
			         r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
			out = FAILED;
		}
		(*reads)[i] = (struct rbytes){r->str, r->len, r->type == REDIS_REPLY_NIL};
	}
	return out;
}

static void free_reads(redisReply **replies, struct rbytes *reads, size_t n)
{
	for (size_t i = 0; replies && i < n; i++)
		if (replies[i])
			freeReplyObject(replies[i]);
	free(replies);
	free(reads);
}

/* The writes of packed table t: its ops of the batch, and the rewrites due. */
static enum outcome plan_packed(struct redis_store *s, uint32_t t, const struct persist_op *v, size_t n, char *err,
                                size_t errlen)
{
	redisReply **replies;
	struct rbytes *reads;
	size_t nreads;
	enum outcome out;
	int rc;

	if ((out = read_due(s, s->packed[t], &replies, &reads, &nreads, err, errlen)) == DONE &&
	    (rc = packed_plan(s->packed[t], &s->plan, t, v, n, reads))) {
		snprintf(err, errlen, "%s",
		         rc == MMC_INVALID_PARAM ? "a key of a packed table is not an id"
		         : rc == MMC_ERROR       ? "a damaged block of a packed table waits for its rewrite"
		                                 : "out of memory");
		out = FAILED;
	}
	free_reads(replies, reads, nreads);
	return out;
}

/* The batch's writes into s->plan: a hash table's as they come, then each packed table's. */
static enum outcome plan_batch(struct redis_store *s, const struct persist_op *v, size_t n, bool *touched, char *err,
                               size_t errlen)
{
	enum outcome out = DONE;

	rplan_reset(&s->plan);
	for (size_t i = 0; i < n; i++) {
		const struct persist_op *op = &v[i];
		const char *t = s->tkey[op->table];

		if (s->packed[op->table])
			touched[op->table] = true;
		else if (rplan_add(&s->plan, op->del ? "HDEL" : "HSET", t, strlen(t), op->key, op->klen, op->val,
		                   op->vlen, op->del ? 1 : 2)) {
			snprintf(err, errlen, "out of memory");
			return FAILED;
		}
	}
	for (uint32_t t = 0; t < PERSIST_MAX_TABLES && out == DONE; t++)
		if (touched[t])
			out = plan_packed(s, t, v, n, err, errlen);
	return out;
}

/* Sends the plan (MULTI ... EXEC, or the fenced script) and WAIT, and reads what they answered. */
static enum outcome send_plan(struct redis_store *s, const char *key, const char *want, char *err, size_t errlen)
{
	char waitn[16], waitms[16];
	const char *multi[1] = {"MULTI"}, *exec[1] = {"EXEC"}, *wait[3] = {"WAIT", waitn, waitms};

	if (key[0] && !append_fenced(s, &s->plan, key, want)) {
		snprintf(err, errlen, "out of memory");
		return FAILED;
	}
	if (!key[0]) {
		redisAppendCommandArgv(s->c, 1, multi, NULL);
		for (size_t i = 0; i < s->plan.n; i++)
			append_write(s, &s->plan.w[i]);
		redisAppendCommandArgv(s->c, 1, exec, NULL);
	}
	if (s->wait_replicas) {
		snprintf(waitn, sizeof(waitn), "%u", s->wait_replicas);
		snprintf(waitms, sizeof(waitms), "%u", s->wait_timeout_ms);
		redisAppendCommandArgv(s->c, 3, wait, NULL);
	}
	return read_commit(s, key[0] ? 0 : s->plan.n + 1, key, err, errlen);
}

/* send_plan under the fence as it stands now. */
static enum outcome send_fenced(struct redis_store *s, char *err, size_t errlen)
{
	char key[FENCE_MAX], want[FENCE_MAX];

	pthread_mutex_lock(&s->mu);
	memcpy(key, s->fence_key, sizeof(key));
	memcpy(want, s->fence_val, sizeof(want));
	pthread_mutex_unlock(&s->mu);
	return send_plan(s, key, want, err, errlen);
}

/* ops' fence (NULL: none) is asked after the plan's reads, just before the send: a leader paused or slowed past its
 * lease in between sends nothing. What Redis gets after that is bounded by the network alone; the fence key
 * (send_fenced) closes that too, where the lock is in the store's Redis and db. */
static enum outcome commit_once(struct redis_store *s, const struct persist_op *v, size_t n,
                                const struct persist_ops *ops, bool *touched, char *err, size_t errlen)
{
	enum outcome out = plan_batch(s, v, n, touched, err, errlen);

	if (out == DONE && ops && ops->fence && !ops->fence(ops->fence_arg)) {
		snprintf(err, errlen, "fenced: this server no longer leads");
		return FAILED;
	}
	return out == DONE ? send_fenced(s, err, errlen) : out;
}

/* A commit Redis answered but refused (fenced, WAIT short of replicas, a write refused): the same cause tends to
 * refuse every batch. */
static void log_refusal(struct redis_store *s, const char *err, size_t nops)
{
	unsigned long long skipped;

	if (persist_fail_log_due(&s->refusal_log, &skipped))
		log_error("op=redis_commit store=\"%s\" err=\"%s\" writes=%zu failed_since_last_line=%llu (metadata of "
		          "this batch is not durable)",
		          s->shown, err, nops, skipped);
}

/* Commits ops (v, n), retrying once on a fresh connection if the first broke. */
static int commit_ops(struct redis_store *s, const struct persist_op *v, size_t n, const struct persist_ops *ops)
{
	bool touched[PERSIST_MAX_TABLES] = {false};
	enum outcome out = BROKEN;
	char err[256];

	for (int attempt = 0; attempt < 2 && out == BROKEN && ensure(s); attempt++) {
		if (s->new_conn)
			relist_packed(s);
		if ((out = commit_once(s, v, n, ops, touched, err, sizeof(err))) == BROKEN)
			broke(s, err);
	}
	for (uint32_t t = 0; t < PERSIST_MAX_TABLES; t++)
		if (touched[t])
			packed_done(s->packed[t], out == DONE);
	if (out == BROKEN) {
		s->failed_while_down++;
		return MMC_META_BACKUP_ERROR;
	}
	note_up(s);
	if (out == FAILED) {
		log_refusal(s, err, n);
		return MMC_META_BACKUP_ERROR;
	}
	return 0;
}

static int redis_commit(struct persist_backend *be, const struct persist_ops *ops)
{
	struct redis_store *s = to_redis(be);
	struct persist_op *v = array_grow(s->opv, &s->capopv, ops->nops ? ops->nops : 1, sizeof(*v), 256);
	size_t off = 0, n = 0;

	if (!v) {
		log_refusal(s, "out of memory", ops->nops);
		return MMC_META_BACKUP_ERROR;
	}
	s->opv = v;
	while (n < ops->nops && persist_op_next(ops, &off, &s->opv[n]))
		n++;
	return commit_ops(s, s->opv, n, ops);
}

/* Loads and reads need Redis now: one connection attempt, whatever the backoff. */
static int load_connection(struct redis_store *s)
{
	char err[256];

	if (s->c)
		return 0;
	if (connect_now(s, err, sizeof(err))) {
		log_error("op=redis_load store=\"%s\" err=\"%s\"", s->shown, err);
		return MMC_ERROR;
	}
	return 0;
}

static int redis_table(struct persist_backend *be, uint32_t id, const char *name)
{
	struct redis_store *s = to_redis(be);
	size_t n = strlen(s->prefix) + 2 + strlen(name) + 1;

	free(s->tkey[id]);
	if (!(s->tkey[id] = malloc(n)))
		return MMC_MALLOC_FAILED;
	snprintf(s->tkey[id], n, "%st:%s", s->prefix, name);
	return 0;
}

static redisReply *load_command(struct redis_store *s, int argc, const char **argv, const size_t *len)
{
	redisReply *r;

	if (load_connection(s))
		return NULL;
	r = redisCommandArgv(s->c, argc, argv, len);
	if (!r) {
		log_error("op=redis_load store=\"%s\" err=\"%s\"", s->shown, s->c->errstr);
		drop(s);
	} else if (r->type == REDIS_REPLY_ERROR) {
		log_error("op=redis_load store=\"%s\" cmd=%s err=\"%s\"", s->shown, argv[0], r->str);
		freeReplyObject(r);
		r = NULL;
	}
	return r;
}

/* The value of key GET (a string, or nil: *v.nil) with its reply, to free; NULL when Redis failed. */
static redisReply *get_string(struct redis_store *s, const char *key, struct rbytes *v)
{
	const char *argv[2] = {"GET", key};
	redisReply *r = load_command(s, 2, argv, NULL);

	if (r && r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
		log_error("op=redis_load store=\"%s\" key=\"%s\" err=\"not a string\"", s->shown, key);
		freeReplyObject(r);
		return NULL;
	}
	if (r)
		*v = (struct rbytes){r->str, r->len, r->type == REDIS_REPLY_NIL};
	return r;
}

static int packed_get(struct redis_store *s, struct packed *pk, const void *key, size_t klen, void *buf, size_t cap,
                      size_t *len)
{
	char bkey[80];
	struct rbytes v;
	const void *val;
	redisReply *r;
	int rc;

	if (klen != PACKED_KEY)
		return MMC_OBJECT_NOT_EXISTS;
	packed_block_key(pk, packed_block_of(key), bkey, sizeof(bkey));
	if (!(r = get_string(s, bkey, &v)))
		return MMC_ERROR;
	if ((rc = packed_find(v, key, &val, len)) == 0 && *len > cap)
		rc = MMC_ERROR;
	if (rc == 0)
		memcpy(buf, val, *len);
	freeReplyObject(r);
	return rc;
}

static int redis_get(struct persist_backend *be, uint32_t id, const void *key, size_t klen, void *buf, size_t cap,
                     size_t *len)
{
	struct redis_store *s = to_redis(be);
	const char *argv[3] = {"HGET", s->tkey[id], key};
	size_t lens[3] = {4, strlen(s->tkey[id]), klen};
	redisReply *r;
	int rc = MMC_ERROR;

	if (s->packed[id])
		return packed_get(s, s->packed[id], key, klen, buf, cap, len);
	if (!(r = load_command(s, 3, argv, lens)))
		return MMC_ERROR;
	if (r->type == REDIS_REPLY_NIL) {
		rc = MMC_OBJECT_NOT_EXISTS;
	} else if (r->type == REDIS_REPLY_STRING && r->len <= cap) {
		memcpy(buf, r->str, r->len);
		*len = r->len;
		rc = 0;
	}
	freeReplyObject(r);
	return rc;
}

/* A record copied out of an HSCAN page, sorted before the caller sees it. */
struct rec {
	char *key, *val;
	size_t klen, vlen;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = memcmp(x->key, y->key, x->klen < y->klen ? x->klen : y->klen);

	return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* Copies one HSCAN page's field/value pairs onto *recs. */
static int keep_page(const redisReply *page, struct rec **recs, size_t *n, size_t *cap)
{
	for (size_t i = 0; i + 1 < page->elements; i += 2) {
		const redisReply *k = page->element[i], *v = page->element[i + 1];
		struct rec *r;

		if (*n == *cap) {
			size_t c = *cap ? *cap * 2 : 1024;
			struct rec *g = realloc(*recs, c * sizeof(*g));

			if (!g)
				return MMC_MALLOC_FAILED;
			*recs = g;
			*cap = c;
		}
		r = &(*recs)[*n];
		r->key = malloc(k->len + v->len + 1);
		if (!r->key)
			return MMC_MALLOC_FAILED;
		memcpy(r->key, k->str, k->len);
		r->val = r->key + k->len;
		memcpy(r->val, v->str, v->len);
		r->klen = k->len;
		r->vlen = v->len;
		(*n)++;
	}
	return 0;
}

/* Every page of an HSCAN (cmd "HSCAN") or SSCAN of key through page_fn, until it returns nonzero (HSCAN and SSCAN
 * never block Redis for long). Returns 0, page_fn's value or MMC_ERROR. */
static int scan_pages(struct redis_store *s, const char *cmd, const char *key,
                      int (*page_fn)(const redisReply *page, void *arg), void *arg)
{
	char cursor[32] = "0";
	const char *argv[5] = {cmd, key, cursor, "COUNT", SCAN_COUNT};
	int rc = 0;

	do {
		redisReply *r = load_command(s, 5, argv, NULL);

		if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
			rc = MMC_ERROR;
		} else {
			snprintf(cursor, sizeof(cursor), "%.*s", (int)r->element[0]->len, r->element[0]->str);
			rc = page_fn(r->element[1], arg);
		}
		if (r)
			freeReplyObject(r);
	} while (rc == 0 && strcmp(cursor, "0") != 0);
	return rc;
}

static int hscan(struct redis_store *s, uint32_t id, int (*page_fn)(const redisReply *page, void *arg), void *arg)
{
	return scan_pages(s, "HSCAN", s->tkey[id], page_fn, arg);
}

static int sscan(struct redis_store *s, const char *key, int (*page_fn)(const redisReply *page, void *arg), void *arg)
{
	return scan_pages(s, "SSCAN", key, page_fn, arg);
}

struct kept {
	struct rec *recs;
	size_t n, cap;
};

static int keep(const redisReply *page, void *arg)
{
	struct kept *k = arg;

	return keep_page(page, &k->recs, &k->n, &k->cap);
}

/* A number a Redis integer reply carries (0 for nil); -1 when Redis failed. */
static long long integer_of(struct redis_store *s, int argc, const char **argv)
{
	redisReply *r = load_command(s, argc, argv, NULL);
	long long n = -1;

	if (r && r->type == REDIS_REPLY_INTEGER)
		n = r->integer;
	else if (r && r->type == REDIS_REPLY_STRING)
		n = strtoll(r->str, NULL, 10);
	else if (r && r->type == REDIS_REPLY_NIL)
		n = 0;
	if (r)
		freeReplyObject(r);
	return n;
}

struct moving {
	struct redis_store *s;
	uint32_t table;
	uint64_t moved;
};

/* One HSCAN page of a packed table's old hash, written into its blocks as one commit. */
static int move_page(const redisReply *page, void *arg)
{
	struct moving *m = arg;
	struct redis_store *s = m->s;
	size_t n = 0;
	struct persist_op *v = array_grow(s->opv, &s->capopv, page->elements / 2 + 1, sizeof(*v), 256);

	if (!v)
		return MMC_MALLOC_FAILED;
	s->opv = v;
	for (size_t i = 0; i + 1 < page->elements; i += 2) {
		const redisReply *k = page->element[i], *val = page->element[i + 1];

		if (k->len == PACKED_KEY) /* another is no record: the load would drop it */
			s->opv[n++] = (struct persist_op){
			    .table = m->table, .key = k->str, .klen = k->len, .val = val->str, .vlen = val->len};
	}
	m->moved += n;
	return n && commit_ops(s, s->opv, n, NULL) ? MMC_ERROR : 0;
}

/*
 * A store of an older format keeps a packed table's records in its hash: they are appended to the blocks, then the
 * hash goes. A move cut short leaves the hash: the next load moves it again, and a record appended twice is the same
 * record (the newest entry of a slot wins).
 */
static int move_hash(struct redis_store *s, uint32_t id)
{
	const char *hlen[2] = {"HLEN", s->tkey[id]};
	long long n = integer_of(s, 2, hlen);
	struct moving m = {s, id, 0};
	char err[256];
	int rc;

	if (n <= 0)
		return n < 0 ? MMC_ERROR : 0;
	packed_forget(s->packed[id]);
	if ((rc = hscan(s, id, move_page, &m)))
		return rc;
	rplan_reset(&s->plan);
	if (rplan_add(&s->plan, "DEL", s->tkey[id], strlen(s->tkey[id]), NULL, 0, NULL, 0, 0) || load_connection(s) ||
	    send_fenced(s, err, sizeof(err)) != DONE) {
		log_error("op=store_move store=\"%s\" table=\"%s\" err=\"cannot delete the moved hash\"", s->shown,
		          s->tkey[id]);
		return MMC_ERROR;
	}
	log_info("op=store_move store=redis table=\"%s\" records=%llu from=hash to=blocks", s->tkey[id],
	         (unsigned long long)m.moved);
	return 0;
}

/* A packed table's block numbers, as SSCAN gives them. */
struct numbers {
	uint64_t *v;
	size_t n, cap;
};

static int add_number(const redisReply *page, void *arg)
{
	struct numbers *k = arg;
	uint64_t *g = array_grow(k->v, &k->cap, k->n + page->elements + 1, sizeof(*g), 1024);

	if (!g)
		return MMC_MALLOC_FAILED;
	k->v = g;
	for (size_t i = 0; i < page->elements; i++)
		if (page->element[i]->type == REDIS_REPLY_STRING)
			k->v[k->n++] = strtoull(page->element[i]->str, NULL, 10);
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Sends the GETs of n blocks (numbers nos). False when the connection broke. */
static bool ask_window(struct redis_store *s, struct packed *pk, const uint64_t *nos, size_t n)
{
	char key[80];
	int done = 0;

	for (size_t i = 0; i < n; i++) {
		const char *argv[2] = {"GET", key};
		size_t len[2] = {3, packed_block_key(pk, nos[i], key, sizeof(key))};

		redisAppendCommandArgv(s->c, 2, argv, len);
	}
	/* now, not when the reader first runs out of replies: Redis works on them while the last window is handed on */
	while (!done)
		if (redisBufferWrite(s->c, &done) != REDIS_OK) {
			log_error("op=redis_load store=\"%s\" err=\"%s\"", s->shown, s->c->errstr);
			drop(s);
			return false;
		}
	return true;
}

/* The replies to one window's GETs, each string's records through fn. */
static int read_window(struct redis_store *s, struct packed *pk, const uint64_t *nos, size_t n, persist_scan_fn fn,
                       void *arg)
{
	char err[256];
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		redisReply *r;

		if (!next_reply(s, &r, err, sizeof(err))) {
			log_error("op=redis_load store=\"%s\" err=\"%s\"", s->shown, err);
			return MMC_ERROR;
		}
		if (rc == 0 && r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
			log_error("op=redis_load store=\"%s\" block=%llu err=\"not a string\"", s->shown,
			          (unsigned long long)nos[i]);
			rc = MMC_ERROR;
		}
		if (rc == 0)
			rc = packed_load_block(pk, nos[i], (struct rbytes){r->str, r->len, r->type == REDIS_REPLY_NIL},
			                       fn, arg);
		freeReplyObject(r); /* every reply is read, even after a failure: the pipeline stays in step */
	}
	return rc;
}

/* n blocks' records, two windows of GETs in flight: Redis answers one while the other's records are handed on. */
static int load_blocks(struct redis_store *s, struct packed *pk, const uint64_t *nos, size_t n, persist_scan_fn fn,
                       void *arg)
{
	int rc = load_connection(s);

	if (rc || !n)
		return rc;
	if (!ask_window(s, pk, nos, n < GET_WINDOW ? n : GET_WINDOW))
		return MMC_ERROR;
	for (size_t i = 0; rc == 0 && i < n; i += GET_WINDOW) {
		size_t m = n - i < GET_WINDOW ? n - i : GET_WINDOW, next = n - i - m;

		if (next && !ask_window(s, pk, nos + i + m, next < GET_WINDOW ? next : GET_WINDOW))
			return MMC_ERROR;
		rc = read_window(s, pk, nos + i, m, fn, arg);
		if (rc && next && s->c)
			drop(s); /* the next window's replies are still coming: a new connection, not one out of step */
	}
	return rc;
}

/* Every record of a packed table, in key order: the blocks by number, a block's records by slot. */
static int packed_scan(struct redis_store *s, uint32_t id, persist_scan_fn fn, void *arg)
{
	struct packed *pk = s->packed[id];
	const char *set = packed_set_key(pk);
	struct numbers k = {0};
	int rc;

	size_t n = 0;

	if ((rc = move_hash(s, id)))
		return rc;
	packed_load_begin(pk);
	rc = sscan(s, set, add_number, &k);
	if (rc == 0 && k.n)
		qsort(k.v, k.n, sizeof(*k.v), u64_cmp);
	for (size_t i = 0; rc == 0 && i < k.n; i++) /* SSCAN may return a member twice */
		if (i == 0 || k.v[i] != k.v[n - 1])
			k.v[n++] = k.v[i];
	if (rc == 0)
		rc = load_blocks(s, pk, k.v, n, fn, arg);
	if (rc == 0)
		packed_load_end(pk);
	free(k.v);
	return rc;
}

/* Every record of the table, copied page by page, then in key order like LMDB's. */
static int redis_scan(struct persist_backend *be, uint32_t id, persist_scan_fn fn, void *arg)
{
	struct redis_store *s = to_redis(be);
	struct kept k = {0};
	int rc;

	if (s->packed[id])
		return packed_scan(s, id, fn, arg);
	rc = hscan(s, id, keep, &k);
	if (rc == 0 && k.n)
		qsort(k.recs, k.n, sizeof(*k.recs), rec_cmp);
	for (size_t i = 0; i < k.n && rc == 0; i++)
		if (i == 0 || rec_cmp(&k.recs[i - 1], &k.recs[i])) /* HSCAN may return a field twice */
			rc = fn(arg, k.recs[i].key, k.recs[i].klen, k.recs[i].val, k.recs[i].vlen);
	for (size_t i = 0; i < k.n; i++)
		free(k.recs[i].key);
	free(k.recs);
	return rc;
}

struct handed {
	persist_scan_fn fn;
	void *arg;
};

static int hand_page(const redisReply *page, void *arg)
{
	struct handed *h = arg;
	int rc = 0;

	for (size_t i = 0; i + 1 < page->elements && rc == 0; i += 2)
		rc = h->fn(h->arg, page->element[i]->str, page->element[i]->len, page->element[i + 1]->str,
		           page->element[i + 1]->len);
	return rc;
}

/* Every record of the table, each HSCAN page handed to fn as it comes: no copy, no sort. */
static int redis_scan_any(struct persist_backend *be, uint32_t id, persist_scan_fn fn, void *arg)
{
	struct redis_store *s = to_redis(be);
	struct handed h = {fn, arg};

	if (s->packed[id])
		return packed_scan(s, id, fn, arg);
	return hscan(s, id, hand_page, &h);
}

static int count_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	return 0;
}

/* A packed table's records: what the writer knows; else the count a knowing writer left, or none when no block is
 * listed (a new store, or one of the older format), plus what the hash of that format still holds; else (blocks
 * written by a writer that knew nothing, which drops the count) a load of the table counts them. */
static int packed_count(struct redis_store *s, uint32_t id, uint64_t *n)
{
	struct packed *pk = s->packed[id];
	const char *hlen[2] = {"HLEN", s->tkey[id]}, *get[2] = {"GET", packed_count_key(pk)},
	           *scard[2] = {"SCARD", packed_set_key(pk)};
	redisReply *r;
	long long h;
	bool counted;

	if (packed_known(pk)) {
		*n = packed_live(pk);
		return 0;
	}
	if (!(r = load_command(s, 2, get, NULL)))
		return MMC_ERROR;
	counted = r->type == REDIS_REPLY_STRING;
	*n = counted ? strtoull(r->str, NULL, 10) : 0;
	freeReplyObject(r);
	if (!counted && (h = integer_of(s, 2, scard)) != 0) { /* blocks and no count: a load counts them */
		if (h < 0 || packed_scan(s, id, count_one, NULL))
			return MMC_ERROR;
		*n = packed_live(pk);
		return 0;
	}
	if ((h = integer_of(s, 2, hlen)) < 0)
		return MMC_ERROR;
	*n += (uint64_t)h;
	return 0;
}

static int redis_count(struct persist_backend *be, uint32_t id, uint64_t *n)
{
	struct redis_store *s = to_redis(be);
	const char *argv[2] = {"HLEN", s->tkey[id]};
	long long h;

	*n = 0;
	if (s->packed[id])
		return packed_count(s, id, n);
	if ((h = integer_of(s, 2, argv)) < 0)
		return MMC_ERROR;
	*n = (uint64_t)h;
	return 0;
}

static int redis_pack(struct persist_backend *be, uint32_t id, const char *name)
{
	struct redis_store *s = to_redis(be);

	packed_free(s->packed[id]);
	s->packed[id] = packed_new(s->prefix, name);
	return s->packed[id] ? 0 : MMC_MALLOC_FAILED;
}

static int redis_reopen(struct persist_backend *be, char *err, size_t errlen)
{
	struct redis_store *s = to_redis(be);
	char why[256];

	if (connect_now(s, why, sizeof(why))) {
		snprintf(err, errlen, "cannot reach the Redis store \"%s\": %s", s->shown, why);
		return MMC_ERROR;
	}
	forget_packed(s); /* another writer may have written since: the next load knows */
	note_up(s);
	return 0;
}

static int redis_fence_key(struct persist_backend *be, const char *key, const char *expected)
{
	struct redis_store *s = to_redis(be);

	if (key && (strlen(key) >= FENCE_MAX || strlen(expected) >= FENCE_MAX))
		return MMC_INVALID_PARAM;
	pthread_mutex_lock(&s->mu);
	snprintf(s->fence_key, sizeof(s->fence_key), "%s", key ? key : "");
	snprintf(s->fence_val, sizeof(s->fence_val), "%s", key ? expected : "");
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void redis_close(struct persist_backend *be)
{
	struct redis_store *s = to_redis(be);

	drop(s);
	for (int i = 0; i < PERSIST_MAX_TABLES; i++) {
		free(s->tkey[i]);
		packed_free(s->packed[i]);
	}
	rplan_fini(&s->plan);
	free(s->opv);
	pthread_mutex_destroy(&s->mu);
	explicit_bzero(&s->uri, sizeof(s->uri));
	free(s);
}

static const struct persist_backend_ops redis_ops = {
    .name = "redis",
    .table = redis_table,
    .pack = redis_pack,
    .commit = redis_commit,
    .get = redis_get,
    .scan = redis_scan,
    .scan_any = redis_scan_any,
    .count = redis_count,
    .reopen = redis_reopen,
    .fence_key = redis_fence_key,
    .close = redis_close,
};

/* One CONFIG GET value into out ("?" where CONFIG is refused, as on managed Redis services). */
static void config_value(struct redis_store *s, const char *name, char *out, size_t len)
{
	const char *argv[3] = {"CONFIG", "GET", name};
	redisReply *r = redisCommandArgv(s->c, 3, argv, NULL);

	snprintf(out, len, "?");
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING)
		snprintf(out, len, "%s", r->element[1]->str);
	if (r)
		freeReplyObject(r);
}

/* What an acknowledgement is worth is Redis's setting, not ours: say it at start, and warn when it is little. */
static void log_durability(struct redis_store *s)
{
	char aof[16], fsync[16];

	config_value(s, "appendonly", aof, sizeof(aof));
	config_value(s, "appendfsync", fsync, sizeof(fsync));
	if (strcmp(aof, "no") == 0)
		log_warn(
		    "op=redis_store store=\"%s\" appendonly=no warning=\"acknowledged metadata survives a meta server "
		    "restart, not a Redis restart (docs/operations.md, Metadata in Redis)\"",
		    s->shown);
	else
		log_info("op=redis_store store=\"%s\" appendonly=%s appendfsync=%s wait_replicas=%u", s->shown, aof,
		         fsync, s->wait_replicas);
}

int persist_redis_open(struct persist_backend **out, const struct persist_opts *opts, char *err, size_t errlen)
{
	struct redis_store *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return MMC_MALLOC_FAILED;
	s->be.ops = &redis_ops;
	s->be.format = PERSIST_FORMAT_VERSION;
	pthread_mutex_init(&s->mu, NULL);
	rplan_init(&s->plan);
	uri_mask(opts->uri, s->shown, sizeof(s->shown));
	if ((rc = redis_uri_parse(opts->uri, &s->uri, err, errlen)))
		goto fail;
	redis_uri_set_password(&s->uri, opts->password);
	snprintf(s->prefix, sizeof(s->prefix), "%s", opts->key_prefix ? opts->key_prefix : "mmc:");
	s->timeout_ms = opts->timeout_ms ? opts->timeout_ms : 2000;
	s->wait_replicas = opts->wait_replicas;
	s->wait_timeout_ms = opts->wait_timeout_ms;
	if ((rc = redis_reopen(&s->be, err, errlen)))
		goto fail;
	log_durability(s);
	*out = &s->be;
	return 0;
fail:
	redis_close(&s->be);
	return rc;
}
