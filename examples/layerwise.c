/*
 * layerwise: the one-copy GVA flow of a layer-wise KV connector (vLLM-Ascend style).
 *
 *   mmc-layerwise writer [BLOCKS] [LAYERS] [LAYER_BYTES]
 *       batch_malloc one object per block, then per layer (as each layer's attention finishes) batch_copy
 *       the layer into (block GVA + layer offset), then batch_write_finish: the blocks become readable.
 *   mmc-layerwise reader [BLOCKS] [LAYERS] [LAYER_BYTES]
 *       batch_get_key_info (the GVAs), batch_add_lease, per layer batch_copy out of (GVA + layer offset)
 *       before that layer's attention, batch_remove_lease; checks every byte, then removes the blocks.
 *
 * Meta server and protocol as for mmc-quickstart (MMC_LOCAL_CONFIG_PATH, MMC_PROTOCOL).
 */
#include <mmc/mmc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BLOCKS 256

struct shape {
	size_t blocks, layers, layer_bytes;
};

static unsigned char byte_at(size_t block, size_t layer, size_t i)
{
	return (unsigned char)(block * 131 + layer * 31 + i * 7);
}

static mmc_store *open_store(bool lend)
{
	mmc_local_config cfg = mmc_default_local_config();
	const char *proto = getenv("MMC_PROTOCOL");
	mmc_store *s = mmc_create();
	int rc;

	if (getenv("MMC_LOCAL_CONFIG_PATH"))
		snprintf(cfg.config_path, sizeof(cfg.config_path), "%s", getenv("MMC_LOCAL_CONFIG_PATH"));
	if (proto)
		snprintf(cfg.protocol, sizeof(cfg.protocol), "%s", proto);
	cfg.dram_size = 256u << 20;
	if (!s || (rc = mmc_setup(s, &cfg)) || (rc = mmc_init(s, 0, lend))) {
		fprintf(stderr, "mmc init failed\n");
		mmc_destroy(s);
		return NULL;
	}
	return s;
}

/* The per-layer copy list: block i's layer l lives at gvas[i] + l * layer_bytes. */
static int copy_layer(mmc_store *s, const struct shape *sh, const mmc_gva *gvas, unsigned char *kv, size_t layer,
                      int32_t direct)
{
	mmc_gva g[MAX_BLOCKS];
	void *b[MAX_BLOCKS];
	size_t sz[MAX_BLOCKS];

	for (size_t i = 0; i < sh->blocks; i++) {
		g[i] = gvas[i] + layer * sh->layer_bytes;
		b[i] = kv + (i * sh->layers + layer) * sh->layer_bytes;
		sz[i] = sh->layer_bytes;
	}
	return mmc_batch_copy(s, g, b, sz, sh->blocks, direct, 0);
}

static int writer(const struct shape *sh, char **keys, unsigned char *kv)
{
	mmc_store *s = open_store(true);
	size_t sizes[MAX_BLOCKS];
	mmc_gva gvas[MAX_BLOCKS];
	int32_t ok[MAX_BLOCKS];
	int res[MAX_BLOCKS], rc;

	if (!s)
		return 1;
	mmc_register_buffer(s, kv, sh->blocks * sh->layers * sh->layer_bytes);
	for (size_t i = 0; i < sh->blocks; i++) {
		sizes[i] = sh->layers * sh->layer_bytes;
		ok[i] = 0;
		for (size_t l = 0; l < sh->layers; l++)
			for (size_t j = 0; j < sh->layer_bytes; j++)
				kv[(i * sh->layers + l) * sh->layer_bytes + j] = byte_at(i, l, j);
	}
	rc = mmc_batch_malloc(s, (const char *const *)keys, sizes, sh->blocks, MMC_MEDIA_DRAM, 0, gvas);
	for (size_t i = 0; rc == 0 && i < sh->blocks; i++)
		rc = gvas[i] ? 0 : MMC_NOT_ENOUGH_MEMORY;
	for (size_t l = 0; rc == 0 && l < sh->layers; l++)
		rc = copy_layer(s, sh, gvas, kv, l, MMC_COPY_L2G); /* as layer l's KV is ready */
	if (rc == 0)
		rc = mmc_batch_write_finish(s, (const char *const *)keys, ok, sh->blocks, res);
	for (size_t i = 0; rc == 0 && i < sh->blocks; i++)
		rc = res[i];
	printf("writer: %zu blocks x %zu layers x %zu bytes written layer by layer: %s\n", sh->blocks, sh->layers,
	       sh->layer_bytes, mmc_strerror(rc));
	fflush(stdout);
	/* the blocks live in this process's pool: stay until the reader removed them (at most 60 s) */
	for (int i = 0; rc == 0 && i < 600 && mmc_is_exist(s, keys[0]) == 1; i++)
		usleep(100000);
	mmc_destroy(s);
	return rc ? 1 : 0;
}

