#include "fault_injection.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "kvcm_state.h"
#include "wire_enums.h"

/* The reference names APIs by method (RegisterInstance); its HTTP paths are lowerCamel: either matches. */
static struct fault *lookup(struct faults *fs, const char *api)
{
	for (unsigned i = 0; fs && i < fs->n; i++)
		if (strcasecmp(fs->f[i].api, api) == 0)
			return &fs->f[i];
	return NULL;
}

/* ONCE's call number: the decimal suffix of trace_id after its last '_'. */
static bool trace_call(const char *trace, int32_t *out)
{
	const char *s = strrchr(trace, '_');
	char *end;
	long v;

	if (!s || !s[1])
		return false;
	errno = 0;
	v = strtol(s + 1, &end, 10);
	if (*end || errno || v < INT32_MIN || v > INT32_MAX)
		return false;
	*out = (int32_t)v;
	return true;
}

const struct fault *fault_find(struct call *c, const char *api)
{
	const struct fault *f = c->k->conf.debug_service ? lookup(c->k->faults, api) : NULL;
	int32_t n;

	if (!f || !f->once)
		return f;
	return trace_call(call_trace_id(c), &n) && n == f->at_call ? f : NULL;
}

bool fault_check(struct call *c, const char *api)
{
	if (!fault_find(c, api))
		return false;
	call_fail(c, KC_INTERNAL_ERROR, "%s fail due to fault injection", api);
	return true;
}

/* debug_service.proto's enums: as everywhere in this API, an absent or unknown name is the value 0. */
static const int fault_type_v[] = {0};
static const char *const fault_type_n[] = {"FT_INTERNAL_ERROR"};
static const struct enum_desc enum_fault_type = {"FaultType", 1, fault_type_v, fault_type_n};
static const int strategy_v[] = {0, 1};
static const char *const strategy_n[] = {"ALWAYS", "ONCE"};
static const struct enum_desc enum_trigger_strategy = {"FaultTriggerStrategy", 2, strategy_v, strategy_n};

static bool read_strategy(struct call *c, bool *once)
{
	int t = jd_enum(&c->d, c->body, "fault_type", &enum_fault_type);
	int s = jd_enum(&c->d, c->body, "fault_trigger_strategy", &enum_trigger_strategy);

	if (call_decode_failed(c))
		return false;
	if (t != 0) {
		call_fail(c, KC_INVALID_ARGUMENT, "unsupported fault_type %d (only FT_INTERNAL_ERROR, 0)", t);
		return false;
	}
	if (s != 0 && s != 1) {
		call_fail(c, KC_INVALID_ARGUMENT, "fault_trigger_strategy must be ALWAYS or ONCE");
		return false;
	}
	*once = s == 1;
	return true;
}

void admin_inject_fault(struct call *c)
{
	const char *api = jd_str(&c->d, c->body, "api_name");
	int32_t at_call = jd_i32(&c->d, c->body, "trigger_at_call");
	int32_t at_write = jd_i32(&c->d, c->body, "trigger_at_write");
	struct faults *fs = c->k->faults;
	struct fault *f;
	bool once;

	if (!read_strategy(c, &once))
		return;
	if (!fs && !(fs = c->k->faults = calloc(1, sizeof(*fs)))) {
		call_fail(c, KC_INTERNAL_ERROR, "out of memory");
		return;
	}
	if (!api[0] || strlen(api) >= FAULT_NAME_MAX || at_write < 0) {
		call_fail(c, KC_INVALID_ARGUMENT, "missing or invalid fields: {InjectFault: {%s}}",
		          at_write < 0 ? "trigger_at_write" : "api_name");
		return;
	}
	f = lookup(fs, api);
	if (!f && fs->n == FAULTS_MAX) {
		call_fail(c, KC_INVALID_ARGUMENT, "too many faults (limit %d)", FAULTS_MAX);
		return;
	}
	if (!f)
		f = &fs->f[fs->n++];
	memset(f, 0, sizeof(*f));
	strcpy(f->api, api);
	f->once = once;
	f->at_call = at_call;
	f->at_write = at_write;
	call_ok(c, "fault injected");
}

void admin_remove_fault(struct call *c)
{
	const char *api = jd_str(&c->d, c->body, "api_name");
	struct faults *fs = c->k->faults;
	struct fault *f;

	if (call_decode_failed(c))
		return;
	f = lookup(fs, api);
	if (f)
		*f = fs->f[--fs->n];
	call_ok(c, f ? "fault removed" : "no fault on that api");
}

void admin_clear_faults(struct call *c)
{
	faults_free(c->k);
	call_ok(c, "faults cleared");
}

void faults_free(struct kvcm *k)
{
	free(k->faults);
	k->faults = NULL;
}
