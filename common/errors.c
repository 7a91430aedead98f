#include "mmc/mmc.h"

#include <stddef.h>

/* Both tables come from MMC_ERRNO_MAP (include/mmc/mmc.h), the one list of codes, names and texts. */
#define STRERROR_CASE(name, value, text, when)                                                                         \
	case name:                                                                                                     \
		return #name ": " text;
#define NAME_CASE(name, value, text, when)                                                                             \
	case name:                                                                                                     \
		return #name;

const char *mmc_strerror(int code)
{
	switch (code) {
		MMC_ERRNO_MAP(STRERROR_CASE)
	default:
		return "unknown error";
	}
}

const char *mmc_err_name(int code)
{
	switch (code) {
		MMC_ERRNO_MAP(NAME_CASE)
	default:
		return NULL;
	}
}

const char *mmc_version(void)
{
	return MMC_VERSION_STRING;
}

unsigned mmc_version_number(void)
{
	return MMC_VERSION_HEX;
}
