/* Choosing a lock backend by URI, and the lock's value as text. */
#include "lock.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mmc/mmc.h"
#include "uri_mask.h"

int ha_lock_bad_uri(const char *uri, const char *expected, char *err, size_t errlen)
{
	char shown[1024];

	/* the message also reaches stderr without the log's own masking (a failed start that logs to a file) */
	uri_mask(uri, shown, sizeof(shown));
	snprintf(err, errlen, "bad value \"%s\" for \"kvcm.distributed_lock.uri\" (expected %s)", shown, expected);
	return MMC_INVALID_PARAM;
}

int ha_lock_check(const char *uri, const char *password_file, char *err, size_t errlen)
{
	if (strncmp(uri, "file://", 7) == 0 && uri[7])
		return 0;
	if (strncmp(uri, "redis://", 8) == 0 && uri[8])
		return ha_lock_redis_check(uri, password_file, err, errlen);
	return ha_lock_bad_uri(uri, "file://DIR or redis://host:port[/db]", err, errlen);
}

int ha_lock_open(struct ha_lock **out, const char *uri, const char *password_file, uint32_t timeout_ms, char *err,
                 size_t errlen)
{
	int rc = ha_lock_check(uri, password_file, err, errlen);

	if (rc)
		return rc;
	if (strncmp(uri, "file://", 7) == 0)
		return ha_lock_file_open(out, uri + 7, err, errlen);
	return ha_lock_redis_open(out, uri, password_file, timeout_ms, err, errlen);
}

int ha_holder_format(const struct ha_holder *h, char *out, size_t len)
{
	/* the token after the fields a release before it reads (sscanf stops there) */
	int n = snprintf(out, len, "mmc-leader-v1 %s %s %s %u %u %" PRId64 "%s%s\n", h->node_id, h->rpc,
	                 h->host[0] ? h->host : "-", h->http_port, h->admin_port, h->expiry_wall_ms,
	                 h->token[0] ? " " : "", h->token);

	return n > 0 && (size_t)n < len ? n : MMC_INVALID_PARAM;
}

int ha_holder_parse(struct ha_holder *h, const char *text)
{
	struct ha_holder t = {0};
	int n;

	/* widths: one less than each field's size */
	n = sscanf(text, "mmc-leader-v1 %127s %319s %255s %u %u %" SCNd64 " %16s", t.node_id, t.rpc, t.host,
	           &t.http_port, &t.admin_port, &t.expiry_wall_ms, t.token);
	if (n != 6 && n != 7)
		return MMC_INVALID_PARAM;
	if (strcmp(t.host, "-") == 0)
		t.host[0] = '\0';
	*h = t;
	return 0;
}

int64_t ha_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
