#include "tcp_url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tcp_url_parse(const char *url, char *host, size_t hostlen, uint16_t *port)
{
	const char *h, *end, *colon;
	char *pend;
	unsigned long p;

	if (strncmp(url, "tcp://", 6) != 0)
		return -1;
	h = url + 6;
	if (h[0] == '[') { /* an IPv6 literal: its colons are not the port's */
		end = strchr(h, ']');
		if (!end || end[1] != ':')
			return -1;
		h++;
		colon = end + 1;
	} else {
		colon = strrchr(h, ':');
		end = colon;
		if (!colon || memchr(h, ':', (size_t)(colon - h)))
			return -1; /* a bare IPv6 literal: the port is ambiguous */
	}
	if (end == h || (size_t)(end - h) >= hostlen || colon[1] < '0' || colon[1] > '9')
		return -1;
	p = strtoul(colon + 1, &pend, 10);
	if (*pend || p > 65535)
		return -1;
	memcpy(host, h, (size_t)(end - h));
	host[end - h] = '\0';
	*port = (uint16_t)p;
	return 0;
}

void tcp_url_format(char *out, size_t len, const char *host, uint16_t port)
{
	snprintf(out, len, strchr(host, ':') ? "tcp://[%s]:%u" : "tcp://%s:%u", host, port);
}
