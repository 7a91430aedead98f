#include "log_level.h"

#include <string.h>

#include "mmc/mmc.h"

const char *const log_level_names[] = {"debug", "info", "warn", "error", NULL};

_Static_assert(MMC_LOG_DEBUG == 0 && MMC_LOG_INFO == 1 && MMC_LOG_WARN == 2 && MMC_LOG_ERROR == 3,
               "log_level_names is indexed by enum mmc_log_level");

int log_level_parse(const char *name, int *level)
{
	for (int i = 0; log_level_names[i]; i++) {
		if (strcmp(name, log_level_names[i]) == 0) {
			*level = i;
			return 0;
		}
	}
	return -1;
}

const char *log_level_name(int level)
{
	return level >= MMC_LOG_DEBUG && level <= MMC_LOG_ERROR ? log_level_names[level] : "?";
}
