/*
 * reportEvent (reference kvcm.md §6). Not implemented yet: answered UNSUPPORTED after the instance check.
 */
#include "api.h"
#include "codes.h"

void api_report_event(struct call *c)
{
	call_fail(c, KC_UNSUPPORTED, "reportEvent is not implemented by this server yet");
}

void api_report_event_empty(struct jw *w)
{
	jw_key(w, "item_results");
	jw_arr(w);
	jw_arr_end(w);
	jw_kstr(w, "committed_snapshot_version", "");
	jw_ki64s(w, "retry_after_ms", 0);
	jw_kbool(w, "snapshot_required", false);
	jw_kstr(w, "extra_info", "");
}
