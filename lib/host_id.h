/*
 * Which host this process runs on, as two processes on one host can prove to each other through the meta server:
 * the kernel's boot id (a random UUID per boot, /proc/sys/kernel/random/boot_id) and the host name. A name alone
 * is not enough: two containers, or two machines cloned from one image, can share a name; a boot id is shared only
 * by processes under one running kernel.
 */
#ifndef MMC_HOST_ID_H
#define MMC_HOST_ID_H

#include <stdbool.h>

#define HOST_BOOT_ID_SIZE 40 /* a UUID with its NUL */
#define HOST_NAME_SIZE    256

/* This process's boot id ("" when the kernel does not say). Thread-safe (read once). */
const char *host_boot_id(void);

/* True when a peer that reported (boot_id, name) runs under this process's kernel. False when either is unknown. */
bool host_is_mine(const char *boot_id, const char *name);

#endif
