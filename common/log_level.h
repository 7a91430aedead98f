/*
 * Log level names, shared by libmmc (lib/log.c) and mmc-metaserver (metaserver/log.c): one table, one parser, so
 * ock.mmc.log_level means the same on both sides. Levels are the values of enum mmc_log_level (mmc/mmc.h).
 * Pure functions; thread-safe.
 */
#ifndef MMC_LOG_LEVEL_H
#define MMC_LOG_LEVEL_H

/* NULL-terminated, in level order ("debug", "info", "warn", "error"): also the choices of the config keys. */
extern const char *const log_level_names[];

/* Sets *level to the level called name. Returns 0, or -1 (and leaves *level) for any other string. */
int log_level_parse(const char *name, int *level);

/* The name of level; "?" for a value that is not a level. */
const char *log_level_name(int level);

#endif
