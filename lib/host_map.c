#include "host_map.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "lg.h"
#include "mmc/mmc.h"

/* /proc/PID/fd/N of a memfd pool (its link names the memfd) */
static bool memfd_path_ok(const char *path)
{
	unsigned pid, fd;
	char end, link[HOST_POOL_PATH_SIZE];
	ssize_t n;

	if (sscanf(path, "/proc/%u/fd/%u%c", &pid, &fd, &end) != 2)
		return false;
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	return strncmp(link, "/memfd:mmc-pool.", 16) == 0;
}

/* Only files an owner can have made: the meta server's word is not enough to map (and write into) any file. */
static bool pool_path_ok(const char *path)
{
	static const char *const dirs[] = {"/dev/shm/mmc-pool.", "/dev/hugepages/mmc-pool."};

	if (strstr(path, "/.."))
		return false;
	if (strncmp(path, "/proc/", 6) == 0)
		return memfd_path_ok(path);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (strncmp(path, dirs[i], strlen(dirs[i])) == 0 && !strchr(path + strlen(dirs[i]), '/'))
			return true;
	return false;
}

static int map_fd(struct host_map *m, uint64_t pool_size)
{
	struct stat st;
	void *p;

	if (fstat(m->fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (uint64_t)st.st_size <= pool_size ||
	    (uint64_t)st.st_size - pool_size < sizeof(struct host_pool_hdr))
		return -1;
	m->map_len = (size_t)st.st_size;
	p = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (p == MAP_FAILED)
		return -1;
	m->base = p;
	m->size = (size_t)pool_size;
	m->hdr = (const struct host_pool_hdr *)(m->base + pool_size);
	if (m->hdr->magic != HOST_POOL_MAGIC || m->hdr->pool_size != pool_size) {
		munmap(p, m->map_len);
		return -1;
	}
	return 0;
}

int host_map_open(const char *path, uint64_t pool_size, struct host_map **out)
{
	struct host_map *m;

	*out = NULL;
	if (!pool_path_ok(path) || pool_size == 0)
		return MMC_LINK_NOT_FOUND;
	m = calloc(1, sizeof(*m));
	if (!m)
		return MMC_LINK_NOT_FOUND;
	/* a memfd's /proc/PID/fd/N is a link by nature (checked by memfd_path_ok); a pool file must not be one */
	m->fd = open(path, O_RDWR | O_CLOEXEC | (strncmp(path, "/proc/", 6) ? O_NOFOLLOW : 0));
	if (m->fd < 0 || map_fd(m, pool_size)) {
		lg_info("host path: cannot map \"%s\"; using the network provider", path);
		if (m->fd >= 0)
			close(m->fd);
		free(m);
		return MMC_LINK_NOT_FOUND;
	}
	snprintf(m->path, sizeof(m->path), "%s", path);
	atomic_init(&m->refs, 1);
	*out = m;
	return 0;
}

struct host_map *host_map_ref(struct host_map *m)
{
	if (m)
		atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
	return m;
}

void host_map_unref(struct host_map *m)
{
	if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
		return;
	munmap(m->base, m->map_len);
	/* a pool of a live owner is its own to remove; a memfd has no name to remove */
	if (strncmp(m->path, "/proc/", 6) && !host_pool_owner_alive(m->fd) && unlink(m->path) == 0)
		lg_info("host path: removed \"%s\", left by a local service that is gone", m->path);
	close(m->fd);
	free(m);
}

bool host_map_keyed(const struct host_map *m, uint64_t key)
{
	return key && atomic_load_explicit(&m->hdr->key, memory_order_acquire) == key;
}

bool host_map_current(const struct host_map *m, uint64_t key, uint64_t incarnation)
{
	return key && atomic_load_explicit(&m->hdr->key, memory_order_acquire) == key &&
	       atomic_load_explicit(&m->hdr->incarnation, memory_order_acquire) == incarnation;
}

bool host_map_usable(const struct host_map *m, uint64_t key, uint64_t incarnation)
{
	return host_map_current(m, key, incarnation) && host_pool_owner_alive(m->fd);
}

bool host_map_await(const struct host_map *m, uint64_t key, uint64_t incarnation, uint64_t until_ms)
{
	long step_ns = 50000;

	while (!host_map_current(m, key, incarnation)) {
		if (!host_map_keyed(m, key) || atomic_load_explicit(&m->hdr->incarnation, memory_order_acquire) != 0 ||
		    clock_ms() >= until_ms || !host_pool_owner_alive(m->fd))
			return false;
		nanosleep(&(struct timespec){0, step_ns}, NULL);
		step_ns = step_ns < 1000000 ? step_ns * 2 : 2000000;
	}
	return host_pool_owner_alive(m->fd);
}
