#include "sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

void sd_notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || (len = strlen(path)) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@') /* an abstract socket: its name starts with a NUL */
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	                     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		log_warn("op=sd_notify msg=\"%s\" err=\"%s\"", msg, strerror(errno));
	if (fd >= 0)
		close(fd);
}
