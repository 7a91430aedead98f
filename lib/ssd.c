#include "ssd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fork_guard.h"
#include "lg.h"
#include "meta_conn.h"
#include "mmc/mmc.h"
#include "wire.h"

#define IO_ALIGN 4096u

struct ssd_task {
	struct ssd_task *next;
	uint64_t conn; /* meta_conn_losses() of the connection it came on */
	uint64_t id;
	mmc_BlobTask t;
};

struct ssd {
	int fd;
	uint64_t size; /* what the meta server allocates in: the file after its label */
	uint8_t id[MMC_WIRE_SSD_ID];
	struct meta_conn *mc;
	unsigned char *pool;
	size_t pool_size;
	pthread_t worker;
	bool started, stop;
	bool moving; /* the worker runs a task, outside the lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_cond_t idle; /* moving went false: ssd_fence() */
	struct ssd_task *head, *tail;
	size_t queued; /* tasks from head to tail: at most SSD_QUEUE_MAX */
	/* the worker's: when it last logged a failed move, and those it has not logged since */
	uint64_t err_logged_ms, err_quiet;
};

/* A disk that fails every move (full, gone) fails them by the thousand: one line per interval, with the count. */
#define ERR_LOG_INTERVAL_MS 10000

/* Tasks one local service keeps waiting for its worker (80 bytes each): a server that sends more while the worker
 * is busy gets MMC_NOT_ENOUGH_MEMORY for them (a demote then evicts), not this process's heap. */
#define SSD_QUEUE_MAX 65536

/* open(2) of path (without O_DIRECT where the file system has none), entered in the fork guard's table: a child
 * forked without exec would otherwise keep the file's lock after this process died, and a restarted service could
 * not take its file back. */
static int open_direct(const char *path, int flags)
{
	int fd = fork_guard_open(path, O_RDWR | O_CLOEXEC | O_DIRECT | flags, 0600);

	if (fd < 0 && errno == EINVAL) /* tmpfs and friends have no O_DIRECT */
		fd = fork_guard_open(path, O_RDWR | O_CLOEXEC | flags, 0600);
	return fd;
}

/* Whether a file created at path would be in /dev (its directory, links resolved, is /dev or under it): a device
 * that is not there (renamed at boot, not attached) would become a file in the RAM behind /dev, an SSD tier that is
 * memory and lost at the next boot. */
static bool creates_in_dev(const char *path)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else {
		if ((size_t)(slash - path) >= sizeof(dir))
			return true;
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	if (!realpath(dir, real))
		return false; /* the open fails on its own */
	return strcmp(real, "/dev") == 0 || strncmp(real, "/dev/", 5) == 0;
}

/*
 * Opens path; a missing file is created (not through a symbolic link, and not in /dev). A block device is opened
 * exclusively (O_EXCL): the kernel refuses it while it is mounted or another process holds it so, whatever device node
 * names it (the file lock below belongs to the node, and two containers each have their own node for one disk).
 */
static int open_path(const char *path)
{
	struct stat st;
	int fd = open_direct(path, 0);

	if (fd >= 0 && !fstat(fd, &st) && S_ISBLK(st.st_mode)) {
		int excl = open_direct(path, O_EXCL);

		if (excl < 0 && errno == EBUSY)
			lg_error("ssd tier: block device \"%s\" is in use (mounted, or held by another process)", path);
		fork_guard_close(fd);
		return excl;
	}
	if (fd >= 0 || errno != ENOENT)
		return fd;
	if (creates_in_dev(path)) {
		lg_error("ssd tier: \"%s\" does not exist: not created under /dev (a device not attached?)", path);
		errno = ENOENT;
		return -1;
	}
	/* O_EXCL: a dangling symbolic link is not followed to make its target */
	if ((fd = open_direct(path, O_CREAT | O_EXCL)) < 0 && errno == EEXIST)
		lg_error("ssd tier: \"%s\" links to a file that does not exist: not created through the link", path);
	return fd;
}

