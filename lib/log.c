#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static void default_handler(int level, const char *msg)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};

	if (level >= MMC_LOG_WARN)
		fprintf(stderr, "libmmc %s: %s\n", names[level & 3], msg);
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

int lg_parse_level(const char *name, int *level)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};

	for (int i = 0; i < 4; i++) {
		if (strcmp(name, names[i]) == 0) {
			*level = i;
			return 0;
		}
	}
	return -1;
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
