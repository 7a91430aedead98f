/*
 * A SIGHUP reload of mmc-metaserver's configuration, once main() has read the file and the command line again:
 * applied whole, or rejected whole with a warning naming the key. What can change while running: the log level,
 * the eviction thresholds, the lease TTL and the log file (reopened); any other changed key is named in a warning
 * and waits for a restart. Loop thread.
 */
#ifndef MMC_RELOAD_H
#define MMC_RELOAD_H

#include "meta.h"

struct meta_err;

/* fresh passed meta_conf_check: apply it to m->conf. */
void reload_apply(struct meta *m, const struct meta_conf *fresh);
/* Reading or checking failed as e says: log it, naming e's key, and keep every running value. */
void reload_rejected(const struct meta_err *e);

#endif
