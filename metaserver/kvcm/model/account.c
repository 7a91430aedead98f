#include "account.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kvcm_state.h"
#include "kvcm_store.h"
#include "log.h"
#include "mmc/mmc.h"
#include "secret_file.h"
#include "wire_enums.h"

/* PBKDF2 makes a guess cost this many HMACs; a verified password is remembered (keyed hash) so that a client's
 * every request does not pay it again. */
#define PBKDF2_ITER 20000
/* The most a stored hash may ask for (a config snapshot carries hashes): one check of a wrong password costs that
 * many HMACs on the loop, and the throttle below counts a check only once it is done. */
#define PBKDF2_ITER_MAX (5 * PBKDF2_ITER)
#define SALT_LEN        16
#define HASH_LEN        32
#define HASH_PREFIX     "pbkdf2-sha256$"
/* Event-loop time a second that PBKDF2 checks of passwords not verified before may take (each costs 5-20 ms): past
 * it, a new password is refused unchecked, so a flood of wrong passwords cannot stall the loop. */
#define SLOW_CHECK_NS_PER_S (250 * UINT64_C(1000000))

struct account {
	char *name;
	char *hash; /* pbkdf2-sha256$ITER$SALT_HEX$HASH_HEX */
	int role;
	bool bootstrap;               /* from the configuration: never persisted, never deleted */
	bool fast_ok;                 /* fast holds the keyed hash of the verified password */
	unsigned char fast[HASH_LEN]; /* HMAC-SHA256(accounts.key, password) */
};

struct accounts {
	struct account *v;
	size_t n, cap;
	unsigned char key[32]; /* per process: the fast hashes mean nothing elsewhere */
	uint64_t slow_second;  /* the second slow_ns counts in */
	uint64_t slow_ns;      /* spent on PBKDF2 checks in it */
	int log_bucket;
};

static struct accounts *get(struct kvcm *k)
{
	if (!k->accounts) {
		k->accounts = calloc(1, sizeof(*k->accounts));
		if (k->accounts && RAND_bytes(k->accounts->key, sizeof(k->accounts->key)) != 1) {
			free(k->accounts);
			k->accounts = NULL;
		}
	}
	return k->accounts;
}

static void hex(const unsigned char *in, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", in[i]);
}

static bool unhex(const char *in, size_t n, unsigned char *out)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(in + 2 * i, "%2x", &v) != 1)
			return false;
		out[i] = (unsigned char)v;
	}
	return in[2 * n] == '\0' || in[2 * n] == '$';
}

/* Splits a stored hash; false when it is not one this file writes. */
static bool parse_hash(const char *h, unsigned *iter, unsigned char salt[SALT_LEN], unsigned char dk[HASH_LEN])
{
	const char *p = h + strlen(HASH_PREFIX), *s;
	char *end;
	unsigned long it;

	if (strncmp(h, HASH_PREFIX, strlen(HASH_PREFIX)) != 0)
		return false;
	it = strtoul(p, &end, 10);
	if (*end != '$' || it < 1000 || it > PBKDF2_ITER_MAX)
		return false;
	s = end + 1;
	if (strlen(s) != 2 * SALT_LEN + 1 + 2 * HASH_LEN || s[2 * SALT_LEN] != '$')
		return false;
	*iter = (unsigned)it;
	return unhex(s, SALT_LEN, salt) && unhex(s + 2 * SALT_LEN + 1, HASH_LEN, dk);
}

static bool derive(const char *password, const unsigned char *salt, unsigned iter, unsigned char out[HASH_LEN])
{
	return PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, SALT_LEN, (int)iter, EVP_sha256(), HASH_LEN,
	                         out) == 1;
}

/* A fresh salted hash of password into out (at least 128 bytes). */
static bool make_hash(const char *password, char *out, size_t outlen)
{
	unsigned char salt[SALT_LEN], dk[HASH_LEN];
	char salt_hex[2 * SALT_LEN + 1], dk_hex[2 * HASH_LEN + 1];

	if (RAND_bytes(salt, sizeof(salt)) != 1 || !derive(password, salt, PBKDF2_ITER, dk))
		return false;
	hex(salt, SALT_LEN, salt_hex);
	hex(dk, HASH_LEN, dk_hex);
	snprintf(out, outlen, HASH_PREFIX "%u$%s$%s", PBKDF2_ITER, salt_hex, dk_hex);
	OPENSSL_cleanse(dk, sizeof(dk));
	return true;
}

