/*
 * An acknowledged put is never lost: threads on two stores put distinct keys as fast as they can and record every
 * put that returned MMC_OK; the meta server is killed with SIGKILL at a random moment under that load, restarted,
 * and once the stores have rejoined every acknowledged key must exist and read back byte for byte. Several kills
 * per run, each at a different point of the group commit cycle (the provider comes from MMC_PROTOCOL).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"
#include "store_fixture.h"

#define STORES        2
#define THREADS       8 /* split over the stores */
#define ROUNDS        4
#define MAX_PER_ROUND 1500 /* puts per thread and round: bounds the pool use (4 KiB blocks) */
#define POOL          (64u << 20)
#define MAX_VALUE     6000

static struct metaserver meta;
static mmc_store *st[STORES];
static atomic_bool stop_puts;
static atomic_int put_errors;

struct acked {
	int n;
	int idx[MAX_PER_ROUND];
};
static struct acked acked[ROUNDS][THREADS];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void key_of(char *buf, size_t len, int round, int t, int i)
{
	snprintf(buf, len, "dur/%d/%d/%d", round, t, i);
}

static size_t size_of(int round, int t, int i)
{
	return 1 + (size_t)((round * 7919 + t * 104729 + i * 131) % MAX_VALUE);
}

static uint64_t seed_of(int round, int t, int i)
{
	return ((uint64_t)round << 40) | ((uint64_t)t << 32) | (uint64_t)i;
}

struct worker_arg {
	int round, t;
};

static void *worker(void *arg)
{
	const struct worker_arg *w = arg;
	mmc_store *s = st[w->t % STORES];
	struct acked *a = &acked[w->round][w->t];
	static _Thread_local unsigned char buf[MAX_VALUE];
	char key[64];

	for (int i = 0; i < MAX_PER_ROUND && !atomic_load(&stop_puts); i++) {
		size_t n = size_of(w->round, w->t, i);
		int rc;

		key_of(key, sizeof(key), w->round, w->t, i);
		pattern_fill(buf, n, seed_of(w->round, w->t, i));
		rc = mmc_put_from(s, key, buf, n, MMC_COPY_H2G, NULL);
		if (rc == 0)
			a->idx[a->n++] = i;
		else
			atomic_fetch_add(&put_errors, 1);
	}
	return NULL;
}

static void start(void)
{
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
	for (int i = 0; i < STORES; i++)
		st[i] = fixture_store(meta.url, true, POOL);
}

