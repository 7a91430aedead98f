#include "elector.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mmc/mmc.h"
#include "quiet_thread.h"

struct ha {
	struct ha_lock *lock;
	struct ha_holder self;
	uint32_t lease_ms, interval_ms, margin_ms;
	_Atomic uint64_t valid_until_ns; /* CLOCK_MONOTONIC: the fence; 0 while not leading */

	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	bool stop, holds, demote_req;
	/* this process loaded state to lead (ha_mark_loaded) and lost its lease since: it restarts as a standby
	 * (leadership.c), and never leads again as it is, whose state may be out of date (someone may have led in
	 * between) */
	bool retired;
	_Atomic bool loaded;
	struct ha_holder leader;
	int64_t self_expiry_wall_ms, last_loop_wall_ms, info_updated_wall_ms, campaign_after_wall_ms;
	uint32_t campaign_delay_ms;
	uint64_t transitions;

	/* loop thread */
	int efd;
	struct event *ev;
	void (*on_change)(void *arg);
	void *arg;
	bool serving;
};

static void notify(struct ha *h)
{
	uint64_t one = 1;

	if (write(h->efd, &one, sizeof(one)) < 0)
		log_error("op=ha_notify err=\"%s\"", strerror(errno));
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ha *h = arg;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_error("op=ha_notify err=\"%s\"", strerror(errno));
	h->on_change(h->arg);
}

/* mu held. The leader seen changed (or who it is became known): info_updated_time moves. */
static void see_leader(struct ha *h, const struct ha_holder *cur)
{
	if (strcmp(h->leader.node_id, cur->node_id) != 0)
		h->info_updated_wall_ms = ha_wall_ms();
	h->leader = *cur;
}

/* mu held. The lease is gone (lost, lapsed, or given up): the fence closes first, then the loop hears of it. */
static void lose(struct ha *h, const char *why)
{
	atomic_store(&h->valid_until_ns, 0);
	if (!h->holds)
		return;
	h->holds = false;
	h->retired = atomic_load(&h->loaded);
	h->self_expiry_wall_ms = 0;
	h->transitions++;
	log_warn("op=ha_demote node=\"%s\" reason=%s", h->self.node_id, why);
	notify(h);
}

static void won(struct ha *h, const struct ha_holder *cur, uint64_t sent_ns)
{
	atomic_store(&h->valid_until_ns, sent_ns + (uint64_t)(h->lease_ms - h->margin_ms) * 1000000u);
	h->self_expiry_wall_ms = cur->expiry_wall_ms;
	see_leader(h, cur);
	if (h->holds)
		return;
	h->holds = true;
	h->transitions++;
	log_info("op=ha_elected node=\"%s\" lease_ms=%u", h->self.node_id, h->lease_ms);
	notify(h);
}

/* mu held. A lease is lost when renewals stall for lease - margin: say so while one merely runs slow. */
static void slow_turn(const struct ha *h, int rc, uint64_t took_ns)
{
	if (h->holds && took_ns > (uint64_t)h->lease_ms * 1000000u / 4)
		log_warn("op=ha_renew slow_ms=%llu lease_ms=%u result=%d (the lock store answers slowly)",
		         (unsigned long long)(took_ns / 1000000u), h->lease_ms, rc);
}

/* One turn of the elector: take or renew the lease, or learn who holds it. mu held on entry and exit; dropped
 * around the lock store's round trips. */
static void step(struct ha *h)
{
	struct ha_holder cur;
	uint64_t sent_ns = clock_ns();
	int64_t now = ha_wall_ms();
	bool campaign = h->holds || (!h->retired && now >= h->campaign_after_wall_ms);
	int rc;

	h->last_loop_wall_ms = now;
	/* a lease that ran out is lost even if nobody took it: someone may have led and left in between, so a node
	 * that lapsed reloads before it leads again */
	if (h->holds && sent_ns >= atomic_load(&h->valid_until_ns)) {
		lose(h, "lease_lapsed");
		campaign = false;
	}
	pthread_mutex_unlock(&h->mu);
	rc = campaign ? h->lock->ops->acquire(h->lock, &h->self, h->lease_ms, &cur) : h->lock->ops->peek(h->lock, &cur);
	pthread_mutex_lock(&h->mu);
	slow_turn(h, rc, clock_ns() - sent_ns);
	if (h->demote_req)
		return; /* handled by the caller before the next turn */
	if (rc == 1 && clock_ns() - sent_ns < (uint64_t)(h->lease_ms - h->margin_ms) * 1000000u)
		won(h, &cur, sent_ns);
	else if (rc == 1) /* the answer came too late to trust: give it back and try again */
		h->lock->ops->release(h->lock, &h->self);
	else if (rc == 0 && h->holds)
		lose(h, "lock_taken");
	if (rc == 0)
		see_leader(h, &cur);
	else if (rc < 0 && !h->holds && h->leader.expiry_wall_ms && h->leader.expiry_wall_ms <= now)
		memset(&h->leader, 0, sizeof(h->leader)); /* the lock store is unreachable: nobody is known to lead */
}

