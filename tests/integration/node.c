/*
 * mmc-test-node: a process holding one mmc store, driven by line commands on stdin, one reply line each on stdout.
 * Integration tests run several of them as local services and clients. The meta server URL comes from
 * MMC_TEST_META, the protocol from MMC_PROTOCOL (default host_tcp); a local service also lends an SSD tier of
 * 64 MiB in the file MMC_TEST_SSD_PATH when it is set.
 *
 *   init LEND [DRAM]                 -> CODE RANK
 *   put KEY SIZE SEED [REPLICAS [PREFERRED...]]  -> CODE
 *   get KEY SIZE SEED                -> CODE (99: bytes differ)
 *   bput PREFIX N SIZE SEED          -> CODE R0 R1 ...
 *   bget PREFIX N SIZE SEED          -> CODE R0 R1 ...
 *   exist KEY | remove KEY           -> RESULT
 *   evict KEY                        mmc_evict_keys DRAM -> SSD -> CODE
 *   info KEY                         -> CODE SIZE BLOBS LOC0 TYPE0 ...
 *   gwrite PREFIX N LAYERS BYTES SEED [TTL]  GVA write: malloc, copy layer by layer, finish -> CODE
 *   gmalloc PREFIX N BYTES TTL       GVA malloc only (never finished), its GVAs added to those kept -> CODE
 *   gcopy SEED                       one mmc_batch_copy of pattern SEED + i into every kept GVA, in the order
 *                                    kept -> CODE
 *   gread PREFIX N LAYERS BYTES SEED GVA read: key info, lease, copy layer by layer, release -> CODE
 *   hold KEY SIZE                    get into a buffer kept after the call, which is then filled with 0xEE
 *                                    (a caller reusing its buffer) -> CODE
 *   held                             whether the kept buffer still holds only 0xEE -> 0, or 99 (written late)
 *   prefix PREFIX N SIZE SEED MS     mmc_batch_get_into_prefix of PREFIX0.. within MS -> CODE LANDED ELAPSED_MS
 *                                    (CODE 99: a landed key's bytes differ)
 *   teardown | quit
 */
#include <mmc/mmc.h>
#include <rdma/fabric.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pattern.h"

#define MISMATCH 99

static mmc_store *s;

static void cmd_init(char *args)
{
	mmc_local_config cfg = mmc_default_local_config();
	int lend = 1, rc;
	unsigned long long dram = 64ull << 20;
	uint32_t rank = UINT32_MAX;
	const char *meta = getenv("MMC_TEST_META"), *proto = getenv("MMC_PROTOCOL");

	sscanf(args, "%d %llu", &lend, &dram);
	if (meta)
		snprintf(cfg.meta_service_url, sizeof(cfg.meta_service_url), "%s", meta);
	snprintf(cfg.protocol, sizeof(cfg.protocol), "%s", proto ? proto : "host_tcp");
	cfg.dram_size = dram;
	if (getenv("MMC_TEST_SSD_PATH")) {
		snprintf(cfg.ssd_path, sizeof(cfg.ssd_path), "%s", getenv("MMC_TEST_SSD_PATH"));
		cfg.ssd_size = 64ull << 20;
	}
	cfg.retry_ms = 10000;
	cfg.heartbeat_ms = 100;
	cfg.rma_timeout_ms = getenv("MMC_TEST_RMA_MS") ? (uint32_t)atoi(getenv("MMC_TEST_RMA_MS")) : 2000;
	s = mmc_create();
	rc = mmc_setup(s, &cfg);
	if (!rc)
		rc = mmc_init(s, 0, lend != 0);
	if (!rc && lend)
		mmc_get_local_service_id(s, &rank);
	printf("%d %d\n", rc, (int)rank);
}

static void cmd_put(char *args)
{
	char key[300];
	size_t size;
	unsigned long long seed;
	mmc_replicate_config rc = {0};
	int n, consumed = 0, r;
	void *buf;

	n = sscanf(args, "%299s %zu %llu %n", key, &size, &seed, &consumed);
	if (n < 3) {
		printf("%d\n", MMC_INVALID_PARAM);
		return;
	}
	args += consumed;
	if (sscanf(args, "%hu %n", &rc.replica_num, &consumed) == 1) {
		args += consumed;
		while (rc.preferred_count < 8 &&
		       sscanf(args, "%d %n", &rc.preferred_local_service_ids[rc.preferred_count], &consumed) == 1) {
			rc.preferred_count++;
			args += consumed;
		}
	}
	buf = malloc(size ? size : 1);
	pattern_fill(buf, size, seed);
	r = mmc_put_from(s, key, buf, size, MMC_COPY_H2G, &rc);
	free(buf);
	printf("%d\n", r);
}