static int open_file(const char *path, uint64_t size, int *fd_out)
{
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	struct stat st;
	uint64_t have = 0;
	int fd = open_path(path);

	if (fd < 0 || fstat(fd, &st)) {
		lg_error("ssd tier: cannot open \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	/* two services moving bytes in one file would overwrite each other's objects; a process that died holds no
	 * lock, so a restarted service still adopts what its predecessor left there */
	if (fcntl(fd, F_OFD_SETLK, &l)) {
		if (errno == EAGAIN || errno == EACCES) {
			lg_error("ssd tier: \"%s\" is in use by another local service: each needs a file of its own",
			         path);
			goto fail;
		}
		lg_warn("ssd tier: \"%s\" cannot be locked (%s): nothing stops a second service from using it too",
		        path, strerror(errno));
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &have)) {
			lg_error("ssd tier: cannot size block device \"%s\": %s", path, strerror(errno));
			goto fail;
		}
		if (have < size) {
			lg_error("ssd tier: block device \"%s\" is smaller than %llu bytes", path,
			         (unsigned long long)size);
			goto fail;
		}
	} else if ((uint64_t)st.st_size < size && ftruncate(fd, (off_t)size)) {
		lg_error("ssd tier: cannot size \"%s\" to %llu bytes: %s", path, (unsigned long long)size,
		         strerror(errno));
		goto fail;
	}
	*fd_out = fd;
	return 0;
fail:
	if (fd >= 0)
		fork_guard_close(fd);
	return MMC_INVALID_PARAM;
}

/*
 * The file's label, its first IO_ALIGN bytes (the server allocates in the rest): a magic, a random identity made when
 * the file is first used, and the size it was made for. A restarted service adopts the SSD keys a gone one left only
 * from the file that holds them, which the label tells apart from one that merely has the same path and host name
 * (a fresh disk, a host cloned under the same name); and a file used with another size since is another file (its
 * old bytes may have been overwritten), so a new size makes a new identity.
 */
struct label {
	char magic[8];
	uint8_t id[MMC_WIRE_SSD_ID];
	uint64_t size;
};

static const char label_magic[8] = {'m', 'm', 'c', '-', 's', 's', 'd', '1'};

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	return n == 0 || (b[0] == 0 && memcmp(b, b + 1, n - 1) == 0);
}

static int read_label(struct ssd *d, const char *path)
{
	struct label *l = NULL;
	int rc = MMC_INVALID_PARAM;

	ssize_t n;

	if (posix_memalign((void **)&l, IO_ALIGN, IO_ALIGN))
		return MMC_MALLOC_FAILED;
	/* a label that cannot be read is not replaced: that would make the file's keys another file's */
	if ((n = pread(d->fd, l, IO_ALIGN, 0)) != IO_ALIGN) {
		lg_error("ssd tier: cannot read the label of \"%s\": %s", path, n < 0 ? strerror(errno) : "short read");
		goto out;
	}
	if (memcmp(l->magic, label_magic, sizeof(label_magic)) == 0 && l->size == d->size) {
		memcpy(d->id, l->id, sizeof(d->id));
		rc = 0;
		goto out;
	}
	/* what holds neither a label nor zeros is someone else's: a file system or a partition table on a disk renamed
	 * at boot, a path mistyped; writing the label would be the first of many writes over it */
	if (memcmp(l->magic, label_magic, sizeof(label_magic)) != 0 && !all_zero(l, IO_ALIGN)) {
		lg_error(
		    "ssd tier: \"%s\" holds data that is not an mmc SSD tier: not used (to give it to the tier, zero "
		    "its first 4 KiB)",
		    path);
		goto out;
	}
	memset(l, 0, IO_ALIGN);
	memcpy(l->magic, label_magic, sizeof(label_magic));
	l->size = d->size;
	if (getrandom(d->id, sizeof(d->id), 0) != sizeof(d->id)) {
		lg_error("ssd tier: no random identity for \"%s\": %s", path, strerror(errno));
		goto out;
	}
	memcpy(l->id, d->id, sizeof(d->id));
	if ((n = pwrite(d->fd, l, IO_ALIGN, 0)) != IO_ALIGN || fdatasync(d->fd)) {
		lg_error("ssd tier: cannot label \"%s\": %s", path,
		         n >= 0 && n < IO_ALIGN ? "short write" : strerror(errno));
		goto out;
	}
	lg_info("ssd tier: \"%s\" labelled as a new SSD tier file of %llu bytes", path, (unsigned long long)d->size);
	rc = 0;
out:
	free(l);
	return rc;
}

