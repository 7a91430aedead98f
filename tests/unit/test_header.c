/* include/mmc/mmc.h compiles on its own (included first, nothing before it) and its constants match the seed. */
#include <mmc/mmc.h>

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>

Test(header, constants_match_the_seed)
{
	cr_assert_eq(MMC_OK, 0);
	cr_assert_eq(MMC_ERROR, -1);
	cr_assert_eq(MMC_INVALID_PARAM, -3000);
	cr_assert_eq(MMC_CLIENT_NOT_INIT, -3019);
	cr_assert_eq(MMC_UNMATCHED_STATE, -3101);
	cr_assert_eq(MMC_META_BACKUP_ERROR, -3105);
	cr_assert_eq(MMC_LEASE_EXPIRED, -3106);
	cr_assert_eq(MMC_CHECKSUM_MISMATCH, -3109); /* an mmc addition, clear of MemCache's -3107 and -3108 */
	cr_assert_eq(MMC_COPY_L2G, 0);
	cr_assert_eq(MMC_COPY_G2H, 2);
	cr_assert_eq(MMC_COPY_H2G, 3);
	cr_assert_eq(MMC_COPY_AUTO, 9);
	cr_assert_eq(MMC_MEDIA_HBM, 0);
	cr_assert_eq(MMC_MEDIA_DRAM, 1);
	cr_assert_eq(MMC_MEDIA_SSD, 2);
	cr_assert_eq(MMC_BATCH_MAX, 16384);
	cr_assert_eq(MMC_LAYERS_MAX, 255);
	cr_assert_eq(MMC_REPLICA_MAX, 8);
	cr_assert_eq(MMC_WORLD_SIZE_MAX, 1024);
	cr_assert_eq(MMC_DEVICE_ID_MAX, 383);
	cr_assert_eq(sizeof(mmc_gva), 8);
	cr_assert_eq(sizeof(((mmc_key_info *)0)->gva) / sizeof(mmc_gva), MMC_REPLICA_MAX);
	cr_assert_eq(sizeof(((mmc_replicate_config *)0)->preferred_local_service_ids) / sizeof(int32_t),
	             MMC_REPLICA_MAX);
	cr_assert_eq(sizeof(((mmc_local_config *)0)->meta_service_url), MMC_URL_SIZE);
	cr_assert_eq(sizeof(((mmc_local_config *)0)->ssd_path), MMC_PATH_SIZE);
	cr_assert_eq(offsetof(mmc_local_config, version), 0, "the layout version comes first");
	cr_assert_str_eq(mmc_version(), MMC_VERSION_STRING);
}

Test(header, version_number)
{
	char text[32];

	cr_assert_eq(MMC_VERSION_HEX, (MMC_VERSION_MAJOR << 16) | (MMC_VERSION_MINOR << 8) | MMC_VERSION_PATCH);
	cr_assert_eq(mmc_version_number(), (unsigned)MMC_VERSION_HEX);
	snprintf(text, sizeof(text), "%u.%u.%u", mmc_version_number() >> 16, (mmc_version_number() >> 8) & 0xff,
	         mmc_version_number() & 0xff);
	cr_assert_str_eq(text, mmc_version(), "the number and the string of the loaded library agree");
#if MMC_VERSION_HEX < 0x000100
#error "MMC_VERSION_HEX must work in #if"
#endif
}

Test(header, typed_enums_keep_the_values)
{
	mmc_media m = MMC_MEDIA_SSD;
	mmc_copy_direction d = MMC_COPY_GH2H;
	enum mmc_errno e = MMC_NOT_LEADER;

	cr_assert_eq(m, 2);
	cr_assert_eq(d, 6);
	cr_assert_eq(e, -3120);
	cr_assert_eq(MMC_COPY_G2L, 1);
	cr_assert_eq(MMC_COPY_L2GH, 4);
	cr_assert_eq(MMC_COPY_GH2L, 5);
	cr_assert_eq(MMC_COPY_H2GH, 7);
	cr_assert_eq(MMC_COPY_G2G, 8);
	/* the calls keep their integer parameters: an enum value passes as before */
	cr_assert_eq(mmc_put_from(NULL, "k", "v", 1, d, NULL), MMC_INVALID_PARAM);
}
