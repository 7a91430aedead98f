/*
 * The metadata store's URI: "lmdb" or redis://[user:password@]host[:port][/db] (also the reference's
 * redis://token@host:port/?db=N). A URI may carry a password: messages show it through uri_mask (common/uri_mask.h),
 * which every log line goes through too.
 */
#ifndef MMC_STORE_URI_H
#define MMC_STORE_URI_H

#include <stdbool.h>
#include <stddef.h>

struct redis_uri {
	char host[256];
	int port; /* 6379 unless given */
	int db;   /* 0 unless given */
	char user[128];
	char password[256]; /* empty: none in the URI */
	bool lone_token;    /* the user information had no ':' (redis://token@host): user or password, see below */
};

/* Parses a redis:// URI into *u. Returns 0, or MMC_INVALID_PARAM with a message (without the password) in err. */
int redis_uri_parse(const char *uri, struct redis_uri *u, char *err, size_t errlen);
/* A password file's password (ock.mmc.meta.store_password_file) for u: used when the URI has none, and then a lone
 * token in the URI (redis://mmc@host) is the user, not the password. */
void redis_uri_set_password(struct redis_uri *u, const char *password);

#endif
