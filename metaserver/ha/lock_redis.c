/*
 * redis://[user:password@]host:port[/db]: the lock as one Redis key, kvcm_lock:mmc_leader, whose value is the
 * holder's record and whose TTL is the lease. Taken with SET NX PX, renewed with a compare-and-pexpire script,
 * released with a compare-and-delete script, so that a node renews or removes only a lock it still holds. Each round
 * trip is bounded by the timeout; a broken connection is opened again on the next call.
 */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lock.h"
#include "log.h"
#include "mmc/mmc.h"

#define LOCK_KEY "kvcm_lock:mmc_leader"

static const char renew_lua[] = "if redis.call('get', KEYS[1]) == ARGV[1] then "
                                "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
static const char release_lua[] = "if redis.call('get', KEYS[1]) == ARGV[1] then "
                                  "return redis.call('del', KEYS[1]) else return 0 end";

struct lock_redis {
	struct ha_lock base;
	redisContext *c;
	char host[256], user[128], password[256];
	int port, db;
	uint32_t timeout_ms;
	int log_bucket;
};

static struct timeval tv_of(uint32_t ms)
{
	return (struct timeval){ms / 1000, (ms % 1000) * 1000};
}

static void drop(struct lock_redis *r)
{
	if (r->c)
		redisFree(r->c);
	r->c = NULL;
}

static redisReply *cmd(struct lock_redis *r, const char *fmt, ...)
{
	redisReply *rep;
	va_list ap;

	va_start(ap, fmt);
	rep = redisvCommand(r->c, fmt, ap);
	va_end(ap);
	if (!rep) {
		log_ratelimited(&r->log_bucket, LOG_WARN, "op=ha_lock backend=redis err=\"%s\"", r->c->errstr);
		drop(r);
	}
	return rep;
}

/* One command whose reply must not be an error; false (connection dropped or error logged) otherwise. */
static bool cmd_ok(struct lock_redis *r, redisReply *rep)
{
	bool ok = rep && rep->type != REDIS_REPLY_ERROR;

	if (rep && !ok)
		log_ratelimited(&r->log_bucket, LOG_WARN, "op=ha_lock backend=redis err=\"%s\"", rep->str);
	if (rep)
		freeReplyObject(rep);
	return ok;
}

static int connect_redis(struct lock_redis *r)
{
	struct timeval tv = tv_of(r->timeout_ms);

	if (r->c)
		return 0;
	r->c = redisConnectWithTimeout(r->host, r->port, tv);
	if (!r->c || r->c->err) {
		log_ratelimited(&r->log_bucket, LOG_WARN, "op=ha_lock backend=redis addr=%s:%d err=\"%s\"", r->host,
		                r->port, r->c ? r->c->errstr : "out of memory");
		drop(r);
		return MMC_ERROR;
	}
	redisSetTimeout(r->c, tv);
	if (r->password[0] &&
	    !cmd_ok(r, r->user[0] ? cmd(r, "AUTH %s %s", r->user, r->password) : cmd(r, "AUTH %s", r->password)))
		goto fail;
	if (r->db && !cmd_ok(r, cmd(r, "SELECT %d", r->db)))
		goto fail;
	return 0;
fail:
	drop(r);
	return MMC_ERROR;
}

/* Who holds it now: GET and PTTL of the key. */
static int read_holder(struct lock_redis *r, struct ha_holder *cur)
{
	redisReply *v = cmd(r, "GET %s", LOCK_KEY), *t;
	int64_t now = ha_wall_ms();

	if (!v)
		return MMC_ERROR;
	memset(cur, 0, sizeof(*cur));
	if (v->type == REDIS_REPLY_STRING)
		ha_holder_parse(cur, v->str);
	freeReplyObject(v);
	t = r->c ? cmd(r, "PTTL %s", LOCK_KEY) : NULL;
	if (!t)
		return MMC_ERROR;
	if (t->type == REDIS_REPLY_INTEGER && t->integer > 0)
		cur->expiry_wall_ms = now + t->integer;
	freeReplyObject(t);
	return 0;
}

