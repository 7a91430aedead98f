#include "lg.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "log_level.h"
#include "logfmt.h"

static void default_handler(int level, const char *msg)
{
	if (level >= MMC_LOG_WARN)
		fprintf(stderr, "libmmc %s: %s\n", log_level_name(level), msg);
}

/*
 * The handler in force. Every call of it holds handler_lock for reading, so mmc_set_log_handler(), which takes it
 * for writing, returns only once no other thread is still inside the handler it replaced. A leaf: nothing is
 * locked while it is held except what the handler itself does.
 */
static pthread_rwlock_t handler_lock = PTHREAD_RWLOCK_INITIALIZER;
static _Atomic(mmc_log_fn) handler = default_handler;

/* This thread is inside the handler: lines it logs meanwhile are dropped (a handler that calls into libmmc does not
 * recurse), and a mmc_set_log_handler() from the handler does not wait for itself. */
static _Thread_local bool in_handler;

/* ock.mmc.log_level of every configured store; the threshold is the most verbose of them (MMC_LOG_WARN when no
 * store is configured), so no store's request for detail is silenced by another's mmc_setup(). */
static pthread_mutex_t level_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned level_holds[MMC_LOG_ERROR + 1];
static atomic_int threshold = MMC_LOG_WARN;

void mmc_set_log_handler(mmc_log_fn fn)
{
	if (in_handler) {
		atomic_store(&handler, fn ? fn : default_handler);
		return;
	}
	pthread_rwlock_wrlock(&handler_lock);
	atomic_store(&handler, fn ? fn : default_handler);
	pthread_rwlock_unlock(&handler_lock);
}

static void level_update(void)
{
	int t = MMC_LOG_WARN;

	for (int l = MMC_LOG_DEBUG; l <= MMC_LOG_ERROR; l++) {
		if (level_holds[l]) {
			t = l;
			break;
		}
	}
	atomic_store(&threshold, t);
}

void lg_level_hold(int level)
{
	if (level < MMC_LOG_DEBUG || level > MMC_LOG_ERROR)
		return;
	pthread_mutex_lock(&level_lock);
	level_holds[level]++;
	level_update();
	pthread_mutex_unlock(&level_lock);
}

void lg_level_release(int level)
{
	if (level < MMC_LOG_DEBUG || level > MMC_LOG_ERROR)
		return;
	pthread_mutex_lock(&level_lock);
	if (level_holds[level])
		level_holds[level]--;
	level_update();
	pthread_mutex_unlock(&level_lock);
}

int lg_enabled(int level)
{
	return level >= atomic_load(&threshold);
}

void lg_emit(int level, const char *fmt, ...)
{
	char msg[MMC_LOG_LINE_MAX];
	va_list ap;

	if (!lg_enabled(level) || in_handler)
		return;
	va_start(ap, fmt);
	logfmt_vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_rwlock_rdlock(&handler_lock);
	in_handler = true;
	atomic_load (&handler)(level, msg);
	in_handler = false;
	pthread_rwlock_unlock(&handler_lock);
}
