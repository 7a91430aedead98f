/* In-process fixtures: a metaserver and several stores in this process, each its own local service. */
#ifndef MMC_TEST_STORE_FIXTURE_H
#define MMC_TEST_STORE_FIXTURE_H

#include <criterion/criterion.h>
#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>

#include "proc.h"

static inline mmc_local_config fixture_config(const char *url, uint64_t pool)
{
	mmc_local_config c = mmc_default_local_config();
	const char *proto = getenv("MMC_PROTOCOL");

	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "%s", url);
	snprintf(c.protocol, sizeof(c.protocol), "%s", proto ? proto : "host_tcp");
	c.dram_size = pool;
	c.retry_ms = 5000;
	c.heartbeat_ms = 100;
	c.rma_timeout_ms = 2000;
	return c;
}

/* A started store (lend: local service with `pool` bytes; else client only). Fails the test on error. */
static inline mmc_store *fixture_store(const char *url, bool lend, uint64_t pool)
{
	mmc_local_config c = fixture_config(url, pool);
	mmc_store *s = mmc_create();

	cr_assert_not_null(s);
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, lend), 0, "mmc_init failed");
	return s;
}

static inline uint32_t fixture_rank(mmc_store *s)
{
	uint32_t id = UINT32_MAX;

	cr_assert_eq(mmc_get_local_service_id(s, &id), 0);
	return id;
}

#endif
