#include "tenants.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_parse.h"
#include "meta.h"
#include "mmc/mmc.h"
#include "objects.h"
#include "secret_file.h"

#define KEY "ock.mmc.meta.tenants_file"

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > MMC_TENANT_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-'))
			return false;
	return true;
}

/* A relative secret file is the tenants file's neighbour: the two are deployed together. */
static int secret_path(const char *file, const char *value, char *out, size_t cap)
{
	const char *slash = strrchr(file, '/');
	int n = value[0] == '/' || !slash ? snprintf(out, cap, "%s", value)
	                                  : snprintf(out, cap, "%.*s/%s", (int)(slash - file), file, value);

	return n > 0 && (size_t)n < cap ? 0 : MMC_ERROR;
}

static int quota(struct tenant *t, const char *word, char *err, size_t errlen, int line)
{
	if (strncmp(word, "max_bytes=", 10) == 0 && conf_parse_size(word + 10, &t->max_bytes) == 0)
		return 0;
	if (strncmp(word, "max_objects=", 12) == 0 && conf_parse_u64(word + 12, &t->max_objects) == 0)
		return 0;
	snprintf(err, errlen, KEY ": line %d: \"%s\" is not max_bytes=SIZE or max_objects=N", line, word);
	return MMC_INVALID_PARAM;
}

/* No two stores of different tenants may prove the same secret: the secret is what names the tenant. */
static int secret_unique(const struct tenants *ts, const struct tenant *t, const char *cluster, char *err,
                         size_t errlen, int line)
{
	bool clash = cluster[0] && strcmp(cluster, t->secret) == 0;

	for (uint32_t i = 1; i < ts->n && !clash; i++)
		clash = &ts->t[i] != t && strcmp(ts->t[i].secret, t->secret) == 0;
	if (!clash)
		return 0;
	snprintf(err, errlen, KEY ": line %d: tenant %s's secret is the cluster secret's or another tenant's", line,
	         t->name);
	return MMC_INVALID_PARAM;
}

static struct tenant *find(const struct tenants *ts, const char *name)
{
	for (uint32_t i = 0; i < ts->n; i++)
		if (strcmp(ts->t[i].name, name) == 0)
			return &ts->t[i];
	return NULL;
}

/* A named tenant's line (not the default one): its tag, and its secret from file. */
static struct tenant *add_tenant(struct tenants *ts, const char *path, const char *name, const char *file,
                                 const char *cluster, char *err, size_t errlen, int line)
{
	struct tenant *t = &ts->t[ts->n];
	char fpath[1024];

	if (ts->n == TENANTS_MAX) {
		snprintf(err, errlen, KEY ": line %d: more than %d tenants", line, TENANTS_MAX - 1);
		return NULL;
	}
	ts->n++;
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->taglen = (uint8_t)(strlen(name) + 2);
	t->tag[0] = TENANT_TAG;
	memcpy(t->tag + 1, name, t->taglen - 2u);
	t->tag[t->taglen - 1] = TENANT_TAG;
	if (secret_path(path, file, fpath, sizeof(fpath))) {
		snprintf(err, errlen, KEY ": line %d: the path of tenant %s's secret file is too long", line, name);
		return NULL;
	}
	if (secret_file_read(KEY, fpath, t->secret, sizeof(t->secret), err, errlen))
		return NULL;
	if (strlen(t->secret) < MMC_AUTH_TOKEN_MIN) {
		snprintf(err, errlen, KEY ": line %d: tenant %s's secret is shorter than %d bytes", line, name,
		         MMC_AUTH_TOKEN_MIN);
		return NULL;
	}
	return secret_unique(ts, t, cluster, err, errlen, line) ? NULL : t;
}

static int parse_line(struct tenants *ts, const char *path, char *s, int line, const char *cluster, char *err,
                      size_t errlen)
{
	char *save = NULL, *name = strtok_r(s, " \t\r\n", &save), *file = strtok_r(NULL, " \t\r\n", &save), *w;
	bool is_default = name && strcmp(name, "default") == 0;
	struct tenant *t;

	if (!name || name[0] == '#')
		return 0;
	if (!file || !name_ok(name)) {
		snprintf(err, errlen,
		         KEY ": line %d: expected `name secret_file [max_bytes=SIZE] [max_objects=N]`, a "
		             "name of 1 to %d letters, digits, '_' or '-'",
		         line, MMC_TENANT_NAME_MAX);
		return MMC_INVALID_PARAM;
	}
	if (find(ts, name) && !is_default) {
		snprintf(err, errlen, KEY ": line %d: tenant %s is named twice", line, name);
		return MMC_INVALID_PARAM;
	}
	if (is_default && strcmp(file, "-") != 0) {
		snprintf(err, errlen, KEY ": line %d: the default tenant proves the cluster secret: its file is `-`",
		         line);
		return MMC_INVALID_PARAM;
	}
	t = is_default ? &ts->t[0] : add_tenant(ts, path, name, file, cluster, err, errlen, line);
	if (!t)
		return MMC_INVALID_PARAM;
	while ((w = strtok_r(NULL, " \t\r\n", &save)))
		if (quota(t, w, err, errlen, line))
			return MMC_INVALID_PARAM;
	return 0;
}

static void table_free(struct tenants *ts)
{
	if (ts->t)
		memset(ts->t, 0, TENANTS_MAX * sizeof(struct tenant)); /* the secrets */
	free(ts->t);
	*ts = (struct tenants){NULL, 0};
}