static int redis_acquire(struct ha_lock *l, const struct ha_holder *self, uint32_t lease_ms, struct ha_holder *cur)
{
	struct lock_redis *r = (struct lock_redis *)l;
	struct ha_holder mine = *self;
	char val[1024];
	redisReply *rep;
	int64_t now = ha_wall_ms();
	bool won;

	if (ha_lock_redis_value(self, val, sizeof(val)) || connect_redis(r))
		return MMC_ERROR;
	rep = cmd(r, "EVAL %s 1 %s %s %u", renew_lua, LOCK_KEY, val, lease_ms);
	if (!rep)
		return MMC_ERROR;
	won = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
	freeReplyObject(rep);
	if (!won) {
		rep = cmd(r, "SET %s %s NX PX %u", LOCK_KEY, val, lease_ms);
		if (!rep)
			return MMC_ERROR;
		won = rep->type == REDIS_REPLY_STATUS && strcasecmp(rep->str, "OK") == 0;
		freeReplyObject(rep);
	}
	if (won) {
		*cur = mine;
		cur->expiry_wall_ms = now + lease_ms;
		return 1;
	}
	return read_holder(r, cur) ? MMC_ERROR : 0;
}

static int redis_peek(struct ha_lock *l, struct ha_holder *cur)
{
	struct lock_redis *r = (struct lock_redis *)l;

	return connect_redis(r) || read_holder(r, cur) ? MMC_ERROR : 0;
}

static void redis_release(struct ha_lock *l, const struct ha_holder *self)
{
	struct lock_redis *r = (struct lock_redis *)l;
	char val[1024];

	if (ha_lock_redis_value(self, val, sizeof(val)) || connect_redis(r))
		return;
	cmd_ok(r, cmd(r, "EVAL %s 1 %s %s", release_lua, LOCK_KEY, val));
}

static void redis_close(struct ha_lock *l)
{
	struct lock_redis *r = (struct lock_redis *)l;

	drop(r);
	free(r);
}

int ha_lock_redis_value(const struct ha_holder *self, char *out, size_t len)
{
	struct ha_holder mine = *self;

	mine.expiry_wall_ms = 0; /* the value never changes while held: the TTL is the lease */
	return ha_holder_format(&mine, out, len) < 0 ? MMC_INVALID_PARAM : 0;
}

static const struct ha_lock_ops redis_ops = {redis_acquire, redis_peek, redis_release, redis_close};

/* redis://[user:password@]host:port[/db] */
static int parse_uri(struct lock_redis *r, const char *uri)
{
	const char *p = uri + 8, *at = strchr(p, '@'), *slash, *colon;
	char hostport[300];

	if (at) {
		const char *c = memchr(p, ':', (size_t)(at - p));

		if (!c || (size_t)(c - p) >= sizeof(r->user) || (size_t)(at - c - 1) >= sizeof(r->password))
			return -1;
		memcpy(r->user, p, (size_t)(c - p));
		memcpy(r->password, c + 1, (size_t)(at - c - 1));
		p = at + 1;
	}
	slash = strchr(p, '/');
	if ((size_t)(slash ? slash - p : (long)strlen(p)) >= sizeof(hostport))
		return -1;
	snprintf(hostport, sizeof(hostport), "%.*s", (int)(slash ? slash - p : (long)strlen(p)), p);
	colon = strrchr(hostport, ':');
	if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof(r->host))
		return -1;
	snprintf(r->host, sizeof(r->host), "%.*s", (int)(colon - hostport), hostport);
	r->port = atoi(colon + 1);
	r->db = slash && slash[1] ? atoi(slash + 1) : 0;
	return r->port > 0 && r->port < 65536 && r->db >= 0 ? 0 : -1;
}

/* parse_uri, with the message an operator reads. */
static int parse_checked(struct lock_redis *r, const char *uri, char *err, size_t errlen)
{
	if (parse_uri(r, uri) == 0)
		return 0;
	snprintf(err, errlen,
	         "bad value \"%s\" for \"kvcm.distributed_lock.uri\" (expected redis://[user:password@]host:port[/db])",
	         uri);
	return MMC_INVALID_PARAM;
}

int ha_lock_redis_uri_check(const char *uri, char *err, size_t errlen)
{
	struct lock_redis r = {0};
	int rc = parse_checked(&r, uri, err, errlen);

	explicit_bzero(&r, sizeof(r));
	return rc;
}

int ha_lock_redis_open(struct ha_lock **out, const char *uri, uint32_t timeout_ms, char *err, size_t errlen)
{
	struct lock_redis *r = calloc(1, sizeof(*r));

	if (!r)
		return MMC_MALLOC_FAILED;
	r->base.ops = &redis_ops;
	r->base.redis_key = LOCK_KEY;
	r->timeout_ms = timeout_ms ? timeout_ms : 500;
	if (parse_checked(r, uri, err, errlen)) {
		free(r);
		return MMC_INVALID_PARAM;
	}
	*out = &r->base;
	return 0;
}