static struct account *find(struct accounts *a, const char *user)
{
	for (size_t i = 0; a && i < a->n; i++)
		if (strcmp(a->v[i].name, user) == 0)
			return &a->v[i];
	return NULL;
}

static size_t admins(const struct accounts *a)
{
	size_t n = 0;

	for (size_t i = 0; a && i < a->n; i++)
		n += a->v[i].role == ROLE_ADMIN;
	return n;
}

static void persist(struct kvcm *k, const struct account *acc)
{
	json_t *rec = json_pack("{s:i, s:s}", "role", acc->role, "hash", acc->hash);

	store_put_json(&k->store, STORE_ACCOUNTS, acc->name, rec);
	json_decref(rec);
}

static int check_new(struct kvcm *k, const char *user, int role, char *msg, size_t msglen)
{
	if (!user[0] || strlen(user) > ACCOUNT_NAME_MAX || strchr(user, ':')) {
		snprintf(msg, msglen, "missing or invalid fields: {AddAccount: {user_name (1..%d bytes, no ':')}}",
		         ACCOUNT_NAME_MAX);
		return KC_INVALID_ARGUMENT;
	}
	if (role != ROLE_USER && role != ROLE_ADMIN) {
		snprintf(msg, msglen, "missing or invalid fields: {AddAccount: {role}}");
		return KC_INVALID_ARGUMENT;
	}
	if (find(k->accounts, user)) {
		snprintf(msg, msglen, "account \"%s\" already exists", user);
		return KC_DUPLICATE_ENTITY;
	}
	if (role == ROLE_USER && !admins(k->accounts) && k->conf.first_account_admin) {
		snprintf(msg, msglen,
		         "the first account must be a ROLE_ADMIN (kvcm.service.first_account_admin): a ROLE_USER would "
		         "close the MetaService port while the admin port stays open");
		return KC_INVALID_ARGUMENT;
	}
	return KC_OK;
}

/* Appends an account, keeping name order (what listAccount shows). */
static struct account *insert(struct accounts *a, const char *user, const char *hash, int role)
{
	struct account acc = {strdup(user), strdup(hash), role, false, false, {0}};
	size_t at = 0;

	if (a->n == a->cap) {
		struct account *nv = realloc(a->v, (a->cap ? a->cap * 2 : 8) * sizeof(*nv));

		if (!nv)
			goto fail;
		a->v = nv;
		a->cap = a->cap ? a->cap * 2 : 8;
	}
	if (!acc.name || !acc.hash)
		goto fail;
	while (at < a->n && strcmp(a->v[at].name, user) < 0)
		at++;
	memmove(&a->v[at + 1], &a->v[at], (a->n - at) * sizeof(*a->v));
	a->v[at] = acc;
	a->n++;
	return &a->v[at];
fail:
	free(acc.name);
	free(acc.hash);
	return NULL;
}

int account_add_hashed(struct kvcm *k, const char *user, const char *hash, int role, bool persist_it, char *msg,
                       size_t msglen)
{
	unsigned iter;
	unsigned char salt[SALT_LEN], dk[HASH_LEN];
	struct account *acc;
	int code;

	if (!get(k)) {
		snprintf(msg, msglen, "out of memory");
		return KC_INTERNAL_ERROR;
	}
	if ((code = check_new(k, user, role, msg, msglen)) != KC_OK)
		return code;
	if (!parse_hash(hash, &iter, salt, dk)) {
		snprintf(msg, msglen, "the password hash of \"%s\" is not a " HASH_PREFIX " hash", user);
		return KC_INVALID_ARGUMENT;
	}
	acc = insert(k->accounts, user, hash, role);
	if (!acc) {
		snprintf(msg, msglen, "out of memory");
		return KC_INTERNAL_ERROR;
	}
	if (persist_it)
		persist(k, acc);
	return KC_OK;
}

