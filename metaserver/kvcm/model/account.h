/*
 * KVCM accounts (reference kvcm.md §4.16 addAccount / deleteAccount / listAccount): user names with a role and a
 * salted password hash (PBKDF2-HMAC-SHA256), persisted in the kvcm_accounts table. The password never leaves this
 * file: not stored, not listed, not logged. Once any account exists (or the bootstrap admin of
 * kvcm.service.admin_user is configured), every HTTP request needs HTTP Basic credentials (http/http_auth.c).
 * Loop thread only.
 */
#ifndef MMC_KVCM_ACCOUNT_H
#define MMC_KVCM_ACCOUNT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct kvcm;

enum account_role { ROLE_USER = 0, ROLE_ADMIN = 1 };

#define ACCOUNT_NAME_MAX     128 /* bytes of a user name */
#define ACCOUNT_PASSWORD_MAX 1024

/*
 * Adds user with password and role and persists it. Returns KC_OK, KC_DUPLICATE_ENTITY (the name is taken),
 * KC_INVALID_ARGUMENT (empty or too long name or password, a ':' in the name, an unknown role, or, with
 * kvcm.service.first_account_admin, a ROLE_USER account while no admin exists), each with a message in msg.
 */
int account_add(struct kvcm *k, const char *user, const char *password, int role, char *msg, size_t msglen);
/*
 * Adds an account from its stored hash (as account_each() hands it out), for a config snapshot or a migration;
 * persist=false keeps it in memory only. Same codes as account_add, and KC_INVALID_ARGUMENT for a malformed hash.
 */
int account_add_hashed(struct kvcm *k, const char *user, const char *hash, int role, bool persist, char *msg,
                       size_t msglen);
/* Deletes user. KC_OK, KC_INVALID_ARGUMENT (no such account, the bootstrap admin, or the last admin). */
int account_delete(struct kvcm *k, const char *user, char *msg, size_t msglen);
/* Calls fn for every account in name order (the bootstrap admin included), with its stored hash (borrowed). */
void account_each(struct kvcm *k, void (*fn)(void *arg, const char *user, int role, const char *hash), void *arg);
/*
 * The role of user when password is its password, else -1. Constant time in the password's bytes. A password not
 * verified before costs one PBKDF2; once those took 250 ms of the current second, new passwords are refused unchecked
 * (-1) so that a flood of wrong ones cannot stall the event loop.
 */
int account_check(struct kvcm *k, const char *user, const char *password);
/* True when the MetaService port requires credentials: some account exists. */
bool accounts_enforced(const struct kvcm *k);
/* True when the admin port requires credentials: some ROLE_ADMIN account exists (as in the reference, accounts of
 * ROLE_USER alone leave the admin API open, so that the first account may be one). */
bool accounts_admin_enforced(const struct kvcm *k);

/* A persisted record (state_load): 0, or MMC_ERROR when it is malformed. */
int account_load(struct kvcm *k, const char *user, json_t *rec);
/* Adds the bootstrap admin of kvcm.service.admin_user / admin_password_file. 0, or MMC_ERROR with a message in err. */
int accounts_bootstrap(struct kvcm *k, char *err, size_t errlen);
void accounts_free(struct kvcm *k);

#endif
