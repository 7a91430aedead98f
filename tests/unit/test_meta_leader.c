/* lib/meta_leader.c: the list of meta servers a store may talk to, and how it follows the leader. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "meta_leader.h"
#include "mmc/mmc.h"

static struct meta_leader ml;
static char host[256], err[256];
static uint16_t port;

Test(meta_leader, parses_one_or_several_addresses)
{
	cr_assert_eq(meta_leader_parse(&ml, "tcp://127.0.0.1:5000", host, sizeof(host), &port, err, sizeof(err)), 0);
	cr_expect_eq(ml.n, 1);
	cr_expect_str_eq(host, "127.0.0.1");
	cr_expect_eq(port, 5000);
	cr_assert_eq(meta_leader_parse(&ml, "tcp://h1:5000, tcp://h2:5001,tcp://[::1]:5002", host, sizeof(host), &port,
	                               err, sizeof(err)),
	             0);
	cr_expect_eq(ml.n, 3);
	cr_expect_str_eq(ml.host[1], "h2");
	cr_expect_eq(ml.port[1], 5001);
	cr_expect_str_eq(ml.host[2], "::1"); /* bare, as getaddrinfo takes it */
	cr_expect_str_eq(host, "h1");
}

Test(meta_leader, refuses_bad_lists_naming_the_key)
{
	const char *bad[] = {"",
	                     "tcp://h1:5000,",
	                     "tcp://h1:5000,,tcp://h2:1",
	                     "tcp://h1",
	                     "http://h1:80",
	                     "tcp://h1:0",
	                     "tcp://h1:70000",
	                     "tcp://:5000",
	                     "tcp://h1:50x0"};
	char many[2048] = "";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(meta_leader_parse(&ml, bad[i], host, sizeof(host), &port, err, sizeof(err)),
		             MMC_INVALID_PARAM, "%s", bad[i]);
		cr_expect(strstr(err, "ock.mmc.meta_service_url"), "%s", err);
	}
	for (int i = 0; i <= META_ADDRS_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%stcp://h%d:1", i ? "," : "", i);
	cr_expect_eq(meta_leader_parse(&ml, many, host, sizeof(host), &port, err, sizeof(err)), MMC_INVALID_PARAM);
}

Test(meta_leader, follows_a_hint_then_goes_round_the_list)
{
	const char *h;
	uint16_t p;

	cr_assert_eq(
	    meta_leader_parse(&ml, "tcp://a:1,tcp://b:2,tcp://c:3", host, sizeof(host), &port, err, sizeof(err)), 0);
	meta_leader_target(&ml, &h, &p);
	cr_expect_str_eq(h, "a");
	meta_leader_redirect(&ml, "tcp://c:3"); /* a standby names c */
	meta_leader_target(&ml, &h, &p);
	cr_expect_str_eq(h, "c");
	cr_expect_eq(p, 3);
	meta_leader_failed(&ml); /* c did not answer: back to the list, where it was */
	meta_leader_target(&ml, &h, &p);
	cr_expect_str_eq(h, "a");
	meta_leader_redirect(&ml, ""); /* a standby that knows no leader: next one */
	meta_leader_target(&ml, &h, &p);
	cr_expect_str_eq(h, "b");
	meta_leader_redirect(&ml, "tcp://b:2"); /* names itself (it is loading): next one */
	meta_leader_target(&ml, &h, &p);
	cr_expect_str_eq(h, "c");
	meta_leader_failed(&ml);
	meta_leader_target(&ml, &h, &p);
	cr_expect_str_eq(h, "a", "round the list");
	cr_expect_geq(meta_leader_attempts(&ml), 3);
}
