#include "reload.h"

#include <stddef.h>
#include <string.h>

#include "conf_parse.h"
#include "log.h"
#include "meta_conf.h"
#include "meta_err.h"

static bool reloadable(const struct conf_key *k)
{
	return k->flags & CONF_RELOADABLE;
}

/* Keys a reload cannot change: the running value stays, and the log says a restart applies the new one. */
static void warn_restart_only(const struct meta_conf *running, const struct meta_conf *fresh)
{
	for (const struct conf_key *k = meta_conf_keys(); k->name; k++) {
		const char *a = (const char *)running + k->offset, *b = (const char *)fresh + k->offset;
		bool differ = k->type == CONF_STR ? strncmp(a, b, k->size) != 0 : memcmp(a, b, k->size) != 0;

		if (differ && !reloadable(k))
			log_warn("op=reload key=%s note=\"changed in the file; takes effect at the next start\"",
			         k->name);
	}
}

static void reopen_log(struct meta *m, const struct meta_conf *fresh)
{
	char err[512];
	int rc;

	if (fresh->log_path[0] && strcmp(fresh->log_path, m->conf.log_path) != 0)
		rc = log_open(fresh->log_path, err, sizeof(err));
	else
		rc = log_reopen(err, sizeof(err));
	if (rc) {
		log_warn("op=reload key=ock.mmc.log_path err=\"%s\" note=\"still logging where it was\"", err);
		return;
	}
	if (fresh->log_path[0])
		strcpy(m->conf.log_path, fresh->log_path);
}

void reload_rejected(const struct meta_err *e)
{
	log_warn("op=reload result=rejected key=%s err=\"%s\" note=\"the running values are kept\"",
	         e->key[0] ? e->key : "-", e->message);
}

void reload_apply(struct meta *m, const struct meta_conf *fresh)
{
	enum log_level lvl;

	warn_restart_only(&m->conf, fresh);
	reopen_log(m, fresh); /* copies log_path once the new file is open: a failed open keeps the old */
	if (log_parse_level(fresh->log_level, &lvl) == 0)
		log_set_level(lvl);
	for (const struct conf_key *k = meta_conf_keys(); k->name; k++)
		if (reloadable(k) && k->offset != offsetof(struct meta_conf, log_path))
			memcpy((char *)&m->conf + k->offset, (const char *)fresh + k->offset, k->size);
	log_info("op=reload result=applied log_level=%s evict_high=%u evict_low=%u lease_ttl_ms=%llu", fresh->log_level,
	         m->conf.evict_high, m->conf.evict_low, (unsigned long long)m->conf.lease_ttl_ms);
}
