/*
 * ock.mmc.client.verify_checksum end to end: a byte damaged in a local service's pool is reported as
 * MMC_CHECKSUM_MISMATCH by every get form (RMA and memcpy, registered and unregistered buffers, batches, layers,
 * after a meta server restart and after the SSD tier), while a store without the option gets the damaged bytes
 * with MMC_OK — the check is what catches it.
 *
 * The damage is done the way a bug would do it: by writing into the pool's memory. That takes the store's private
 * side (lib/store.h), so this test links libmmc's internal static library instead of libmmc.so; everything else
 * goes through the public API. There is deliberately no API to damage an object.
 */
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "store.h"
#include "store_fixture.h"

#define POOL (32u << 20)

static struct metaserver meta;
static mmc_store *svc;   /* the local service holding every object; verify on */
static mmc_store *rd;    /* client only, so its bytes cross the fabric; verify on */
static mmc_store *plain; /* client only, verify off */

static mmc_store *checked_store(bool lend, bool verify)
{
	mmc_local_config c = fixture_config(meta.url, POOL);
	mmc_store *s = mmc_create();

	c.verify_checksum = verify;
	if (lend) {
		snprintf(c.ssd_path, sizeof(c.ssd_path), "%s/ssd.bin", meta.dir);
		c.ssd_size = POOL;
	}
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, lend), 0);
	return s;
}

static void start(void)
{
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	svc = checked_store(true, true);
	rd = checked_store(false, true);
	plain = checked_store(false, false);
}

