#include "secret_file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mmc/mmc.h"
#include "wire_limits.h"

static bool names_file(const char *key)
{
	static const char *const tls[] = {"ca.path", "ca.crl.path", "cert.path", "key.path", "key.pass.path"};
	size_t len = strlen(key);

	if (len > 5 && strcmp(key + len - 5, "_file") == 0)
		return true;
	if (strncmp(key, "ock.mmc.tls.", 12) != 0)
		return false;
	for (size_t i = 0; i < sizeof(tls) / sizeof(tls[0]); i++)
		if (strcmp(key + 12, tls[i]) == 0)
			return true;
	return false;
}

const char *secret_file_path(const char *key, const char *value, char *buf, size_t cap)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	int n;

	if (!dir || !dir[0] || !value[0] || strchr(value, '/') || !names_file(key))
		return value;
	n = snprintf(buf, cap, "%s/%s", dir, value);
	return n > 0 && (size_t)n < cap ? buf : NULL;
}

int secret_resolve(const char *key, const char *file_key, const char *file, char *token, size_t cap, char *err,
                   size_t errlen)
{
	int rc;

	if (file[0] && token[0]) {
		snprintf(err, errlen, "set %s or %s, not both", key, file_key);
		return MMC_INVALID_PARAM;
	}
	if (file[0] && (rc = secret_file_read(file_key, file, token, cap, err, errlen)))
		return rc;
	if (token[0] && strlen(token) < MMC_AUTH_TOKEN_MIN) {
		snprintf(err, errlen, "%s must be at least %d bytes (e.g. `openssl rand -hex 32`)", key,
		         MMC_AUTH_TOKEN_MIN);
		memset(token, 0, cap);
		return MMC_INVALID_PARAM;
	}
	return 0;
}

int secret_file_private(const char *key, const char *path, int fd, unsigned forbid, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: cannot stat \"%s\": %s", key, path, strerror(errno));
		return MMC_INVALID_PARAM;
	}
	/* as ssh and PostgreSQL do with their keys: a secret every user can read is no secret, and the operator hears
	 * it at start rather than after the leak */
	if (S_ISREG(st.st_mode) && (st.st_mode & forbid)) {
		snprintf(err, errlen, "%s: \"%s\" has mode %03o: %s must have no access (chmod %s)", key, path,
		         (unsigned)(st.st_mode & 0777), forbid & 070 ? "group and others" : "others",
		         forbid & 070 ? "600" : "o-rwx");
		return MMC_INVALID_PARAM;
	}
	return 0;
}

int secret_file_read(const char *key, const char *path, char *out, size_t cap, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t n;
	bool more;

	if (!f) {
		snprintf(err, errlen, "%s: cannot read \"%s\": %s", key, path, strerror(errno));
		return MMC_INVALID_PARAM;
	}
	if (secret_file_private(key, path, fileno(f), SECRET_OTHERS, err, errlen)) {
		fclose(f);
		return MMC_INVALID_PARAM;
	}
	n = fread(out, 1, cap, f);
	more = fgetc(f) != EOF;
	fclose(f);
	if (n && out[n - 1] == '\n')
		n--;
	if (n && out[n - 1] == '\r')
		n--;
	if (more || n == 0 || n >= cap || memchr(out, '\0', n)) {
		snprintf(err, errlen, "%s: \"%s\" must hold 1 to %zu bytes of secret and no NUL byte", key, path,
		         cap - 1);
		memset(out, 0, cap);
		return MMC_INVALID_PARAM;
	}
	out[n] = '\0';
	return 0;
}
