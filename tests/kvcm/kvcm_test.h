/* Shared fixture of the KVCM test files: one fresh server per test. */
#ifndef MMC_TEST_KVCM_TEST_H
#define MMC_TEST_KVCM_TEST_H

#include <criterion/criterion.h>
#include <string.h>

#include "kvcm_client.h"

extern struct kvcm_srv srv;

/* Starts srv with extra --env entries (NULL-terminated) and registers nothing. */
void srv_up(const char *const *extra);
void srv_down(void);
/* The value of an unlabelled metric on srv's /metrics page, -1 when absent. */
long srv_metric(const char *name);

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
