/* updateStorage (reference kvcm.md §4.16): a storage's config replaced in place. */
#include <stdio.h>

#include "api.h"
#include "kvcm_state.h"
#include "storage.h"
#include "storage_root.h"

void admin_update_storage(struct call *c)
{
	json_t *in = jd_obj(&c->d, c->body, "storage"), *cfg;
	char msg[512];
	int code;

	jd_bool(&c->d, c->body, "force_update"); /* accepted: there is no backend connection to re-open */
	if (call_decode_failed(c))
		return;
	if (!in) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {UpdateStorage: {storage}}");
		return;
	}
	cfg = jd_normalize(&c->d, in, storage_schema);
	if (call_decode_failed(c)) {
		json_decref(cfg);
		return;
	}
	code = KC_OK;
	/* a storage's new root must lie where the operator allows KVCM's writes and deletes, as an add's must (an
	 * unknown name is storage_update's error to report) */
	if (storage_find(c->k, json_string_value(json_object_get(cfg, "global_unique_name"))))
		code = storage_roots_check(c->k, cfg, msg, sizeof(msg));
	if (code == KC_OK)
		code = storage_update(c->k, cfg, msg, sizeof(msg));
	if (code != KC_OK) {
		json_decref(cfg);
		call_fail(c, code, "%s", msg);
		return;
	}
	call_ok(c, "storage updated");
}
