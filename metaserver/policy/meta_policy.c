#include "meta_policy.h"

#include <event2/event.h>

#include "tier.h"

/* Wakes the waiters only when there are some: most frees have nobody to wake. */
static void space_freed(struct meta *m)
{
	struct meta_policy *p = m->policy;

	if ((!list_empty(&p->parked) || !list_empty(&p->read_waits)) && p->kick_ev)
		event_active(p->kick_ev, 0, 0);
}

void policy_init(struct meta *m, struct meta_policy *p, const struct policy_ops *ops)
{
	m->policy = p;
	p->ops = ops;
	list_init(&p->parked);
	m->space_freed = space_freed;
	tier_init(m);
}