static void stop(void)
{
	for (int i = 0; i < STORES; i++)
		mmc_destroy(st[i]);
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

/* After a restart each store rejoins on its own schedule: wait until a key it acknowledged is served again. */
static void wait_rejoined(int round)
{
	char key[64];

	for (int t = 0; t < STORES; t++) {
		for (int r = round; r >= 0; r--) {
			if (!acked[r][t].n)
				continue;
			key_of(key, sizeof(key), r, t, acked[r][t].idx[0]);
			for (int i = 0; i < 200 && mmc_is_exist(st[(t + 1) % STORES], key) != 1; i++)
				usleep(50000);
			break;
		}
	}
}

/* Every key acknowledged in rounds 0..last exists and holds its bytes, read through the other store. */
static int check_acknowledged(int last, int *checked)
{
	static unsigned char buf[MAX_VALUE];
	char key[64];
	int lost = 0;

	*checked = 0;
	for (int r = 0; r <= last; r++) {
		for (int t = 0; t < THREADS; t++) {
			for (int j = 0; j < acked[r][t].n; j++) {
				int i = acked[r][t].idx[j], rc;
				size_t n = size_of(r, t, i);

				key_of(key, sizeof(key), r, t, i);
				rc = mmc_get_into(st[(t + 1) % STORES], key, buf, n, MMC_COPY_G2H);
				if (rc != 0 || pattern_check(buf, n, seed_of(r, t, i)) != n) {
					if (lost++ < 10)
						cr_log_warn(
						    "acknowledged key %s lost after kill %d: get %d (%s), exist %d",
						    key, r, rc, mmc_strerror(rc),
						    mmc_is_exist(st[(t + 1) % STORES], key));
				}
				(*checked)++;
			}
		}
	}
	return lost;
}

TestSuite(durability, .init = start, .fini = stop, .timeout = 180);

Test(durability, acknowledged_puts_survive_sigkill_under_load)
{
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	double t0 = now();
	int grand = 0;

	for (int round = 0; round < ROUNDS; round++) {
		pthread_t th[THREADS];
		struct worker_arg args[THREADS];
		int delay_us = 50000 + (int)(rand_r(&seed) % 300000), checked, total = 0;

		atomic_store(&stop_puts, false);
		for (int t = 0; t < THREADS; t++) {
			args[t] = (struct worker_arg){round, t};
			cr_assert_eq(pthread_create(&th[t], NULL, worker, &args[t]), 0);
		}
		usleep((useconds_t)delay_us); /* deliberate: a random instant of the puts for the kill */
		metaserver_kill(&meta);
		/* puts in flight now fail or finish after the restart: an OK either way is an acknowledgement */
		atomic_store(&stop_puts, true);
		cr_assert_eq(metaserver_restart(&meta, NULL), 0, "round %d: the metaserver did not restart", round);
		for (int t = 0; t < THREADS; t++)
			pthread_join(th[t], NULL);
		for (int t = 0; t < THREADS; t++)
			total += acked[round][t].n;
		wait_rejoined(round);
		cr_assert_eq(check_acknowledged(round, &checked), 0,
		             "round %d (kill after %d ms): acknowledged puts lost", round, delay_us / 1000);
		cr_log_info("round %d: kill after %d ms, %d puts acknowledged, %d checked", round, delay_us / 1000,
		            total, checked);
		grand += total;
		if (now() - t0 > 30)
			break;
	}
	cr_log_info("put errors around the kills: %d", atomic_load(&put_errors));
	cr_assert_gt(grand, 0, "no put was acknowledged: the test proved nothing");
}

/*
 * The same promise when the metadata store cannot commit: with a 1 MiB LMDB map the commits start failing with
 * MDB_MAP_FULL under a stream of puts. A put whose commit failed must not be acknowledged (it fails with
 * MMC_META_BACKUP_ERROR), so after a kill and a restart with room to spare every put that returned OK is still there.
 */
#define FULL_THREADS 4
#define FULL_MAX     20000
#define FULL_ENOUGH  24000 /* acknowledged puts: about three times what fits in the 1 MiB map */

static struct metaserver full_meta;
static mmc_store *full_st[STORES];
static struct {
	int n;
	int idx[FULL_MAX];
} full_acked[FULL_THREADS], full_failed[FULL_THREADS];
static atomic_int full_errors, full_oks, full_backup_errors;

static void *full_worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	static _Thread_local unsigned char buf[1024];
	char key[64];

	for (int i = 0; i < FULL_MAX && !atomic_load(&stop_puts); i++) {
		snprintf(key, sizeof(key), "full/%d/%d", t, i);
		pattern_fill(buf, sizeof(buf), seed_of(99, t, i));
		int rc = mmc_put_from(full_st[0], key, buf, sizeof(buf), MMC_COPY_H2G, NULL);

		if (rc == 0) {
			full_acked[t].idx[full_acked[t].n++] = i;
			atomic_fetch_add(&full_oks, 1);
		} else {
			atomic_fetch_add(&full_errors, 1);
			atomic_fetch_add(&full_backup_errors, rc == MMC_META_BACKUP_ERROR);
			if (rc == MMC_META_BACKUP_ERROR)
				full_failed[t].idx[full_failed[t].n++] = i;
		}
	}
	return NULL;
}

static mmc_store *full_store(void)
{
	mmc_local_config c = fixture_config(full_meta.url, 256u << 20);
	mmc_store *s = mmc_create();

	c.timeout_ms = 5000;
	cr_assert_not_null(s);
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0, "mmc_init failed");
	return s;
}

static void full_start(void)
{
	const char *env[] = {"ock.mmc.meta.lmdb.map_size=1048576", NULL};

	cr_assert_eq(metaserver_start(&full_meta, env), 0);
	for (int i = 0; i < STORES; i++)
		full_st[i] = full_store();
}