/* The file at path into ts (a fresh table); on failure ts is freed. */
static int load_into(struct tenants *ts, const char *path, const char *cluster, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char buf[2048];
	int line = 0, rc;

	if (!f) {
		snprintf(err, errlen, KEY ": cannot read \"%s\": %s", path, strerror(errno));
		return MMC_INVALID_PARAM;
	}
	/* the file names who may connect as whom: nobody but its owner may read or change it */
	rc = secret_file_private(KEY, path, fileno(f), SECRET_OWNER_ONLY, err, errlen);
	if (rc == 0 && !(ts->t = calloc(TENANTS_MAX, sizeof(struct tenant))))
		rc = MMC_MALLOC_FAILED;
	if (rc == 0) {
		ts->n = 1;
		strcpy(ts->t[0].name, "default");
	}
	while (rc == 0 && fgets(buf, sizeof(buf), f))
		rc = parse_line(ts, path, buf, ++line, cluster, err, errlen);
	fclose(f);
	if (rc)
		table_free(ts);
	return rc;
}

int tenants_load(struct meta *m, const char *path, const char *cluster, char *err, size_t errlen)
{
	return load_into(&m->tenants, path, cluster, err, errlen);
}

/* The running tenant t takes the secret and quotas of its line in the fresh file. */
static void take(struct tenant *t, const struct tenant *line)
{
	memcpy(t->secret, line->secret, sizeof(t->secret));
	t->max_bytes = line->max_bytes;
	t->max_objects = line->max_objects;
	t->removed = false;
}

int tenants_reread(const struct meta *m, const char *path, const char *cluster, struct tenants *fresh, char *err,
                   size_t errlen)
{
	const struct tenants *ts = &m->tenants;
	uint32_t added = 0;
	int rc;

	*fresh = (struct tenants){NULL, 0};
	rc = load_into(fresh, path, cluster, err, errlen);
	for (uint32_t i = 1; rc == 0 && i < fresh->n; i++)
		added += !find(ts, fresh->t[i].name);
	if (rc == 0 && ts->n + added > TENANTS_MAX) {
		snprintf(err, errlen, KEY ": more than %d tenants, the removed ones included (restart to forget them)",
		         TENANTS_MAX - 1);
		rc = MMC_INVALID_PARAM;
	}
	if (rc)
		table_free(fresh);
	return rc;
}

void tenants_take(struct meta *m, struct tenants *fresh_in)
{
	struct tenants fresh = *fresh_in, *ts = &m->tenants;
	uint32_t known = ts->n;

	for (uint32_t i = 0; i < ts->n; i++) {
		const struct tenant *line = find(&fresh, ts->t[i].name);

		if (line)
			take(&ts->t[i], line);
		else if (!ts->t[i].removed) {
			ts->t[i].removed = true;
			memset(ts->t[i].secret, 0, sizeof(ts->t[i].secret));
		}
	}
	for (uint32_t i = 1; i < fresh.n; i++)
		if (!find(ts, fresh.t[i].name))
			ts->t[ts->n++] = fresh.t[i];
	table_free(&fresh);
	*fresh_in = (struct tenants){NULL, 0};
	if (ts->n > known) /* a tenant configured again after a restart without it: its kept objects count from now */
		objects_count_tenants(m);
}

int tenants_reload(struct meta *m, const char *path, const char *cluster, char *err, size_t errlen)
{
	struct tenants fresh;
	int rc = tenants_reread(m, path, cluster, &fresh, err, errlen);

	if (rc == 0)
		tenants_take(m, &fresh);
	return rc;
}

void tenants_free(struct meta *m)
{
	table_free(&m->tenants);
}

struct tenant *tenant_by_name(struct meta *m, const char *name)
{
	struct tenant *t = find(&m->tenants, name);

	return t && !t->removed ? t : NULL;
}

uint32_t tenant_of_key(const struct meta *m, const char *key, size_t len)
{
	const uint8_t *k = (const uint8_t *)key, *end;

	if (len == 0 || k[0] != TENANT_TAG)
		return 0;
	end = memchr(k + 1, TENANT_TAG, len - 1);
	for (uint32_t i = 1; end && i < m->tenants.n; i++)
		if (m->tenants.t[i].taglen == end - k + 1 &&
		    memcmp(m->tenants.t[i].tag, k, m->tenants.t[i].taglen) == 0)
			return i;
	return TENANT_NONE;
}

void tenant_count(struct meta *m, struct object *o, int delta)
{
	uint32_t i;
	uint64_t bytes = tenant_bytes(o->size, o->nblobs);
	struct tenant *t;

	if ((delta > 0) == (bool)o->counted)
		return;
	if ((i = tenant_of_key(m, object_key(o), o->keylen)) == TENANT_NONE)
		return; /* a tenant not configured (now): counted if it comes back (objects_count_tenants) */
	t = &m->tenants.t[i];
	o->counted = delta > 0;
	if (delta > 0) {
		t->objects++;
		t->bytes += bytes;
	} else {
		t->objects--;
		t->bytes -= bytes;
	}
}

uint64_t tenant_bytes(uint64_t size, uint32_t replicas)
{
	return (size + BLOB_GRANULE - 1) / BLOB_GRANULE * BLOB_GRANULE * replicas;
}

bool tenant_fits(const struct tenant *t, uint64_t bytes)
{
	return (!t->max_objects || t->objects < t->max_objects) && (!t->max_bytes || t->bytes + bytes <= t->max_bytes);
}
