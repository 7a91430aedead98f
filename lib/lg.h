/*
 * libmmc logging. libmmc never writes anywhere on its own: lines go to the handler set with
 * mmc_set_log_handler(); the default handler writes warnings and errors to stderr. The contract the handler is
 * called under (threads, locks, re-entry) is stated at mmc_set_log_handler() in mmc/mmc.h. Strings are formatted as
 * logfmt values (common/logfmt.h): a %s inside a quoted span or after `=` is escaped, so a path holding a quote
 * cannot end the quoted field early. Thread-safe.
 */
#ifndef MMC_LG_H
#define MMC_LG_H

#include "mmc/mmc.h"

/*
 * The process-wide threshold is the most verbose level held by any configured store (MMC_LOG_WARN with none): a
 * store holds its ock.mmc.log_level from a successful mmc_setup() (or mmc_init() without one) until it is set up
 * again or torn down.
 */
void lg_level_hold(int level);
void lg_level_release(int level);
int lg_enabled(int level);
void lg_emit(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define lg_debug(...) (lg_enabled(MMC_LOG_DEBUG) ? lg_emit(MMC_LOG_DEBUG, __VA_ARGS__) : (void)0)
#define lg_info(...)  (lg_enabled(MMC_LOG_INFO) ? lg_emit(MMC_LOG_INFO, __VA_ARGS__) : (void)0)
#define lg_warn(...)  lg_emit(MMC_LOG_WARN, __VA_ARGS__)
#define lg_error(...) lg_emit(MMC_LOG_ERROR, __VA_ARGS__)

#endif
