#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log_level.h"

static enum log_level current = LOG_INFO;

void log_set_level(enum log_level level)
{
	current = level;
}

int log_parse_level(const char *name, enum log_level *out)
{
	int level;

	if (log_level_parse(name, &level))
		return -1;
	*out = (enum log_level)level;
	return 0;
}

bool log_enabled(enum log_level level)
{
	return level >= current;
}

static void vlog(enum log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ", tm.tm_year + 1900, tm.tm_mon + 1,
	             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_level_name((int)level));
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	fprintf(stderr, "%s\n", line);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void log_ratelimited(int *bucket, enum log_level level, const char *fmt, ...)
{
	/* bucket holds (second << 8 | count): at most 10 lines per second per call site */
	time_t now = time(NULL);
	int sec = (int)(now & 0x7fffff);
	va_list ap;

	if (!log_enabled(level))
		return;
	if ((*bucket >> 8) != sec)
		*bucket = sec << 8;
	if ((*bucket & 0xff) >= 10)
		return;
	(*bucket)++;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}
