/* common/clock.h: the bounded waits of libmmc and the elector time out by CLOCK_MONOTONIC, deadline and wait alike. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>

#include "clock.h"

/* A deadline is on the monotonic clock, not the wall clock (a step of which would stretch or cut every wait). */
Test(clock, a_deadline_is_monotonic_time)
{
	struct timespec now, dl = clock_deadline(0);

	clock_gettime(CLOCK_MONOTONIC, &now);
	cr_assert_leq(now.tv_sec - dl.tv_sec, 1, "deadline %lld s against monotonic %lld s", (long long)dl.tv_sec,
	              (long long)now.tv_sec);
	cr_assert_geq(now.tv_sec - dl.tv_sec, 0);
}

/* A variable of clock_cond_init() waits until a clock_deadline(), no less (mismatched clocks end a wait at once, or
 * decades later). */
Test(clock, a_wait_ends_at_its_deadline, .timeout = 10)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	struct timespec dl;
	uint64_t t0;
	int rc;

	cr_assert_eq(clock_cond_init(&cv), 0);
	pthread_mutex_lock(&mu);
	t0 = clock_ns();
	dl = clock_deadline(100);
	do
		rc = pthread_cond_timedwait(&cv, &mu, &dl);
	while (rc == 0); /* a spurious wake-up */
	pthread_mutex_unlock(&mu);
	cr_assert_eq(rc, ETIMEDOUT);
	cr_assert_geq(clock_ns() - t0, 100 * 1000000ull, "the wait ended %llu ns in",
	              (unsigned long long)(clock_ns() - t0));
	pthread_cond_destroy(&cv);
}