/* After a demotion this node stays out for campaign_delay_ms, and in any case for a few loops: a standby asks every
 * loop interval, and a demotion that the demoted node itself wins back hands nothing over. */
static uint32_t stay_out_ms(const struct ha *h)
{
	return h->campaign_delay_ms > 3 * h->interval_ms ? h->campaign_delay_ms : 3 * h->interval_ms;
}

static void give_up(struct ha *h)
{
	h->demote_req = false;
	lose(h, "demote");
	pthread_mutex_unlock(&h->mu);
	h->lock->ops->release(h->lock, &h->self);
	pthread_mutex_lock(&h->mu);
	if (strcmp(h->leader.node_id, h->self.node_id) == 0)
		memset(&h->leader, 0, sizeof(h->leader));
}

static void *elector_main(void *arg)
{
	struct ha *h = arg;

	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		struct timespec dl;

		if (h->demote_req)
			give_up(h);
		step(h);
		if (h->demote_req || h->stop)
			continue;
		dl = clock_deadline(h->interval_ms);
		pthread_cond_timedwait(&h->cv, &h->mu, &dl);
	}
	if (h->holds || atomic_load(&h->valid_until_ns)) {
		lose(h, "shutdown");
		pthread_mutex_unlock(&h->mu);
		h->lock->ops->release(h->lock, &h->self);
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

int ha_check(const struct ha_opts *o, char *err, size_t errlen)
{
	if (o->loop_interval_ms * 3 >= o->lease_ms) {
		snprintf(
		    err, errlen,
		    "kvcm.leader_elector.loop_interval_ms (%u) must be below a third of kvcm.leader_elector.lease_ms "
		    "(%u)",
		    o->loop_interval_ms, o->lease_ms);
		return MMC_INVALID_PARAM;
	}
	return ha_lock_check(o->lock_uri, o->lock_password_file, err, errlen);
}

/* len - 1 random hex digits: this process's part of its lock value (struct ha_holder's token). */
static void new_token(char *out, size_t len)
{
	unsigned char b[32];
	size_t n = (len - 1) / 2 < sizeof(b) ? (len - 1) / 2 : sizeof(b);

	if (getrandom(b, n, 0) != (ssize_t)n)
		for (size_t i = 0; i < n; i++)
			b[i] = (unsigned char)(clock_ns() >> (i % 8 * 8) ^ (uint64_t)getpid() >> (i % 4 * 8));
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int ha_open(struct ha **out, struct event_base *base, const struct ha_opts *o, void (*on_change)(void *arg), void *arg,
            char *err, size_t errlen)
{
	struct ha *h;
	int rc;

	if ((rc = ha_check(o, err, errlen)))
		return rc;
	h = calloc(1, sizeof(*h));
	if (!h)
		return MMC_MALLOC_FAILED;
	h->lease_ms = o->lease_ms;
	h->interval_ms = o->loop_interval_ms;
	h->margin_ms = o->lease_ms / 5 > 2 * o->loop_interval_ms ? o->lease_ms / 5 : 2 * o->loop_interval_ms;
	h->campaign_delay_ms = o->campaign_delay_ms;
	h->campaign_after_wall_ms = o->campaign_after_wall_ms;
	h->on_change = on_change;
	h->arg = arg;
	new_token(h->self.token, sizeof(h->self.token));
	pthread_mutex_init(&h->mu, NULL);
	clock_cond_init(&h->cv);
	h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rc = ha_lock_open(&h->lock, o->lock_uri, o->lock_password_file, o->lease_ms / 5, err, errlen);
	if (rc == 0 && (h->efd < 0 || !(h->ev = event_new(base, h->efd, EV_READ | EV_PERSIST, wake_cb, h)) ||
	                event_add(h->ev, NULL))) {
		snprintf(err, errlen, "cannot start the leader elector");
		rc = MMC_ERROR;
	}
	if (rc) {
		ha_close(h);
		return rc;
	}
	*out = h;
	return 0;
}

void ha_set_self(struct ha *h, const struct ha_holder *self)
{
	char token[sizeof(h->self.token)];

	pthread_mutex_lock(&h->mu);
	memcpy(token, h->self.token, sizeof(token));
	h->self = *self;
	memcpy(h->self.token, token, sizeof(token));
	pthread_mutex_unlock(&h->mu);
}

int ha_start(struct ha *h)
{
	int rc = quiet_thread_create(&h->thread, elector_main, h);

	h->started = rc == 0;
	return rc ? MMC_ERROR : 0;
}

void ha_close(struct ha *h)
{
	if (!h)
		return;
	if (h->started) {
		pthread_mutex_lock(&h->mu);
		h->stop = true;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->thread, NULL);
	}
	if (h->ev)
		event_free(h->ev);
	if (h->efd >= 0)
		close(h->efd);
	if (h->lock)
		h->lock->ops->close(h->lock);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

bool ha_lease_valid(const struct ha *h)
{
	return clock_ns() < atomic_load(&((struct ha *)h)->valid_until_ns);
}

bool ha_fence(void *h)
{
	return ha_lease_valid(h);
}

/* The fields under mu, read by the loop: one copy under the lock. */
static struct ha_view {
	bool holds;
	int64_t self_expiry, last_loop, info_updated;
	uint64_t transitions;
	uint32_t campaign_delay;
} view(const struct ha *ch)
{
	struct ha *h = (struct ha *)ch;
	struct ha_view v;

	pthread_mutex_lock(&h->mu);
	v = (struct ha_view){h->holds,
	                     h->holds ? h->self_expiry_wall_ms : 0,
	                     h->last_loop_wall_ms,
	                     h->info_updated_wall_ms,
	                     h->transitions,
	                     h->campaign_delay_ms};
	pthread_mutex_unlock(&h->mu);
	return v;
}

bool ha_holds(const struct ha *h)
{
	return view(h).holds;
}

bool ha_serving(const struct ha *h)
{
	/* the lease too: a leader resumed from a pause answers as a standby before its elector has even noticed */
	return h->serving && ha_lease_valid(h);
}

void ha_mark_loaded(struct ha *h)
{
	atomic_store(&h->loaded, true);
}

void ha_set_serving(struct ha *h, bool on)
{
	h->serving = on;
}

void ha_leader(const struct ha *h, struct ha_holder *out)
{
	pthread_mutex_lock(&((struct ha *)h)->mu);
	*out = h->leader;
	pthread_mutex_unlock(&((struct ha *)h)->mu);
}

const struct ha_holder *ha_self(const struct ha *h)
{
	return &h->self;
}

int64_t ha_self_expiry_wall_ms(const struct ha *h)
{
	return view(h).self_expiry;
}

int64_t ha_last_loop_wall_ms(const struct ha *h)
{
	return view(h).last_loop;
}

int64_t ha_info_updated_wall_ms(const struct ha *h)
{
	return view(h).info_updated;
}

uint64_t ha_transitions(const struct ha *h)
{
	return view(h).transitions;
}

bool ha_lock_redis_key(const struct ha *h, const char **key, char *value, size_t len)
{
	if (!h->lock->redis_key || ha_lock_redis_value(&h->self, value, len))
		return false;
	*key = h->lock->redis_key;
	return true;
}

void ha_demote(struct ha *h)
{
	pthread_mutex_lock(&h->mu);
	atomic_store(&h->valid_until_ns, 0); /* no commit passes the fence from here on */
	/* the stay-out starts here, not on the elector's next turn: the loop may restart the process first (a lease
	 * change it had not yet heard of), and the new image must stay out as well */
	h->campaign_after_wall_ms = ha_wall_ms() + stay_out_ms(h);
	h->demote_req = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

int64_t ha_campaign_after_wall_ms(const struct ha *h)
{
	struct ha *m = (struct ha *)h;
	int64_t v;

	pthread_mutex_lock(&m->mu);
	v = m->campaign_after_wall_ms;
	pthread_mutex_unlock(&m->mu);
	return v;
}

uint32_t ha_campaign_delay_ms(const struct ha *h)
{
	return view(h).campaign_delay;
}

void ha_set_campaign_delay_ms(struct ha *h, uint32_t ms)
{
	pthread_mutex_lock(&h->mu);
	h->campaign_delay_ms = ms;
	pthread_mutex_unlock(&h->mu);
}

uint32_t ha_lease_ms(const struct ha *h)
{
	return h->lease_ms;
}

uint32_t ha_loop_interval_ms(const struct ha *h)
{
	return h->interval_ms;
}
