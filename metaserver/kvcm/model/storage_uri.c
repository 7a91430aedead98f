#include "storage_uri.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "kvcm_state.h"
#include "mmc/mmc.h"
#include "objects.h"

/* An entry of the path -> count map of files holding several blocks (key_count_per_file > 1): k->file_refs. */
struct file_ref {
	struct hmap_node link;
	uint64_t hash;
	uint32_t count;
	char path[];
};

/* Keeps [A-Za-z0-9._-]; escapes the rest, and "." or ".." as a whole, so a name never leaves its directory. */
static size_t path_component(char *out, size_t cap, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	bool dots = strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || !*s;
	size_t n = 0;

	for (; *s && n + 4 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		if (!dots && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		              c == '_' || c == '-')) {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	if (!n && n + 1 < cap)
		out[n++] = '_';
	out[n] = '\0';
	return n;
}

static const char *scheme(int type)
{
	return type == ST_MMC ? "mmc://" : type == ST_DUMMY ? "dummy://" : "file://";
}

/* "<root>/<instance>/<spec>/" (root always ends with one slash); "<instance>~<dir_uid>" for an instance registered
 * again while its id's earlier instance was being deleted ('~' is escaped in a name: no id reads as that). */
static int dir_prefix(const struct storage *s, const struct instance *inst, uint32_t spec, char *out, size_t cap)
{
	char ci[3 * KVCM_NAME_MAX + 24], cs[3 * KVCM_NAME_MAX + 2];
	const char *root = s->type == ST_MMC ? s->key_prefix : s->root_path;
	size_t rl = strlen(root);
	int n;

	n = (int)path_component(ci, sizeof(ci), inst->id);
	if (inst->dir_uid)
		snprintf(ci + n, sizeof(ci) - (size_t)n, "~%" PRIu64, inst->dir_uid);
	path_component(cs, sizeof(cs), inst->specs[spec].name);
	n = snprintf(out, cap, "%s%s%s%s/%s/", scheme(s->type), root, rl && root[rl - 1] != '/' ? "/" : "", ci, cs);
	return n < 0 || (size_t)n >= cap ? MMC_INVALID_PARAM : 0;
}

static char *one_uri(const char *dir, uint64_t key, const char *suffix, int blkid, int64_t size)
{
	char *u;
	int n;

	if (blkid >= 0)
		n = asprintf(&u, "%s%" PRIx64 "%s?blkid=%d&size=%" PRId64, dir, key, suffix, blkid, size);
	else
		n = asprintf(&u, "%s%" PRIx64 "?size=%" PRId64, dir, key, size);
	return n < 0 ? NULL : u;
}

/*
 * The file of a group of keys: named after its first key plus a hash of all of them. The name is persisted with the
 * locations and handed to clients, so it takes the stable hash, not the per-process keyed one.
 */
static void group_suffix(const int64_t *keys, const size_t *idx, size_t n, char *out, size_t cap)
{
	char joined[4096];
	size_t len = 0;

	for (size_t i = 0; i < n && len + 24 < sizeof(joined); i++)
		len += (size_t)snprintf(joined + len, sizeof(joined) - len, "%s%" PRId64, i ? "|" : "", keys[idx[i]]);
	snprintf(out, cap, "_%" PRIx64, hash_stable(joined, len));
}

static int spec_uris(struct storage *s, const struct instance *inst, uint32_t j, const int64_t *keys, size_t n,
                     const uint8_t *sel, char **uris)
{
	uint32_t nspecs = inst->nspecs, per = s->type == ST_NFS ? s->key_count_per_file : 1;
	size_t *idx = malloc(n * sizeof(*idx)), m = 0;
	char dir[2 * 3 * KVCM_NAME_MAX + 1200], suffix[24];
	int rc = dir_prefix(s, inst, j, dir, sizeof(dir));

	if (!idx)
		return MMC_MALLOC_FAILED;
	for (size_t i = 0; i < n; i++)
		if (!sel || sel[i * nspecs + j])
			idx[m++] = i;
	for (size_t g = 0; rc == 0 && g < m; g += per) {
		size_t cnt = m - g < per ? m - g : per;

		if (cnt > 1)
			group_suffix(keys, idx + g, cnt, suffix, sizeof(suffix));
		for (size_t e = 0; e < cnt && rc == 0; e++) {
			size_t i = idx[g + e];

			/* every entry of a shared file names the file (after its first key) and its slot */
			uris[i * nspecs + j] = one_uri(dir, (uint64_t)keys[idx[g]], cnt > 1 ? suffix : "",
			                               cnt > 1 ? (int)e : -1, inst->specs[j].size);
			if (!uris[i * nspecs + j])
				rc = MMC_MALLOC_FAILED;
		}
	}
	free(idx);
	return rc;
}

int storage_make_uris(struct storage *s, const struct instance *inst, const int64_t *keys, size_t n, const uint8_t *sel,
                      char **uris)
{
	int rc = 0;

	memset(uris, 0, n * inst->nspecs * sizeof(*uris));
	for (uint32_t j = 0; j < inst->nspecs && rc == 0; j++)
		rc = spec_uris(s, inst, j, keys, n, sel, uris);
	if (rc) {
		for (size_t i = 0; i < n * inst->nspecs; i++)
			free(uris[i]);
		memset(uris, 0, n * inst->nspecs * sizeof(*uris));
	}
	return rc;
}

uint64_t uri_size_param(const char *uri)
{
	const char *q = strchr(uri, '?'), *p;

	for (p = q; p; p = strchr(p + 1, '&'))
		if (strncmp(p + 1, "size=", 5) == 0)
			return strtoull(p + 6, NULL, 10);
	return 0;
}

/* The literal path of a file:// URI (never percent-decoded: our own names are escaped). */
static size_t file_path(const char *uri, char *out, size_t cap)
{
	const char *p = uri + 7, *q = strchr(p, '?');
	size_t n = q ? (size_t)(q - p) : strlen(p);

	if (strncmp(uri, "file://", 7) != 0 || n == 0 || n >= cap || strstr(p, "/../"))
		return 0;
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

static bool shared_file(const char *uri)
{
	const char *q = strchr(uri, '?');

	return q && (strncmp(q + 1, "blkid=", 6) == 0 || strstr(q, "&blkid="));
}

static uint64_t ref_hash(const struct hmap_node *l)
{
	return hmap_entry(l, struct file_ref, link)->hash;
}

static struct file_ref *ref_find(struct kvcm *k, const char *path, uint64_t h)
{
	hmap_foreach_hash(&k->file_refs, h, l)
	{
		struct file_ref *e = hmap_entry(l, struct file_ref, link);

		if (e->hash == h && strcmp(e->path, path) == 0)
			return e;
	}
	return NULL;
}

/* One more block in the file at path. */
static int ref_hold(struct kvcm *k, const char *path, size_t len)
{
	uint64_t h = hash_bytes(path, len);
	struct file_ref *e = ref_find(k, path, h);

	if (!e) {
		if (!(e = calloc(1, sizeof(*e) + len + 1)))
			return MMC_MALLOC_FAILED;
		e->hash = h;
		memcpy(e->path, path, len + 1);
		if (hmap_insert(&k->file_refs, &e->link, h)) {
			free(e);
			return MMC_MALLOC_FAILED;
		}
	}
	e->count++;
	return 0;
}

/* The length of uri's part that names its data: up to its parameters. */
static size_t data_len(const char *uri)
{
	const char *q = strchr(uri, '?');

	return q ? (size_t)(q - uri) : strlen(uri);
}

static bool names_same_data(const char *a, const char *b)
{
	size_t n = data_len(a);

	return n == data_len(b) && memcmp(a, b, n) == 0;
}

static bool data_taken(struct kvcm *k, const struct block *b, const char *uri)
{
	char path[4096];
	size_t len;

	for (const struct location *l = b ? b->locs : NULL; l; l = l->next)
		for (uint16_t j = 0; j < l->nspecs; j++)
			if (names_same_data(l->specs[j].uri, uri))
				return true;
	len = shared_file(uri) ? file_path(uri, path, sizeof(path)) : 0;
	return len && ref_find(k, path, hash_bytes(path, len));
}

int storage_uri_unique(struct kvcm *k, const struct block *b, char **uri)
{
	char *base = *uri, *next = NULL;
	size_t at = data_len(base);

	if (!data_taken(k, b, base))
		return 0;
	for (unsigned copy = 2;; copy++) {
		if (asprintf(&next, "%.*s~%u%s", (int)at, base, copy, base + at) < 0)
			return MMC_MALLOC_FAILED;
		if (!data_taken(k, b, next))
			break;
		free(next);
	}
	free(base);
	*uri = next;
	return 0;
}

int storage_hold_data(struct kvcm *k, const struct location *l)
{
	char path[4096];

	if (l->storage->type != ST_NFS)
		return 0;
	for (uint16_t j = 0; j < l->nspecs; j++) {
		size_t len = shared_file(l->specs[j].uri) ? file_path(l->specs[j].uri, path, sizeof(path)) : 0;

		if (len && ref_hold(k, path, len))
			return MMC_MALLOC_FAILED;
	}
	return 0;
}

/* True when this was the last reference to the path (or it was never shared). */
static bool release_path(struct kvcm *k, const char *uri, const char *path, size_t len)
{
	uint64_t h = hash_bytes(path, len);
	struct file_ref *e = shared_file(uri) ? ref_find(k, path, h) : NULL;

	if (!e)
		return true;
	if (--e->count)
		return false;
	hmap_remove(&k->file_refs, &e->link, h);
	free(e);
	return true;
}

size_t storage_release_data(struct kvcm *k, const struct location *l, char ***paths)
{
	char path[4096];
	size_t n = 0, len;

	*paths = NULL;
	if (l->storage->type != ST_NFS || !l->nspecs || !(*paths = calloc(l->nspecs, sizeof(char *))))
		return 0;
	for (uint16_t j = 0; j < l->nspecs; j++) {
		len = file_path(l->specs[j].uri, path, sizeof(path));
		if (len && release_path(k, l->specs[j].uri, path, len) && ((*paths)[n] = strdup(path)))
			n++;
	}
	if (!n) {
		free(*paths);
		*paths = NULL;
	}
	return n;
}

/* The mmc key of an mmc:// URI. */
static size_t mmc_key(const char *uri, const char **key)
{
	const char *p = uri + 6, *q = strchr(p, '?');

	if (strncmp(uri, "mmc://", 6) != 0)
		return 0;
	*key = p;
	return q ? (size_t)(q - p) : strlen(p);
}

void storage_drop_mmc_objects(struct kvcm *k, const struct location *l)
{
	const char *key;
	size_t len;
	struct object *o;

	if (l->storage->type != ST_MMC || !k->meta)
		return;
	for (uint16_t j = 0; j < l->nspecs; j++) {
		len = mmc_key(l->specs[j].uri, &key);
		if (len && (o = object_find(k->meta, key, len)))
			object_drop(k->meta, o);
	}
}

/* The literal path of a dummy:// URI, as the reference's dummy back-end reads it. */
static size_t dummy_path(const char *uri, char *out, size_t cap)
{
	const char *p = uri + 8, *q = strchr(p, '?');
	size_t n = q ? (size_t)(q - p) : strlen(p);

	if (strncmp(uri, "dummy://", 8) != 0 || n == 0 || n >= cap)
		return 0;
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

bool storage_data_lost(const struct location *l)
{
	char path[4096];
	struct stat st;

	if (!l->storage || l->storage->type != ST_DUMMY || l->er_key)
		return false;
	for (uint16_t j = 0; j < l->nspecs; j++)
		if (dummy_path(l->specs[j].uri, path, sizeof(path)) && stat(path, &st) != 0 && errno == ENOENT)
			return true;
	return false;
}

bool storage_data_visible(struct kvcm *k, const struct location *l)
{
	const char *key;
	size_t len;
	struct object *o;

	if (l->storage->type == ST_DUMMY)
		return !storage_data_lost(l);
	if (l->storage->type != ST_MMC || !k->meta)
		return true;
	for (uint16_t j = 0; j < l->nspecs; j++) {
		len = mmc_key(l->specs[j].uri, &key);
		o = len ? object_find(k->meta, key, len) : NULL;
		if (!o || !object_readable(o))
			return false;
	}
	return true;
}

void file_refs_init(struct kvcm *k)
{
	hmap_init(&k->file_refs, ref_hash, 1024);
}

void file_refs_free(struct kvcm *k)
{
	hmap_foreach(&k->file_refs, l) free(hmap_entry(l, struct file_ref, link));
	hmap_free(&k->file_refs);
}
