/*
 * The seed's curl examples (seed_curl.txt, verbatim), run with curl in order against a fresh server with the
 * default configuration (only the ports are free ones). First as written, where most examples name instances that
 * were never registered, then with the instance ids made consistent, where every example must succeed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "kvcm_client.h"

#define MAX_EXAMPLES 16

static char *examples[MAX_EXAMPLES];
static int nexamples;

static void load_examples(void)
{
	FILE *f = fopen(KVCM_TEST_DIR "/seed_curl.txt", "r");
	char line[1024], cmd[8192] = "";

	cr_assert(f, "cannot read seed_curl.txt");
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "curl ", 5) == 0)
			cmd[0] = '\0';
		else if (!cmd[0] && strncmp(line, "curl", 4) != 0)
			continue;
		strncat(cmd, line, sizeof(cmd) - strlen(cmd) - 1);
		if (strcmp(line, "}'\n") == 0 && nexamples < MAX_EXAMPLES) {
			examples[nexamples++] = strdup(cmd);
			cmd[0] = '\0';
		}
	}
	fclose(f);
}

/* Replaces every from with to in s (a fresh string; s is freed). */
static char *replace(char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0;
	char *out = malloc(strlen(s) * 2 + 4096), *o = out;

	for (const char *p = s; *p;) {
		if (strncmp(p, from, fl) == 0) {
			memcpy(o, to, tl);
			o += tl;
			p += fl;
			n++;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	free(s);
	return out;
}

static char *api_of(const char *cmd, char *buf, size_t len)
{
	const char *p = strstr(cmd, "/api/"), *e = p ? strpbrk(p, " \\") : NULL;

	snprintf(buf, len, "%.*s", p && e ? (int)(e - p - 5) : 0, p ? p + 5 : "");
	return buf;
}

/* Runs one example with curl (with -u user, when given); returns the parsed answer. */
static json_t *run(const char *example, uint16_t port, const char *session, const char *user)
{
	char portstr[32], *cmd = strdup(example), out[1 << 16], with_user[300];
	size_t n;
	FILE *p;

	snprintf(portstr, sizeof(portstr), "localhost:%u", port);
	cmd = replace(cmd, "localhost:6382", portstr);
	if (user) {
		snprintf(with_user, sizeof(with_user), "curl -u '%s' ", user);
		cmd = replace(cmd, "curl ", with_user);
	}
	if (session)
		cmd = replace(cmd, "session_id_from_start_write", session);
	cmd = replace(cmd, "}'\n", "}' 2>/dev/null\n");
	p = popen(cmd, "r");
	cr_assert(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	free(cmd);
	return json_loads(out, 0, NULL);
}

/* Runs every example; user ("name:password") adds credentials, and env1, env2 (may be NULL) configure the server. */
static void run_all(const char *const *want, bool consistent, const char *user, const char *env1, const char *env2)
{
	struct metaserver m;
	const char *env[] = {"kvcm.service.http_port=0", "kvcm.service.admin_http_port=0", env1, env2, NULL};
	char session[64] = "", api[64];

	load_examples();
	cr_assert_eq(nexamples, 10, "seed_curl.txt has %d examples", nexamples);
	cr_assert_eq(metaserver_start(&m, env), 0, "metaserver did not start");
	for (int i = 0; i < nexamples; i++) {
		char *ex = strdup(examples[i]);
		json_t *r;

		if (consistent) {
			ex = replace(ex, "\"test_instance_id_2\"", "\"test_instance_id\"");
			ex = replace(ex, "\"test_instance\"", "\"test_instance_id\"");
		}
		r = run(ex, m.http_port, session[0] ? session : NULL, user);
		api_of(ex, api, sizeof(api));
		cr_expect(r != NULL, "%s: no JSON answer", api);
		cr_expect_str_eq(code_of(r), want[i], "%s answered %s (%s), expected %s", api, code_of(r),
		                 message_of(r), want[i]);
		if (strcmp(api, "startWriteCache") == 0 && json_is_string(json_object_get(r, "write_session_id")))
			snprintf(session, sizeof(session), "%s",
			         json_string_value(json_object_get(r, "write_session_id")));
		json_decref(r);
		free(ex);
	}
	metaserver_cleanup(&m);
}

Test(seed, examples_verbatim, .timeout = 60)
{
	static const char *const want[] = {
	    "OK",                 /* registerInstance test_group/test_instance_id (group auto-created) */
	    "INSTANCE_NOT_EXIST", /* getInstanceInfo test_instance */
	    "INSTANCE_NOT_EXIST", /* getCacheLocation */
	    "INSTANCE_NOT_EXIST", /* startWriteCache test_instance_id_2 */
	    "INSTANCE_NOT_EXIST", /* finishWriteCache */
	    "INSTANCE_NOT_EXIST", /* removeCache */
	    "INSTANCE_NOT_EXIST", /* reportEvent */
	    "INSTANCE_NOT_EXIST", /* trimCache */
	    "INSTANCE_NOT_EXIST", /* getCacheMeta */
	    "INSTANCE_NOT_EXIST", /* getCacheMetaDetail */
	};

	run_all(want, false, NULL, NULL, NULL);
}

Test(seed, examples_with_consistent_instance_ids, .timeout = 60)
{
	static const char *const want[] = {"OK", "OK", "OK", "OK", "OK", "OK", "OK", "OK", "OK", "OK"};

	run_all(want, true, NULL, NULL, NULL);
}

/* With a bootstrap admin every request needs credentials: the same examples pass with curl -u, fail without. */
Test(seed, examples_with_credentials, .timeout = 60)
{
	static const char *const want[] = {"OK", "OK", "OK", "OK", "OK", "OK", "OK", "OK", "OK", "OK"};
	char dir[] = "/tmp/mmc-kvcm-seed-XXXXXX", user_kv[128], pw_kv[160], cmd[200];
	FILE *f;

	cr_assert(mkdtemp(dir));
	snprintf(pw_kv, sizeof(pw_kv), "%s/pw", dir);
	f = fopen(pw_kv, "w");
	cr_assert(f);
	fputs("seed-pw\n", f);
	fclose(f);
	cr_assert(chmod(pw_kv, 0600) == 0);
	snprintf(pw_kv, sizeof(pw_kv), "kvcm.service.admin_password_file=%s/pw", dir);
	snprintf(user_kv, sizeof(user_kv), "kvcm.service.admin_user=seeder");
	{
		struct metaserver m;
		const char *env[] = {"kvcm.service.http_port=0", "kvcm.service.admin_http_port=0", user_kv, pw_kv,
		                     NULL};
		json_t *r;

		load_examples();
		cr_assert_eq(metaserver_start(&m, env), 0);
		r = run(examples[0], m.http_port, NULL, NULL);
		cr_expect(r == NULL || strcmp(code_of(r), "OK") != 0, "registerInstance without credentials succeeded");
		json_decref(r);
		metaserver_cleanup(&m);
		while (nexamples > 0)
			free(examples[--nexamples]);
	}
	run_all(want, true, "seeder:seed-pw", user_kv, pw_kv);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}
