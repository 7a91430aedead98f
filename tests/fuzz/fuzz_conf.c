/*
 * libFuzzer target: the `key = value` configuration reader (common/conf_parse.c) with both key tables behind it,
 * the meta server's (meta_conf_load + meta_conf_check) and a store's (mmc_setup's file, local_config_resolve), on
 * the input as a file. Any input must give 0 or a message, never a crash or a read past a line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "local_config.h"
#include "meta_conf.h"
#include "meta_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	static struct meta_settings mc;
	struct client_conf cc;
	mmc_local_config lc = mmc_default_local_config();
	struct meta_err e;
	char err[512];

	if (fd < 0) {
		fd = memfd_create("mmc-fuzz-conf", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	meta_settings_defaults(&mc);
	meta_err_clear(&e);
	if (meta_conf_load(&mc, path, &e) == 0)
		meta_conf_check(&mc.conf, &e);
	snprintf(lc.config_path, sizeof(lc.config_path), "%s", path);
	local_config_resolve(&lc, &cc, err, sizeof(err));
	return 0;
}
