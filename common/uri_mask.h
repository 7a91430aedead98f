/*
 * Passwords out of URIs, for every log line and message that may show one. The logfmt formatter (logfmt.c) runs
 * every string it formats through uri_mask, so a URI with a password (a Redis store or lock, a future backend) never
 * reaches either log in clear, whoever wrote the log line. Pure; thread-safe.
 */
#ifndef MMC_URI_MASK_H
#define MMC_URI_MASK_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Copies text into out (always NUL-terminated when outlen > 0, truncated to fit) with the password of every URI in
 * it replaced by three stars: redis://user:password@host shows as redis://user:<stars>@host; a lone token before
 * the '@' (redis://token@host, the reference's form) may be the password, so it is starred too. A URI ends at a
 * blank, a quote or the end of the text; its user information ends at its last '@', so a password holding '@' or
 * '/' is masked whole. file:// URIs, and usage texts such as redis://[user:password@]host ('[' starts no user
 * information), are copied as they are. Returns the length written.
 */
size_t uri_mask(const char *text, char *out, size_t outlen);

/*
 * Whether uri_mask masks the password of uri whole: false when its user information (up to its last '@') holds a
 * blank or a quote, where uri_mask would end the URI and show the rest. Parsers of URIs that carry passwords refuse
 * such a URI (without showing it) rather than log its password. Pure; thread-safe.
 */
bool uri_userinfo_maskable(const char *uri);

#endif
