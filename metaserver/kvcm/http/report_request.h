/*
 * The events of one reportEvent request, read and checked (reference kvcm.md §6.4, §6.5) before any of them is
 * applied: each item is either well-formed, with its block key parsed and its strings at hand, or INVALID_ARGUMENT.
 *
 * Two readers produce this form. er_events_from_json reads a jansson "events" array and accepts every body jansson
 * accepts. er_events_scan reads the raw body of the usual request (string members, ADD, DELETE and BLOCK_SNAPSHOT
 * items) without building a jansson tree, which is most of the cost of a large batch; anything else it declines, and
 * the body goes to jansson. For every body it accepts, both readers give the same events.
 */
#ifndef MMC_KVCM_REPORT_REQUEST_H
#define MMC_KVCM_REPORT_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"

enum { EV_REGISTER = 1, EV_ADD = 2, EV_DELETE = 3, EV_HOST_DOWN = 4, EV_HEARTBEAT = 5, EV_SNAPSHOT = 6 };

#define ER_SPECS_MAX  256 /* specs (or spec names, or mediums) of one item */
#define ER_MEDIUM_MAX 64

struct er_spec {
	const char *name;
	const char *uri; /* NULL in a DELETE's spec names and a REGISTER's mediums */
};

/* One block+medium with its specs: an ADD or DELETE item, or a snapshot entry. */
struct er_block {
	int64_t key;
	const char *medium;
	const struct er_spec *specs;
	size_t nspecs;
};

struct er_event {
	int declared;      /* event_type as given (0: absent or unreadable), for the whole-request rules of §6.6 */
	int type;          /* EV_*: a well-formed item of that type; 0: the item is INVALID_ARGUMENT */
	struct er_block b; /* ADD, DELETE; NODE_REGISTER and HEARTBEAT: b.specs names the mediums */
	const struct er_block *blocks; /* BLOCK_SNAPSHOT */
	size_t nblocks;
};

struct er_events {
	struct er_event *ev;
	size_t n, cap;
	struct arena mem; /* specs, snapshot blocks and (scanned bodies) the strings */
};

void er_events_init(struct er_events *e);
void er_events_free(struct er_events *e);

/* Reads a jansson events array into e (strings borrowed from it); MMC_ERROR when out of memory. */
int er_events_from_json(struct er_events *e, json_t *events);

/*
 * Reads a raw request body of the usual shape. On success e holds the events and *top a new object with the
 * body's other members (all strings), for the generic request checks. false (nothing to free) when the body has
 * anything this reader does not handle, more than max events, or is not well-formed: jansson then reads it.
 */
bool er_events_scan(struct er_events *e, const char *body, size_t len, size_t max, json_t **top);

/* The item rules of §6.5, shared by both readers. */
bool er_parse_key(const char *s, int64_t *out);
bool er_medium_ok(const char *m);
/* Names present, non-empty, unique; with uris, each a valid URI without s_version. */
bool er_specs_ok(const struct er_spec *specs, size_t n, bool uris);
/*
 * The type of an item that declared type (0 when unreadable), carried another type's payload or not, and carried
 * an object as its own payload or not: 0 unless it is one of the six types with exactly its own payload.
 */
int er_item_type(int declared, bool other_payload, bool own_payload);
/* Whether no two of a snapshot's n blocks share key and medium: 1 yes, 0 no, -1 out of memory. */
int er_blocks_unique(struct er_events *e, const struct er_block *b, size_t n);
/* A snapshot item's n blocks b, read ok (each valid) or not: the item is invalid unless they are valid and unique.
 * false when out of memory. */
bool er_snapshot_blocks(struct er_events *e, struct er_event *ev, const struct er_block *b, size_t n, bool ok);
/* Fills b from an ADD or DELETE payload's fields (key, medium NULL when absent or not strings); false: invalid. */
bool er_block_read(struct er_block *b, const char *key, const char *medium, const struct er_spec *specs, size_t n,
                   bool specs_shape_ok, bool uris);

#endif