static void full_stop(void)
{
	for (int i = 0; i < STORES; i++)
		mmc_destroy(full_st[i]);
	cr_expect_eq(metaserver_cleanup(&full_meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(durability_full, .init = full_start, .fini = full_stop, .timeout = 180);

#define GVA_KEYS 8

/* The GVA flow's write_finish and its retry, of GVA_KEYS keys while commits fail: ok_said[i] when a finish said OK,
 * which it may only once the object is on disk. The retry met the object already readable and said OK at once. */
static int gva_finish_retried(mmc_store *s, bool *ok_said)
{
	static unsigned char buf[3000];
	int refused = 0;

	for (int i = 0; i < GVA_KEYS; i++) {
		char key[32];
		const char *k[] = {key};
		size_t size = sizeof(buf);
		void *b = buf;
		mmc_gva gva = 0;
		int32_t ok = 0;
		int res = -1;

		snprintf(key, sizeof(key), "full/gva/%d", i);
		pattern_fill(buf, sizeof(buf), seed_of(98, 0, i));
		ok_said[i] = false;
		if (mmc_batch_malloc(s, k, &size, 1, MMC_MEDIA_DRAM, 0, &gva) || !gva ||
		    mmc_batch_copy(s, &gva, &b, &size, 1, MMC_COPY_H2G, 0))
			continue;
		for (int try = 0; try < 2 && !ok_said[i]; try++) {
			int rc = mmc_batch_write_finish(s, k, &ok, 1, &res);

			ok_said[i] = rc == 0 && res == 0;
			refused += try == 0 && (rc == MMC_META_BACKUP_ERROR || res == MMC_META_BACKUP_ERROR);
		}
	}
	return refused; /* first finishes that failed: their retries were what this tried */
}

static int gva_lost(mmc_store *s, const bool *ok_said)
{
	static unsigned char buf[3000];
	int lost = 0;

	for (int i = 0; i < GVA_KEYS; i++) {
		char key[32];
		int rc;

		snprintf(key, sizeof(key), "full/gva/%d", i);
		if (!ok_said[i])
			continue;
		rc = mmc_get_into(s, key, buf, sizeof(buf), MMC_COPY_G2H);
		if (rc != 0 || pattern_check(buf, sizeof(buf), seed_of(98, 0, i)) != sizeof(buf)) {
			cr_log_warn("acknowledged write_finish of %s lost: get %d (%s)", key, rc, mmc_strerror(rc));
			lost++;
		}
	}
	return lost;
}

Test(durability_full, a_put_whose_commit_failed_is_not_acknowledged)
{
	const char *roomy[] = {"ock.mmc.meta.lmdb.map_size=67108864", NULL};
	static unsigned char buf[1024];
	pthread_t th[FULL_THREADS];
	double t0 = now();
	char key[64];
	int total = 0, lost = 0, retried_ok = 0;
	bool gva_acked[GVA_KEYS];

	atomic_store(&stop_puts, false);
	for (int t = 0; t < FULL_THREADS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, full_worker, (void *)(intptr_t)t), 0);
	/* until the map is full and puts fail, or far more puts were acknowledged than 1 MiB can hold */
	while (atomic_load(&full_errors) < 2 * FULL_THREADS && atomic_load(&full_oks) < FULL_ENOUGH && now() - t0 < 60)
		usleep(20000);
	atomic_store(&stop_puts, true);
	for (int t = 0; t < FULL_THREADS; t++)
		pthread_join(th[t], NULL);
	/* a retry finds the key in the index: it may answer OK only once the object is on disk */
	for (int t = 0, tried = 0; t < FULL_THREADS; t++) {
		for (int j = 0; j < full_failed[t].n && tried < 64; j++, tried++) {
			int i = full_failed[t].idx[j];

			snprintf(key, sizeof(key), "full/%d/%d", t, i);
			pattern_fill(buf, sizeof(buf), seed_of(99, t, i));
			if (mmc_put_from(full_st[0], key, buf, sizeof(buf), MMC_COPY_H2G, NULL) == 0) {
				full_acked[t].idx[full_acked[t].n++] = i;
				retried_ok++;
			}
		}
	}
	cr_expect_gt(gva_finish_retried(full_st[0], gva_acked), 0, "no write_finish met the full map");
	metaserver_kill(&full_meta);
	cr_assert_eq(metaserver_restart(&full_meta, roomy), 0);
	for (int t = 0; t < FULL_THREADS; t++)
		total += full_acked[t].n;
	cr_assert_gt(total, 0);
	snprintf(key, sizeof(key), "full/0/%d", full_acked[0].idx[0]);
	for (int i = 0; i < 200 && mmc_is_exist(full_st[1], key) != 1; i++)
		usleep(50000);
	for (int t = 0; t < FULL_THREADS; t++) {
		for (int j = 0; j < full_acked[t].n; j++) {
			int i = full_acked[t].idx[j], rc;

			snprintf(key, sizeof(key), "full/%d/%d", t, i);
			rc = mmc_get_into(full_st[1], key, buf, sizeof(buf), MMC_COPY_G2H);
			if (rc != 0 || pattern_check(buf, sizeof(buf), seed_of(99, t, i)) != sizeof(buf)) {
				if (lost++ < 10)
					cr_log_warn("acknowledged key %s lost: get %d (%s)", key, rc, mmc_strerror(rc));
			}
		}
	}
	cr_log_info("%d puts acknowledged before and while the map was full (%d of them retries), %d failed", total,
	            retried_ok, atomic_load(&full_errors));
	cr_assert_eq(lost, 0, "%d of %d acknowledged puts lost", lost, total);
	cr_assert_eq(gva_lost(full_st[1], gva_acked), 0, "an acknowledged write_finish was lost");
	cr_expect_gt(atomic_load(&full_backup_errors), 0, "a put whose commit failed says so (MMC_META_BACKUP_ERROR)");
}

/*
 * "The key exists" is a put's success, so it must wait for that object's commit: a second put of a key whose first
 * put is still committing (every commit held 1.5 s here) is answered only once the object is on disk. Killed before
 * that, the second put is not acknowledged; if it is, the key survives the restart.
 */
#define DUP_SIZE (5u << 20) /* above the extent limit (4 MiB): alloc + commit, the path whose "exists" answer waits */

struct dup_put {
	mmc_store *st;
	int rc;
	atomic_bool done;
};

static void *dup_put(void *arg)
{
	static unsigned char buf[DUP_SIZE];
	struct dup_put *p = arg;

	pattern_fill(buf, sizeof(buf), 77);
	p->rc = mmc_put_from(p->st, "dup/key", buf, sizeof(buf), MMC_COPY_H2G, NULL);
	atomic_store(&p->done, true);
	return NULL;
}

static mmc_store *dup_store(const char *url, bool lend)
{
	mmc_local_config c = fixture_config(url, 16u << 20);
	mmc_store *s = mmc_create();

	c.retry_ms = 0; /* a put the kill interrupts fails, and stays failed */
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, lend), 0);
	return s;
}

