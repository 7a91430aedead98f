/*
 * A SIGHUP reload of mmc-metaserver's configuration, once main() has read the file and the command line again:
 * applied whole, or rejected whole with a warning naming the key. What can change while running is what the
 * configuration table (meta_conf.h) flags CONF_RELOADABLE, of the object store and the KV Cache Manager alike (the log
 * file is reopened); any other changed key is named in a warning and waits for a restart. Loop thread.
 */
#ifndef MMC_RELOAD_H
#define MMC_RELOAD_H

#include "meta.h"

struct meta_err;
struct meta_settings;

/* fresh passed meta_conf_check: apply its reloadable rows to m->conf and to the KV Cache Manager. */
void reload_apply(struct meta *m, const struct meta_settings *fresh);
/* Reading or checking failed as e says: log it, naming e's key, and keep every running value. */
void reload_rejected(const struct meta_err *e);

#endif
