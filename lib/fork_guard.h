/*
 * What a child forked without exec (Python's multiprocessing, a bare os.fork()) must not inherit from its parent's
 * stores. The child gets copies of the parent's descriptors and of every store's memory, but none of its threads: a
 * store it used would write frames on the parent's meta connection (an Unregister there drops the parent's local
 * service and its objects) and wait forever for threads that do not exist; and its copies of the files libmmc locks
 * (pool files, SSD files) would keep those locks after the parent died, so that nobody could take them back.
 *
 * So: every child forked after the first store was made gets a new fork generation, and a store remembers the one
 * it was made in (store_check_ready refuses a store of an earlier one); each descriptor entered here is pointed at
 * /dev/null in the child, which drops the child's share of its lock and keeps its number taken. A descriptor is
 * made and entered under the guard, and fork takes the guard too, so that no child sees one open and not entered.
 * While any is entered, fork returns in the parent only once the child has dropped its copies (a pipe's end of
 * file; 5 s at most), so that a parent that closes a store and opens its files again at once finds them free.
 * Nothing is logged under the guard: a log handler that waits for something a forking thread holds (Python's GIL)
 * would deadlock.
 */
#ifndef MMC_FORK_GUARD_H
#define MMC_FORK_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

/* Installs the fork handlers (once per process; idempotent, thread-safe). Called by mmc_create. */
void fork_guard_init(void);

/* This process's fork generation: one more in a child than in its parent. Lock-free. */
unsigned fork_generation(void);

/* open(2) with the descriptor entered. Returns the descriptor or -1 (errno set). */
int fork_guard_open(const char *path, int flags, mode_t mode);
/* The same for any opener (a memfd, a name made while opening): opener(arg) runs under the guard and returns a
 * descriptor or -1 with errno; what names the file in the warning when the table is full, read after opener ran. */
int fork_guard_open_with(int (*opener)(void *arg), void *arg, const char *what);

/* Holds off fork() until fork_guard_release(): the caller makes a descriptor (or a mapping) and enters it meanwhile. */
void fork_guard_hold(void);
void fork_guard_release(void);

/* Enters fd (caller holds the guard). False when the table is full: the caller logs fork_guard_full(), after the
 * release. */
bool fork_guard_enter(int fd);
void fork_guard_full(const char *what);

/* Removes fd from the table and closes it, under the guard. */
void fork_guard_close(int fd);

#endif
