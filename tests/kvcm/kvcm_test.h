/* Shared fixture of the KVCM test files: one fresh server per test. */
#ifndef MMC_TEST_KVCM_TEST_H
#define MMC_TEST_KVCM_TEST_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "kvcm_client.h"

extern struct kvcm_srv srv;

/* Starts srv with extra --env entries (NULL-terminated) and registers nothing. */
void srv_up(const char *const *extra);
void srv_down(void);
/* The value of an unlabelled metric on srv's /metrics page, -1 when absent. */
long srv_metric(const char *name);

/* The --env entry that turns on the debug service (fault injection, the logical clock). */
#define DEBUG_SERVICE "kvcm.service.enable_debug_service=true"

/*
 * The server's logical clock, through the debug service's debugClock (srv must run with DEBUG_SERVICE). Freezing
 * stops it for the rest of the process; advancing moves it and runs the server's deadline sweeps before replying,
 * so a test moves time past a timeout instead of sleeping through it. Both return the server's logical time (ms).
 */
uint64_t srv_clock_freeze(void);
uint64_t srv_clock_advance(uint64_t ms);

/*
 * How many poll_pause()s a test waits for something asynchronous (an I/O thread's delete, a background scan) before
 * it gives up: 10 s, a guard against a hang and never the thing tested.
 */
#define POLL_CAP 1000
void poll_pause(void);
/* Polls until pending_deletes is 0 (every delete submitted so far has finished); false at the cap. */
bool srv_deletes_done(void);

#define CALL(api, ...)  hc_call(&srv.meta, api, __VA_ARGS__)
#define ADMIN(api, ...) hc_call(&srv.admin, api, __VA_ARGS__)

/* Asserts the reply's code and frees it. */
#define EXPECT_CODE(reply, want)                                                                                       \
	do {                                                                                                           \
		json_t *r_ = (reply);                                                                                  \
		cr_expect(r_ != NULL, "no JSON reply (HTTP error) where %s was expected", want);                       \
		cr_expect_str_eq(code_of(r_), want, "got %s: %s", code_of(r_), message_of(r_));                        \
		json_decref(r_);                                                                                       \
	} while (0)

static inline json_t *jpath(json_t *j, const char *a)
{
	return json_object_get(j, a);
}

#endif
