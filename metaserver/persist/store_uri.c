#include "store_uri.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmc/mmc.h"
#include "uri_mask.h"

static int parse_number(const char *s, size_t n, int lo, int hi, int *out)
{
	char buf[16], *end;
	long v;

	if (n == 0 || n >= sizeof(buf))
		return MMC_ERROR;
	memcpy(buf, s, n);
	buf[n] = '\0';
	v = strtol(buf, &end, 10);
	if (*end || v < lo || v > hi)
		return MMC_ERROR;
	*out = (int)v;
	return 0;
}

/* user:password, or a lone token (the password, as the reference reads it) */
static int parse_userinfo(const char *s, size_t n, struct redis_uri *u)
{
	const char *colon = memchr(s, ':', n);
	size_t ulen = colon ? (size_t)(colon - s) : 0, plen = colon ? n - ulen - 1 : n;

	if (ulen >= sizeof(u->user) || plen >= sizeof(u->password) || (!colon && plen >= sizeof(u->user)))
		return MMC_ERROR;
	u->lone_token = !colon;
	memcpy(u->user, s, ulen);
	u->user[ulen] = '\0';
	memcpy(u->password, s + n - plen, plen);
	u->password[plen] = '\0';
	return 0;
}

/* /N or /?db=N or ?db=N after host:port */
static int parse_db(const char *s, struct redis_uri *u)
{
	const char *q;

	if (*s == '/')
		s++;
	if (!*s)
		return 0;
	if (*s != '?')
		return parse_number(s, strlen(s), 0, 1 << 20, &u->db);
	q = strstr(s, "db=");
	if (!q)
		return 0; /* other query parameters (cluster_name, ...) are the reference's and mean nothing here */
	return parse_number(q + 3, strcspn(q + 3, "&"), 0, 1 << 20, &u->db);
}

int redis_uri_parse(const char *uri, struct redis_uri *u, char *err, size_t errlen)
{
	const char *p = uri + 8, *at, *end, *colon;
	char shown[512];

	memset(u, 0, sizeof(*u));
	u->port = 6379;
	if (!uri_userinfo_maskable(uri)) {
		snprintf(
		    err, errlen,
		    "bad metadata store URI (not shown): its user or password holds a blank or a quote, which a log "
		    "could not mask; keep the password in ock.mmc.meta.store_password_file");
		return MMC_INVALID_PARAM;
	}
	uri_mask(uri, shown, sizeof(shown));
	if (strncmp(uri, "redis://", 8) != 0)
		goto bad;
	at = strchr(p, '@');
	if (at) {
		if (parse_userinfo(p, (size_t)(at - p), u))
			goto bad;
		p = at + 1;
	}
	end = p + strcspn(p, "/?");
	colon = memchr(p, ':', (size_t)(end - p));
	if ((colon ? colon : end) == p || (size_t)((colon ? colon : end) - p) >= sizeof(u->host))
		goto bad;
	memcpy(u->host, p, (size_t)((colon ? colon : end) - p));
	if (colon && parse_number(colon + 1, (size_t)(end - colon - 1), 1, 65535, &u->port))
		goto bad;
	if (parse_db(end, u))
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "bad metadata store URI \"%s\": expected redis://[user:password@]host:port[/db]", shown);
	return MMC_INVALID_PARAM;
}

void redis_uri_set_password(struct redis_uri *u, const char *password)
{
	if (!password || (u->password[0] && !u->lone_token))
		return;
	if (u->lone_token) /* parse_userinfo made sure a lone token fits the user */
		memcpy(u->user, u->password, strlen(u->password) + 1);
	snprintf(u->password, sizeof(u->password), "%s", password);
}
