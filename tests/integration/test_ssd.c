/*
 * The SSD tier: eviction demotes to SSD, gets rewarm (or stage above the DRAM watermark), explicit evict and
 * prefetch, readers are never moved under, and a restarted local service adopts what its SSD holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define MiB (1u << 20)

static struct metaserver meta;
static mmc_store *s;
static char ssd_path[300];

static mmc_store *ssd_store(const char *path, uint64_t dram, uint64_t ssd)
{
	mmc_local_config c = fixture_config(meta.url, dram);
	mmc_store *st = mmc_create();

	snprintf(c.ssd_path, sizeof(c.ssd_path), "%s", path);
	c.ssd_size = ssd;
	cr_assert_eq(mmc_setup(st, &c), 0);
	cr_assert_eq(mmc_init(st, 0, true), 0);
	return st;
}

static void start_with(const char *const *env)
{
	cr_assert_eq(metaserver_start(&meta, env), 0);
	snprintf(ssd_path, sizeof(ssd_path), "%s/ssd.bin", meta.dir);
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB);
}

static void start(void)
{
	const char *env[] = {"ock.mmc.evict_threshold_high=70", "ock.mmc.evict_threshold_low=50", NULL};

	start_with(env);
}

static void stop(void)
{
	mmc_destroy(s);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(ssd, .init = start, .fini = stop, .timeout = 60);

static void put(const char *key, uint64_t seed)
{
	void *buf = malloc(MiB);

	pattern_fill(buf, MiB, seed);
	cr_assert_eq(mmc_put_from(s, key, buf, MiB, MMC_COPY_H2G, NULL), 0, "put %s", key);
	free(buf);
}

static int get_check(mmc_store *st, const char *key, uint64_t seed)
{
	void *buf = calloc(1, MiB);
	int rc = mmc_get_into(st, key, buf, MiB, MMC_COPY_G2H);

	if (rc == 0 && pattern_check(buf, MiB, seed) != MiB)
		rc = 99;
	free(buf);
	return rc;
}

static uint16_t media_of(mmc_store *st, const char *key)
{
	mmc_key_info info;

	cr_assert_eq(mmc_get_key_info(st, key, 0, &info), 0);
	cr_assert_eq(info.blob_num, 1, "%s: %u blobs", key, info.blob_num);
	return info.type[0];
}

/* Demotions are asynchronous: wait until key is on media. */
static void wait_media(const char *key, uint16_t media)
{
	for (int i = 0; i < 100 && media_of(s, key) != media; i++)
		usleep(20000);
	cr_assert_eq(media_of(s, key), media, "%s", key);
}

Test(ssd, eviction_demotes_and_everything_stays_readable)
{
	char key[16];

	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(key, (uint64_t)i);
	}
	/* 12 MiB in an 8 MiB DRAM pool: the oldest went to SSD, nothing was lost */
	wait_media("k0", MMC_MEDIA_SSD);
	cr_assert_eq(media_of(s, "k11"), MMC_MEDIA_DRAM, "the newest stays in DRAM");
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(mmc_is_exist(s, key), 1, "%s", key);
	}
	for (int i = 11; i >= 0; i--) {
		snprintf(key, sizeof(key), "k%d", i);
		int rc = get_check(s, key, (uint64_t)i);

		cr_assert_eq(rc, 0, "%s: byte-exact from whichever tier (%d)", key, rc);
	}
}

static atomic_int write_failed_lines;

static void count_write_failed(int level, const char *msg)
{
	if (level == MMC_LOG_ERROR && strstr(msg, "ssd tier: write failed"))
		atomic_fetch_add(&write_failed_lines, 1);
}

/*
 * A disk that refuses every write (full: here a file size limit the SSD file is past, which fails pwrite with
 * EFBIG as ENOSPC would fail it): an eviction victim that cannot move is evicted, nothing is read wrong, and the
 * failures are logged once per interval, not once each.
 */
