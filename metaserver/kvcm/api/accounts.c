/*
 * The accounts API on the admin port (reference kvcm.md §4.16): addAccount {user_name, password, role},
 * deleteAccount {user_name}, listAccount -> accounts [{user_name, role}]. Passwords are never echoed or listed.
 */
#include <string.h>

#include "account.h"
#include "api.h"

static const int role_values[] = {ROLE_USER, ROLE_ADMIN};
static const char *const role_names[] = {"ROLE_USER", "ROLE_ADMIN"};
const struct enum_desc enum_role = {"AccountRole", 2, role_values, role_names};

static void reply(struct call *c, int code, const char *msg, const char *ok_msg)
{
	if (code == KC_OK)
		call_ok(c, ok_msg);
	else
		call_fail(c, code, "%s", msg);
}

void admin_add_account(struct call *c)
{
	const char *user = jd_str(&c->d, c->body, "user_name"), *password = jd_str(&c->d, c->body, "password");
	int role = jd_enum(&c->d, c->body, "role", &enum_role);
	char msg[512];

	if (call_decode_failed(c))
		return;
	reply(c, account_add(c->k, user, password, role, msg, sizeof(msg)), msg, "account added");
}

void admin_delete_account(struct call *c)
{
	const char *user = jd_str(&c->d, c->body, "user_name");
	char msg[512];

	if (call_decode_failed(c))
		return;
	reply(c, account_delete(c->k, user, msg, sizeof(msg)), msg, "account deleted");
}

/* Names and roles only: the hash stays on the server. */
static void list_one(void *arg, const char *user, int role, const char *hash)
{
	struct jw *o = arg;

	(void)hash;
	jw_obj(o);
	jw_kstr(o, "user_name", user);
	jw_kstr(o, "role", enum_name(&enum_role, role));
	jw_obj_end(o);
}

void admin_list_accounts(struct call *c)
{
	call_ok(c, "");
	jw_key(&c->out, "accounts");
	jw_arr(&c->out);
	account_each(c->k, list_one, &c->out);
	jw_arr_end(&c->out);
}