int account_add(struct kvcm *k, const char *user, const char *password, int role, char *msg, size_t msglen)
{
	char hash[160];
	int code;

	if (!password[0] || strlen(password) > ACCOUNT_PASSWORD_MAX) {
		snprintf(msg, msglen, "missing or invalid fields: {AddAccount: {password (1..%d bytes)}}",
		         ACCOUNT_PASSWORD_MAX);
		return KC_INVALID_ARGUMENT;
	}
	if (!get(k)) {
		snprintf(msg, msglen, "out of memory");
		return KC_INTERNAL_ERROR;
	}
	if ((code = check_new(k, user, role, msg, msglen)) != KC_OK)
		return code;
	if (!make_hash(password, hash, sizeof(hash))) {
		snprintf(msg, msglen, "cannot hash the password");
		return KC_INTERNAL_ERROR;
	}
	code = account_add_hashed(k, user, hash, role, true, msg, msglen);
	if (code == KC_OK)
		log_info("op=kvcm_account_add user=\"%s\" role=%s", user,
		         role == ROLE_ADMIN ? "ROLE_ADMIN" : "ROLE_USER");
	return code;
}

int account_delete(struct kvcm *k, const char *user, char *msg, size_t msglen)
{
	struct accounts *a = k->accounts;
	struct account *acc = find(a, user);

	if (!acc) {
		snprintf(msg, msglen, "account \"%.256s\" does not exist", user);
		return KC_INVALID_ARGUMENT;
	}
	if (acc->bootstrap) {
		snprintf(msg, msglen, "account \"%s\" comes from kvcm.service.admin_user: change the configuration",
		         user);
		return KC_INVALID_ARGUMENT;
	}
	if (acc->role == ROLE_ADMIN && admins(a) == 1 && a->n > 1) {
		snprintf(msg, msglen, "account \"%s\" is the last ROLE_ADMIN: delete the other accounts first", user);
		return KC_INVALID_ARGUMENT;
	}
	store_del_json(&k->store, STORE_ACCOUNTS, acc->name);
	log_info("op=kvcm_account_delete user=\"%s\"", user);
	free(acc->name);
	free(acc->hash);
	OPENSSL_cleanse(acc->fast, sizeof(acc->fast));
	memmove(acc, acc + 1, (size_t)(&a->v[a->n] - (acc + 1)) * sizeof(*acc));
	a->n--;
	return KC_OK;
}

void account_each(struct kvcm *k, void (*fn)(void *arg, const char *user, int role, const char *hash), void *arg)
{
	for (size_t i = 0; k->accounts && i < k->accounts->n; i++)
		fn(arg, k->accounts->v[i].name, k->accounts->v[i].role, k->accounts->v[i].hash);
}

/* The slow check, once per password: PBKDF2 with the record's salt, compared in constant time. */
static bool verify(const struct account *acc, const char *password)
{
	unsigned iter;
	unsigned char salt[SALT_LEN], want[HASH_LEN], got[HASH_LEN];
	bool ok;

	if (!parse_hash(acc->hash, &iter, salt, want) || !derive(password, salt, iter, got))
		return false;
	ok = CRYPTO_memcmp(want, got, HASH_LEN) == 0;
	OPENSSL_cleanse(got, sizeof(got));
	return ok;
}

static bool slow_check_allowed(struct accounts *a)
{
	uint64_t now = clock_ns() / 1000000000u;

	if (now != a->slow_second) {
		a->slow_second = now;
		a->slow_ns = 0;
	}
	if (a->slow_ns < SLOW_CHECK_NS_PER_S)
		return true;
	log_ratelimited(&a->log_bucket, LOG_WARN,
	                "op=kvcm_auth result=throttled why=\"password checks took %llu ms of this second\"",
	                (unsigned long long)(a->slow_ns / 1000000u));
	return false;
}