static void cmd_get(char *args)
{
	char key[300];
	size_t size;
	unsigned long long seed;
	void *buf;
	int r;

	if (sscanf(args, "%299s %zu %llu", key, &size, &seed) != 3) {
		printf("%d\n", MMC_INVALID_PARAM);
		return;
	}
	buf = calloc(1, size ? size : 1);
	r = mmc_get_into(s, key, buf, size, MMC_COPY_G2H);
	if (r == 0 && pattern_check(buf, size, seed) != size)
		r = MISMATCH;
	free(buf);
	printf("%d\n", r);
}

/* The caller's buffer of "hold": a late RMA into it after the get returned shows as a byte other than 0xEE. */
static unsigned char *held;
static size_t held_size;

static void cmd_hold(char *args)
{
	char key[300];
	size_t size;
	int r;

	if (sscanf(args, "%299s %zu", key, &size) != 2 || !size) {
		printf("%d\n", MMC_INVALID_PARAM);
		return;
	}
	free(held);
	held = calloc(1, size);
	held_size = size;
	r = mmc_get_into(s, key, held, size, MMC_COPY_G2H);
	memset(held, 0xEE, size);
	printf("%d\n", r);
}

static void cmd_held(void)
{
	for (size_t i = 0; i < held_size; i++) {
		if (held[i] != 0xEE) {
			printf("%d %zu\n", MISMATCH, i);
			return;
		}
	}
	printf("0\n");
}

