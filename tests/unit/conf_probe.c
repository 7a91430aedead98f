/*
 * The configuration keys the code knows, and what a key = value does to them, for tests/unit/documented_keys.py.
 * Client keys go through a config file named by mmc_local_config.config_path into mmc_setup(), as a user's file
 * does; server and kvcm keys through meta_conf_load(), the loader behind mmc-metaserver --config, into the server's
 * one table (meta_conf_keys(): the object store's rows and the KV Cache Manager's).
 *
 *   conf-probe list client|client-compat|server|server-compat     one known key per line
 *   conf-probe list server-reloadable                              the server's keys SIGHUP changes
 *   conf-probe check client|server KEY VALUE                       one line: ok | unknown | bad | differs, a reason
 *   conf-probe check                                               the same for each "side<TAB>KEY<TAB>VALUE" line
 *                                                                  of stdin, each in a fresh child process
 *
 * "differs": the value was accepted, but the configuration it gives is not the built-in default (the line names
 * the keys whose fields changed); the documented default of a key must give "ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf_parse.h"
#include "local_config.h"
#include "meta_conf.h"
#include "meta_err.h"
#include "mmc/mmc.h"
#include "store.h"

static char logged[MMC_LOG_LINE_MAX];

static void keep_error(int level, const char *msg)
{
	if (level >= MMC_LOG_ERROR && !logged[0])
		snprintf(logged, sizeof(logged), "%s", msg);
}

static void print_key(void *arg, const char *key)
{
	printf("%s\n", key);
}

static int list(const char *what)
{
	const struct conf_key *k = NULL;

	if (strcmp(what, "client") == 0)
		k = local_config_keys();
	else if (strcmp(what, "server") == 0 || strcmp(what, "server-reloadable") == 0)
		k = meta_conf_keys();
	else if (strcmp(what, "client-compat") == 0)
		conf_compat_each(CONF_SCOPE_CLIENT, print_key, NULL);
	else if (strcmp(what, "server-compat") == 0)
		conf_compat_each(CONF_SCOPE_SERVER, print_key, NULL);
	else
		return 2;
	for (; k && k->name; k++)
		if (strcmp(what, "server-reloadable") != 0 || (k->flags & CONF_RELOADABLE))
			printf("%s\n", k->name);
	return 0;
}

/* The names of the table's keys whose fields differ between a and b, space-separated, into out. */
static void diff_fields(const struct conf_key *k, const void *a, const void *b, char *out, size_t len)
{
	size_t at = 0;

	out[0] = '\0';
	for (; k->name; k++)
		if (memcmp((const char *)a + k->offset, (const char *)b + k->offset, k->size) != 0 && at < len)
			at += (size_t)snprintf(out + at, len - at, " %s", k->name);
}

static int report(int rc, const char *err, const char *differs)
{
	if (rc)
		printf("%s %s\n", strstr(err, "unknown configuration key") ? "unknown" : "bad", err);
	else if (differs[0])
		printf("differs%s\n", differs);
	else
		printf("ok\n");
	return 0;
}

static int write_file(char *path, const char *key, const char *value)
{
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!f)
		return -1;
	fprintf(f, "%s = %s\n", key, value);
	return fclose(f);
}

static int check_client(const char *key, const char *value)
{
	char path[] = "/tmp/mmc-conf-probe-XXXXXX", differs[1024] = "";
	mmc_local_config c = mmc_default_local_config();
	struct client_conf defaults;
	mmc_store *s = mmc_create();
	int rc;

	if (!s || write_file(path, key, value) || local_config_resolve(&c, &defaults, logged, sizeof(logged)))
		return 2;
	snprintf(c.config_path, sizeof(c.config_path), "%s", path);
	mmc_set_log_handler(keep_error);
	rc = mmc_setup(s, &c);
	unlink(path);
	/* config_path differs by construction; every key's field must not */
	if (rc == 0)
		diff_fields(local_config_keys(), &s->conf, &defaults, differs, sizeof(differs));
	report(rc, logged, differs);
	fflush(stdout);
	mmc_destroy(s);
	return 0;
}

static int check_server(const char *key, const char *value)
{
	static struct meta_settings s, defaults;
	char path[] = "/tmp/mmc-conf-probe-XXXXXX", differs[1024] = "";
	struct meta_err e;
	int rc;

	if (write_file(path, key, value))
		return 2;
	meta_settings_defaults(&defaults);
	meta_settings_defaults(&s);
	meta_err_clear(&e);
	rc = meta_conf_load(&s, path, &e);
	unlink(path);
	if (rc == 0)
		rc = meta_conf_check(&s.conf, &e);
	if (rc == 0)
		diff_fields(meta_conf_keys(), &s, &defaults, differs, sizeof(differs));
	report(rc, e.message, differs);
	fflush(stdout);
	return 0;
}

static int check(const char *side, const char *key, const char *value)
{
	if (strcmp(side, "client") == 0)
		return check_client(key, value);
	if (strcmp(side, "server") == 0)
		return check_server(key, value);
	return 2;
}

/* One child per line: every check starts from the built-in defaults (the kvcm configuration is process state). */
static int check_lines(void)
{
	char line[4096];

	while (fgets(line, sizeof(line), stdin)) {
		char *side = strtok(line, "\t\n"), *key = strtok(NULL, "\t\n"), *value = strtok(NULL, "\n");
		pid_t pid;
		int status;

		if (!side || !key)
			return 2;
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(check(side, key, value ? value : ""));
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "check") == 0)
		return check_lines();
	if (argc == 3 && strcmp(argv[1], "list") == 0)
		return list(argv[2]);
	if (argc == 5 && strcmp(argv[1], "check") == 0)
		return check(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: conf-probe list client|client-compat|server|server-compat|server-reloadable\n"
	                "       conf-probe check [client|server KEY VALUE]\n");
	return 2;
}
