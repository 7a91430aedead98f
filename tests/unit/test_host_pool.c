/*
 * The pool as a shared file and its mapping by another store (host_pool.c, host_map.c): what the header says,
 * how an owner that leaves or dies is seen, leftover files of killed owners, and paths a reader refuses to map.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_map.h"
#include "host_pool.h"
#include "mmc/mmc.h"

#define LEN ((size_t)4 << 20)

Test(host_pool, a_mapping_sees_the_owners_bytes_and_header)
{
	struct host_pool hp;
	struct host_map *m;
	struct stat st;
	void *base;
	bool huge;
	uint64_t key;

	cr_assert_eq(host_pool_create(&hp, LEN, &base, &huge), 0);
	cr_assert_eq(stat(hp.path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	cr_expect_eq((uintptr_t)base % ((size_t)2 << 20), 0, "2 MiB aligned");
	host_pool_set_incarnation(&hp, 7);
	key = atomic_load(&hp.hdr->key);
	cr_assert_eq(host_map_open(hp.path, LEN, &m), 0);
	memcpy(base, "owner", 6);
	cr_expect_str_eq(m->base, "owner", "one memory, two mappings");
	cr_expect(host_map_usable(m, key, 7));
	cr_expect_not(host_map_current(m, key, 8), "another incarnation");
	host_pool_rekey(&hp);
	cr_expect_not(host_map_current(m, key, 7), "a rekeyed pool refuses the old key");
	key = atomic_load(&hp.hdr->key);
	host_pool_destroy(&hp, base);
	cr_expect_not(host_map_usable(m, key, 7), "the owner left");
	cr_expect_str_eq(m->base, "owner", "the mapping stays valid after the owner left");
	cr_expect_neq(stat(hp.path, &st), 0, "the file is gone");
	host_map_unref(m);
}

/*
 * Another process owning a pool (memfd: a memfd, else the usual places) with "owner" at byte 0 and incarnation 3;
 * it waits to be killed, without a chance to clean up. Returns its pid; *path and *key say how to map it. With
 * forked set, the owner forks a child (without exec) once its pool is made, and *forked is that child's pid.
 */
static pid_t spawn_owner_forking(bool memfd, char *path, uint64_t *key, pid_t *forked)
{
	int pipefd[2];
	pid_t pid, pid_of_child;

	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		struct host_pool c;
		void *base;
		bool huge;

		if ((memfd ? host_pool_create_in(&c, NULL, LEN, &base, &huge)
		           : host_pool_create(&c, LEN, &base, &huge)) == 0) {
			memcpy(base, "owner", 6);
			host_pool_set_incarnation(&c, 3);
			int ready[2];
			pid_t child = 0;

			if (forked && pipe(ready) == 0 && (child = fork()) == 0) {
				(void)!write(ready[1], "", 1); /* past fork(): its handlers have run */
				pause();
				_exit(0);
			}
			if (forked && child > 0)
				(void)!read(ready[0], &(char){0}, 1);
			(void)!write(pipefd[1], c.path, HOST_POOL_PATH_SIZE);
			(void)!write(pipefd[1], &c.hdr->key, sizeof(uint64_t));
			(void)!write(pipefd[1], &child, sizeof(child));
		}
		pause();
		_exit(0);
	}
	cr_assert_eq(read(pipefd[0], path, HOST_POOL_PATH_SIZE), HOST_POOL_PATH_SIZE);
	cr_assert_eq(read(pipefd[0], key, sizeof(*key)), (ssize_t)sizeof(*key));
	cr_assert_eq(read(pipefd[0], &pid_of_child, sizeof(pid_of_child)), (ssize_t)sizeof(pid_of_child));
	if (forked)
		*forked = pid_of_child;
	close(pipefd[0]);
	close(pipefd[1]);
	return pid;
}

static pid_t spawn_owner(bool memfd, char *path, uint64_t *key)
{
	return spawn_owner_forking(memfd, path, key, NULL);
}

Test(host_pool, a_killed_owner_is_seen_dead_and_its_file_removed)
{
	char path[HOST_POOL_PATH_SIZE];
	struct host_map *m;
	struct host_pool hp;
	struct stat st;
	uint64_t key;
	pid_t pid = spawn_owner(false, path, &key);
	void *base;
	bool huge;

	cr_assert_eq(host_map_open(path, LEN, &m), 0);
	cr_expect(host_map_usable(m, key, 3));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_expect_not(host_pool_owner_alive(m->fd), "the kernel dropped the dead owner's lock");
	cr_assert_eq(stat(path, &st), 0, "SIGKILL leaves the file");
	cr_assert_eq(host_pool_create(&hp, LEN, &base, &huge), 0);
	cr_expect_neq(stat(path, &st), 0, "the next owner removed the leftover");
	host_pool_destroy(&hp, base);
	host_map_unref(m);
}

/* A child the owner forked (without exec) shares the pool file's open description, which holds the owner's lock:
 * it must not keep the lock (through its copy of the descriptor or of the mapping) once the owner is dead. */
Test(host_pool, a_child_of_the_owner_does_not_keep_its_lock)
{
	char path[HOST_POOL_PATH_SIZE];
	struct host_pool hp;
	struct stat st;
	uint64_t key;
	pid_t child, pid = spawn_owner_forking(false, path, &key, &child);
	void *base;
	bool huge;
	int fd;

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_expect_not(host_pool_owner_alive(fd), "the owner is dead; its child lives on");
	close(fd);
	cr_assert_eq(host_pool_create(&hp, LEN, &base, &huge), 0);
	cr_expect_neq(stat(path, &st), 0, "the next owner removed the leftover");
	host_pool_destroy(&hp, base);
	kill(child, SIGKILL);
}

/* Where /dev/shm is too small (containers), a memfd: another process maps it through /proc/PID/fd/N */
Test(host_pool, a_memfd_pool_is_mapped_through_proc)
{
	char path[HOST_POOL_PATH_SIZE];
	struct host_map *m;
	uint64_t key;
	pid_t pid = spawn_owner(true, path, &key);

	cr_expect_eq(strncmp(path, "/proc/", 6), 0, "%s", path);
	cr_assert_eq(host_map_open(path, LEN, &m), 0, "%s", path);
	cr_expect_str_eq(m->base, "owner");
	cr_expect(host_map_usable(m, key, 3));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_expect_not(host_map_usable(m, key, 3), "the owner died");
	cr_expect_str_eq(m->base, "owner", "the mapping outlives its owner");
	host_map_unref(m);
}

Test(host_pool, a_reader_maps_only_pool_files)
{
	struct host_map *m;
	char tmp[] = "/tmp/mmc-pool.XXXXXX";
	int fd = mkstemp(tmp);

	cr_assert_geq(fd, 0);
	cr_expect_eq(ftruncate(fd, (off_t)LEN * 2), 0);
	cr_expect_eq(host_map_open(tmp, LEN, &m), MMC_LINK_NOT_FOUND, "not under /dev/shm or /dev/hugepages");
	cr_expect_eq(host_map_open("/dev/shm/mmc-pool.1/../../etc/passwd", LEN, &m), MMC_LINK_NOT_FOUND);
	cr_expect_eq(host_map_open("/dev/shm/mmc-pool.none", LEN, &m), MMC_LINK_NOT_FOUND, "gone");
	cr_expect_eq(host_map_open("/proc/self/fd/0", LEN, &m), MMC_LINK_NOT_FOUND, "an fd, but no memfd pool");
	close(fd);
	unlink(tmp);
}
