#include "sock_cut.h"

#include <dirent.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* An IPv4 or IPv6 address and port, from len bytes at sa; false for anything else. */
static bool inet_of(const void *sa, size_t len, struct sockaddr_storage *out)
{
	sa_family_t fam;

	if (len < sizeof(fam))
		return false;
	memcpy(&fam, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(fam));
	if ((fam == AF_INET && len >= sizeof(struct sockaddr_in)) ||
	    (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6))) {
		memset(out, 0, sizeof(*out));
		memcpy(out, sa, fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
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

static in_port_t port_of(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port
	                               : ((const struct sockaddr_in6 *)a)->sin6_port;
}

/* Whether fd is a connection to peer (dialled), or one accepted on self's port from peer's host. */
static bool leads_to(int fd, const struct sockaddr_storage *peer, const struct sockaddr_storage *self, bool has_self)
{
	struct sockaddr_storage remote, local;
	socklen_t rlen = sizeof(remote), llen = sizeof(local);
	struct stat st;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) || getpeername(fd, (struct sockaddr *)&remote, &rlen) ||
	    !same_host(&remote, peer))
		return false;
	if (port_of(&remote) == port_of(peer))
		return true;
	return has_self && getsockname(fd, (struct sockaddr *)&local, &llen) == 0 &&
	       local.ss_family == self->ss_family && port_of(&local) == port_of(self);
}

int sock_cut(const void *peer, size_t plen, const void *self, size_t slen)
{
	struct sockaddr_storage p, s;
	bool has_self = self && inet_of(self, slen, &s);
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (!inet_of(peer, plen, &p) || !(d = opendir("/proc/self/fd")))
		return 0;
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (end == de->d_name || *end || fd == dirfd(d))
			continue;
		if (leads_to((int)fd, &p, &s, has_self) && shutdown((int)fd, SHUT_RDWR) == 0)
			n++;
	}
	closedir(d);
	return n;
}
