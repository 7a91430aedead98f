/*
 * The Mooncake master's read-only pages that engines poll, served as text on the admin port (kvcm.service.
 * admin_http_port) under Mooncake's paths. SGLang's Mooncake backend with check_server polls GET /get_all_segments
 * on the master's metrics port until the answer is not empty, before it sets up its store: pointed at this port, it
 * waits the same way for the first local service that lends memory.
 */
#include <event2/buffer.h>

#include "api.h"
#include "kvcm_state.h"
#include "meta.h"

/*
 * One line per attached local service that lends memory, "rank:<rank>@<host>", as Mooncake lists its mounted
 * segments one name a line; nothing when there is none. A standby holds no services: 503 "STANDBY", Mooncake's
 * answer on a follower.
 */
int master_get_all_segments(struct kvcm *k, struct evbuffer *out)
{
	struct meta *m = k->meta;

	if (!k->persist || !m) {
		evbuffer_add_printf(out, "STANDBY");
		return 503;
	}
	for (uint32_t r = 0; r < m->rank_hi; r++) {
		const struct service *svc = m->ranks[r];

		/* detached services wait to rejoin and serve nothing; a service without segments lends nothing */
		if (svc && svc->session && svc->nsegs)
			evbuffer_add_printf(out, "rank:%u@%s\n", svc->rank, svc->host);
	}
	return 200;
}