int account_check(struct kvcm *k, const char *user, const char *password)
{
	struct accounts *a = k->accounts;
	struct account *acc = find(a, user);
	unsigned char fast[HASH_LEN];
	unsigned int len = HASH_LEN;
	uint64_t t0;
	bool ok;

	if (!acc ||
	    !HMAC(EVP_sha256(), a->key, sizeof(a->key), (const unsigned char *)password, strlen(password), fast, &len))
		return -1;
	if (acc->fast_ok && CRYPTO_memcmp(acc->fast, fast, HASH_LEN) == 0)
		return acc->role;
	if (!slow_check_allowed(a))
		return -1;
	t0 = clock_ns();
	ok = verify(acc, password);
	a->slow_ns += clock_ns() - t0;
	if (!ok)
		return -1;
	memcpy(acc->fast, fast, HASH_LEN);
	acc->fast_ok = true;
	return acc->role;
}

bool accounts_enforced(const struct kvcm *k)
{
	return k->accounts && k->accounts->n > 0;
}

bool accounts_admin_enforced(const struct kvcm *k)
{
	return admins(k->accounts) > 0;
}

int account_load(struct kvcm *k, const char *user, json_t *rec)
{
	json_t *role = json_object_get(rec, "role"), *hash = json_object_get(rec, "hash");
	unsigned iter;
	unsigned char salt[SALT_LEN], dk[HASH_LEN];

	if (!json_is_integer(role) || !json_is_string(hash) || !get(k) ||
	    !parse_hash(json_string_value(hash), &iter, salt, dk) || find(k->accounts, user))
		return MMC_ERROR;
	/* not check_new(): loading in name order may meet a ROLE_USER before its admin */
	return insert(k->accounts, user, json_string_value(hash), (int)json_integer_value(role)) ? 0 : -1;
}

/* The first line of path, without its line end; never logged. */
static int read_password(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (f && secret_file_private("kvcm.service.admin_password_file", path, fileno(f), SECRET_OTHERS, err, errlen)) {
		fclose(f);
		return MMC_ERROR;
	}
	if (!f || !fgets(out, (int)outlen, f)) {
		snprintf(err, errlen, "kvcm.service.admin_password_file: cannot read \"%s\"", path);
		if (f)
			fclose(f);
		return MMC_ERROR;
	}
	fclose(f);
	n = strcspn(out, "\r\n");
	out[n] = '\0';
	if (!n) {
		snprintf(err, errlen, "kvcm.service.admin_password_file: \"%s\" starts with an empty line", path);
		return MMC_ERROR;
	}
	return 0;
}

int accounts_bootstrap(struct kvcm *k, char *err, size_t errlen)
{
	const struct kvcm_conf *c = &k->conf;
	char password[ACCOUNT_PASSWORD_MAX + 2], hash[160], msg[256] = "cannot hash the password";
	struct account *acc;

	if (!c->admin_user[0] && !c->admin_password_file[0])
		return 0;
	if (!c->admin_user[0] || !c->admin_password_file[0]) {
		snprintf(err, errlen, "kvcm.service.admin_user and kvcm.service.admin_password_file go together");
		return MMC_ERROR;
	}
	if (read_password(c->admin_password_file, password, sizeof(password), err, errlen))
		return MMC_ERROR;
	if (find(k->accounts, c->admin_user)) {
		snprintf(err, errlen, "kvcm.service.admin_user \"%s\" is also a stored account: delete one",
		         c->admin_user);
		return MMC_ERROR;
	}
	if (!get(k) || !make_hash(password, hash, sizeof(hash)) ||
	    account_add_hashed(k, c->admin_user, hash, ROLE_ADMIN, false, msg, sizeof(msg)) != KC_OK) {
		OPENSSL_cleanse(password, sizeof(password));
		snprintf(err, errlen, "kvcm.service.admin_user: %s", msg);
		return MMC_ERROR;
	}
	OPENSSL_cleanse(password, sizeof(password));
	acc = find(k->accounts, c->admin_user);
	acc->bootstrap = true;
	return 0;
}

void accounts_free(struct kvcm *k)
{
	struct accounts *a = k->accounts;

	for (size_t i = 0; a && i < a->n; i++) {
		free(a->v[i].name);
		free(a->v[i].hash);
	}
	if (a) {
		free(a->v);
		OPENSSL_cleanse(a->key, sizeof(a->key));
	}
	free(a);
	k->accounts = NULL;
}
