/*
 * The data dir before LMDB opens it: created with its missing parents (mode 0700: metadata is nobody else's to
 * read), checked to be a writable directory, and, when opening fails, told apart as busy (another server holds
 * its lock) or unusable. persist_lmdb.c is its one creator: nothing else makes the data dir. Loop thread.
 */
#ifndef MMC_DATA_DIR_H
#define MMC_DATA_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Creates path and every missing parent (0700 each; existing ones are left as they are), then checks that path is
 * a directory this process can write. 0, or MMC_ERROR with a message naming the component that failed in err. */
int data_dir_prepare(const char *path, char *err, size_t errlen);

/* Whether another process holds the lock of the data dir at path right now. */
bool data_dir_busy(const char *path);

#endif
