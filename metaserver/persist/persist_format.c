/*
 * The store's format version: the table "mmc_format", key "version", a decimal number. A store without one is
 * either new or written before versions existed (the same layout as version 1); both get the backend's version, and
 * so does an older version, which this binary reads (and from now on writes records that only this format admits:
 * a release of the older format then refuses the store instead of dropping them). A newer version is refused: this
 * binary would misread it, and writing to it could damage it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mmc/mmc.h"
#include "persist_backend.h"

int persist_format_check(struct persist *p, char *err, size_t errlen)
{
	struct persist_table *t;
	char buf[32], now[16];
	size_t len = 0;
	int format = persist_format_version(p);
	unsigned long v;
	int rc;

	if (persist_table(p, "mmc_format", &t)) {
		snprintf(err, errlen, "cannot open the format table of the %s store", persist_backend_name(p));
		return MMC_ERROR;
	}
	rc = persist_get(p, t, "version", 7, buf, sizeof(buf) - 1, &len);
	if (rc && rc != MMC_OBJECT_NOT_EXISTS) {
		snprintf(err, errlen, "cannot read the format version of the %s store", persist_backend_name(p));
		return MMC_ERROR;
	}
	buf[rc ? 0 : len] = '\0';
	v = rc ? 0 : strtoul(buf, NULL, 10);
	if (rc == MMC_OBJECT_NOT_EXISTS || (v > 0 && v < (unsigned long)format)) {
		snprintf(now, sizeof(now), "%d", format);
		if (persist_put(p, t, "version", 7, now, strlen(now)) || persist_flush(p)) {
			snprintf(err, errlen, "cannot write the format version to the %s store",
			         persist_backend_name(p));
			return MMC_ERROR;
		}
		if (v)
			log_info("op=store_format store=%s from=%lu to=%d", persist_backend_name(p), v, format);
		return 0;
	}
	if (v == 0 || v > (unsigned long)format) {
		snprintf(
		    err, errlen,
		    "the %s store has metadata format %s, this mmc-metaserver reads format %d: use the release that "
		    "wrote it (or a newer one)",
		    persist_backend_name(p), buf, format);
		return MMC_ERROR;
	}
	return 0;
}
