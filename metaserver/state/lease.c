#include "lease.h"

#include <string.h>

#include "array.h"
#include "clock.h"
#include "meta.h"

/*
 * Lease records, by index (0: none), with the free ones linked through next: every get takes one and gives it back
 * a moment later, without a malloc/free pair per key. Loop thread only, like the rest of this file.
 */
static struct lease *leases;
static size_t nleases, capleases;
static uint32_t free_leases;
static uint32_t last_gen; /* the newest record's gen */

static uint32_t lease_new(void)
{
	uint32_t i = free_leases;
	void *p;

	if (i) {
		free_leases = leases[i].next;
	} else {
		if (!nleases)
			nleases = 1;
		if (nleases > UINT32_MAX || !(p = array_grow(leases, &capleases, nleases + 1, sizeof(*leases), 256)))
			return 0;
		leases = p;
		i = (uint32_t)nleases++;
	}
	memset(&leases[i], 0, sizeof(leases[i]));
	return i;
}

static void lease_free(uint32_t i)
{
	leases[i].next = free_leases;
	free_leases = i;
}

void leases_free_all(struct object *o)
{
	uint32_t l, next;

	for (l = o->leases; l; l = next) {
		next = leases[l].next;
		lease_free(l);
	}
	o->leases = 0;
}

void leases_fini(void)
{
	free(leases);
	leases = NULL;
	nleases = capleases = 0;
	free_leases = 0;
}

struct lease *lease_find(struct object *o, uint64_t session)
{
	for (uint32_t l = o->leases; l; l = leases[l].next)
		if (leases[l].session == session)
			return &leases[l];
	return NULL;
}

uint64_t lease_ttl_of(const struct meta *m, uint64_t asked_ms)
{
	uint64_t most =
	    m->conf.lease_ttl_max_ms > m->conf.lease_ttl_ms ? m->conf.lease_ttl_max_ms : m->conf.lease_ttl_ms;

	if (asked_ms == 0)
		return m->conf.lease_ttl_ms;
	return asked_ms < most ? asked_ms : most;
}

uint64_t lease_grant(struct meta *m, struct object *o, uint64_t session, uint64_t ttl_ms, bool counted)
{
	struct lease *l = lease_find(o, session);
	uint64_t expiry;

	ttl_ms = lease_ttl_of(m, ttl_ms);
	expiry = clock_ms() + ttl_ms;
	if (!l) {
		uint32_t i = lease_new();

		if (!i)
			return 0;
		l = &leases[i];
		l->session = session;
		l->gen = ++last_gen ? last_gen : ++last_gen;
		l->next = o->leases;
		o->leases = i;
	}
	/* saturates: a count that wrapped to 0 would free the lease under its other reads; a saturated one lasts
	 * until it expires */
	if (!counted)
		l->added = 1;
	else if (l->count < LEASE_COUNT_MAX)
		l->count++;
	if (expiry > l->expiry_ms)
		l->expiry_ms = expiry;
	return ttl_ms;
}

uint32_t lease_gen(struct object *o, uint64_t session)
{
	const struct lease *l = lease_find(o, session);

	return l ? l->gen : 0;
}

bool lease_holds(struct object *o, uint64_t session, bool pin, uint32_t gen)
{
	const struct lease *l = lease_find(o, session);

	return l && (!gen || l->gen == gen) && (pin ? l->added : l->count > 0);
}

bool lease_release(struct meta *m, struct object *o, uint64_t session, bool all, uint32_t gen)
{
	uint32_t *p = &o->leases, l;

	while (*p && leases[*p].session != session)
		p = &leases[*p].next;
	if (!*p || (gen && leases[*p].gen != gen))
		return false;
	l = *p;
	/* all: remove_lease ends the add_lease pin only, never another thread's get */
	if (all ? !leases[l].added : !leases[l].count)
		return false;
	if (all)
		leases[l].added = 0;
	else
		leases[l].count--;
	if (!leases[l].count && !leases[l].added) {
		*p = leases[l].next;
		lease_free(l);
	}
	return true;
}

bool object_leased(struct object *o, uint64_t now_ms)
{
	uint32_t *p = &o->leases;

	while (*p) {
		if (leases[*p].expiry_ms <= now_ms) {
			uint32_t dead = *p;

			*p = leases[dead].next;
			lease_free(dead);
		} else {
			p = &leases[*p].next;
		}
	}
	return o->leases != 0;
}