Test(durability_dup, a_duplicate_put_is_acknowledged_only_once_the_first_is_on_disk, .timeout = 60)
{
	struct metaserver m;
	struct dup_put first = {0}, second = {0};
	pthread_t t1, t2;
	bool acked_early;

	setenv("MMC_TEST_COMMIT_DELAY_MS", "1500", 1);
	cr_assert_eq(metaserver_start(&m, NULL), 0);
	unsetenv("MMC_TEST_COMMIT_DELAY_MS");
	first.st = dup_store(m.url, true);
	second.st = dup_store(m.url, false);
	cr_assert_eq(pthread_create(&t1, NULL, dup_put, &first), 0);
	/* until the first put's commit is queued: the key is readable in memory, not yet on disk */
	for (int i = 0; i < 1000 && mmc_is_exist(second.st, "dup/key") != 1; i++)
		usleep(1000);
	cr_assert_eq(pthread_create(&t2, NULL, dup_put, &second), 0);
	usleep(400000); /* deliberate: 0.4 s of the 1.5 s commit in which the second put must not be answered */
	acked_early = atomic_load(&second.done) && second.rc == 0;
	metaserver_kill(&m);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	cr_assert_eq(metaserver_restart(&m, NULL), 0);
	cr_expect_not(acked_early, "the second put answered MMC_OK before the first one's commit was on disk");
	if (second.rc == 0) { /* acknowledged: it must be there once the owner has rejoined */
		int rc = MMC_OBJECT_NOT_EXISTS;

		for (int i = 0; i < 100 && (rc = fixture_get(second.st, "dup/key", DUP_SIZE, 77)) != 0; i++)
			usleep(50000);
		cr_expect_eq(rc, 0, "an acknowledged put is lost after kill -9");
	}
	mmc_destroy(second.st);
	mmc_destroy(first.st);
	cr_expect_eq(metaserver_cleanup(&m), 0);
}