static void cmd_prefix(char *args)
{
	char prefix[200], name[256];
	size_t n, size, landed = 0;
	unsigned long long seed;
	unsigned timeout;
	struct timespec t0, t1;
	const char **keys;
	void **bufs;
	size_t *sizes;
	int r;

	if (sscanf(args, "%199s %zu %zu %llu %u", prefix, &n, &size, &seed, &timeout) != 5 || !n || n > 64) {
		printf("%d 0 0\n", MMC_INVALID_PARAM);
		return;
	}
	keys = calloc(n, sizeof(*keys));
	bufs = calloc(n, sizeof(*bufs));
	sizes = calloc(n, sizeof(*sizes));
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%zu", prefix, i);
		keys[i] = strdup(name);
		bufs[i] = calloc(1, size);
		sizes[i] = size;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = mmc_batch_get_into_prefix(s, keys, bufs, sizes, n, MMC_COPY_G2H, timeout, &landed);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (size_t i = 0; r == 0 && i < landed; i++)
		if (pattern_check(bufs[i], size, seed + i) != size)
			r = MISMATCH;
	printf("%d %zu %lld\n", r, landed,
	       (long long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	for (size_t i = 0; i < n; i++) {
		free((void *)keys[i]);
		free(bufs[i]);
	}
	free(keys);
	free(bufs);
	free(sizes);
}

static void cmd_batch(char *args, int put)
{
	char prefix[200];
	size_t n, size;
	unsigned long long seed;
	char **keys;
	void **bufs;
	size_t *sizes;
	int *res, r;

	if (sscanf(args, "%199s %zu %zu %llu", prefix, &n, &size, &seed) != 4 || n == 0) {
		printf("%d\n", MMC_INVALID_PARAM);
		return;
	}
	keys = calloc(n, sizeof(*keys));
	bufs = calloc(n, sizeof(*bufs));
	sizes = calloc(n, sizeof(*sizes));
	res = calloc(n, sizeof(*res));
	for (size_t i = 0; i < n; i++) {
		keys[i] = malloc(256);
		snprintf(keys[i], 256, "%s%zu", prefix, i);
		bufs[i] = calloc(1, size);
		sizes[i] = size;
		if (put)
			pattern_fill(bufs[i], size, seed + i);
	}
	r = put ? mmc_batch_put_from(s, (const char *const *)keys, (const void *const *)bufs, sizes, n, MMC_COPY_H2G,
	                             NULL, res)
	        : mmc_batch_get_into(s, (const char *const *)keys, bufs, sizes, n, MMC_COPY_G2H, res);
	printf("%d", r);
	for (size_t i = 0; i < n; i++) {
		if (!put && res[i] == 0 && pattern_check(bufs[i], size, seed + i) != size)
			res[i] = MISMATCH;
		printf(" %d", res[i]);
		free(keys[i]);
		free(bufs[i]);
	}
	printf("\n");
	free(keys);
	free(bufs);
	free(sizes);
	free(res);
}

static void cmd_info(char *args)
{
	char key[300];
	mmc_key_info info;
	int r;

	sscanf(args, "%299s", key);
	r = mmc_get_key_info(s, key, 0, &info);
	printf("%d %llu %u", r, (unsigned long long)info.size, info.blob_num);
	for (uint32_t i = 0; i < info.blob_num && i < 8; i++)
		printf(" %u %u", info.loc[i], info.type[i]);
	printf("\n");
}

/* The GVA flows of a layer-wise connector: one key per block, one copy call per layer. */
static int gva_flow(char *args, int write)
{
	char prefix[200], **keys;
	size_t n, layers, bytes;
	unsigned long long seed, ttl = 0;
	mmc_gva *gvas, *g;
	void **b;
	size_t *sz;
	int32_t *zero;
	int *res, rc = 0;
	char *data;
	mmc_key_info *info;

	if (sscanf(args, "%199s %zu %zu %zu %llu %llu", prefix, &n, &layers, &bytes, &seed, &ttl) < 5 || !n)
		return MMC_INVALID_PARAM;
	keys = calloc(n, sizeof(*keys));
	gvas = calloc(n, sizeof(*gvas));
	g = calloc(n, sizeof(*g));
	b = calloc(n, sizeof(*b));
	sz = calloc(n, sizeof(*sz));
	zero = calloc(n, sizeof(*zero));
	res = calloc(n, sizeof(*res));
	info = calloc(n, sizeof(*info));
	data = calloc(n * layers, bytes);
	for (size_t i = 0; i < n; i++) {
		keys[i] = malloc(256);
		snprintf(keys[i], 256, "%s%zu", prefix, i);
		for (size_t l = 0; write && l < layers; l++)
			pattern_fill(data + (i * layers + l) * bytes, bytes, seed + i * 1000 + l);
	}
	if (write) {
		for (size_t i = 0; i < n; i++)
			sz[i] = layers * bytes;
		rc = mmc_batch_malloc(s, (const char *const *)keys, sz, n, MMC_MEDIA_DRAM, ttl, gvas);
		for (size_t i = 0; !rc && i < n; i++)
			rc = gvas[i] ? 0 : MMC_ERROR;
	} else {
		rc = mmc_batch_get_key_info(s, (const char *const *)keys, n, 0, info);
		for (size_t i = 0; !rc && i < n; i++)
			gvas[i] = info[i].size ? info[i].gva[0] : 0;
		if (!rc)
			rc = mmc_batch_add_lease(s, (const char *const *)keys, n, ttl, res);
		for (size_t i = 0; !rc && i < n; i++)
			rc = res[i];
	}
	for (size_t l = 0; !rc && l < layers; l++) {
		for (size_t i = 0; i < n; i++) {
			g[i] = gvas[i] + l * bytes;
			b[i] = data + (i * layers + l) * bytes;
			sz[i] = bytes;
		}
		rc = mmc_batch_copy(s, g, b, sz, n, write ? MMC_COPY_L2G : MMC_COPY_G2L, 0);
	}
	if (write && ttl && strcmp(prefix, "unfinished/") == 0)
		goto out; /* leave the allocation pending */
	if (write && !rc) {
		rc = mmc_batch_write_finish(s, (const char *const *)keys, zero, n, res);
		for (size_t i = 0; !rc && i < n; i++)
			rc = res[i];
	}
	if (!write) {
		int rel = mmc_batch_remove_lease(s, (const char *const *)keys, n);

		rc = rc ? rc : rel;
		for (size_t i = 0; !rc && i < n * layers; i++)
			if (pattern_check(data + i * bytes, bytes, seed + (i / layers) * 1000 + i % layers) != bytes)
				rc = MISMATCH;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	free(gvas);
	free(g);
	free(b);
	free(sz);
	free(zero);
	free(res);
	free(info);
	free(data);
	return rc;
}

/* gmalloc's GVAs, for a later gcopy: a test acts between the malloc and the copy. */
static mmc_gva kept[64];
static size_t nkept, kept_bytes;

static int cmd_gmalloc(char *args)
{
	char prefix[200], names[64][256];
	const char *keys[64];
	size_t sizes[64], n, bytes;
	unsigned long long ttl;
	int rc;

	if (sscanf(args, "%199s %zu %zu %llu", prefix, &n, &bytes, &ttl) != 4 || !n || n > 64 - nkept ||
	    (nkept && bytes != kept_bytes))
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "%s%zu", prefix, i);
		keys[i] = names[i];
		sizes[i] = bytes;
	}
	rc = mmc_batch_malloc(s, keys, sizes, n, MMC_MEDIA_DRAM, ttl, kept + nkept);
	if (rc == 0) {
		nkept += n;
		kept_bytes = bytes;
	}
	return rc;
}

static int cmd_gcopy(char *args)
{
	unsigned long long seed;
	void *bufs[64];
	size_t sizes[64];
	int rc;

	if (sscanf(args, "%llu", &seed) != 1 || !nkept)
		return MMC_INVALID_PARAM;
	for (size_t i = 0; i < nkept; i++) {
		bufs[i] = malloc(kept_bytes);
		sizes[i] = kept_bytes;
		pattern_fill(bufs[i], kept_bytes, seed + i);
	}
	rc = mmc_batch_copy(s, kept, bufs, sizes, nkept, MMC_COPY_L2G, 0);
	for (size_t i = 0; i < nkept; i++)
		free(bufs[i]);
	return rc;
}

/* An application that started libfabric before libmmc (another transport in the process), with the environment it
 * had: libmmc can no longer choose libfabric's settings (how often rxm drops a dead connection). */
static void start_fabric_first(void)
{
	struct fi_info *info = NULL;

	if (getenv("MMC_TEST_FABRIC_FIRST") && fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, NULL, &info) == 0)
		fi_freeinfo(info);
}

