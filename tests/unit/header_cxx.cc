// include/mmc/mmc.h from C++: extern "C" linkage and the structs as C++ sees them.
#include <mmc/mmc.h>

#include <cstdio>
#include <cstring>

int main()
{
	mmc_local_config c = mmc_default_local_config();
	mmc_replicate_config rc{};
	mmc_key_info info{};

	if (std::strcmp(c.meta_service_url, "tcp://127.0.0.1:5000") != 0 || rc.replica_num != 0 || info.size != 0)
		return 1;
	if (std::strcmp(mmc_strerror(MMC_OK), "MMC_OK: success") != 0)
		return 1;
	mmc_store *s = mmc_create();
	mmc_copy_direction dir = MMC_COPY_H2G; // the enum passes where the call takes int32_t, as a plain int does
	int rc_put = mmc_put_from(s, "k", "v", 1, dir, nullptr);
	if (mmc_err_name(rc_put) == nullptr || mmc_put_from(s, "k", "v", 1, 3, nullptr) != rc_put)
		return 1;
	mmc_destroy(s);
	std::printf("ok\n");
	return rc_put == MMC_CLIENT_NOT_INIT ? 0 : 1;
}