static void stop(void)
{
	mmc_destroy(plain);
	mmc_destroy(rd);
	mmc_destroy(svc);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(checksum, .init = start, .fini = stop, .timeout = 120);

/* The test hook: flips one bit of byte `at` of key's only replica, in svc's pool. */
static void corrupt(const char *key, uint64_t at)
{
	mmc_key_info info;

	cr_assert_eq(mmc_get_key_info(svc, key, 0, &info), 0);
	cr_assert_eq(info.blob_num, 1, "%s", key);
	cr_assert_eq(info.loc[0], fixture_rank(svc), "%s is not in svc's pool", key);
	cr_assert_eq(info.type[0], MMC_MEDIA_DRAM, "%s", key);
	cr_assert_lt(at, info.size);
	((volatile unsigned char *)svc->pool.base)[mmc_gva_offset(info.gva[0]) + at] ^= 0x20;
}

Test(checksum, a_damaged_byte_is_an_error_never_mmc_ok)
{
	const size_t size = 100003;

	fixture_put(rd, "k", size, 1);
	cr_assert_eq(fixture_get(rd, "k", size, 1), 0, "intact bytes pass the check");
	corrupt("k", 4321);
	cr_assert_eq(fixture_get(rd, "k", size, 1), MMC_CHECKSUM_MISMATCH, "RMA read");
	cr_assert_eq(fixture_get(svc, "k", size, 1), MMC_CHECKSUM_MISMATCH, "memcpy from the own pool");
	cr_assert_eq(fixture_get(plain, "k", size, 1), 99, "without the option the damage comes back as MMC_OK");
	cr_assert_eq(mmc_is_exist(rd, "k"), 1, "a mismatch reports, it does not remove");
	cr_assert_str_neq(mmc_strerror(MMC_CHECKSUM_MISMATCH), "unknown error");
}

Test(checksum, own_pool_writer_and_reader)
{
	const size_t size = 65536;

	fixture_put(svc, "own", size, 2); /* a single put prefers the own pool: memcpy, no fabric */
	cr_assert_eq(fixture_get(svc, "own", size, 2), 0);
	cr_assert_eq(fixture_get(rd, "own", size, 2), 0);
	corrupt("own", size - 1);
	cr_assert_eq(fixture_get(svc, "own", size, 2), MMC_CHECKSUM_MISMATCH);
	cr_assert_eq(fixture_get(rd, "own", size, 2), MMC_CHECKSUM_MISMATCH);
}

/* Zero-copy from and into registered memory, and the unregistered path, on both sides. */
Test(checksum, registered_and_unregistered_buffers)
{
	const size_t size = 1u << 20;
	char *src = malloc(size), *dst = malloc(size);

	pattern_fill(src, size, 3);
	cr_assert_eq(mmc_register_buffer(rd, src, size), 0);
	cr_assert_eq(mmc_register_buffer(rd, dst, size), 0);
	cr_assert_eq(mmc_put_from(rd, "reg", src, size, MMC_COPY_H2G, NULL), 0);
	fixture_put(rd, "unreg", size, 3);
	cr_assert_eq(mmc_get_into(rd, "unreg", dst, size, MMC_COPY_G2H), 0);
	cr_assert_eq(fixture_get(rd, "reg", size, 3), 0);
	corrupt("reg", 0);
	corrupt("unreg", size / 2);
	cr_assert_eq(mmc_get_into(rd, "reg", dst, size, MMC_COPY_G2H), MMC_CHECKSUM_MISMATCH, "zero-copy");
	cr_assert_eq(mmc_get_into(rd, "unreg", dst, size, MMC_COPY_G2H), MMC_CHECKSUM_MISMATCH, "zero-copy");
	cr_assert_eq(fixture_get(rd, "reg", size, 3), MMC_CHECKSUM_MISMATCH, "unregistered");
	cr_assert_eq(fixture_get(rd, "unreg", size, 3), MMC_CHECKSUM_MISMATCH, "unregistered");
	cr_assert_eq(mmc_unregister_buffer(rd, src, size), 0);
	cr_assert_eq(mmc_unregister_buffer(rd, dst, size), 0);
	free(src);
	free(dst);
}

Test(checksum, a_batch_reports_only_the_damaged_key)
{
	enum { N = 8 };
	char keys[N][16], *bufs[N];
	const char *kp[N];
	size_t sizes[N];
	int res[N];

	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "b%d", i);
		kp[i] = keys[i];
		sizes[i] = 4096 * (size_t)(i + 1) + (size_t)i;
		bufs[i] = malloc(sizes[i]);
		pattern_fill(bufs[i], sizes[i], 10 + (uint64_t)i);
	}
	cr_assert_eq(mmc_batch_put_from(rd, kp, (const void *const *)bufs, sizes, N, MMC_COPY_H2G, NULL, res), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(res[i], 0);
	corrupt("b5", 17);
	for (int i = 0; i < N; i++)
		memset(bufs[i], 0, sizes[i]);
	cr_assert_eq(mmc_batch_get_into(rd, kp, (void *const *)bufs, sizes, N, MMC_COPY_G2H, res), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(res[i], i == 5 ? MMC_CHECKSUM_MISMATCH : 0, "key %d", i);
		if (i != 5)
			cr_assert_eq(pattern_check(bufs[i], sizes[i], 10 + (uint64_t)i), sizes[i]);
	}
	cr_assert_eq(mmc_batch_get_into(plain, kp, (void *const *)bufs, sizes, N, MMC_COPY_G2H, res), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(res[i], 0, "unverified: key %d", i);
	cr_assert_neq(pattern_check(bufs[5], sizes[5], 15), sizes[5], "the damaged bytes came back");
	for (int i = 0; i < N; i++)
		free(bufs[i]);
}

/* The checksum covers the object (layers concatenated in order), so a get may split it differently. */
Test(checksum, layers_are_checked_as_one_object)
{
	static const size_t put_split[] = {1000, 65536, 7, 30000}, get_split[] = {40000, 56543};
	const size_t total = 1000 + 65536 + 7 + 30000;
	char *obj = malloc(total), *back = calloc(1, total);
	const void *pb[4];
	void *gb[2] = {back, back + get_split[0]};
	size_t at = 0;

	pattern_fill(obj, total, 4);
	for (int l = 0; l < 4; at += put_split[l++])
		pb[l] = obj + at;
	cr_assert_eq(mmc_put_from_layers(rd, "lay", pb, put_split, 4, MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_into_layers(rd, "lay", gb, get_split, 2, MMC_COPY_G2H), 0);
	cr_assert_eq(memcmp(obj, back, total), 0);
	cr_assert_eq(fixture_get(rd, "lay", total, 4), 0, "one flat buffer");
	corrupt("lay", 1000 + 65536 + 3); /* inside the 7-byte layer */
	cr_assert_eq(mmc_get_into_layers(rd, "lay", gb, get_split, 2, MMC_COPY_G2H), MMC_CHECKSUM_MISMATCH);
	cr_assert_eq(fixture_get(rd, "lay", total, 4), MMC_CHECKSUM_MISMATCH);
	free(obj);
	free(back);
}

Test(checksum, batch_layers)
{
	enum { N = 3, L = 3, PIECE = 20000 };
	static char src[N][L][PIECE], dst[N][L][PIECE];
	const char *keys[N] = {"bl0", "bl1", "bl2"};
	const void *sp[N][L];
	void *dp[N][L];
	const void *const *spp[N];
	void *const *dpp[N];
	size_t psz[L] = {PIECE, PIECE, PIECE}, layers[N] = {L, L, L};
	const size_t *szp[N] = {psz, psz, psz};
	int res[N];

	for (int i = 0; i < N; i++) {
		pattern_fill(src[i], sizeof(src[i]), 20 + (uint64_t)i);
		for (int l = 0; l < L; l++) {
			sp[i][l] = src[i][l];
			dp[i][l] = dst[i][l];
		}
		spp[i] = sp[i];
		dpp[i] = dp[i];
	}
	cr_assert_eq(mmc_batch_put_from_layers(rd, keys, spp, szp, layers, N, MMC_COPY_H2G, NULL, res), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(res[i], 0);
	corrupt("bl1", 2 * PIECE + 5);
	cr_assert_eq(mmc_batch_get_into_layers(rd, keys, dpp, szp, layers, N, MMC_COPY_G2H, res), 0);
	cr_assert_eq(res[0], 0);
	cr_assert_eq(res[1], MMC_CHECKSUM_MISMATCH);
	cr_assert_eq(res[2], 0);
	cr_assert_eq(memcmp(src[2], dst[2], sizeof(src[2])), 0);
}

Test(checksum, objects_written_without_one_are_read_unverified)
{
	fixture_put(plain, "nosum", 8192, 5);
	cr_assert_eq(fixture_get(rd, "nosum", 8192, 5), 0);
	corrupt("nosum", 100);
	cr_assert_eq(fixture_get(rd, "nosum", 8192, 5), 99, "nothing to check against: MMC_OK with the damaged bytes");
}

/* The GVA flow carries no checksum (documented): its objects read unverified by get_into. */
Test(checksum, gva_objects_carry_none)
{
	const char *key = "gva";
	size_t size = 8192;
	mmc_gva gva, g;
	char *buf = malloc(size);
	int32_t ok = 0;
	int res;

	pattern_fill(buf, size, 6);
	cr_assert_eq(mmc_batch_malloc(rd, &key, &size, 1, MMC_MEDIA_DRAM, 0, &gva), 0);
	cr_assert_neq(gva, 0);
	g = gva;
	cr_assert_eq(mmc_batch_copy(rd, &g, (void *const *)&buf, &size, 1, MMC_COPY_H2G, 0), 0);
	cr_assert_eq(mmc_batch_write_finish(rd, &key, &ok, 1, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(fixture_get(rd, key, size, 6), 0);
	corrupt(key, 1);
	cr_assert_eq(fixture_get(rd, key, size, 6), 99);
	free(buf);
}

/* The record keeps the checksum (version 2); an object without one keeps a version-1 record. */
Test(checksum, survives_a_meta_server_restart)
{
	int rc;

	fixture_put(rd, "durable", 50000, 7);
	fixture_put(plain, "durable-nosum", 50000, 8);
	cr_assert_eq(metaserver_stop(&meta), 0);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	for (int i = 0; i < 200 && mmc_is_exist(rd, "durable") != 1; i++)
		usleep(50000); /* svc re-registers; its objects are readable again */
	rc = fixture_get(rd, "durable", 50000, 7);
	cr_assert_eq(rc, 0, "get after the restart: %d (%s)", rc, mmc_strerror(rc));
	rc = fixture_get(rd, "durable-nosum", 50000, 8);
	cr_assert_eq(rc, 0, "get after the restart: %d (%s)", rc, mmc_strerror(rc));
	corrupt("durable", 49999);
	corrupt("durable-nosum", 49999);
	cr_assert_eq(fixture_get(rd, "durable", 50000, 7), MMC_CHECKSUM_MISMATCH);
	cr_assert_eq(fixture_get(rd, "durable-nosum", 50000, 8), 99);
}

/* Demoted to SSD and rewarmed by a get: the bytes moved twice and the checksum still holds them. */
Test(checksum, survives_the_ssd_tier)
{
	const char *key = "tier";
	mmc_key_info info;

	fixture_put(rd, key, 300000, 9);
	cr_assert_eq(mmc_evict_keys(rd, &key, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	cr_assert_eq(mmc_get_key_info(rd, key, 0, &info), 0);
	cr_assert_eq(info.type[0], MMC_MEDIA_SSD);
	cr_assert_eq(fixture_get(rd, key, 300000, 9), 0, "read back from SSD, verified");
	corrupt(key, 123456); /* the rewarmed DRAM copy */
	cr_assert_eq(fixture_get(rd, key, 300000, 9), MMC_CHECKSUM_MISMATCH);
}
