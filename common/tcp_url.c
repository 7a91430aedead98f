#include "tcp_url.h"

#include "mmc/mmc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tcp_url_parse(const char *url, char *host, size_t hostlen, uint16_t *port)
{
	const char *h, *end, *colon;
	char *pend;
	unsigned long p;

	if (strncmp(url, "tcp://", 6) != 0)
		return MMC_ERROR;
	h = url + 6;
	if (h[0] == '[') { /* an IPv6 literal: its colons are not the port's */
		end = strchr(h, ']');
		if (!end || end[1] != ':')
			return MMC_ERROR;
		h++;
		colon = end + 1;
	} else {
		colon = strrchr(h, ':');
		end = colon;
		if (!colon || memchr(h, ':', (size_t)(colon - h)))
			return MMC_ERROR; /* a bare IPv6 literal: the port is ambiguous */
	}
	if (end == h || (size_t)(end - h) >= hostlen || colon[1] < '0' || colon[1] > '9')
		return MMC_ERROR;
	p = strtoul(colon + 1, &pend, 10);
	if (*pend || p > 65535)
		return MMC_ERROR;
	memcpy(host, h, (size_t)(end - h));
	host[end - h] = '\0';
	*port = (uint16_t)p;
	return 0;
}

static bool v4_loopback(const struct in_addr *a)
{
	return (ntohl(a->s_addr) >> 24) == 127;
}

static bool v6_loopback(const struct in6_addr *a)
{
	return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

bool tcp_addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_loopback(&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return v6_loopback(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool tcp_host_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	/* not through tcp_addr_is_loopback: a sockaddr_in cast to sockaddr made gcc -O3 warn of its in6 branch */
	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return v4_loopback(&a4);
	return inet_pton(AF_INET6, host, &a6) == 1 && v6_loopback(&a6);
}

void tcp_url_format(char *out, size_t len, const char *host, uint16_t port)
{
	snprintf(out, len, strchr(host, ':') ? "tcp://[%s]:%u" : "tcp://%s:%u", host, port);
}