Test(ssd, a_disk_refusing_writes_evicts_and_logs_once)
{
	struct rlimit was, tiny = {4096, 4096};
	char key[16];
	int present = 0;

	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_IGN);
	mmc_set_log_handler(count_write_failed);
	tiny.rlim_max = was.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &tiny), 0);
	for (int i = 0; i < 24; i++) {
		snprintf(key, sizeof(key), "full%d", i);
		put(key, (uint64_t)i + 100);
	}
	for (int i = 0; i < 24; i++) { /* what is there is whole; what could not move went */
		int rc;

		snprintf(key, sizeof(key), "full%d", i);
		rc = get_check(s, key, (uint64_t)i + 100);
		cr_expect(rc == 0 || rc == MMC_OBJECT_NOT_EXISTS, "%s: %d", key, rc);
		present += rc == 0;
		if (rc == 0)
			cr_expect_eq(media_of(s, key), MMC_MEDIA_DRAM, "%s: nothing reached the disk", key);
	}
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
	mmc_set_log_handler(NULL);
	signal(SIGXFSZ, SIG_DFL);
	cr_expect_lt(present, 24, "24 MiB in 8: some were evicted");
	cr_expect_eq(atomic_load(&write_failed_lines), 1, "one line for %d failed moves", 24 - present);
}

Test(ssd, evict_then_prefetch_named_keys)
{
	const char *k[] = {"named"};
	mmc_store *reader = fixture_store(meta.url, false, 0);

	put("named", 5);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	cr_assert_eq(media_of(s, "named"), MMC_MEDIA_SSD, "moved now");
	cr_assert_eq(mmc_is_exist(s, "named"), 1, "a key on SSD is present");
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0, "already there is a success");
	cr_assert_eq(mmc_prefetch_keys(s, k, 1, MMC_MEDIA_SSD, MMC_MEDIA_DRAM, 0), 0);
	cr_assert_eq(media_of(s, "named"), MMC_MEDIA_DRAM);
	cr_assert_eq(mmc_prefetch_keys(s, k, 1, MMC_MEDIA_SSD, MMC_MEDIA_DRAM, 0), 0, "already there is a success");
	cr_assert_eq(get_check(reader, "named", 5), 0);
	/* a get of an SSD key (DRAM below the watermark) rewarms it */
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	cr_assert_eq(get_check(reader, "named", 5), 0, "served from SSD by another process");
	cr_assert_eq(media_of(s, "named"), MMC_MEDIA_DRAM, "and rewarmed");
	mmc_destroy(reader);
}

/* A GVA read of a range on SSD is refused before anything moves (an SSD segment is no RMA target): the reader
 * brings the key to DRAM first. */
Test(ssd, a_gva_copy_of_an_ssd_range_is_refused)
{
	const char *k[] = {"gva-on-ssd"};
	char buf[4096];
	void *b = buf;
	size_t n = sizeof(buf);
	mmc_key_info info;
	mmc_gva g;
	int res;

	put("gva-on-ssd", 6);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 10000, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_get_key_info(s, "gva-on-ssd", 0, &info), 0);
	cr_assert_eq(info.type[0], MMC_MEDIA_SSD);
	g = info.gva[0];
	memset(buf, 0x5a, sizeof(buf));
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &n, 1, MMC_COPY_G2H, 0), MMC_INVALID_PARAM);
	cr_assert_eq((unsigned char)buf[0], 0x5a);
	cr_assert_eq(mmc_prefetch_keys(s, k, 1, MMC_MEDIA_SSD, MMC_MEDIA_DRAM, 0), 0);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 10000, &res), 0);
	cr_assert_eq(mmc_get_key_info(s, "gva-on-ssd", 0, &info), 0);
	cr_assert_eq(info.type[0], MMC_MEDIA_DRAM);
	g = info.gva[0];
	cr_assert_eq(mmc_batch_copy(s, &g, &b, &n, 1, MMC_COPY_G2H, 0), 0);
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), 0);
}

/* One get batch of a key on SSD, one in DRAM and one missing takes the tier path for all of them; once the SSD key is
 * back in DRAM, the same batch is answered at once from the objects its first lookup found. */
