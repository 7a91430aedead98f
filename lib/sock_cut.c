#include "sock_cut.h"

#include <dirent.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* An IPv4 or IPv6 address and port, from len bytes at sa, an IPv4-mapped IPv6 one as IPv4; false for anything
 * else. */
static bool inet_of(const void *sa, size_t len, struct sockaddr_storage *out)
{
	sa_family_t fam;

	if (len < sizeof(fam))
		return false;
	memcpy(&fam, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(fam));
	memset(out, 0, sizeof(*out));
	if (fam == AF_INET && len >= sizeof(struct sockaddr_in)) {
		memcpy(out, sa, sizeof(struct sockaddr_in));
		return true;
	}
	if (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 a6;
		struct sockaddr_in *a4 = (struct sockaddr_in *)out;

		memcpy(&a6, sa, sizeof(a6));
		if (!IN6_IS_ADDR_V4MAPPED(&a6.sin6_addr)) {
			memcpy(out, &a6, sizeof(a6));
			return true;
		}
		a4->sin_family = AF_INET;
		a4->sin_port = a6.sin6_port;
		memcpy(&a4->sin_addr, &a6.sin6_addr.s6_addr[12], 4);
		return true;
	}
	return false;
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
	              sizeof(struct in6_addr)) == 0;
}

/* A wildcard address (a listener on every interface): 0.0.0.0 or ::. */
static bool is_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static in_port_t port_of(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port
	                               : ((const struct sockaddr_in6 *)a)->sin6_port;
}

/* How fd leads to peer: 2 dialled to it, 1 accepted on self from its host, 0 neither (or not a socket). */
static int leads_to(int fd, const struct sockaddr_storage *peer, const struct sockaddr_storage *self, bool has_self)
{
	struct sockaddr_storage remote, local, r, l;
	socklen_t rlen = sizeof(remote), llen = sizeof(local);
	struct stat st;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) || getpeername(fd, (struct sockaddr *)&remote, &rlen) ||
	    !inet_of(&remote, rlen, &r) || !same_host(&r, peer))
		return 0;
	if (port_of(&r) == port_of(peer))
		return 2;
	return has_self && getsockname(fd, (struct sockaddr *)&local, &llen) == 0 && inet_of(&local, llen, &l) &&
	       port_of(&l) == port_of(self) && (same_host(&l, self) || is_any(self));
}

/*
 * Shuts fd down if it still leads to peer as `how` (2 dialled, 1 accepted): a duplicate is checked and shut down,
 * so that a number its owner closed and reused meanwhile for another socket is never touched.
 */
static bool cut_one(int fd, int how, const struct sockaddr_storage *peer, const struct sockaddr_storage *self,
                    bool has_self)
{
	int d = dup(fd);
	bool cut;

	if (d < 0)
		return false;
	cut = leads_to(d, peer, self, has_self) == how && shutdown(d, SHUT_RDWR) == 0;
	close(d);
	return cut;
}

/* The sockets of this process that lead to peer: fds[] of the dialled ones (*nd), else of those accepted from its
 * host (*na). */
#define SOCK_CUT_MAX 64

static void find(const struct sockaddr_storage *p, const struct sockaddr_storage *s, bool has_self, int *dialled,
                 size_t *nd, int *accepted, size_t *na)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");

	*nd = *na = 0;
	while (d && (de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		int how;

		if (end == de->d_name || *end || fd == dirfd(d) || !(how = leads_to((int)fd, p, s, has_self)))
			continue;
		if (how == 2 && *nd < SOCK_CUT_MAX)
			dialled[(*nd)++] = (int)fd;
		else if (how == 1 && *na < SOCK_CUT_MAX)
			accepted[(*na)++] = (int)fd;
	}
	if (d)
		closedir(d);
}

int sock_cut(const void *peer, size_t plen, const void *self, size_t slen, bool host_wide)
{
	struct sockaddr_storage p, s;
	bool has_self = self && inet_of(self, slen, &s);
	int dialled[SOCK_CUT_MAX], accepted[SOCK_CUT_MAX], n = 0;
	size_t nd, na;

	if (!inet_of(peer, plen, &p))
		return 0;
	find(&p, &s, has_self, dialled, &nd, accepted, &na);
	for (size_t i = 0; i < nd; i++)
		n += cut_one(dialled[i], 2, &p, &s, has_self);
	/* only when it is the one, or when the caller takes the peer's whole host: another process on that host may
	 * have dialled this one too */
	for (size_t i = 0; !nd && (na == 1 || host_wide) && i < na; i++)
		n += cut_one(accepted[i], 1, &p, &s, has_self);
	return n;
}
