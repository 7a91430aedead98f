/*
 * Event reporters (reference kvcm.md §6): an engine cache subscriber, identified by instance + storage type
 * (ST_EVENT_REPORT_L1P5 or _L2) + host_ip_port, that reports its blocks with reportEvent. Reporters live in
 * memory only: liveness (heartbeats), the committed generation (the s_version KVCM appends to every URI), strict
 * or soft visibility, tombstones. Their locations (kvs#<type>#<medium>#<host>) are stored with the blocks.
 */
#ifndef MMC_KVCM_REPORTER_H
#define MMC_KVCM_REPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define GEN_LEN 32

struct kvcm;

struct reporter {
	struct reporter *next;
	struct instance *inst;
	struct storage *storage;
	int type;
	char host[KVCM_NAME_MAX];
	bool tombstone; /* unregistered (HOST_DOWN or past grace): only REGISTER revives it */
	bool available; /* heartbeat within heartbeat_timeout_ms */
	bool strict;    /* a snapshot committed: only its generation is visible */
	uint64_t last_heartbeat_ms;
	uint64_t last_snapshot_ms; /* 0: never */
	char gen[GEN_LEN + 1];     /* "" until the first delta or snapshot */
	char **mediums;
	size_t nmediums;
};

int reporters_start(struct kvcm *k);
/* Forgets the reporters of inst (removeInstance: its locations go with its trim). */
void reporters_forget(struct kvcm *k, const struct instance *inst);
/* Forgets storage s in every reporter (removeStorage): the liveness sweep then uses the default parameters. */
void reporters_forget_storage(struct kvcm *k, const struct storage *s);
void reporters_stop(struct kvcm *k);
/* Judges every reporter's heartbeat against the logical clock (what the liveness tick does). */
void reporters_sweep(struct kvcm *k);

/* All reporters (follow ->next). */
struct reporter *reporter_first(struct kvcm *k);
struct reporter *reporter_find(struct kvcm *k, const struct instance *inst, int type, const char *host);
/* Reporters one server keeps at most (one per instance, event-report type and host). */
#define REPORTERS_MAX 65536
/* The reporter, created (fresh, available) when it was never seen. NULL when out of memory or REPORTERS_MAX are
 * kept. */
struct reporter *reporter_get(struct kvcm *k, struct instance *inst, struct storage *s, int type, const char *host);
/* A new random generation for r. */
void reporter_new_generation(struct kvcm *k, struct reporter *r);
/* Unregisters r (HOST_DOWN, grace expiry): hidden at once, its locations' metadata cleaned up in the background. */
void reporter_tombstone(struct kvcm *k, struct reporter *r);
/* Removes, in the background, r's locations that hold no spec of generation keep ("" removes them all). */
int reporter_cleanup(struct kvcm *k, struct reporter *r, const char *keep);
bool reporter_merge_medium(struct reporter *r, const char *medium);

/* kvs#<type>#<medium>#<host> */
int er_key(char *out, size_t cap, int type, const char *medium, const char *host);
/* Whether an event-report location may be returned by queries (§6.11). */
bool er_location_visible(struct kvcm *k, const struct instance *inst, const struct location *l);
/* The same for a caller that already knows l's reporter r (NULL: none). */
bool er_location_visible_by(const struct reporter *r, const struct location *l);
/* Its host (from the key) into out; false when the key is malformed. */
bool er_location_host(const struct location *l, char *out, size_t cap, char *medium, size_t mcap);

/* URI checks of §6.5: "scheme://", a numeric port if any. Reports the s_version parameters found (sver: the last). */
bool er_uri_valid(const char *uri, const char **sver, int *nsver);

#endif
