#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log_level.h"
#include "logfmt.h"
#include "mmc/mmc.h"

static enum log_level current = LOG_INFO;

/* Where lines go. A reopen dup2()s the new file onto this descriptor, so a thread writing meanwhile writes to the
 * old or the new file, never to a closed descriptor. */
static int log_fd = STDERR_FILENO;
static char log_path[1024];

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

static int open_file(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	if (fd < 0)
		snprintf(err, errlen, "cannot open log file \"%s\": %s", path, strerror(errno));
	return fd;
}

/* open_file for a name log_path can hold. */
static int open_named(const char *path, char *err, size_t errlen)
{
	if (strlen(path) >= sizeof(log_path)) {
		snprintf(err, errlen, "log file name too long");
		return MMC_ERROR;
	}
	return open_file(path, err, errlen);
}

int log_check(const char *path, char *err, size_t errlen)
{
	struct stat st;
	bool existed = stat(path, &st) == 0;
	int fd = open_named(path, err, errlen);

	if (fd < 0)
		return MMC_ERROR;
	close(fd);
	if (!existed) /* a check leaves nothing behind */
		unlink(path);
	return 0;
}

int log_open(const char *path, char *err, size_t errlen)
{
	int fd = open_named(path, err, errlen);

	if (fd < 0)
		return MMC_ERROR;
	if (log_fd == STDERR_FILENO) {
		log_fd = fd;
	} else {
		dup2(fd, log_fd);
		close(fd);
	}
	strcpy(log_path, path);
	return 0;
}

void log_to_stderr(void)
{
	if (log_fd != STDERR_FILENO)
		dup2(STDERR_FILENO,
		     log_fd); /* the descriptor stays: a line being written by another thread is not lost */
	log_path[0] = '\0';
}

int log_reopen(char *err, size_t errlen)
{
	int fd;

	if (!log_path[0])
		return 0;
	fd = open_file(log_path, err, errlen);
	if (fd < 0)
		return MMC_ERROR;
	dup2(fd, log_fd);
	close(fd);
	return 0;
}

bool log_to_file(void)
{
	return log_path[0] != '\0';
}

static void vlog(enum log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	size_t n;
	ssize_t w;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = (size_t)snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ", tm.tm_year + 1900,
	                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
	                     log_level_name((int)level));
	n += logfmt_vformat(line + n, sizeof(line) - n - 1, fmt, ap);
	line[n++] = '\n';
	w = write(log_fd, line, n);
	(void)w; /* nowhere left to report a failed log write */
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
