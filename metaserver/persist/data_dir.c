#include "data_dir.h"

#include "mmc/mmc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir of one prefix of the path; an existing directory is fine, anything else existing is not. */
static int make_one(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (errno == EEXIST)
		errno = ENOTDIR;
	snprintf(err, errlen, "cannot create data dir \"%s\": %s", dir, strerror(errno));
	return MMC_ERROR;
}

int data_dir_prepare(const char *path, char *err, size_t errlen)
{
	char dir[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(dir)) {
		snprintf(err, errlen, "bad data dir name");
		return MMC_ERROR;
	}
	memcpy(dir, path, n + 1);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	for (char *s = dir + 1; *s; s++) {
		if (*s != '/' || s[-1] == '/')
			continue;
		*s = '\0';
		if (make_one(dir, err, errlen))
			return MMC_ERROR;
		*s = '/';
	}
	if (make_one(dir, err, errlen))
		return MMC_ERROR;
	if (access(dir, W_OK | X_OK)) {
		snprintf(err, errlen, "data dir \"%s\" is not writable: %s", dir, strerror(errno));
		return MMC_ERROR;
	}
	return 0;
}

bool data_dir_busy(const char *path)
{
	char lock[4096];
	bool busy;
	int fd;

	if ((size_t)snprintf(lock, sizeof(lock), "%s/LOCK", path) >= sizeof(lock))
		return false;
	fd = open(lock, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	return busy;
}
