#include "ha_metrics.h"

#include <event2/buffer.h>
#include <inttypes.h>

#include "elector.h"

void ha_metrics_write(const struct ha *h, struct evbuffer *b)
{
	int64_t age = h ? ha_wall_ms() - ha_last_loop_wall_ms(h) : 0;

	evbuffer_add_printf(
	    b,
	    "# HELP mmc_leader 1 while this server leads and serves, 0 while it stands by.\n"
	    "# TYPE mmc_leader gauge\nmmc_leader %d\n"
	    "# HELP mmc_leader_lease_valid 1 while this server holds an unexpired leader lease.\n"
	    "# TYPE mmc_leader_lease_valid gauge\nmmc_leader_lease_valid %d\n"
	    "# HELP mmc_leader_transitions_total Leases won and lost by this process.\n"
	    "# TYPE mmc_leader_transitions_total counter\nmmc_leader_transitions_total %" PRIu64 "\n"
	    "# HELP mmc_leader_elector_loop_age_seconds Time since the elector last asked the lock.\n"
	    "# TYPE mmc_leader_elector_loop_age_seconds gauge\nmmc_leader_elector_loop_age_seconds %.3f\n",
	    !h || ha_serving(h), !h || ha_lease_valid(h), h ? ha_transitions(h) : 0, age > 0 ? (double)age / 1e3 : 0.0);
}
