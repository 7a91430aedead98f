/*
 * Stores for the security tests: the meta connection's keys (the cluster secret, TLS) are file-only, so each store
 * gets its own config file holding them, as an operator's would.
 */
#ifndef MMC_TEST_STORE_CONF_H
#define MMC_TEST_STORE_CONF_H

#include <mmc/mmc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes text to a fresh file under /tmp and returns its path (static storage, one per call site's buffer). */
static inline void conf_write_file(char path[64], const char *text)
{
	int fd;

	snprintf(path, 64, "/tmp/mmc-sec-XXXXXX");
	fd = mkstemp(path);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0) {
		}
		close(fd);
	}
}

/* mmc_init of a store on url with the config-file lines lines (NULL: none). *out is the store (destroy it). */
static inline int store_open(const char *url, const char *lines, bool init_bm, mmc_store **out)
{
	mmc_local_config c = mmc_default_local_config();
	char path[64] = "";
	int rc;

	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "%s", url);
	strcpy(c.protocol, "host_tcp");
	c.dram_size = 8u << 20;
	if (lines) {
		conf_write_file(path, lines);
		snprintf(c.config_path, sizeof(c.config_path), "%s", path);
	}
	*out = mmc_create();
	rc = mmc_setup(*out, &c);
	if (rc == 0)
		rc = mmc_init(*out, 0, init_bm);
	if (path[0])
		unlink(path);
	return rc;
}

#endif