Test(ssd, a_batch_mixing_tiers_and_a_missing_key)
{
	const char *ev[] = {"on-ssd"};
	const char *keys[] = {"in-dram", "on-ssd", "never-put", "in-dram"};
	void *bufs[4];
	size_t sizes[4] = {MiB, MiB, MiB, MiB};
	int res[4];

	put("on-ssd", 21);
	put("in-dram", 22);
	cr_assert_eq(mmc_evict_keys(s, ev, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	cr_assert_eq(media_of(s, "on-ssd"), MMC_MEDIA_SSD);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 4; i++)
			cr_assert_not_null(bufs[i] = calloc(1, MiB));
		memset(res, 0x7f, sizeof(res));
		cr_assert_eq(mmc_batch_get_into(s, keys, bufs, sizes, 4, MMC_COPY_G2H, res), 0);
		cr_expect_eq(res[0], 0, "round %d: the DRAM key", round);
		cr_expect_eq(res[1], 0, "round %d: the SSD key", round);
		cr_expect_eq(res[2], MMC_OBJECT_NOT_EXISTS, "round %d: the missing key gave %d", round, res[2]);
		cr_expect_eq(res[3], 0, "round %d: the DRAM key named twice", round);
		cr_expect_eq(pattern_check(bufs[0], MiB, 22), MiB);
		cr_expect_eq(pattern_check(bufs[1], MiB, 21), MiB);
		cr_expect_eq(pattern_check(bufs[3], MiB, 22), MiB);
		for (int i = 0; i < 4; i++)
			free(bufs[i]);
	}
	/* the first round rewarmed it: the second was a DRAM-only batch */
	cr_expect_eq(media_of(s, "on-ssd"), MMC_MEDIA_DRAM);
}

