#include "host_pool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fork_guard.h"
#include "lg.h"
#include "mmc/mmc.h"

#define ALIGN2M         ((size_t)2 << 20)
#define HUGETLBFS_MAGIC 0x958458f6
#define PREFIX          "mmc-pool."

static const char *const dirs[] = {"/dev/hugepages", "/dev/shm"};

bool host_pool_owner_alive(int fd)
{
	struct flock l = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};

	/* an OFD lock probe reports the owner's write lock from any other open file description, ours included */
	return fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
}

/* A file of ours with pages and no owner lock belongs to a process that is gone (the owner locks before sizing). */
static void remove_leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[HOST_POOL_PATH_SIZE];
		struct stat st;
		int fd;

		if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0 ||
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && st.st_size > 0 && !host_pool_owner_alive(fd) &&
		    unlink(path) == 0)
			lg_info("host pool: removed \"%s\", left by a process that is gone", path);
		close(fd);
	}
	closedir(d);
}

static bool is_hugetlbfs(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) == 0 && (unsigned long)sf.f_type == HUGETLBFS_MAGIC;
}

/* Maps fd's first `len` bytes at a 2 MiB-aligned address (for huge pages, THP or hugetlbfs). */
static void *map_aligned(int fd, size_t len)
{
	char *raw = mmap(NULL, len + ALIGN2M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uintptr_t start;
	void *m;

	if (raw == MAP_FAILED)
		return NULL;
	start = ((uintptr_t)raw + ALIGN2M - 1) & ~(uintptr_t)(ALIGN2M - 1);
	m = mmap((void *)start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (m == MAP_FAILED) {
		munmap(raw, len + ALIGN2M);
		return NULL;
	}
	if (start > (uintptr_t)raw)
		munmap(raw, start - (uintptr_t)raw);
	munmap((char *)start + len, (uintptr_t)raw + ALIGN2M - start);
	return m;
}

/* A name of this process's: <prefix>PID.RANDOM */
static void pool_name(char *out, size_t len, const char *dir, const struct host_pool *hp)
{
	uint64_t rnd = 0;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd ^= (uint64_t)(uintptr_t)hp;
	snprintf(out, len, "%s%s" PREFIX "%d.%016llx", dir, dir[0] ? "/" : "", (int)getpid(), (unsigned long long)rnd);
}

/* Opens the pool's file: a new name in dir, or (dir NULL) a memfd that readers open as /proc/PID/fd/N. */
static int open_file(struct host_pool *hp, const char *dir, bool want_huge, bool *huge)
{
	char name[HOST_POOL_PATH_SIZE];

	if (dir) {
		*huge = is_hugetlbfs(dir);
		pool_name(hp->path, sizeof(hp->path), dir, hp);
		return open(hp->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	pool_name(name, sizeof(name), "", hp);
	*huge = want_huge;
	hp->fd = memfd_create(name, MFD_CLOEXEC | (want_huge ? MFD_HUGETLB : 0));
	if (hp->fd >= 0) {
		fchmod(hp->fd, 0600);
		hp->memfd = true;
		snprintf(hp->path, sizeof(hp->path), "/proc/%d/fd/%d", (int)getpid(), hp->fd);
	}
	return hp->fd;
}

static void close_file(struct host_pool *hp)
{
	if (!hp->memfd)
		unlink(hp->path);
	fork_guard_close(hp->fd);
	hp->fd = -1;
}

struct open_file_args {
	struct host_pool *hp;
	const char *dir;
	bool want_huge, *huge;
};

static int open_file_with(void *arg)
{
	struct open_file_args *a = arg;

	return open_file(a->hp, a->dir, a->want_huge, a->huge);
}

/* open_file, the descriptor entered in the fork guard's table (the child points its copy at /dev/null). */
static int open_entered(struct host_pool *hp, const char *dir, bool want_huge, bool *huge)
{
	struct open_file_args a = {hp, dir, want_huge, huge};

	return fork_guard_open_with(open_file_with, &a, hp->path);
}

/* map_aligned, the mapping not inherited by a child: it holds the file, and so its lock, as the descriptor does.
 * Under the guard, so that no child sees the mapping before it is marked. */
static void *map_unforked(int fd, size_t len)
{
	void *m;

	fork_guard_hold();
	if ((m = map_aligned(fd, len)))
		madvise(m, len, MADV_DONTFORK);
	fork_guard_release();
	return m;
}

/* One attempt: open, lock, size, allocate, map. Returns 1 (huge pages), 0, or -1. Every fork() of the process waits
 * for the open and for the map, not for the allocation of the pages between them. */
static int create_in(struct host_pool *hp, const char *dir, bool want_huge, size_t len, void **base)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	bool huge = false;
	size_t hdr_len;
	char *m;

	hp->memfd = false;
	hp->fd = open_entered(hp, dir, want_huge, &huge);
	if (hp->fd < 0)
		return -1;
	hdr_len = huge ? ALIGN2M : (size_t)sysconf(_SC_PAGESIZE);
	hp->map_len = len + hdr_len;
	/* lock before sizing: a file with pages and no lock is a leftover to every other process */
	if (fcntl(hp->fd, F_OFD_SETLK, &l) || ftruncate(hp->fd, (off_t)hp->map_len) ||
	    (errno = posix_fallocate(hp->fd, 0, (off_t)hp->map_len)) || !(m = map_unforked(hp->fd, hp->map_len))) {
		lg_info("host pool: cannot use %s for %zu bytes: %s", dir ? dir : "a memfd", hp->map_len,
		        strerror(errno));
		close_file(hp);
		return -1;
	}
	if (!huge)
		madvise(m, len, MADV_HUGEPAGE); /* THP for tmpfs, where shmem_enabled allows it */
	hp->hdr = (struct host_pool_hdr *)(m + len);
	hp->hdr->magic = HOST_POOL_MAGIC;
	hp->hdr->pool_size = len;
	atomic_store(&hp->hdr->incarnation, 0);
	host_pool_rekey(hp);
	*base = m;
	return huge ? 1 : 0;
}

int host_pool_create_in(struct host_pool *hp, const char *dir, size_t len, void **base, bool *huge)
{
	int rc;

	memset(hp, 0, sizeof(*hp));
	hp->fd = -1;
	if (dir && (remove_leftovers(dir), access(dir, W_OK) != 0))
		return MMC_MALLOC_FAILED;
	/* a memfd: huge pages when the system has them free (the allocation fails otherwise), else small ones */
	if ((rc = create_in(hp, dir, !dir, len, base)) < 0 && (dir || (rc = create_in(hp, NULL, false, len, base)) < 0))
		return MMC_MALLOC_FAILED;
	*huge = rc == 1;
	lg_info("host pool: %s (%zu bytes%s)", hp->path, len, *huge ? ", huge pages" : "");
	return 0;
}

int host_pool_create(struct host_pool *hp, size_t len, void **base, bool *huge)
{
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (host_pool_create_in(hp, dirs[i], len, base, huge) == 0)
			return 0;
	/* a container's /dev/shm is often 64 MiB: a memfd is bounded by memory only */
	return host_pool_create_in(hp, NULL, len, base, huge);
}

void host_pool_destroy(struct host_pool *hp, void *base)
{
	if (hp->fd < 0)
		return;
	atomic_store(&hp->hdr->key, 0);
	atomic_store(&hp->hdr->incarnation, 0);
	munmap(base, hp->map_len);
	close_file(hp); /* drops the owner lock: a reader probing now sees the pool gone */
	hp->hdr = NULL;
}

uint64_t host_pool_rekey(struct host_pool *hp)
{
	uint64_t k = 0;

	while (k == 0)
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			k = (uint64_t)(uintptr_t)hp ^ (atomic_load(&hp->hdr->key) + 0x9e3779b97f4a7c15u);
	atomic_store(&hp->hdr->key, k);
	return k;
}

void host_pool_set_incarnation(struct host_pool *hp, uint64_t incarnation)
{
	atomic_store(&hp->hdr->incarnation, incarnation);
}
