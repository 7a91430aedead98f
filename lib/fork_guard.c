#include "fork_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "lg.h"

#define FDS_MAX      64   /* a pool file and an SSD file per store */
#define HANDSHAKE_MS 5000 /* the longest a fork waits for its child to drop its copies */

static int fds[FDS_MAX]; /* each fd + 1; 0: a free slot; under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic unsigned generation;
/* A fork while files are entered: the child closes its end once its copies are gone, and fork returns in the
 * parent only then (the parent reads end of file). Without it, a parent that closed a store and opened its files
 * again at once found them still locked by a child not yet scheduled. Under lock. */
static int handshake[2] = {-1, -1};

static bool any_entered(void)
{
	for (int i = 0; i < FDS_MAX; i++)
		if (fds[i])
			return true;
	return false;
}

static void on_prepare(void)
{
	pthread_mutex_lock(&lock);
	if (any_entered() && pipe2(handshake, O_CLOEXEC))
		handshake[0] = handshake[1] = -1; /* out of descriptors: the child drops its copies on its own time */
}

static void on_parent(void)
{
	struct pollfd p = {.fd = handshake[0], .events = POLLIN};
	int rc;

	if (handshake[1] >= 0) {
		close(handshake[1]);
		/* end of file (the child's end closed) wakes it; bounded, so that a child held stopped (a debugger) or
		 * another thread's raw clone() keeping the write end cannot hang fork() for good: such a child drops
		 * its copies on its own time, as without the wait */
		do
			rc = poll(&p, 1, HANDSHAKE_MS);
		while (rc < 0 && errno == EINTR);
		close(handshake[0]);
		handshake[0] = handshake[1] = -1;
	}
	pthread_mutex_unlock(&lock);
}

/*
 * /dev/null is opened here, not once for the process: a program that closes descriptors it did not open (a daemon
 * starting, closefrom) could have closed or reused a number kept for it. Where it cannot be opened (out of
 * descriptors), the copies are closed instead. The table is emptied: the numbers are the child's to close and reuse
 * now, and its own children must not have them pointed at /dev/null. open, dup3 and close are async-signal-safe.
 */
static void on_child(void)
{
	int null_fd;

	if (handshake[0] >= 0) /* first: a parent near its descriptor limit leaves the child room for /dev/null */
		close(handshake[0]);
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int i = 0; i < FDS_MAX; i++) {
		if (fds[i] && null_fd >= 0)
			dup3(null_fd, fds[i] - 1, O_CLOEXEC);
		else if (fds[i])
			close(fds[i] - 1);
		fds[i] = 0;
	}
	if (null_fd >= 0)
		close(null_fd);
	if (handshake[1] >= 0) { /* the parent's fork returns */
		close(handshake[1]);
		handshake[0] = handshake[1] = -1;
	}
	atomic_fetch_add_explicit(&generation, 1, memory_order_relaxed);
	pthread_mutex_unlock(&lock);
}

static void install(void)
{
	if (pthread_atfork(on_prepare, on_parent, on_child))
		lg_warn("fork: no fork handlers (out of memory): a child this process forks may keep its pool and SSD "
		        "files locked, and must never touch its parent's stores");
}

void fork_guard_init(void)
{
	pthread_once(&once, install);
}

unsigned fork_generation(void)
{
	return atomic_load_explicit(&generation, memory_order_relaxed);
}

void fork_guard_hold(void)
{
	fork_guard_init();
	pthread_mutex_lock(&lock);
}

void fork_guard_release(void)
{
	pthread_mutex_unlock(&lock);
}

bool fork_guard_enter(int fd)
{
	for (int i = 0; i < FDS_MAX; i++) {
		if (!fds[i]) {
			fds[i] = fd + 1;
			return true;
		}
	}
	return false;
}

void fork_guard_full(const char *what)
{
	lg_warn("fork: more than %d pool and SSD files open: a child this process forks keeps %s locked", FDS_MAX,
	        what);
}

int fork_guard_open_with(int (*opener)(void *arg), void *arg, const char *what)
{
	bool entered = true;
	int fd, err;

	fork_guard_hold();
	fd = opener(arg);
	err = errno;
	if (fd >= 0)
		entered = fork_guard_enter(fd);
	fork_guard_release();
	if (!entered)
		fork_guard_full(what);
	errno = err;
	return fd;
}

struct open_args {
	const char *path;
	int flags;
	mode_t mode;
};

static int open_path(void *arg)
{
	const struct open_args *a = arg;

	return open(a->path, a->flags, a->mode);
}

int fork_guard_open(const char *path, int flags, mode_t mode)
{
	struct open_args a = {path, flags, mode};

	return fork_guard_open_with(open_path, &a, path);
}

void fork_guard_close(int fd)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < FDS_MAX; i++)
		if (fds[i] == fd + 1)
			fds[i] = 0;
	close(fd);
	pthread_mutex_unlock(&lock);
}
