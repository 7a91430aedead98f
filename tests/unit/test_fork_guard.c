/*
 * What a child forked without exec inherits of libmmc's files and memory (fork_guard.c, pool.c): its copies of the
 * entered descriptors point at /dev/null, the numbers are then its own (its children keep what it opened on them),
 * and no pool, private or shared, is mapped in it.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fork_guard.h"
#include "pool.h"

static bool is_dev_null(int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat("/dev/null", &b) == 0 && S_ISCHR(a.st_mode) && a.st_rdev == b.st_rdev;
}

static bool is_fifo(int fd)
{
	struct stat a;

	return fstat(fd, &a) == 0 && S_ISFIFO(a.st_mode);
}

/* The child's exit code (255 when it did not exit). */
static int wait_child(pid_t pid)
{
	int status = 0;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

/* In a child: 0 when fd is /dev/null there and a pipe the child then makes on fd's number is still a pipe in its
 * own child. */
static int child_checks(int fd)
{
	int p[2];
	pid_t grandchild;

	if (!is_dev_null(fd))
		return 1;
	close(fd);
	if (pipe(p) || (p[0] != fd && p[1] != fd))
		return 2;
	grandchild = fork();
	if (grandchild == 0)
		_exit(is_fifo(fd) ? 0 : 3);
	return grandchild < 0 ? 4 : wait_child(grandchild);
}

Test(fork_guard, a_child_has_dev_null_on_entered_numbers_and_its_own_children_what_it_put_there)
{
	int fd = fork_guard_open("/dev/zero", O_RDONLY | O_CLOEXEC, 0);
	pid_t child;

	cr_assert_geq(fd, 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(child_checks(fd));
	cr_expect_eq(wait_child(child), 0, "1: not /dev/null; 3: the grandchild had /dev/null on the child's pipe");
	cr_expect_not(is_dev_null(fd), "the parent's own descriptor is untouched");
	fork_guard_close(fd);
}

/* An OFD lock on a file of our own, taken on a descriptor opened and entered here: -1 when refused. */
static int locked_open(const char *path)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	int fd = fork_guard_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	if (fcntl(fd, F_OFD_SETLK, &l) == 0)
		return fd;
	fork_guard_close(fd);
	return -1;
}

/* fork returns in the parent once the child has let go of the file: a parent that closes it and locks it again at
 * once (a store destroyed and made again) is not refused by a child that has not run yet. */
Test(fork_guard, fork_returns_once_the_child_dropped_its_copies)
{
	char path[] = "/tmp/mmc-fork-guard-XXXXXX";
	int tmp = mkstemp(path), fd;

	cr_assert_geq(tmp, 0);
	close(tmp);
	fd = locked_open(path);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < 50; i++) {
		pid_t child = fork();

		cr_assert_geq(child, 0);
		if (child == 0) {
			alarm(30); /* gone even if the parent failed before its kill */
			pause();
			_exit(0);
		}
		fork_guard_close(fd);
		fd = locked_open(path);
		kill(child, SIGKILL);
		wait_child(child);
		cr_assert_geq(fd, 0, "fork %d: the child still held the lock", i);
	}
	fork_guard_close(fd);
	unlink(path);
}

static bool mapped(const void *addr)
{
	unsigned char v;

	return mincore((void *)((uintptr_t)addr & ~(uintptr_t)4095), 4096, &v) == 0;
}

Test(fork_guard, no_pool_is_mapped_in_a_child)
{
	struct pool priv, shared;
	pid_t child;

	cr_assert_eq(pool_map(&priv, 4 << 20, false), 0);
	cr_assert_eq(pool_map(&shared, 4 << 20, true), 0);
	cr_assert(mapped(priv.base) && mapped(shared.base));
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit((mapped(priv.base) ? 1 : 0) | (mapped(shared.base) ? 2 : 0));
	cr_expect_eq(wait_child(child), 0, "1: the private pool, 2: the shared one was mapped in the child");
	pool_unmap(&priv);
	pool_unmap(&shared);
}
