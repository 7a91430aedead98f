/*
 * The checks a start makes of its settings that keep nothing open: leader election's keys, the metadata store's
 * password file, the RPC port's TLS files, the KV Cache Manager's admin, binds and TLS files. --check-config runs them
 * as a start would. A reload (SIGHUP) runs them on the file it read: a file the next start would refuse is refused
 * while an operator is there to read why, not at the next restart.
 */
#ifndef MMC_START_CHECKS_H
#define MMC_START_CHECKS_H

#include <stddef.h>

struct meta_conf;
struct meta_err;
struct meta_settings;

/* The checks, by index: leader election, the store's password file, the RPC port's TLS files, the KVCM. */
#define START_CHECKS 4

/* Runs check i (< START_CHECKS) on s; a failure fills *e (EXIT_CONFIG, its key where the message does not name it).
 * Returns 0 or -1. Reads files; thread-safe (it shares nothing). */
int start_check(size_t i, const struct meta_settings *s, struct meta_err *e);
/* Every check on s in the start's order, up to the first that fails. Returns 0 or -1, as start_check. */
int start_checks(const struct meta_settings *s, struct meta_err *e);
/* ock.mmc.meta.store_password_file's password into password (cap bytes), "" without one; 0, or -1 with err. */
int store_password(const struct meta_conf *c, char *password, size_t cap, char *err, size_t errlen);

#endif
