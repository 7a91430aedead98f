/*
 * Monotonic time in the units the code base uses: ms for leases, deadlines and timeouts (the logical clock), ns
 * for measuring. Tests of the meta server stop the logical clock and move it by hand (clock_freeze,
 * clock_advance_ms) instead of sleeping through a timeout; clock_ns always runs. libmmc never stops it.
 */
#ifndef MMC_CLOCK_H
#define MMC_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* 0: the logical clock follows the monotonic one; else the frozen time in ms (clock.c). */
extern _Atomic uint64_t clock_frozen_ms;

static inline uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_ms(void)
{
	uint64_t frozen = atomic_load_explicit(&clock_frozen_ms, memory_order_relaxed);

	return frozen ? frozen : clock_ns() / 1000000u;
}

/* Stops the logical clock at now; from then on only clock_advance_ms moves it. Process-wide, any thread. */
void clock_freeze(void);
/* Moves a frozen logical clock forward by ms (a running one is left alone). Returns the new time. */
uint64_t clock_advance_ms(uint64_t ms);
bool clock_is_frozen(void);

/*
 * Initialises a condition variable whose waits time out at clock_deadline()s: they run on CLOCK_MONOTONIC, so a step
 * of the wall clock (NTP, an operator) neither stretches a bounded wait nor ends it early.
 */
static inline int clock_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;
	int rc;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	rc = pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
	return rc;
}

/* Absolute CLOCK_MONOTONIC deadline, ms from now, for pthread_cond_timedwait on a clock_cond_init() variable. */
static inline struct timespec clock_deadline(uint64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif
