/*
 * file://DIR: the lock for servers on one host (and for tests). DIR/leader holds the holder's record (ha_holder
 * text, with the wall-clock end of its lease); every read of it and every change happens under flock of
 * DIR/leader.lock, taken without blocking, so that no elector thread ever waits on another: a process stopped inside
 * the few microseconds it holds it keeps the others from the record until it resumes or dies (as, with LMDB, it
 * keeps them from the data dir). A renewal rewrites the record in place, one fixed-size pwrite over blocks the file
 * already has: a rename or a fresh file makes the file system allocate and journal, which on a busy disk took
 * hundreds of ms and once longer than the lease. A holder that dies leaves its record behind; it counts until its
 * expiry, so a standby takes over within one lease.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lock.h"
#include "log.h"
#include "mmc/mmc.h"

#define RECORD_LEN 1024 /* every write covers this much: a shorter record leaves no tail of a longer one */

struct lock_file {
	struct ha_lock base;
	int fd; /* DIR/leader.lock */
	char record[4096];
};

static int read_record(const struct lock_file *f, struct ha_holder *h)
{
	char buf[RECORD_LEN + 1];
	int fd = open(f->record, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	memset(h, 0, sizeof(*h));
	if (fd < 0)
		return errno == ENOENT ? 0 : MMC_ERROR;
	n = read(fd, buf, RECORD_LEN);
	close(fd);
	if (n < 0)
		return MMC_ERROR;
	buf[n] = '\0';
	if (buf[0] && ha_holder_parse(h, buf))
		log_warn("op=ha_lock backend=file err=\"unreadable record in %s: taken over\"", f->record);
	return 0;
}

/* Opened by path each time, not kept open: whatever put the file there (a release unlinks it) is what is read. */
static int write_record(const struct lock_file *f, const struct ha_holder *h)
{
	char buf[RECORD_LEN] = {0};
	int fd;
	ssize_t n;

	if (ha_holder_format(h, buf, sizeof(buf)) < 0)
		return MMC_INVALID_PARAM;
	fd = open(f->record, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return MMC_ERROR;
	n = pwrite(fd, buf, sizeof(buf), 0);
	return close(fd) == 0 && n == (ssize_t)sizeof(buf) ? 0 : MMC_ERROR;
}

/* Whether record h is self's own: the same node id and the same process (token). Another process with this node id
 * (a second one started by mistake, or the next one while this one still runs) waits for the lease to end, as any
 * other node does, and never releases this one's record. */
static bool own(const struct ha_holder *h, const struct ha_holder *self)
{
	return strcmp(h->node_id, self->node_id) == 0 && strcmp(h->token, self->token) == 0;
}

static int file_acquire(struct ha_lock *l, const struct ha_holder *self, uint32_t lease_ms, struct ha_holder *cur)
{
	struct lock_file *f = (struct lock_file *)l;
	struct ha_holder h, mine = *self;
	int64_t now = ha_wall_ms();
	int rc;

	if (flock(f->fd, LOCK_EX | LOCK_NB))
		return errno == EWOULDBLOCK ? MMC_TIMEOUT : MMC_ERROR;
	rc = read_record(f, &h);
	if (rc == 0 && h.node_id[0] && !own(&h, self) && h.expiry_wall_ms > now) {
		*cur = h;
		rc = 0;
	} else if (rc == 0) {
		mine.expiry_wall_ms = now + lease_ms;
		rc = write_record(f, &mine) ? MMC_ERROR : 1;
		if (rc == 1)
			*cur = mine;
	}
	flock(f->fd, LOCK_UN);
	return rc;
}

static int file_peek(struct ha_lock *l, struct ha_holder *cur)
{
	struct lock_file *f = (struct lock_file *)l;
	int rc;

	/* shared: a record being rewritten in place is not read half old, half new */
	if (flock(f->fd, LOCK_SH | LOCK_NB))
		return errno == EWOULDBLOCK ? MMC_TIMEOUT : MMC_ERROR;
	rc = read_record(f, cur);
	flock(f->fd, LOCK_UN);
	if (rc)
		return MMC_ERROR;
	if (cur->expiry_wall_ms <= ha_wall_ms())
		memset(cur, 0, sizeof(*cur));
	return 0;
}

static void file_release(struct ha_lock *l, const struct ha_holder *self)
{
	struct lock_file *f = (struct lock_file *)l;
	struct ha_holder h;

	if (flock(f->fd, LOCK_EX))
		return;
	if (read_record(f, &h) == 0 && own(&h, self))
		unlink(f->record);
	flock(f->fd, LOCK_UN);
}

static void file_close(struct ha_lock *l)
{
	struct lock_file *f = (struct lock_file *)l;

	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static const struct ha_lock_ops file_ops = {file_acquire, file_peek, file_release, file_close};

int ha_lock_file_open(struct ha_lock **out, const char *dir, char *err, size_t errlen)
{
	struct lock_file *f = calloc(1, sizeof(*f));
	char path[4096];

	if (!f)
		return MMC_MALLOC_FAILED;
	f->base.ops = &file_ops;
	snprintf(f->record, sizeof(f->record), "%s/leader", dir);
	snprintf(path, sizeof(path), "%s/leader.lock", dir);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the lock dir \"%s\": %s", dir, strerror(errno));
		free(f);
		return MMC_INVALID_PARAM;
	}
	f->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (f->fd < 0) {
		snprintf(err, errlen, "cannot open \"%s\": %s", path, strerror(errno));
		free(f);
		return MMC_INVALID_PARAM;
	}
	*out = &f->base;
	return 0;
}