Test(ssd, invalid_media_pairs_and_missing_keys)
{
	const char *k[] = {"x"}, *missing[] = {"nope"};

	put("x", 1);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_SSD, MMC_MEDIA_DRAM, 0), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_HBM, 0), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_prefetch_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_prefetch_keys(s, k, 1, MMC_MEDIA_HBM, MMC_MEDIA_DRAM, 0), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 1), MMC_INVALID_PARAM, "flags must be 0");
	cr_assert_eq(mmc_evict_keys(s, k, 0, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_evict_keys(s, missing, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(mmc_prefetch_keys(s, missing, 1, MMC_MEDIA_SSD, MMC_MEDIA_DRAM, 0), MMC_OBJECT_NOT_EXISTS);
	cr_assert_eq(get_check(s, "x", 1), 0);
}

Test(ssd, prefetch_when_dram_is_full)
{
	const char *k[] = {"cold"};
	char key[16];
	int rc;

	put("cold", 7);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	for (int i = 0; i < 8; i++) { /* DRAM full again (eviction keeps demoting the oldest) */
		snprintf(key, sizeof(key), "hot%d", i);
		put(key, (uint64_t)(100 + i));
	}
	rc = mmc_prefetch_keys(s, k, 1, MMC_MEDIA_SSD, MMC_MEDIA_DRAM, 0);
	cr_assert(rc == 0 || rc == MMC_NOT_ENOUGH_MEMORY, "prefetch: %d", rc);
	cr_assert_eq(mmc_is_exist(s, "cold"), 1, "a failed prefetch loses nothing");
	cr_assert_eq(get_check(s, "cold", 7), 0);
}

Test(ssd, a_key_being_read_is_not_moved_under_the_reader)
{
	const char *k[] = {"reading"};
	mmc_key_info info;
	void *buf = malloc(MiB);
	mmc_gva g;
	size_t size = MiB;
	int res;

	put("reading", 9);
	cr_assert_eq(mmc_get_key_info(s, "reading", 0, &info), 0);
	cr_assert_eq(mmc_batch_add_lease(s, k, 1, 10000, &res), 0);
	cr_assert_eq(res, 0);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	cr_assert_eq(media_of(s, "reading"), MMC_MEDIA_SSD);
	/* the reader still copies from the GVA it resolved: those bytes stay until its lease ends */
	for (int i = 0; i < 6; i++) {
		char key[16];

		snprintf(key, sizeof(key), "churn%d", i);
		put(key, (uint64_t)i);
	}
	g = info.gva[0];
	cr_assert_eq(mmc_batch_copy(s, &g, &buf, &size, 1, MMC_COPY_G2H, 0), 0);
	cr_assert_eq(pattern_check(buf, MiB, 9), MiB, "the leased DRAM bytes were not reused");
	cr_assert_eq(mmc_batch_remove_lease(s, k, 1), 0);
	cr_assert_eq(get_check(s, "reading", 9), 0);
	free(buf);
}

/* survivor0 and survivor1 on SSD, dram-only in DRAM; then the service's process goes, its SSD file stays. */
static void leave_keys_on_ssd(void)
{
	const char *k[] = {"survivor0", "survivor1"};

	put("survivor0", 11);
	put("survivor1", 12);
	put("dram-only", 13);
	cr_assert_eq(mmc_evict_keys(s, k, 2, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	mmc_destroy(s);
	s = NULL;
}

Test(ssd, a_restarted_local_service_keeps_its_ssd_keys)
{
	leave_keys_on_ssd();
	{
		mmc_store *probe = fixture_store(meta.url, false, 0);

		cr_assert_eq(mmc_is_exist(probe, "dram-only"), 0, "DRAM content left with the process");
		cr_assert_eq(mmc_is_exist(probe, "survivor0"), 0, "unreadable until a service adopts the SSD");
		mmc_destroy(probe);
	}
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB); /* same host, same SSD path */
	cr_assert_eq(mmc_is_exist(s, "survivor0"), 1);
	cr_assert_eq(media_of(s, "survivor1"), MMC_MEDIA_SSD);
	cr_assert_eq(get_check(s, "survivor0", 11), 0);
	cr_assert_eq(get_check(s, "survivor1", 12), 0);
}

/* Two local services in one SSD file would overwrite each other's objects: the second is refused, naming the file,
 * and takes the file once the first has gone (as a restarted service does). */
Test(ssd, a_second_service_on_the_same_ssd_file_is_refused)
{
	mmc_local_config c = fixture_config(meta.url, 8 * MiB);
	mmc_store *twin = mmc_create();

	snprintf(c.ssd_path, sizeof(c.ssd_path), "%s", ssd_path);
	c.ssd_size = 64 * MiB;
	cr_assert_eq(mmc_setup(twin, &c), 0);
	cr_assert_eq(mmc_init(twin, 0, true), MMC_INVALID_PARAM, "the file is the first service's");
	mmc_destroy(twin);
	put("still-mine", 21);
	cr_assert_eq(get_check(s, "still-mine", 21), 0);
	mmc_destroy(s);
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB);
}

/* The keys are the file's, not the path's: another file at the same path on a host of the same name (a fresh disk,
 * a cloned host) adopts none of them, where it used to serve its own bytes as theirs; the same file under another
 * path (a device renamed at boot) adopts them all. */
Test(ssd, ssd_keys_go_with_their_file_not_its_path)
{
	char moved[320];

	leave_keys_on_ssd();
	snprintf(moved, sizeof(moved), "%s.moved", ssd_path);
	cr_assert_eq(rename(ssd_path, moved), 0);
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB); /* a new file at the old path */
	cr_assert_eq(mmc_is_exist(s, "survivor0"), 0, "not adopted from another file");
	cr_assert_neq(get_check(s, "survivor1", 12), 0, "and never read from it");
	mmc_destroy(s);
	s = ssd_store(moved, 8 * MiB, 64 * MiB);
	cr_assert_eq(mmc_is_exist(s, "survivor0"), 1, "adopted from its own file, wherever it is now");
	cr_assert_eq(get_check(s, "survivor0", 11), 0);
	cr_assert_eq(get_check(s, "survivor1", 12), 0);
}

/* A file used with another size since is another file: the service between may have written over the keys. */
Test(ssd, a_file_used_with_another_size_since_adopts_nothing)
{
	const char *k[] = {"between"};

	leave_keys_on_ssd();
	s = ssd_store(ssd_path, 8 * MiB, 32 * MiB);
	put("between", 14);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	mmc_destroy(s);
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB); /* the first size again, within the rejoin timeout */
	cr_assert_eq(mmc_is_exist(s, "survivor0"), 0, "not adopted: the file changed under its keys");
	cr_assert_eq(mmc_is_exist(s, "between"), 0);
}

