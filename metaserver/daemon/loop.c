#include "loop.h"

#include <event2/event.h>
#include <sched.h>
#include <time.h>

#include "clock.h"
#include "meta.h"
#include "meta_rpc.h"
#include "persist.h"

/* What the loop knows of the requests' pace: when it last saw one come, and the gap before that one. */
struct pace {
	uint64_t seen; /* m->rpc->reads when last looked at */
	uint64_t last_ns, gap_ns;
};

/* True when a request came since the last look. */
static bool came(struct meta *m, struct pace *p)
{
	uint64_t now;

	if (m->rpc->reads == p->seen)
		return false;
	now = clock_ns();
	p->seen = m->rpc->reads;
	p->gap_ns = now - p->last_ns;
	p->last_ns = now;
	return true;
}

static bool stopped(struct meta *m)
{
	return event_base_got_exit(m->base) || event_base_got_break(m->base);
}

/* The loop thread's CPU time: a poll's cost, without the time sched_yield() gave to other threads. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A commit's replies go out from a poll too: such a poll worked, and its time is not polling. */
static uint64_t commits_done(const struct meta *m)
{
	return m->persist ? persist_durable_seq(m->persist) : 0;
}

/*
 * Polls until the next request or until it is late (twice the last gap after the last one). The CPU time of the
 * polls that ran nothing of ours (no request, no commit's replies) goes to m->stats.spin_ns. 1: a request came,
 * 0: late, -1: the loop is to stop.
 */
static int poll_once_due(struct meta *m, struct pace *p, uint64_t spin_ns)
{
	uint64_t until = p->last_ns + (2 * p->gap_ns < spin_ns ? 2 * p->gap_ns : spin_ns), cpu = cpu_ns();

	for (;;) {
		uint64_t done = commits_done(m), now;
		bool idle, late;

		if (event_base_loop(m->base, EVLOOP_NONBLOCK) < 0 || stopped(m))
			return -1;
		if (came(m, p)) {
			m->stats.spin_caught++;
			return 1;
		}
		idle = commits_done(m) == done;
		late = clock_ns() >= until;
		if (!late)
			sched_yield(); /* a thread the loop waits for (the writer, a client on this host) may need the
			                  CPU */
		now = cpu_ns();
		if (idle)
			m->stats.spin_ns += now - cpu;
		cpu = now;
		if (late)
			return 0;
	}
}

void loop_run(struct meta *m, const uint32_t *spin_us)
{
	struct pace p = {.seen = m->rpc->reads, .last_ns = clock_ns(), .gap_ns = UINT64_MAX};

	for (;;) {
		int rc = 1;

		if (event_base_loop(m->base, EVLOOP_ONCE) != 0 || stopped(m))
			return;
		if (!came(m, &p))
			continue;
		while (rc > 0 && p.gap_ns < (uint64_t)*spin_us * 1000)
			rc = poll_once_due(m, &p, (uint64_t)*spin_us * 1000);
		if (rc < 0)
			return;
	}
}
