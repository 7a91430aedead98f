/*
 * The debug service's fault injection (reference kvcm.md §4.17), on the admin port when
 * kvcm.service.enable_debug_service is set: a named API answers INTERNAL_ERROR "<Api> fail due to fault injection"
 * on every call (ALWAYS) or on the call whose trace_id ends in "_<trigger_at_call>" (ONCE).
 *
 * mmc extension: the fault point FAULT_REPORT_WRITE makes the metadata write of reportEvent block records fail the
 * way a failed LMDB write does, for every record of a triggered request or (trigger_at_write = N > 0) its Nth.
 */
#ifndef MMC_KVCM_FAULT_INJECTION_H
#define MMC_KVCM_FAULT_INJECTION_H

#include <stdbool.h>
#include <stdint.h>

#define FAULTS_MAX         64
#define FAULT_NAME_MAX     64
#define FAULT_REPORT_WRITE "ReportEventMetaWrite"

struct call;
struct kvcm;

struct fault {
	char api[FAULT_NAME_MAX];
	bool once;
	int32_t at_call;  /* ONCE: the trace_id suffix that triggers it */
	int32_t at_write; /* FAULT_REPORT_WRITE: the Nth record write of the request fails; 0: every one */
};

struct faults {
	struct fault f[FAULTS_MAX];
	unsigned n;
};

/* Whether api is faulted for this call; if so the call has been answered INTERNAL_ERROR. */
bool fault_check(struct call *c, const char *api);
/* The fault on api that triggers for this call, or NULL (no answer written). */
const struct fault *fault_find(struct call *c, const char *api);

/* Frees the faults injected so far (shutdown). */
void faults_free(struct kvcm *k);

void admin_inject_fault(struct call *c);
void admin_remove_fault(struct call *c);
void admin_clear_faults(struct call *c);

#endif
