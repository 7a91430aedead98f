#include "block_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_index.h"
#include "kvcm_state.h"
#include "log.h"
#include "mmc/mmc.h"
#include "quota.h"
#include "storage.h"

#define BLOCK_RECORD_VERSION 2
#define SPECS_MAX            256

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

static uint8_t *put_bytes(uint8_t *p, const char *s, size_t n, int lenbytes)
{
	uint32_t len = (uint32_t)n;

	memcpy(p, &len, (size_t)lenbytes);
	memcpy(p + lenbytes, s, n);
	return p + lenbytes + n;
}

static size_t record_size(const struct block *b)
{
	size_t n = 2 + 8 + 8 + 2;

	for (const struct location *l = b->locs; l; l = l->next) {
		n += 2 + strlen(location_name(l)) + 2 + 8 + 2 + strlen(l->storage->name) + 2;
		for (uint16_t j = 0; j < l->nspecs; j++)
			n += 2 + strlen(l->specs[j].name) + 4 + strlen(l->specs[j].uri);
	}
	return n;
}

static uint8_t *put_location(uint8_t *p, const struct location *l)
{
	p = put_bytes(p, location_name(l), strlen(location_name(l)), 2);
	*p++ = l->status;
	*p++ = l->type;
	p = put_u64(p, l->create_time_us);
	p = put_bytes(p, l->storage->name, strlen(l->storage->name), 2);
	memcpy(p, &l->nspecs, 2);
	p += 2;
	for (uint16_t j = 0; j < l->nspecs; j++) {
		p = put_bytes(p, l->specs[j].name, strlen(l->specs[j].name), 2);
		p = put_bytes(p, l->specs[j].uri, strlen(l->specs[j].uri), 4);
	}
	return p;
}

int block_record_put(struct kvcm *k, const struct instance *inst, const struct block *b)
{
	/* a snapshot writes thousands of records in one turn; most fit here and cost no malloc/free pair */
	uint8_t stack[4096];
	size_t n = record_size(b);
	uint8_t *buf = n <= sizeof(stack) ? stack : malloc(n), *p = buf;
	uint16_t nlocs = 0;
	int rc;

	if (!buf) {
		log_error("op=kvcm_store err=\"out of memory\"");
		return MMC_ERROR;
	}
	for (const struct location *l = b->locs; l; l = l->next)
		nlocs++;
	*p++ = BLOCK_RECORD_VERSION;
	*p++ = b->has_prev;
	p = put_u64(p, (uint64_t)b->prev_key);
	p = put_u64(p, b->lru_time_us);
	memcpy(p, &nlocs, 2);
	p += 2;
	for (const struct location *l = b->locs; l; l = l->next)
		p = put_location(p, l);
	rc = store_put_block(&k->store, inst->uid, b->key, buf, (size_t)(p - buf));
	if (buf != stack)
		free(buf);
	return rc;
}

int block_record_del(struct kvcm *k, const struct instance *inst, int64_t key)
{
	return store_del_block(&k->store, inst->uid, key);
}

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static bool take(struct reader *r, void *out, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return false;
	}
	memcpy(out, r->p, n);
	r->p += n;
	return true;
}

/* A length-prefixed string, NUL-terminated into a fresh buffer. */
static char *take_str(struct reader *r, int lenbytes)
{
	uint32_t len = 0;
	char *s;

	if (!take(r, &len, (size_t)lenbytes) || (size_t)(r->end - r->p) < len) {
		r->bad = true;
		return NULL;
	}
	s = malloc(len + 1);
	if (s) {
		memcpy(s, r->p, len);
		s[len] = '\0';
	}
	r->p += len;
	return s;
}

static struct location *read_location(struct kvcm *k, struct reader *r)
{
	char *id, *sname, *names[SPECS_MAX] = {0}, *uris[SPECS_MAX] = {0};
	uint8_t status = 0, type = 0;
	uint64_t ctime = 0;
	uint16_t nspecs = 0, j;
	struct location *l = NULL;
	struct storage *s;

	id = take_str(r, 2);
	take(r, &status, 1);
	take(r, &type, 1);
	take(r, &ctime, 8);
	sname = take_str(r, 2);
	take(r, &nspecs, 2);
	for (j = 0; j < nspecs && j < SPECS_MAX && !r->bad; j++) {
		names[j] = take_str(r, 2);
		uris[j] = take_str(r, 4);
	}
	s = sname ? storage_find(k, sname) : NULL;
	if (!r->bad && s && id && nspecs <= SPECS_MAX)
		l = location_new_er(s, strncmp(id, "kvs#", 4) == 0 ? id : NULL, nspecs, (const char *const *)names,
		                    (const char *const *)uris);
	if (l) {
		if (!l->er_key)
			snprintf(l->id, sizeof(l->id), "%s", id);
		l->status = status;
		l->type = type;
		l->create_time_us = ctime;
	}
	for (j = 0; j < SPECS_MAX; j++) {
		free(names[j]);
		free(uris[j]);
	}
	free(sname);
	free(id);
	return l;
}

void block_record_read(struct kvcm *k, struct block *b, const void *rec, size_t len)
{
	struct reader r = {rec, (const uint8_t *)rec + len, false};
	uint8_t version = 0, has_prev = 0;
	uint16_t nlocs = 0;
	struct location **tail = &b->locs;

	take(&r, &version, 1);
	take(&r, &has_prev, 1);
	take(&r, &b->prev_key, 8);
	take(&r, &b->lru_time_us, 8);
	take(&r, &nlocs, 2);
	b->has_prev = has_prev;
	for (uint16_t i = 0; i < nlocs && !r.bad; i++) {
		struct location *l = read_location(k, &r);

		if (!l)
			continue;
		*tail = l;
		tail = &l->next;
	}
}

void block_drop_location(struct kvcm *k, struct instance *inst, struct block *b, struct location *l)
{
	location_unlink(b, l);
	usage_sub_location(inst, l);
	location_free(l);
	if (!b->locs) {
		block_record_del(k, inst, b->key);
		block_remove(inst, b);
		usage_sub_key(inst);
	} else {
		block_record_put(k, inst, b);
	}
}
