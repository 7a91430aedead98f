#include "meta_leader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmc/mmc.h"
#include "tcp_url.h"

#define HINT_USES 2

/* One "tcp://host:port" of len bytes (a host name, an IPv4 literal or a bracketed IPv6 one, as tcp_url.c reads
 * them on both ends). */
static int parse_one(const char *url, size_t len, char *host, size_t hostlen, uint16_t *port)
{
	char one[512];

	if (len >= sizeof(one))
		return MMC_ERROR;
	memcpy(one, url, len);
	one[len] = '\0';
	return tcp_url_parse(one, host, hostlen, port) || *port == 0 ? -1 : 0;
}

int meta_leader_parse(struct meta_leader *ml, const char *urls, char *first_host, size_t hostlen, uint16_t *first_port,
                      char *err, size_t errlen)
{
	struct meta_leader tmp = {0};
	const char *p = urls;

	while (*p) {
		const char *comma = strchr(p, ','), *e;

		while (*p == ' ')
			p++;
		e = comma ? comma : p + strlen(p);
		while (e > p && e[-1] == ' ')
			e--;
		if (tmp.n == META_ADDRS_MAX ||
		    parse_one(p, (size_t)(e - p), tmp.host[tmp.n], sizeof(tmp.host[0]), &tmp.port[tmp.n]))
			goto bad;
		tmp.n++;
		if (!comma)
			break;
		p = comma + 1;
		if (!*p)
			goto bad; /* a trailing comma */
	}
	if (!tmp.n || strlen(tmp.host[0]) >= hostlen)
		goto bad;
	snprintf(first_host, hostlen, "%s", tmp.host[0]);
	*first_port = tmp.port[0];
	if (ml)
		*ml = tmp;
	return 0;
bad:
	snprintf(err, errlen,
	         "bad value \"%s\" for \"ock.mmc.meta_service_url\" (expected tcp://host:port, or up to %d of them "
	         "separated by commas)",
	         urls, META_ADDRS_MAX);
	return MMC_INVALID_PARAM;
}

void meta_leader_target(const struct meta_leader *ml, const char **host, uint16_t *port)
{
	if (ml->hint_host[0]) {
		*host = ml->hint_host;
		*port = ml->hint_port;
		return;
	}
	*host = ml->host[ml->cur];
	*port = ml->port[ml->cur];
}

void meta_leader_failed(struct meta_leader *ml)
{
	if (ml->hint_host[0]) { /* the hint led nowhere: back to the list where it was */
		ml->hint_host[0] = '\0';
		return;
	}
	ml->cur = (ml->cur + 1) % ml->n;
}

void meta_leader_redirect(struct meta_leader *ml, const char *leader_url)
{
	const char *host;
	uint16_t port, tried;
	char h[256], err[8];

	meta_leader_target(ml, &host, &tried);
	if (!leader_url[0] || meta_leader_parse(NULL, leader_url, h, sizeof(h), &port, err, sizeof(err)) ||
	    (strcmp(h, host) == 0 && port == tried) || ml->hint_uses >= HINT_USES) {
		ml->hint_uses = 0;
		meta_leader_failed(ml);
		return;
	}
	ml->hint_uses++;
	snprintf(ml->hint_host, sizeof(ml->hint_host), "%s", h);
	ml->hint_port = port;
}

void meta_leader_connected(struct meta_leader *ml)
{
	ml->hint_uses = 0;
}

unsigned meta_leader_attempts(const struct meta_leader *ml)
{
	return ml->n + HINT_USES;
}