/* A device path that names nothing is refused, not created as a file in the RAM behind /dev. */
Test(ssd, a_missing_device_is_not_created)
{
	mmc_local_config c = fixture_config(meta.url, 8 * MiB);
	mmc_store *st = mmc_create();
	struct stat sb;

	snprintf(c.ssd_path, sizeof(c.ssd_path), "/dev/mmc-test-missing-%d", (int)getpid());
	c.ssd_size = 64 * MiB;
	cr_assert_eq(mmc_setup(st, &c), 0);
	cr_expect_eq(mmc_init(st, 0, true), MMC_INVALID_PARAM);
	mmc_destroy(st);
	cr_expect_neq(stat(c.ssd_path, &sb), 0, "%s was created", c.ssd_path);
	unlink(c.ssd_path);
}

/* mmc_init of a store whose SSD tier is path (64 MiB). */
static int init_on(const char *path)
{
	mmc_local_config c = fixture_config(meta.url, 8 * MiB);
	mmc_store *st = mmc_create();
	int rc;

	snprintf(c.ssd_path, sizeof(c.ssd_path), "%s", path);
	c.ssd_size = 64 * MiB;
	cr_assert_eq(mmc_setup(st, &c), 0);
	rc = mmc_init(st, 0, true);
	mmc_destroy(st);
	return rc;
}

/* A dangling link is not followed to make its target: here one into /dev, where a device not attached would become
 * a file in RAM. */
Test(ssd, a_dangling_link_makes_no_file)
{
	char link[400], target[100];
	struct stat sb;

	snprintf(target, sizeof(target), "/dev/mmc-test-link-%d", (int)getpid());
	snprintf(link, sizeof(link), "%s/ssd-link", meta.dir);
	cr_assert_eq(symlink(target, link), 0);
	cr_expect_eq(init_on(link), MMC_INVALID_PARAM);
	cr_expect_neq(stat(target, &sb), 0, "%s was created", target);
	unlink(target);
}

/* A path that names someone else's data (a disk renamed at boot now naming one with a file system, a mistyped path)
 * is not written: not even the label. */
Test(ssd, a_file_holding_other_data_is_left_as_it_is)
{
	char path[400];
	unsigned char *head = malloc(8192), *after = malloc(8192);
	int fd;

	snprintf(path, sizeof(path), "%s/not-ours.bin", meta.dir);
	pattern_fill(head, 8192, 42);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, head, 8192, 0), 8192);
	close(fd);
	cr_expect_eq(init_on(path), MMC_INVALID_PARAM);
	fd = open(path, O_RDONLY);
	cr_assert_eq(pread(fd, after, 8192, 0), 8192);
	close(fd);
	cr_expect_eq(memcmp(head, after, 8192), 0, "the file was written");
	free(head);
	free(after);
}

/* A loop device over a new file of 64 MiB and 4 KiB (zeros); its number, or -1 where this process may not make one
 * (not root, no loop driver). */
static int loop_attach(const char *file, char *dev, size_t devlen)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), n = -1, bfd = -1, lfd = -1;

	if (ctl >= 0)
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
	if (n >= 0) {
		snprintf(dev, devlen, "/dev/loop%d", n);
		bfd = open(file, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
		lfd = open(dev, O_RDWR | O_CLOEXEC);
	}
	if (bfd < 0 || lfd < 0 || ftruncate(bfd, 64 * MiB + 4096) || ioctl(lfd, LOOP_SET_FD, bfd))
		n = -1;
	if (bfd >= 0)
		close(bfd);
	if (lfd >= 0)
		close(lfd);
	if (ctl >= 0)
		close(ctl);
	return n;
}

