/*
 * mmc-metaserver logging: one line per event, "LEVEL key=value ..." after a timestamp, on stderr or in the file
 * ock.mmc.log_path names. Values are logfmt (common/logfmt.h): a %s after `=` or inside a quoted span is quoted and
 * escaped, so `err=\"%s\"` stays one field whatever the string holds. Lines are written with one write(2) each, so
 * threads and a log_reopen() never interleave or lose them. Per-client errors go through log_ratelimited() so a
 * misbehaving client cannot flood the log.
 */
#ifndef MMC_SRV_LOG_H
#define MMC_SRV_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

void log_set_level(enum log_level level);
/* Sends the log to path (appending, created 0640) instead of stderr. 0, or MMC_ERROR with a message in err. */
int log_open(const char *path, char *err, size_t errlen);
/* What log_open would say of path, without logging there (--check-config): a file it had to create is removed again.
 * 0, or MMC_ERROR with log_open's message in err. */
int log_check(const char *path, char *err, size_t errlen);
/* Sends the log back to stderr (a reload that cleared ock.mmc.log_path). */
void log_to_stderr(void);
/* Opens the log file again under its name (after logrotate moved it); no-op on stderr. 0, or MMC_ERROR with err. */
int log_reopen(char *err, size_t errlen);
/* Whether lines go to a file rather than stderr. */
bool log_to_file(void);
int log_parse_level(const char *name, enum log_level *out);
bool log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like log_msg, but at most burst lines per second for this call site's bucket. */
void log_ratelimited(int *bucket_state, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
