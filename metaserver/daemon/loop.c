#include "loop.h"

#include <event2/event.h>
#include <sched.h>

#include "clock.h"
#include "meta.h"
#include "meta_rpc.h"

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

/* Polls until the next request or until it is late (twice the last gap after the last one), adding the time to
 * m->stats.spin_ns as it goes. 1: it came, 0: late, -1: the loop is to stop. */
static int poll_once_due(struct meta *m, struct pace *p, uint64_t spin_ns)
{
	uint64_t until = p->last_ns + (2 * p->gap_ns < spin_ns ? 2 * p->gap_ns : spin_ns), was = clock_ns(), now;

	for (;; was = now) {
		if (event_base_loop(m->base, EVLOOP_NONBLOCK) < 0 || stopped(m))
			return -1;
		if (came(m, p)) {
			m->stats.spin_caught++;
			return 1; /* its handling is not polling: not counted */
		}
		now = clock_ns();
		m->stats.spin_ns += now - was;
		if (now >= until)
			return 0;
		sched_yield(); /* a thread the loop waits for (the writer, a client on this host) may need the CPU */
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
