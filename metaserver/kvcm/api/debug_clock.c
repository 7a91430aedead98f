/*
 * The debug service's clock (mmc extension, for tests): POST /api/debugClock on the admin port, only when
 * kvcm.service.enable_debug_service is set. {"freeze": true} stops the server's logical clock (clock_ms, which
 * every deadline of the object store and the KVCM reads); {"advance_ms": N} moves a frozen clock forward by N (0
 * too) and runs at once the sweeps that judge deadlines, so that what expired is expired when the reply comes. The
 * clock is process-wide and never runs again once frozen. The reply carries the logical time and whether it is
 * frozen.
 */
#include "api.h"
#include "clock.h"
#include "deleter.h"
#include "kvcm_state.h"
#include "meta.h"
#include "reclaim.h"
#include "reporter.h"
#include "wire_enums.h"
#include "write_session.h"

/* What the sweep timers would do at their next tick, in the order a deadline's effects cascade. */
static void run_sweeps(struct kvcm *k)
{
	if (k->meta && k->meta->sweep)
		k->meta->sweep(k->meta);
	sessions_sweep(k);
	reporters_sweep(k);
	reclaim_run(k);
	deleter_run_due(k);
}

void admin_debug_clock(struct call *c)
{
	bool freeze = jd_bool(&c->d, c->body, "freeze");
	bool move = jd_get(c->body, "advance_ms") != NULL;
	int64_t advance = jd_i64(&c->d, c->body, "advance_ms");

	if (call_decode_failed(c))
		return;
	if (advance < 0) {
		call_fail(c, KC_INVALID_ARGUMENT, "advance_ms must not be negative");
		return;
	}
	if (freeze)
		clock_freeze();
	if (move && !clock_is_frozen()) {
		call_fail(c, KC_INVALID_ARGUMENT, "the clock runs: freeze it before advancing it");
		return;
	}
	if (move) {
		clock_advance_ms((uint64_t)advance);
		run_sweeps(c->k);
	}
	call_ok(c, clock_is_frozen() ? "clock frozen" : "clock running");
	jw_kint(&c->out, "now_ms", (long long)clock_ms());
	jw_kbool(&c->out, "frozen", clock_is_frozen());
}
