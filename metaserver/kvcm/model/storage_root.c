#include "storage_root.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcm_state.h"
#include "wire_enums.h"

/* False when path is relative or has a "." or ".." component. */
static bool plain(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *p = path; *p;) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
	}
	return true;
}

/* path with its longest existing prefix resolved by realpath() and no trailing '/'; false when too long. */
static bool resolve(const char *path, char out[PATH_MAX])
{
	char head[PATH_MAX], real[PATH_MAX];
	size_t cut = strlen(path);

	if (cut >= PATH_MAX)
		return false;
	for (;;) {
		memcpy(head, path, cut);
		head[cut] = '\0';
		if (realpath(cut ? head : "/", real))
			break;
		while (cut > 0 && path[cut - 1] != '/')
			cut--;
		while (cut > 0 && path[cut - 1] == '/')
			cut--;
	}
	if (snprintf(out, PATH_MAX, "%s%s", strcmp(real, "/") == 0 ? "" : real, path + cut) >= PATH_MAX)
		return false;
	for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--)
		out[n - 1] = '\0';
	return true;
}

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return true;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* One allowed root of the list (len bytes at r); true when path lies under it. */
static bool allowed_by(const char *path, const char *r, size_t len)
{
	char root[PATH_MAX], real[PATH_MAX];

	while (len && (*r == ' ' || *r == '\t'))
		r++, len--;
	while (len && (r[len - 1] == ' ' || r[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof(root))
		return false;
	memcpy(root, r, len);
	root[len] = '\0';
	return plain(root) && resolve(root, real) && under(path, real);
}

int storage_root_check(const struct kvcm *k, const char *path, char *msg, size_t msglen)
{
	const char *list = k->conf.allowed_roots[0] ? k->conf.allowed_roots : k->conf.default_root;
	char real[PATH_MAX];

	if (!plain(path) || !resolve(path, real)) {
		snprintf(msg, msglen, "root_path \"%.512s\" must be an absolute path without . or .. components", path);
		return KC_INVALID_ARGUMENT;
	}
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");

		if (allowed_by(real, p, n))
			return KC_OK;
		p += n + (p[n] == ',');
	}
	snprintf(msg, msglen, "root_path \"%.512s\" is not under an allowed root (kvcm.storage.allowed_roots: %.1024s)",
	         path, list);
	return KC_INVALID_ARGUMENT;
}

int storage_roots_check(const struct kvcm *k, const json_t *cfg, char *msg, size_t msglen)
{
	static const char *const file_like[] = {"nfs", "local"};
	int code;

	for (size_t i = 0; i < sizeof(file_like) / sizeof(file_like[0]); i++) {
		const char *root = json_string_value(json_object_get(json_object_get(cfg, file_like[i]), "root_path"));

		if (root && root[0] == '/' && (code = storage_root_check(k, root, msg, msglen)) != KC_OK)
			return code;
	}
	return KC_OK;
}
