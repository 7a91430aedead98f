#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "log_level.h"

static void default_handler(int level, const char *msg)
{
	if (level >= MMC_LOG_WARN)
		fprintf(stderr, "libmmc %s: %s\n", log_level_name(level), msg);
}

static _Atomic(mmc_log_fn) handler = default_handler;
static atomic_int threshold = MMC_LOG_WARN;

void mmc_set_log_handler(mmc_log_fn fn)
{
	atomic_store(&handler, fn ? fn : default_handler);
}

void lg_set_level(int level)
{
	atomic_store(&threshold, level);
}

int lg_enabled(int level)
{
	return level >= atomic_load(&threshold);
}

void lg_emit(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!lg_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	atomic_load (&handler)(level, msg);
}