int ssd_open(struct ssd **out, const char *path, uint64_t size)
{
	struct ssd *d = calloc(1, sizeof(*d));
	uint64_t whole = size & ~(uint64_t)(IO_ALIGN - 1);
	int rc;

	if (!d)
		return MMC_MALLOC_FAILED;
	if (whole < 2 * IO_ALIGN) {
		lg_error("ssd tier: %llu bytes is too small (at least %u)", (unsigned long long)size, 2 * IO_ALIGN);
		free(d);
		return MMC_INVALID_PARAM;
	}
	d->size = whole - IO_ALIGN;
	if ((rc = open_file(path, whole, &d->fd))) {
		free(d);
		return rc;
	}
	if ((rc = read_label(d, path))) {
		fork_guard_close(d->fd);
		free(d);
		return rc;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	pthread_cond_init(&d->idle, NULL);
	*out = d;
	return 0;
}

uint64_t ssd_size(const struct ssd *d)
{
	return d->size;
}

const uint8_t *ssd_id(const struct ssd *d)
{
	return d->id;
}

static void move_failed(struct ssd *d, bool to_ssd, const char *why)
{
	uint64_t now = clock_ms();

	if (d->err_logged_ms && now - d->err_logged_ms < ERR_LOG_INTERVAL_MS) {
		d->err_quiet++;
		return;
	}
	lg_error("ssd tier: %s failed: %s (%llu more failed moves since the last such line)", to_ssd ? "write" : "read",
	         why, (unsigned long long)d->err_quiet);
	d->err_logged_ms = now;
	d->err_quiet = 0;
}

/* Moves len bytes between the pool and the file; lengths are whole 4 KiB pages (what both sides reserved). */
static int transfer(struct ssd *d, bool to_ssd, uint64_t pool_off, uint64_t file_off, uint64_t len)
{
	if (len == 0 || len > d->size) /* before rounding up: a length near 2^64 would round to 0 and move nothing */
		return MMC_INVALID_PARAM;
	len = (len + IO_ALIGN - 1) & ~(uint64_t)(IO_ALIGN - 1);
	if (pool_off % IO_ALIGN || file_off % IO_ALIGN || pool_off > d->pool_size || len > d->pool_size - pool_off ||
	    file_off > d->size || len > d->size - file_off)
		return MMC_INVALID_PARAM;
	while (len) {
		ssize_t n = to_ssd ? pwrite(d->fd, d->pool + pool_off, len, (off_t)(IO_ALIGN + file_off))
		                   : pread(d->fd, d->pool + pool_off, len, (off_t)(IO_ALIGN + file_off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			move_failed(d, to_ssd, n ? strerror(errno) : "end of file");
			return MMC_ERROR;
		}
		pool_off += (uint64_t)n;
		file_off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	/* the server records the object on SSD once this answers: its bytes must survive a power loss, or a service
	 * that adopts the file after the reboot would serve what the disk's cache lost */
	if (to_ssd && fdatasync(d->fd)) {
		lg_error("ssd tier: flushing a write failed: %s", strerror(errno));
		return MMC_ERROR;
	}
	return 0;
}

static int run(struct ssd *d, const mmc_BlobTask *t)
{
	if (t->op != MMC_TASK_COPY)
		return MMC_INVALID_PARAM;
	if (t->src_media == MMC_MEDIA_DRAM && t->dst_media == MMC_MEDIA_SSD)
		return transfer(d, true, t->src_offset, t->dst_offset, t->size);
	if (t->src_media == MMC_MEDIA_SSD && t->dst_media == MMC_MEDIA_DRAM)
		return transfer(d, false, t->dst_offset, t->src_offset, t->size);
	return MMC_INVALID_PARAM;
}

/* The next task whose connection is still the current one, dropping the others (counted in *dropped); NULL when
 * none is queued. */
static struct ssd_task *next_task(struct ssd *d, unsigned *dropped)
{
	struct ssd_task *t;

	while ((t = d->head)) {
		d->head = t->next;
		d->queued--;
		if (!d->head)
			d->tail = NULL;
		/* checked under the lock ssd_fence() waits on: a task that passes is one the fence waits for */
		if (t->conn == meta_conn_losses(d->mc))
			return t;
		++*dropped;
		free(t);
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct ssd *d = arg;

	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		unsigned dropped = 0;
		struct ssd_task *t;

		if (!d->head) {
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		t = next_task(d, &dropped);
		d->moving = t != NULL;
		pthread_mutex_unlock(&d->lock);
		if (dropped) /* outside the lock: a log handler may block, and the reader thread queues under it */
			lg_info("ssd tier: dropped %u moves the lost meta server asked for", dropped);
		if (t) {
			meta_reply(d->mc, t->conn, t->id, run(d, &t->t));
			free(t);
		}
		pthread_mutex_lock(&d->lock);
		d->moving = false;
		pthread_cond_broadcast(&d->idle);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

void ssd_fence(struct ssd *d)
{
	bool waited;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	waited = d->moving;
	pthread_mutex_unlock(&d->lock);
	/* said before the wait (outside the lock, as in worker_main): a disk that never answers must not leave the
	 * operator with a silent rejoin */
	if (waited)
		lg_warn("ssd tier: the rejoin waits for a move the lost meta server asked for to end");
	pthread_mutex_lock(&d->lock);
	while (d->moving)
		pthread_cond_wait(&d->idle, &d->lock);
	pthread_mutex_unlock(&d->lock);
	if (waited)
		lg_warn("ssd tier: the rejoin waited for a move the lost meta server asked for to end");
}

int ssd_start(struct ssd *d, struct meta_conn *mc, void *pool, size_t pool_size)
{
	d->mc = mc;
	d->pool = pool;
	d->pool_size = pool_size;
	if (pthread_create(&d->worker, NULL, worker_main, d))
		return MMC_ERROR;
	pthread_setname_np(d->worker, "mmc-ssd"); /* top -H, and the tests that stall it */
	d->started = true;
	return 0;
}

void ssd_on_task(void *owner, uint64_t conn, uint64_t id, const uint8_t *data, size_t len)
{
	struct ssd *d = owner;
	struct ssd_task *t = calloc(1, sizeof(*t));
	pb_istream_t st = pb_istream_from_buffer(data, len);

	if (!t) {
		meta_reply(d->mc, conn, id, MMC_MALLOC_FAILED);
		return;
	}
	if (!pb_decode(&st, mmc_BlobTask_fields, &t->t)) {
		free(t);
		meta_reply(d->mc, conn, id, MMC_INVALID_PARAM);
		return;
	}
	t->conn = conn;
	t->id = id;
	pthread_mutex_lock(&d->lock);
	if (d->queued == SSD_QUEUE_MAX) {
		pthread_mutex_unlock(&d->lock);
		free(t);
		meta_reply(d->mc, conn, id, MMC_NOT_ENOUGH_MEMORY);
		return;
	}
	d->queued++;
	if (d->tail)
		d->tail->next = t;
	else
		d->head = t;
	d->tail = t;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void ssd_stop(struct ssd *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	if (d->started)
		pthread_join(d->worker, NULL);
	d->started = false;
}

void ssd_close(struct ssd *d)
{
	if (!d)
		return;
	ssd_stop(d);
	while (d->head) {
		struct ssd_task *t = d->head;

		d->head = t->next;
		free(t);
	}
	fork_guard_close(d->fd);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	pthread_cond_destroy(&d->idle);
	free(d);
}