static int reader(const struct shape *sh, char **keys, unsigned char *kv)
{
	mmc_store *s = open_store(false);
	mmc_key_info info[MAX_BLOCKS];
	mmc_gva gvas[MAX_BLOCKS];
	int res[MAX_BLOCKS], rc = 0, rel;
	size_t bad = 0;

	if (!s)
		return 1;
	for (int i = 0; i < 100 && mmc_is_exist(s, keys[sh->blocks - 1]) != 1; i++)
		usleep(100000);
	mmc_register_buffer(s, kv, sh->blocks * sh->layers * sh->layer_bytes);
	rc = mmc_batch_get_key_info(s, (const char *const *)keys, sh->blocks, 0, info);
	for (size_t i = 0; rc == 0 && i < sh->blocks; i++) {
		gvas[i] = info[i].gva[0];
		rc = info[i].size ? 0 : MMC_OBJECT_NOT_EXISTS;
	}
	if (rc == 0)
		rc = mmc_batch_add_lease(s, (const char *const *)keys, sh->blocks, 0, res);
	for (size_t i = 0; rc == 0 && i < sh->blocks; i++)
		rc = res[i];
	for (size_t l = 0; rc == 0 && l < sh->layers; l++)
		rc = copy_layer(s, sh, gvas, kv, l, MMC_COPY_G2L); /* before layer l's attention */
	rel = mmc_batch_remove_lease(s, (const char *const *)keys, sh->blocks);
	rc = rc ? rc : rel;
	for (size_t i = 0; i < sh->blocks; i++)
		for (size_t l = 0; l < sh->layers; l++)
			for (size_t j = 0; j < sh->layer_bytes; j++)
				bad += kv[(i * sh->layers + l) * sh->layer_bytes + j] != byte_at(i, l, j);
	printf("reader: %zu blocks read layer by layer through their GVAs: %s, bytes %s\n", sh->blocks,
	       mmc_strerror(rc), rc == 0 && bad == 0 ? "match" : "DIFFER");
	mmc_batch_remove(s, (const char *const *)keys, sh->blocks, res);
	mmc_destroy(s);
	return rc || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct shape sh = {argc > 2 ? strtoul(argv[2], NULL, 0) : 16, argc > 3 ? strtoul(argv[3], NULL, 0) : 61,
	                   argc > 4 ? strtoul(argv[4], NULL, 0) : 16384};
	unsigned char *kv;
	char **keys;
	int rc;

	if (argc < 2 || (strcmp(argv[1], "writer") && strcmp(argv[1], "reader")) || !sh.blocks || !sh.layers ||
	    !sh.layer_bytes || sh.blocks > MAX_BLOCKS) {
		fprintf(stderr, "usage: %s writer|reader [BLOCKS] [LAYERS] [LAYER_BYTES]\n", argv[0]);
		return 2;
	}
	kv = calloc(sh.blocks * sh.layers, sh.layer_bytes);
	keys = calloc(sh.blocks, sizeof(*keys));
	for (size_t i = 0; i < sh.blocks; i++) {
		keys[i] = malloc(64);
		snprintf(keys[i], 64, "model@layerwise@block%zu@tp0", i);
	}
	rc = strcmp(argv[1], "writer") == 0 ? writer(&sh, keys, kv) : reader(&sh, keys, kv);
	for (size_t i = 0; i < sh.blocks; i++)
		free(keys[i]);
	free(keys);
	free(kv);
	return rc;
}
