/*
 * redis://[user:password@]host:port[/db]: the lock as one Redis key, kvcm_lock:mmc_leader, whose value is the
 * holder's record and whose TTL is the lease. Taken with SET NX PX, renewed with a compare-and-pexpire script,
 * released with a compare-and-delete script, so that a node renews or removes only a lock it still holds. Each round
 * trip is bounded by the timeout; a broken connection is opened again on the next call.
 *
 * The password comes from the URI or, better (a URI on a command line shows in `ps`), from
 * kvcm.distributed_lock.password_file, as ock.mmc.meta.store_password_file gives the store's: with a file, a lone
 * name before the '@' is the user. A lock store that fails (unreachable, a wrong or missing password, any error
 * reply) is logged when the failure starts or changes, then every FAIL_LOG_MS with a count, and once when it
 * answers again: a standby that can never lead says why, without a line per loop.
 */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "lock.h"
#include "log.h"
#include "mmc/mmc.h"
#include "secret_file.h"
#include "uri_mask.h"

#define LOCK_KEY     "kvcm_lock:mmc_leader"
#define PASSWORD_KEY "kvcm.distributed_lock.password_file"
#define FAIL_LOG_MS  10000

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
	bool lone_token; /* the URI's user information had no ':' */
	/* the failure logged last (empty: none since the last success), when, and how many were not logged since */
	char failure[256];
	uint64_t failure_logged_ms, failures_unlogged;
};

/* A failed round trip: logged when it is new or changed, otherwise once every FAIL_LOG_MS with a count. */
static void failed(struct lock_redis *r, const char *why)
{
	uint64_t now = clock_ms();

	if (strcmp(r->failure, why) == 0 && now - r->failure_logged_ms < FAIL_LOG_MS) {
		r->failures_unlogged++;
		return;
	}
	log_warn("op=ha_lock backend=redis addr=%s:%d state=failing err=\"%s\" failures_since_last_line=%llu "
	         "note=\"no leader can be elected through this lock until it answers\"",
	         r->host, r->port, why, (unsigned long long)r->failures_unlogged);
	snprintf(r->failure, sizeof(r->failure), "%s", why);
	r->failure_logged_ms = now;
	r->failures_unlogged = 0;
}

static void answered(struct lock_redis *r)
{
	if (!r->failure[0])
		return;
	log_info("op=ha_lock backend=redis addr=%s:%d state=ok after=\"%s\"", r->host, r->port, r->failure);
	r->failure[0] = '\0';
}

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
		failed(r, r->c->errstr);
		drop(r);
	} else if (rep->type == REDIS_REPLY_ERROR) { /* NOAUTH, WRONGPASS, a read-only replica, ...: never a holder */
		failed(r, rep->str);
		freeReplyObject(rep);
		rep = NULL;
	}
	return rep;
}

/* One command whose reply only matters for being no error (cmd logged any). */
static bool reply_ok(redisReply *rep)
{
	if (rep)
		freeReplyObject(rep);
	return rep != NULL;
}

static int connect_redis(struct lock_redis *r)
{
	struct timeval tv = tv_of(r->timeout_ms);

	if (r->c)
		return 0;
	r->c = redisConnectWithTimeout(r->host, r->port, tv);
	if (!r->c || r->c->err) {
		failed(r, r->c ? r->c->errstr : "out of memory");
		drop(r);
		return MMC_ERROR;
	}
	redisSetTimeout(r->c, tv);
	if (r->password[0] &&
	    !reply_ok(r->user[0] ? cmd(r, "AUTH %s %s", r->user, r->password) : cmd(r, "AUTH %s", r->password)))
		goto fail;
	if (r->db && !reply_ok(cmd(r, "SELECT %d", r->db)))
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
	answered(r);
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
		answered(r);
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
	reply_ok(cmd(r, "EVAL %s 1 %s %s", release_lua, LOCK_KEY, val));
}

static void redis_close(struct ha_lock *l)
{
	struct lock_redis *r = (struct lock_redis *)l;

	drop(r);
	explicit_bzero(r->password, sizeof(r->password));
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

		r->lone_token = !c;
		if (!c) /* a lone token: the password, as the reference reads it (password_file: the user) */
			c = p - 1;
		if ((size_t)(c - p + 1) > sizeof(r->user) || (size_t)(at - c - 1) >= sizeof(r->password))
			return -1;
		if (c >= p)
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
	return r->port > 0 && r->port < 65536 && r->db >= 0 ? 0 : MMC_ERROR;
}

/* A password file's password; with one, a lone token in the URI is the user, and a password in it is refused. */
static int read_password(struct lock_redis *r, const char *password_file, char *err, size_t errlen)
{
	if (!password_file || !password_file[0])
		return 0;
	if (!r->lone_token && r->password[0]) {
		snprintf(err, errlen,
		         "kvcm.distributed_lock.uri holds a password and %s is set: keep it in the file only",
		         PASSWORD_KEY);
		return MMC_INVALID_PARAM;
	}
	if (r->lone_token) {
		size_t n = strlen(r->password);

		if (n >= sizeof(r->user)) {
			snprintf(err, errlen, "the user name in kvcm.distributed_lock.uri is longer than %zu bytes",
			         sizeof(r->user) - 1);
			return MMC_INVALID_PARAM;
		}
		memcpy(r->user, r->password, n + 1);
		explicit_bzero(r->password, sizeof(r->password));
	}
	return secret_file_read(PASSWORD_KEY, password_file, r->password, sizeof(r->password), err, errlen);
}

/* parse_uri and the password file, with the message an operator reads (the URI's password masked). */
static int parse_checked(struct lock_redis *r, const char *uri, const char *password_file, char *err, size_t errlen)
{
	if (!uri_userinfo_maskable(uri)) {
		snprintf(err, errlen,
		         "bad kvcm.distributed_lock.uri (not shown): its user or password holds a blank or a quote, "
		         "which a log could not mask; keep the password in %s",
		         PASSWORD_KEY);
		return MMC_INVALID_PARAM;
	}
	if (parse_uri(r, uri) == 0)
		return read_password(r, password_file, err, errlen);
	return ha_lock_bad_uri(uri, "redis://[user:password@]host:port[/db]", err, errlen);
}

int ha_lock_redis_check(const char *uri, const char *password_file, char *err, size_t errlen)
{
	struct lock_redis r = {0};
	int rc = parse_checked(&r, uri, password_file, err, errlen);

	explicit_bzero(&r, sizeof(r));
	return rc;
}

int ha_lock_redis_open(struct ha_lock **out, const char *uri, const char *password_file, uint32_t timeout_ms, char *err,
                       size_t errlen)
{
	struct lock_redis *r = calloc(1, sizeof(*r));

	if (!r)
		return MMC_MALLOC_FAILED;
	r->base.ops = &redis_ops;
	r->base.redis_key = LOCK_KEY;
	r->timeout_ms = timeout_ms ? timeout_ms : 500;
	if (parse_checked(r, uri, password_file, err, errlen)) {
		explicit_bzero(r, sizeof(*r));
		free(r);
		return MMC_INVALID_PARAM;
	}
	*out = &r->base;
	return 0;
}
