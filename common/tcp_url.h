/* "tcp://host:port" as both ends read ock.mmc.meta_service_url: host a name, an IPv4 literal or a bracketed IPv6
 * literal ("tcp://[::1]:5000"), whatever getaddrinfo() resolves. */
#ifndef MMC_TCP_URL_H
#define MMC_TCP_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

/* Splits url into host (brackets removed) and port (0..65535). Returns 0, or MMC_ERROR when it is not of that form. */
int tcp_url_parse(const char *url, char *host, size_t hostlen, uint16_t *port);

/* Whether sa is a loopback address (127.0.0.0/8, ::1, or 127.x mapped into IPv6): one only this host reaches. */
bool tcp_addr_is_loopback(const struct sockaddr *sa);

/* Whether host, as written in a bind key, is "localhost" or a loopback address literal (a name is not resolved). */
bool tcp_host_is_loopback(const char *host);

/* Writes "tcp://host:port" (brackets around an IPv6 host) into out. */
void tcp_url_format(char *out, size_t len, const char *host, uint16_t port);

#endif
