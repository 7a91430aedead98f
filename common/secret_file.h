/*
 * Secrets from files (ock.mmc.meta.auth_token_file, ock.mmc.client.auth_token_file), so they are not on a command
 * line, in the environment or in a config file that is readable by more people than the secret should be.
 */
#ifndef MMC_SECRET_FILE_H
#define MMC_SECRET_FILE_H

#include <stddef.h>

/*
 * Reads the secret in path into out (cap bytes, NUL-terminated): the whole file, less one trailing newline.
 * key names the config key in messages. Returns 0, or MMC_INVALID_PARAM with a message in err (unreadable, empty,
 * longer than cap - 1 bytes, or holding a NUL byte). The message never holds the secret.
 */
int secret_file_read(const char *key, const char *path, char *out, size_t cap, char *err, size_t errlen);

/*
 * The secret of key (in *token, cap bytes) or of file_key (the file named by file): one of them, not both; from the
 * file when that is set; at least MMC_AUTH_TOKEN_MIN bytes when set at all. Returns 0, or MMC_INVALID_PARAM with
 * a message in err. The message never holds the secret.
 */
int secret_resolve(const char *key, const char *file_key, const char *file, char *token, size_t cap, char *err,
                   size_t errlen);

#endif
