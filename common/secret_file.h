/*
 * Secrets from files (ock.mmc.meta.auth_token_file, ock.mmc.client.auth_token_file), so they are not on a command
 * line, in the environment or in a config file that is readable by more people than the secret should be; and the
 * systemd credentials (LoadCredential=) such a key may name instead of a path.
 */
#ifndef MMC_SECRET_FILE_H
#define MMC_SECRET_FILE_H

#include <stddef.h>

/* The access a secret file may not give (its mode's bits): to others (a secret: the group may read it, as a
 * container's fsGroup or a 0440 credential does), or to group and others (a file only its owner manages). */
#define SECRET_OTHERS     0007u
#define SECRET_OWNER_ONLY 0077u

/*
 * 0 when fd (path, opened) is not a regular file or gives none of the access forbid names; else MMC_INVALID_PARAM
 * with a message in err naming key, path, the mode and the chmod that mends it. Every secret file is checked so
 * before it is read.
 */
int secret_file_private(const char *key, const char *path, int fd, unsigned forbid, char *err, size_t errlen);

/*
 * Reads the secret in path into out (cap bytes, NUL-terminated): the whole file, less one trailing newline.
 * key names the config key in messages. Returns 0, or MMC_INVALID_PARAM with a message in err (unreadable, empty,
 * open to every user, longer than cap - 1 bytes, or holding a NUL byte). The message never holds the secret.
 */
int secret_file_read(const char *key, const char *path, char *out, size_t cap, char *err, size_t errlen);

/*
 * The secret of key (in *token, cap bytes) or of file_key (the file named by file): one of them, not both; from the
 * file when that is set; at least MMC_AUTH_TOKEN_MIN bytes when set at all. Returns 0, or MMC_INVALID_PARAM with
 * a message in err. The message never holds the secret.
 */
int secret_resolve(const char *key, const char *file_key, const char *file, char *token, size_t cap, char *err,
                   size_t errlen);

/*
 * What the value of a key that names a file stands for. A bare name (no '/') of such a key is a credential: when
 * $CREDENTIALS_DIRECTORY is set (systemd's LoadCredential=, or a container's secrets directory), the file of that
 * name in it; anything else is the path as written. Keys that name a file are those ending in "_file" and the
 * ock.mmc.tls.* files (ca.path, ca.crl.path, cert.path, key.path, key.pass.path). Returns value, or buf (cap bytes)
 * holding the credential's path, or NULL when that path does not fit.
 */
const char *secret_file_path(const char *key, const char *value, char *buf, size_t cap);

#endif
