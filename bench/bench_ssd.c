/*
 * `mmc-bench ssd`: gets of 1 MiB blocks served from DRAM against gets that rewarm them from the SSD tier, next to
 * the SSD's raw sequential read speed (aligned pread of the same file) measured in the same run. This process is the
 * local service that owns both tiers, so the DRAM path is the memcpy from its own pool: the figures isolate what the
 * SSD tier costs.
 */
#include <fcntl.h>
#include <mmc/mmc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_cluster.h"
#include "proc.h"

#define MiB (1u << 20)

static const char usage[] = "usage: mmc-bench ssd [--quick]   1 MiB gets from DRAM and from the SSD tier, vs the "
                            "device's sequential read\n";

static double raw_read_gbs(const char *path, size_t bytes)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	void *buf = NULL;
	double t0, t;
	size_t done = 0;

	if (fd < 0)
		fd = open(path, O_RDONLY);
	if (fd < 0 || posix_memalign(&buf, 4096, MiB)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = now_s();
	while (done < bytes && pread(fd, buf, MiB, (off_t)done) == (ssize_t)MiB)
		done += MiB;
	t = now_s() - t0;
	close(fd);
	free(buf);
	return done ? (double)done / t / 1e9 : 0;
}

static int run(mmc_store *s, int n, double *dram, double *rewarm)
{
	char **keys = calloc((size_t)n, sizeof(*keys));
	void **bufs = calloc((size_t)n, sizeof(*bufs));
	size_t *sizes = calloc((size_t)n, sizeof(*sizes));
	int *res = calloc((size_t)n, sizeof(*res)), rc = -1;
	double t0;

	for (int i = 0; i < n; i++) {
		keys[i] = malloc(32);
		snprintf(keys[i], 32, "ssd-bench/%d", i);
		bufs[i] = malloc(MiB);
		memset(bufs[i], i, MiB);
		sizes[i] = MiB;
	}
	if (mmc_batch_put_from(s, (const char *const *)keys, (const void *const *)bufs, sizes, (size_t)n, MMC_COPY_H2G,
	                       NULL, res))
		goto out;
	t0 = now_s();
	if (mmc_batch_get_into(s, (const char *const *)keys, bufs, sizes, (size_t)n, MMC_COPY_G2H, res))
		goto out;
	*dram = (double)n * MiB / (now_s() - t0) / 1e9;
	if (mmc_evict_keys(s, (const char *const *)keys, (size_t)n, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0))
		goto out;
	t0 = now_s();
	if (mmc_batch_get_into(s, (const char *const *)keys, bufs, sizes, (size_t)n, MMC_COPY_G2H, res))
		goto out;
	*rewarm = (double)n * MiB / (now_s() - t0) / 1e9;
	rc = 0;
	for (int i = 0; i < n; i++)
		if (res[i] || ((unsigned char *)bufs[i])[MiB - 1] != (unsigned char)i)
			rc = -1;
	mmc_batch_remove(s, (const char *const *)keys, (size_t)n, res);
out:
	for (int i = 0; i < n; i++) {
		free(keys[i]);
		free(bufs[i]);
	}
	free(keys);
	free(bufs);
	free(sizes);
	free(res);
	return rc;
}

int bench_ssd_main(int argc, char **argv, const char *self)
{
	struct metaserver m;
	mmc_local_config c = mmc_default_local_config();
	mmc_store *s;
	char path[300];
	struct bench_opts o;
	int n, rc = bench_parse(argc, argv, &o, usage);
	double dram = 0, rewarm = 0, raw;

	if (rc)
		return rc > 0 ? 0 : 2;
	n = o.quick ? 16 : 64;
	bench_find_metaserver(self);
	if (metaserver_start(&m, NULL))
		return 1;
	snprintf(path, sizeof(path), "%s/ssd.bin", m.dir);
	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "%s", m.url);
	strcpy(c.protocol, "host_tcp");
	c.dram_size = (uint64_t)(n + 16) * MiB;
	snprintf(c.ssd_path, sizeof(c.ssd_path), "%s", path);
	c.ssd_size = (uint64_t)(n + 16) * MiB;
	s = mmc_create();
	rc = s && !mmc_setup(s, &c) && !mmc_init(s, 0, true) ? run(s, n, &dram, &rewarm) : -1;
	mmc_destroy(s);
	raw = raw_read_gbs(path, (size_t)n * MiB);
	printf(
	    "\n# SSD tier: %d x 1 MiB, one batch get each way; SSD file %s (O_DIRECT where the file system has it)\n",
	    n, path);
	printf("%-24s %8s\n%-24s %8.2f\n%-24s %8.2f\n%-24s %8.2f\n%-24s %8.2f\n", "path", "GB/s", "get from DRAM", dram,
	       "get rewarming from SSD", rewarm, "raw SSD sequential read", raw, "rewarm / raw SSD",
	       raw > 0 ? rewarm / raw : 0);
	metaserver_cleanup(&m);
	if (rc)
		fprintf(stderr, "mmc-bench ssd: a call failed or bytes differed\n");
	return rc ? 1 : 0;
}
