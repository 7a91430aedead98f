#include "reload.h"

#include <stddef.h>
#include <string.h>

#include "conf_parse.h"
#include "conn.h"
#include "kvcm_conf.h"
#include "log.h"
#include "meta_conf.h"
#include "meta_err.h"
#include "mmc/mmc.h"
#include "server.h"
#include "start_checks.h"
#include "tenants.h"

static bool reloadable(const struct conf_key *k)
{
	return k->flags & CONF_RELOADABLE;
}

static bool differ(const struct conf_key *k, const void *running, const void *fresh)
{
	const char *a = (const char *)running + k->offset, *b = (const char *)fresh + k->offset;

	return k->type == CONF_STR ? strncmp(a, b, k->size) != 0 : memcmp(a, b, k->size) != 0;
}

/* Every row of the table alike: a reloadable one takes the fresh value (but the log file, which reopen_log copies
 * once it is open), any other stays, and the log says a restart applies it. */
static void merge(struct meta_settings *running, const struct meta_settings *fresh)
{
	const size_t log_path = offsetof(struct meta_settings, conf) + offsetof(struct meta_conf, log_path);

	for (const struct conf_key *k = meta_conf_keys(); k->name; k++) {
		if (!differ(k, running, fresh) || k->offset == log_path)
			continue;
		if (reloadable(k))
			memcpy((char *)running + k->offset, (const char *)fresh + k->offset, k->size);
		else
			log_warn("op=reload key=%s note=\"changed in the file; takes effect at the next start\"",
			         k->name);
	}
}

/* The log file a reload names: a new path is opened only once the rest of the reload can no longer fail. */
static bool new_log_path(const struct meta *m, const struct meta_conf *fresh)
{
	return fresh->log_path[0] && strcmp(fresh->log_path, m->conf.log_path) != 0;
}

/* The log where fresh says, or (no new path) the same file again under its name, for logrotate's SIGHUP. */
static void reopen_log(struct meta *m, const struct meta_conf *fresh)
{
	char err[512];
	int rc;

	if (!fresh->log_path[0] && m->conf.log_path[0]) { /* cleared: stderr, as at a start without it */
		log_info("op=reload key=ock.mmc.log_path value=stderr (the log goes to stderr from here)");
		log_to_stderr();
		m->conf.log_path[0] = '\0';
		return;
	}
	rc = new_log_path(m, fresh) ? log_open(fresh->log_path, err, sizeof(err)) : log_reopen(err, sizeof(err));
	if (rc) { /* checked before (log_check): the file went in between */
		log_warn("op=reload key=ock.mmc.log_path err=\"%s\" note=\"still logging where it was\"", err);
		return;
	}
	if (fresh->log_path[0])
		strcpy(m->conf.log_path, fresh->log_path);
}

void reload_rejected(const struct meta_err *e)
{
	char err[512];

	/* the running file again under its name all the same: logrotate's SIGHUP must not leave the log in the file
	 * it moved because the config file beside it is refused */
	if (log_reopen(err, sizeof(err)))
		log_warn("op=log_reopen err=\"%s\" note=\"still logging to the old file\"", err);
	log_warn("op=reload result=rejected key=%s err=\"%s\" note=\"the running values are kept\"",
	         e->key[0] ? e->key : "-", e->message);
}

/*
 * The next start's checks of the file (start_checks): a check it fails is refused, unless the running settings fail
 * that check the same way. Then a file they name changed since the start, not this file, and refusing would change
 * nothing: it goes on, with a warning that a start would fail. 0, or -1 with *e filled.
 */
static int next_start_checks(const struct meta_settings *running, const struct meta_settings *fresh, struct meta_err *e)
{
	static struct meta_err now; /* a message of 1280 bytes: off the loop's stack */

	for (size_t i = 0; i < START_CHECKS; i++) {
		if (start_check(i, fresh, e) == 0)
			continue;
		if (start_check(i, running, &now) == 0 || strcmp(now.message, e->message) != 0)
			return -1; /* this file is what a start would refuse */
		log_warn(
		    "op=reload key=%s warning=\"the checks of a start (--check-config) fail: %s\" note=\"the running "
		    "settings fail them too\"",
		    e->key[0] ? e->key : "-", e->message);
	}
	meta_err_clear(e);
	return 0;
}

/* What can fail, before anything changes: the new log file, the next start's checks, the tenants file. 0, or the
 * rejection logged. */
static int reload_prepare(struct meta *m, const struct meta_settings *running, const struct meta_settings *fresh,
                          struct tenants *tenants)
{
	struct meta_err e = {0};
	const char *key = NULL;

	if (new_log_path(m, &fresh->conf) && log_check(fresh->conf.log_path, e.message, sizeof(e.message)))
		key = "ock.mmc.log_path";
	else if (next_start_checks(running, fresh, &e))
		key = e.key;
	else if (m->tenants.n &&
	         tenants_reread(m, m->conf.tenants_file, m->conf.auth_token, tenants, e.message, sizeof(e.message)))
		key = "ock.mmc.meta.tenants_file";
	if (!key)
		return 0;
	if (key != e.key)
		snprintf(e.key, sizeof(e.key), "%s", key);
	reload_rejected(&e);
	return MMC_INVALID_PARAM;
}

void reload_apply(struct meta *m, const struct meta_settings *fresh)
{
	static struct meta_settings running; /* two KVCM configurations are too large for the loop's stack */
	struct tenants tenants = {NULL, 0};
	enum log_level lvl;

	running.conf = m->conf;
	running.kvcm = *kvcm_conf();
	if (reload_prepare(m, &running, fresh, &tenants))
		return;
	merge(&running, fresh);
	reopen_log(m, &fresh->conf); /* copies log_path once the new file is open */
	strcpy(running.conf.log_path, m->conf.log_path);
	m->conf = running.conf;
	kvcm_conf_reload(server_of(m)->kvcm, &running.kvcm);
	if (m->tenants.n) {
		tenants_take(m, &tenants);
		conns_close_removed_tenants(m);
		log_info("op=reload key=ock.mmc.meta.tenants_file tenants_known=%u", m->tenants.n - 1);
	}
	if (log_parse_level(m->conf.log_level, &lvl) == 0)
		log_set_level(lvl);
	log_info("op=reload result=applied log_level=%s evict_high=%u evict_low=%u lease_ttl_ms=%llu loop_spin_us=%u",
	         m->conf.log_level, m->conf.evict_high, m->conf.evict_low, (unsigned long long)m->conf.lease_ttl_ms,
	         m->conf.loop_spin_us);
}