int main(void)
{
	char line[4096];

	start_fabric_first();
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char cmd[32] = "", *args;
		char key[300];

		line[strcspn(line, "\n")] = '\0';
		sscanf(line, "%31s", cmd);
		args = line + strlen(cmd);
		if (strcmp(cmd, "init") == 0)
			cmd_init(args);
		else if (strcmp(cmd, "put") == 0)
			cmd_put(args);
		else if (strcmp(cmd, "get") == 0)
			cmd_get(args);
		else if (strcmp(cmd, "bput") == 0)
			cmd_batch(args, 1);
		else if (strcmp(cmd, "bget") == 0)
			cmd_batch(args, 0);
		else if (strcmp(cmd, "exist") == 0 && sscanf(args, "%299s", key) == 1)
			printf("%d\n", mmc_is_exist(s, key));
		else if (strcmp(cmd, "remove") == 0 && sscanf(args, "%299s", key) == 1)
			printf("%d\n", mmc_remove(s, key));
		else if (strcmp(cmd, "evict") == 0 && sscanf(args, "%299s", key) == 1)
			printf("%d\n",
			       mmc_evict_keys(s, (const char *const[]){key}, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0));
		else if (strcmp(cmd, "hold") == 0)
			cmd_hold(args);
		else if (strcmp(cmd, "held") == 0)
			cmd_held();
		else if (strcmp(cmd, "prefix") == 0)
			cmd_prefix(args);
		else if (strcmp(cmd, "info") == 0)
			cmd_info(args);
		else if (strcmp(cmd, "gwrite") == 0)
			printf("%d\n", gva_flow(args, 1));
		else if (strcmp(cmd, "gread") == 0)
			printf("%d\n", gva_flow(args, 0));
		else if (strcmp(cmd, "gmalloc") == 0)
			printf("%d\n", cmd_gmalloc(args));
		else if (strcmp(cmd, "gcopy") == 0)
			printf("%d\n", cmd_gcopy(args));
		else if (strcmp(cmd, "teardown") == 0)
			printf("%d\n", mmc_teardown(s));
		else if (strcmp(cmd, "quit") == 0)
			break;
		else
			printf("%d\n", MMC_INVALID_PARAM);
	}
	mmc_destroy(s);
	return 0;
}
