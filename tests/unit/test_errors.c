/* The error codes of include/mmc/mmc.h through the public API: MMC_ERRNO_MAP, mmc_err_name() and mmc_strerror(). */
#include <mmc/mmc.h>

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>

/* The values are ABI (the seed's numbers, and mmc's own since): this copy pins them, so a change to the map that
 * renumbers a code fails here rather than in a caller built against an older header. */
static const struct {
	const char *name;
	int value;
} abi[] = {
    {"MMC_OK", 0},
    {"MMC_ERROR", -1},
    {"MMC_INVALID_PARAM", -3000},
    {"MMC_MALLOC_FAILED", -3001},
    {"MMC_NEW_OBJECT_FAILED", -3002},
    {"MMC_NOT_STARTED", -3003},
    {"MMC_TIMEOUT", -3004},
    {"MMC_REPEAT_CALL", -3005},
    {"MMC_DUPLICATED_OBJECT", -3006},
    {"MMC_OBJECT_NOT_EXISTS", -3007},
    {"MMC_NOT_INITIALIZED", -3008},
    {"MMC_NET_SEQ_DUP", -3009},
    {"MMC_NET_SEQ_NOT_FOUND", -3010},
    {"MMC_ALREADY_NOTIFIED", -3011},
    {"MMC_INTERNAL_ERROR", -3012},
    {"MMC_EXCEED_CAPACITY", -3013},
    {"MMC_LINK_NOT_FOUND", -3014},
    {"MMC_NET_REQ_HANDLE_NOT_FOUND", -3015},
    {"MMC_NOT_ENOUGH_MEMORY", -3016},
    {"MMC_NOT_CONNECTED_META", -3017},
    {"MMC_NOT_CONNECTED_LOCAL", -3018},
    {"MMC_CLIENT_NOT_INIT", -3019},
    {"MMC_UNMATCHED_STATE", -3101},
    {"MMC_UNMATCHED_KEY", -3102},
    {"MMC_UNMATCHED_RET", -3103},
    {"MMC_LEASE_NOT_EXPIRED", -3104},
    {"MMC_META_BACKUP_ERROR", -3105},
    {"MMC_LEASE_EXPIRED", -3106},
    {"MMC_CHECKSUM_MISMATCH", -3109},
    {"MMC_NOT_AUTHORIZED", -3110},
    {"MMC_NOT_LEADER", -3120},
};

#define COUNT(name, value, text, when) +1
enum { MAP_SIZE = 0 MMC_ERRNO_MAP(COUNT) };

Test(errors, the_values_are_the_abi)
{
	cr_assert_eq(MAP_SIZE, sizeof(abi) / sizeof(abi[0]), "a code was added or dropped: pin it here");
	for (size_t i = 0; i < sizeof(abi) / sizeof(abi[0]); i++) {
		const char *name = mmc_err_name(abi[i].value);

		cr_assert(name != NULL, "%d has no name", abi[i].value);
		cr_assert_str_eq(name, abi[i].name, "%d", abi[i].value);
	}
}

Test(errors, err_name_names_each_code)
{
	cr_assert_str_eq(mmc_err_name(MMC_TIMEOUT), "MMC_TIMEOUT");
	cr_assert_str_eq(mmc_err_name(MMC_OK), "MMC_OK");
	cr_assert_str_eq(mmc_err_name(MMC_META_BACKUP_ERROR), "MMC_META_BACKUP_ERROR");
#define SAME_NAME(name, value, text, when) cr_assert_str_eq(mmc_err_name(name), #name);
	MMC_ERRNO_MAP(SAME_NAME)
}

Test(errors, strerror_is_the_name_and_the_text)
{
	char want[256];

	cr_assert_str_eq(mmc_strerror(MMC_OK), "MMC_OK: success");
	cr_assert_str_eq(mmc_strerror(MMC_NOT_ENOUGH_MEMORY), "MMC_NOT_ENOUGH_MEMORY: not enough memory in the pool");
#define NAME_AND_TEXT(name, value, text, when)                                                                         \
	snprintf(want, sizeof(want), "%s: %s", mmc_err_name(name), text);                                              \
	cr_assert_str_eq(mmc_strerror(name), want);
	MMC_ERRNO_MAP(NAME_AND_TEXT)
}

Test(errors, unknown_codes)
{
	static const int unknown[] = {1, -2, -2999, -3020, -3107, -3108, -3999, -4000, INT_MIN, INT_MAX};

	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		cr_assert_null(mmc_err_name(unknown[i]), "%d", unknown[i]);
		cr_assert_str_eq(mmc_strerror(unknown[i]), "unknown error", "%d", unknown[i]);
	}
}

Test(errors, every_code_lies_in_the_documented_range)
{
#define IN_RANGE(name, value, text, when) cr_assert(name <= 0 && name > -4000, #name);
	MMC_ERRNO_MAP(IN_RANGE)
}