static void loop_detach(const char *dev)
{
	int lfd = open(dev, O_RDWR | O_CLOEXEC);

	if (lfd >= 0) {
		ioctl(lfd, LOOP_CLR_FD, 0);
		close(lfd);
	}
}

/* The file lock belongs to the device node, and two containers each have their own node for one disk; the block
 * device itself is claimed (O_EXCL), so anything holding it so, a mount included, keeps a service off it. */
Test(ssd, a_block_device_another_holds_is_refused)
{
	char file[400], dev[64];
	int held;

	snprintf(file, sizeof(file), "%s/loop.bin", meta.dir);
	if (geteuid() != 0 || loop_attach(file, dev, sizeof(dev)) < 0)
		cr_skip_test("needs root and a loop device");
	held = open(dev, O_RDWR | O_EXCL | O_CLOEXEC);
	cr_assert_geq(held, 0, "%s: %s", dev, strerror(errno));
	cr_expect_eq(init_on(dev), MMC_INVALID_PARAM, "taken while held");
	close(held);
	cr_expect_eq(init_on(dev), 0, "taken once free (and labelled: its first 4 KiB were zeros)");
	cr_expect_eq(init_on(dev), 0, "taken again by its label");
	loop_detach(dev);
}

/* A child forked without exec (Python's multiprocessing) shares the process's open files: it must not keep the
 * SSD file's lock once the service is gone, or the service could not start again on its file. */
