/* In-process fixtures: a metaserver and several stores in this process, each its own local service. */
#ifndef MMC_TEST_STORE_FIXTURE_H
#define MMC_TEST_STORE_FIXTURE_H

#include <criterion/criterion.h>
#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>

#include "pattern.h"
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

/* Puts size bytes of pattern seed under key; fails the test unless MMC_OK. */
static inline void fixture_put(mmc_store *s, const char *key, size_t size, uint64_t seed)
{
	void *buf = malloc(size);

	cr_assert_not_null(buf);
	pattern_fill(buf, size, seed);
	cr_assert_eq(mmc_put_from(s, key, buf, size, MMC_COPY_H2G, NULL), 0, "put %s", key);
	free(buf);
}

/* The get's code; 99 for MMC_OK with bytes that are not pattern seed. */
static inline int fixture_get(mmc_store *s, const char *key, size_t size, uint64_t seed)
{
	void *buf = calloc(1, size);
	int rc;

	cr_assert_not_null(buf);
	rc = mmc_get_into(s, key, buf, size, MMC_COPY_G2H);
	if (rc == 0 && pattern_check(buf, size, seed) != size)
		rc = 99;
	free(buf);
	return rc;
}

#endif
