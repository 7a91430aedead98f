/*
 * mmc-metaserver logging: one line per event on stderr, "LEVEL key=value ..." after a timestamp.
 * Per-client errors go through log_ratelimited() so a misbehaving client cannot flood the log.
 */
#ifndef MMC_SRV_LOG_H
#define MMC_SRV_LOG_H

#include <stdbool.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

void log_set_level(enum log_level level);
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
