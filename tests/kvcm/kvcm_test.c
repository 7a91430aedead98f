#include "kvcm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct kvcm_srv srv;

void srv_up(const char *const *extra)
{
	cr_assert_eq(kvcm_srv_start(&srv, extra), 0, "mmc-metaserver with KVCM did not start");
}

void srv_down(void)
{
	kvcm_srv_stop(&srv);
}

long srv_metric(const char *name)
{
	char *body = NULL, *p, pat[128];
	long n = -1;

	snprintf(pat, sizeof(pat), "\n%s ", name);
	cr_assert_eq(hc_request(&srv.admin, "GET", "/metrics", NULL, 0, &body), 200);
	p = strstr(body, pat);
	if (p)
		n = strtol(p + strlen(pat), NULL, 10);
	free(body);
	return n;
}

static uint64_t clock_call(const char *body)
{
	json_t *r = ADMIN("debugClock", "%s", body);
	uint64_t now;

	cr_assert(r, "debugClock: no reply (is the debug service on?)");
	cr_assert_str_eq(code_of(r), "OK", "debugClock %s: %s", body, message_of(r));
	cr_assert(json_is_true(jpath(r, "frozen")));
	now = (uint64_t)json_integer_value(jpath(r, "now_ms"));
	json_decref(r);
	return now;
}

uint64_t srv_clock_freeze(void)
{
	return clock_call("{\"freeze\":true}");
}

uint64_t srv_clock_advance(uint64_t ms)
{
	char body[64];

	snprintf(body, sizeof(body), "{\"advance_ms\":%llu}", (unsigned long long)ms);
	return clock_call(body);
}

void poll_pause(void)
{
	usleep(10000);
}

bool srv_deletes_done(void)
{
	for (int i = 0; i < POLL_CAP; i++) {
		if (srv_metric("mmc_kvcm_pending_deletes") == 0)
			return true;
		poll_pause();
	}
	return false;
}