Test(ssd, a_forked_child_does_not_keep_the_file)
{
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	mmc_destroy(s);
	s = NULL;
	{
		mmc_local_config c = fixture_config(meta.url, 8 * MiB);
		mmc_store *again = mmc_create();

		snprintf(c.ssd_path, sizeof(c.ssd_path), "%s", ssd_path);
		c.ssd_size = 64 * MiB;
		cr_assert_eq(mmc_setup(again, &c), 0);
		cr_expect_eq(mmc_init(again, 0, true), 0, "the file is free again while the child lives");
		s = again;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* ssd_key (pattern ssd_seed) on the SSD tier, dram_key (dram_seed) in DRAM; then the meta server is killed. */
static void leave_on_ssd_and_kill_meta(const char *ssd_key, uint64_t ssd_seed, const char *dram_key, uint64_t dram_seed)
{
	put(ssd_key, ssd_seed);
	if (dram_key)
		put(dram_key, dram_seed);
	cr_assert_eq(mmc_evict_keys(s, &ssd_key, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	metaserver_kill(&meta);
}

Test(ssd, ssd_keys_survive_a_metaserver_restart)
{
	leave_on_ssd_and_kill_meta("durable-ssd", 31, "durable-dram", 32);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	for (int i = 0; i < 100 && mmc_is_exist(s, "durable-ssd") != 1; i++)
		usleep(50000); /* the store reconnects and rejoins */
	cr_assert_eq(media_of(s, "durable-ssd"), MMC_MEDIA_SSD);
	cr_assert_eq(get_check(s, "durable-ssd", 31), 0);
	cr_assert_eq(get_check(s, "durable-dram", 32), 0);
}

/*
 * A local service and the meta server that die together (a power cut of a head node that also lends): the restarted
 * server loads the service and waits for it to rejoin, which it never will. Its successor, bringing the same SSD
 * file, adopts the SSD keys at once; they used to go when the wait ran out, since the file's identity was in
 * memory only.
 */
Test(ssd, ssd_keys_survive_a_restart_of_their_service_and_the_metaserver)
{
	leave_on_ssd_and_kill_meta("both-ssd", 41, "both-dram", 42);
	mmc_destroy(s); /* its Unregister goes nowhere; the process that lent is gone */
	s = NULL;
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB);
	cr_assert_eq(media_of(s, "both-ssd"), MMC_MEDIA_SSD);
	cr_assert_eq(get_check(s, "both-ssd", 41), 0);
	cr_assert_eq(mmc_is_exist(s, "both-dram"), 0, "DRAM content left with the process");
	cr_assert(metaserver_log_has(&meta, "op=adopt_ssd"));
}

/*
 * The service goes first, its SSD keys wait as an orphan for a successor, and the meta server restarts meanwhile (an
 * upgrade, a failover). The orphan used to live in memory only, so the restarted server dropped its keys as blobs of
 * a service that was gone; its record now brings it back with them.
 */
Test(ssd, ssd_keys_waiting_for_a_successor_survive_a_metaserver_restart)
{
	leave_keys_on_ssd(); /* the service unregistered: its SSD tier is an orphan */
	cr_assert(metaserver_log_has(&meta, "op=orphan_ssd"));
	metaserver_kill(&meta);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	cr_assert(metaserver_log_has(&meta, "op=load_orphan"), "the orphan came back with the restart");
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB);
	cr_assert_eq(media_of(s, "survivor0"), MMC_MEDIA_SSD);
	cr_assert_eq(get_check(s, "survivor0", 11), 0);
	cr_assert_eq(get_check(s, "survivor1", 12), 0);
	cr_assert_eq(mmc_is_exist(s, "dram-only"), 0, "DRAM content left with the process");
}

/* A cluster of one rank: the orphan keeps its rank from new services, but not from the one that brings its file, which
 * adopts it (it used to be refused, MMC_EXCEED_CAPACITY, and the keys went when the wait ran out). */
static void start_one_rank(void)
{
	const char *env[] = {"ock.mmc.meta.world_size=1", NULL};

	start_with(env);
}

Test(ssd, the_service_that_brings_the_file_gets_the_orphans_rank, .init = start_one_rank)
{
	leave_keys_on_ssd();
	s = ssd_store(ssd_path, 8 * MiB, 64 * MiB);
	cr_assert_eq(get_check(s, "survivor0", 11), 0);
	cr_assert(metaserver_log_has(&meta, "op=adopt_ssd"));
}

static void copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char *buf = malloc(MiB);
	ssize_t n;

	cr_assert(in >= 0 && out >= 0 && buf);
	while ((n = read(in, buf, MiB)) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	cr_assert_eq(n, 0);
	free(buf);
	close(in);
	close(out);
}

/* A copy of the SSD file (a cloned disk or VM image) is not the service's own file coming back: its lock says
 * nothing of the original's process, which may be alive and about to rejoin. It retires no service. */
Test(ssd, a_copy_of_the_ssd_file_retires_no_service)
{
	char copy[sizeof(ssd_path) + 8];

	leave_on_ssd_and_kill_meta("copied-ssd", 43, NULL, 0);
	mmc_destroy(s);
	s = NULL;
	snprintf(copy, sizeof(copy), "%s.copy", ssd_path);
	copy_file(ssd_path, copy);
	cr_assert_eq(metaserver_restart(&meta, NULL), 0);
	s = ssd_store(copy, 8 * MiB, 64 * MiB);
	cr_assert_not(metaserver_log_has(&meta, "op=retire"), "a copy retired the service it was copied from");
	cr_assert_not(metaserver_log_has(&meta, "op=adopt_ssd"));
}

/*
 * Room is made where it is needed. A put that names a service (a preferred rank) and an SSD key's read (its copy
 * lands in its own service's DRAM) need room on that service: another service's free memory is no use to them. They
 * used to evict only while no service at all had room, so with another pool half empty they failed with
 * MMC_NOT_ENOUGH_MEMORY instead of demoting the named service's least recently used.
 */
Test(ssd, room_is_made_on_the_service_that_must_hold_the_object)
{
	mmc_store *other = fixture_store(meta.url, true, 8 * MiB);
	mmc_replicate_config on_a = {1, 1, {(int32_t)fixture_rank(s)}};
	const char *cold[] = {"cold"};
	void *buf = malloc(MiB);
	char key[16];

	pattern_fill(buf, MiB, 40);
	cr_assert_eq(mmc_put_from(s, "cold", buf, MiB, MMC_COPY_H2G, &on_a), 0);
	cr_assert_eq(mmc_evict_keys(s, cold, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	for (int i = 0; i < 12; i++) { /* 12 MiB for A's 8: half of all DRAM, under the high mark */
		snprintf(key, sizeof(key), "on-a%d", i);
		pattern_fill(buf, MiB, (uint64_t)i);
		cr_assert_eq(mmc_put_from(s, key, buf, MiB, MMC_COPY_H2G, &on_a), 0, "put %s on A", key);
	}
	free(buf);
	wait_media("on-a0", MMC_MEDIA_SSD);
	cr_assert_eq(get_check(other, "cold", 40), 0, "an SSD key of a full service is read");
	for (int i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "on-a%d", i);
		cr_expect_eq(get_check(s, key, (uint64_t)i), 0, "%s", key);
	}
	mmc_destroy(other);
}

static void start_low_watermark(void)
{
	const char *env[] = {"ock.mmc.evict_threshold_high=70", "ock.mmc.evict_threshold_low=50",
	                     "ock.mmc.rewarm.dram_watermark=0", NULL};

	start_with(env);
}

TestSuite(ssd_stage, .init = start_low_watermark, .fini = stop, .timeout = 60);

Test(ssd_stage, above_the_watermark_gets_are_served_from_ssd_without_rewarming)
{
	const char *k[] = {"staged"};

	put("staged", 21);
	cr_assert_eq(mmc_evict_keys(s, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(get_check(s, "staged", 21), 0, "read %d", i);
	cr_assert_eq(media_of(s, "staged"), MMC_MEDIA_SSD, "not rewarmed");
	cr_assert_eq(mmc_remove(s, "staged"), 0);
	cr_assert_eq(mmc_is_exist(s, "staged"), 0);
}

Test(ssd_absent, evict_without_an_ssd_removes, .timeout = 60)
{
	mmc_store *plain;
	const char *k[] = {"gone"};
	char buf[100] = "x";

	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	plain = fixture_store(meta.url, true, 8 * MiB);
	cr_assert_eq(mmc_put_from(plain, "gone", buf, sizeof(buf), MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_evict_keys(plain, k, 1, MMC_MEDIA_DRAM, MMC_MEDIA_SSD, 0), 0);
	cr_assert_eq(mmc_is_exist(plain, "gone"), 0, "the seed's rule: removed from DRAM");
	mmc_destroy(plain);
	cr_expect_eq(metaserver_cleanup(&meta), 0);
}

static void start_high_watermark(void)
{
	const char *env[] = {"ock.mmc.evict_threshold_high=95", "ock.mmc.evict_threshold_low=90", NULL};

	start_with(env);
}

TestSuite(ssd_room, .init = start_high_watermark, .fini = stop, .timeout = 60);

/*
 * A put with no hole big enough makes room by demoting the least recently used, and a demote gives its DRAM back
 * only when its copy lands (and its range only once its record's write has). Once the demotes in flight and the
 * holds add up to the put's size, the put waits for them: it used to go on demoting until a hole appeared, which
 * none could before the loop's next turn, so one 2 MiB put moved the whole DRAM tier to SSD.
 */
Test(ssd_room, a_put_demotes_only_what_it_needs)
{
	void *big = malloc(2 * MiB);
	char key[16];

	for (int i = 0; i < 7; i++) { /* 7 of 8 MiB: under the high mark, no eviction yet */
		snprintf(key, sizeof(key), "k%d", i);
		put(key, (uint64_t)i);
	}
	pattern_fill(big, 2 * MiB, 77);
	cr_assert_eq(mmc_put_from(s, "big", big, 2 * MiB, MMC_COPY_H2G, NULL), 0, "room was made");
	free(big);
	wait_media("k0", MMC_MEDIA_SSD);
	wait_media("k1", MMC_MEDIA_SSD);
	/* the put retries as each move lands and each hold ends; one of those in between (one hold ended, not yet the
	 * other) may take one more */
	for (int i = 4; i < 7; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_expect_eq(media_of(s, key), MMC_MEDIA_DRAM, "%s was moved for room the put did not need", key);
	}
	for (int i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_expect_eq(get_check(s, key, (uint64_t)i), 0, "%s", key);
	}
}
