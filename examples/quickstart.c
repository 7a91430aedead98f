/*
 * quickstart: one process puts a KV block into the mmc pool, another gets it back.
 *
 *   mmc-quickstart writer [KEY] [BYTES]   lend a pool, put a block, wait until a reader removes it
 *   mmc-quickstart reader [KEY] [BYTES]   get the block, check every byte, remove it
 *
 * The meta server address, protocol and pool size come from MMC_LOCAL_CONFIG_PATH or the defaults
 * (tcp://127.0.0.1:5000, best provider, and a 64 MiB pool: this program's own default, smaller than the library's
 * 1 GiB); MMC_PROTOCOL=host_tcp|host_shm overrides the protocol.
 */
#include <mmc/mmc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The block's content is a function of its key, so the reader can check it without the writer. */
static void fill(unsigned char *buf, size_t len, const char *key)
{
	unsigned long long x = 1469598103934665603ull;

	for (const char *k = key; *k; k++)
		x = (x ^ (unsigned char)*k) * 1099511628211ull;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
}

static mmc_store *open_store(bool lend_pool)
{
	mmc_local_config cfg = mmc_default_local_config();
	const char *proto = getenv("MMC_PROTOCOL");
	mmc_store *s = mmc_create();
	int rc;

	if (!s)
		return NULL;
	if (getenv("MMC_LOCAL_CONFIG_PATH"))
		snprintf(cfg.config_path, sizeof(cfg.config_path), "%s", getenv("MMC_LOCAL_CONFIG_PATH"));
	if (proto)
		snprintf(cfg.protocol, sizeof(cfg.protocol), "%s", proto);
	cfg.dram_size = 64u << 20;
	if ((rc = mmc_setup(s, &cfg)) || (rc = mmc_init(s, 0, lend_pool))) {
		fprintf(stderr, "mmc init failed: %s\n", mmc_strerror(rc));
		mmc_destroy(s);
		return NULL;
	}
	return s;
}

static int writer(const char *key, size_t len)
{
	mmc_store *s = open_store(true);
	unsigned char *buf = malloc(len);
	uint32_t id = 0;
	int rc;

	if (!s || !buf)
		return 1;
	fill(buf, len, key);
	mmc_register_buffer(s, buf, len);
	rc = mmc_put_from(s, key, buf, len, MMC_COPY_H2G, NULL);
	mmc_get_local_service_id(s, &id);
	printf("writer: put \"%s\" (%zu bytes) into the pool of local service %u: %s\n", key, len, id,
	       mmc_strerror(rc));
	fflush(stdout);
	/* the block lives in this process's pool: stay until a reader has taken it (at most 60 s) */
	for (int i = 0; rc == 0 && i < 600 && mmc_is_exist(s, key) == 1; i++)
		usleep(100000);
	printf("writer: \"%s\" is gone, leaving the cluster\n", key);
	mmc_unregister_buffer(s, buf, len);
	mmc_destroy(s);
	free(buf);
	return rc ? 1 : 0;
}

static int reader(const char *key, size_t len)
{
	mmc_store *s = open_store(false);
	unsigned char *buf = malloc(len), *want = malloc(len);
	mmc_key_info info;
	struct timespec t0, t1;
	int rc, same;

	if (!s || !buf || !want)
		return 1;
	for (int i = 0; i < 100 && mmc_is_exist(s, key) != 1; i++) /* the writer may still be starting */
		usleep(100000);
	mmc_get_key_info(s, key, 0, &info);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = mmc_get_into(s, key, buf, len, MMC_COPY_G2H);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fill(want, len, key);
	same = rc == 0 && memcmp(buf, want, len) == 0;
	printf("reader: got \"%s\" (%llu bytes, %u replica on local service %u) in %.2f ms: %s, bytes %s\n", key,
	       (unsigned long long)info.size, info.blob_num, info.loc[0],
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6, mmc_strerror(rc),
	       same ? "match" : "DIFFER");
	if (rc == 0)
		mmc_remove(s, key);
	mmc_destroy(s);
	free(buf);
	free(want);
	return same ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *key = argc > 2 ? argv[2] : "quickstart/layer0/block42";
	size_t len = argc > 3 ? strtoull(argv[3], NULL, 0) : (size_t)4 << 20;

	if (argc < 2 || len == 0 || (strcmp(argv[1], "writer") && strcmp(argv[1], "reader"))) {
		fprintf(stderr, "usage: %s writer|reader [KEY] [BYTES]\n", argv[0]);
		return 2;
	}
	return strcmp(argv[1], "writer") == 0 ? writer(key, len) : reader(key, len);
}
