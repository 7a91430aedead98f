#include "kvcm_test.h"

#include <stdio.h>
#include <stdlib.h>

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
