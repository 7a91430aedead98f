/* Configuration: size parsing, the client's defaults and checks, config files, and the server's keys. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_parse.h"
#include "local_config.h"
#include "meta_conf.h"
#include "meta_err.h"
#include "mmc/mmc.h"
#include "tcp_url.h"

Test(conf, sizes)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} ok[] = {{"4096", 4096},
	          {"2048KB", 2048u << 10},
	          {"2048K", 2048u << 10},
	          {"200MB", 200u << 20},
	          {"200mb", 200u << 20},
	          {"200m", 200u << 20},
	          {"2.5GB", 5ull << 29},
	          {"1TB", 1ull << 40},
	          {"1 GB", 1ull << 30},
	          /* a fraction of a unit is the nearest byte: 0.1GB was refused while 2.5GB passed */
	          {"0.1GB", 107374182},
	          {"1.5KB", 1536},
	          {"0.3mb", 314573},
	          /* whole numbers exactly, past 2^53 too (a double rounded them) */
	          {"9007199254740993", 9007199254740993ull},
	          {"18446744073709551615", UINT64_MAX}};
	/* a decimal number only: hex, exponents and signs read as numbers by strtod are refused */
	static const char *const bad[] = {"",
	                                  "-1",
	                                  "GB",
	                                  "1XB",
	                                  "0.5B",
	                                  "1.5",
	                                  "1e400",
	                                  "12 34",
	                                  "0x10",
	                                  "1e3",
	                                  "0x400MB",
	                                  "+5",
	                                  "18446744073709551616",
	                                  "1."};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(conf_parse_size(ok[i].text, &v), 0, "%s", ok[i].text);
		cr_assert_eq(v, ok[i].bytes, "%s", ok[i].text);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_neq(conf_parse_size(bad[i], &v), 0, "\"%s\" must be refused", bad[i]);
}

/* A refused value says what the key takes: true or false without a range, the choices, the kind of number. */
Test(conf, refusals_say_what_the_key_takes)
{
	char err[512];

	cr_assert_eq(conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.ubs_io.enable", "yes", err, sizeof(err)),
	             MMC_INVALID_PARAM);
	cr_expect_str_eq(err, "bad value \"yes\" for \"ock.mmc.ubs_io.enable\" (expected true or false)");
	cr_assert_eq(
	    conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.local_service.memory.pool.mode", "big", err, sizeof(err)),
	    MMC_INVALID_PARAM);
	cr_expect_str_eq(err, "bad value \"big\" for \"ock.mmc.local_service.memory.pool.mode\" (expected one of "
	                      "standard, expanded)");
	cr_assert_eq(
	    conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.client.batch_option.chunk.size", "lots", err, sizeof(err)),
	    MMC_INVALID_PARAM);
	cr_expect(strstr(err, "(expected a size such as 4096, 512MB or 2.5GB in [1, 4294967296])"), "%s", err);
}

Test(conf, client_defaults)
{
	mmc_local_config c = mmc_default_local_config();
	struct client_conf r;
	char err[256];

	cr_assert_str_eq(c.meta_service_url, "tcp://127.0.0.1:5000");
	cr_assert_str_eq(c.protocol, "auto");
	cr_assert_eq(c.world_size, 256);
	cr_assert_eq(c.dram_size, 1ull << 30);
	cr_assert_eq(c.max_dram_size, 64ull << 30);
	cr_assert_eq(c.timeout_ms, 60000);
	cr_assert(!c.verify_checksum, "checksums are opt-in");
	cr_assert_eq(local_config_resolve(&c, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(r.meta_host, "127.0.0.1");
	cr_assert_eq(r.meta_port, 5000);
}

static int resolve_with(void (*edit)(mmc_local_config *), char *err)
{
	mmc_local_config c = mmc_default_local_config();
	struct client_conf r;

	edit(&c);
	return local_config_resolve(&c, &r, err, 256);
}

static void bad_url(mmc_local_config *c)
{
	strcpy(c->meta_service_url, "tcp://127.0.0.1");
}
static void bad_proto(mmc_local_config *c)
{
	strcpy(c->protocol, "carrier_pigeon");
}
static void bad_level(mmc_local_config *c)
{
	strcpy(c->log_level, "loud");
}
static void bad_world(mmc_local_config *c)
{
	c->world_size = 1025;
}
static void bad_max(mmc_local_config *c)
{
	c->max_dram_size = 1 << 20;
}
static void bad_timeout(mmc_local_config *c)
{
	c->timeout_ms = 0;
}
static void bad_hcom_port(mmc_local_config *c)
{
	strcpy(c->hcom_url, "tcp://10.0.0.1:17x");
}
static void bad_hcom_host(mmc_local_config *c)
{
	strcpy(c->hcom_url, "tcp://");
}

Test(conf, client_validation_names_the_problem)
{
	char err[256];

	cr_assert_eq(resolve_with(bad_url, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.meta_service_url"), "%s", err);
	cr_assert_eq(resolve_with(bad_proto, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "protocol"), "%s", err);
	cr_assert_eq(resolve_with(bad_level, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "log_level"), "%s", err);
	cr_assert_eq(resolve_with(bad_world, err), MMC_INVALID_PARAM);
	cr_assert_eq(resolve_with(bad_max, err), MMC_INVALID_PARAM);
	cr_assert_eq(resolve_with(bad_timeout, err), MMC_INVALID_PARAM);
	/* was left to fi_getinfo at mmc_init, whose message named no key */
	cr_assert_eq(resolve_with(bad_hcom_port, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.local_service.hcom_url"), "%s", err);
	cr_assert_eq(resolve_with(bad_hcom_host, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.local_service.hcom_url"), "%s", err);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

Test(conf, client_file)
{
	char path[] = "/tmp/mmc-conf-XXXXXX", err[256];
	mmc_local_config c = mmc_default_local_config();
	struct client_conf r;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_file(path, "# a MemCache style file\n"
	                 "ock.mmc.meta_service_url = tcp://10.0.0.1:5100\n"
	                 "ock.mmc.local_service.protocol = host_tcp\n"
	                 "ock.mmc.local_service.dram.size = 512MB\n"
	                 "ock.mmc.local_service.world_size = 16\n"
	                 "ock.mmc.client.timeout.seconds = 5   # seconds\n"
	                 "ock.mmc.client.aggregate.io = true\n"
	                 "ock.mmc.client.verify_checksum = true\n"
	                 "\n");
	strcpy(c.config_path, path);
	cr_assert_eq(local_config_resolve(&c, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(r.meta_host, "10.0.0.1");
	cr_assert_eq(r.meta_port, 5100);
	cr_assert_str_eq(r.c.protocol, "host_tcp");
	cr_assert_eq(r.c.dram_size, 512u << 20);
	cr_assert_eq(r.c.world_size, 16);
	cr_assert_eq(r.c.timeout_ms, 5000);
	cr_assert(r.c.verify_checksum);

	write_file(path, "ock.mmc.client.verify_checksum = maybe\n");
	cr_assert_eq(local_config_resolve(&c, &r, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.client.verify_checksum"), "%s", err);

	write_file(path, "ock.mmc.local_service.dram.size = 512MB\nock.mmc.no.such.key = 1\n");
	cr_assert_eq(local_config_resolve(&c, &r, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.no.such.key") && strstr(err, ":2:"), "names key and line: %s", err);

	write_file(path, "ock.mmc.local_service.dram.size = lots\n");
	cr_assert_eq(local_config_resolve(&c, &r, err, sizeof(err)), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.local_service.dram.size"), "%s", err);

	write_file(path, "just some words\n");
	cr_assert_eq(local_config_resolve(&c, &r, err, sizeof(err)), MMC_INVALID_PARAM);

	/* NULL config: $MMC_LOCAL_CONFIG_PATH */
	write_file(path, "ock.mmc.local_service.protocol = host_shm\n");
	setenv("MMC_LOCAL_CONFIG_PATH", path, 1);
	cr_assert_eq(local_config_resolve(NULL, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(r.c.protocol, "host_shm");
	unlink(path);
}

/* Resolves the defaults with a config file holding text. */
static int resolve_file(const char *text, struct client_conf *r, char *err)
{
	char path[] = "/tmp/mmc-conf-XXXXXX";
	mmc_local_config c = mmc_default_local_config();
	int fd = mkstemp(path), rc;

	cr_assert_geq(fd, 0);
	close(fd);
	write_file(path, text);
	snprintf(c.config_path, sizeof(c.config_path), "%s", path);
	rc = local_config_resolve(&c, r, err, 256);
	unlink(path);
	return rc;
}

/* docs/configuration.md and mmc.h named ock.mmc.client.rma_timeout_ms, but a file that set it was refused */
Test(conf, client_file_sets_rma_timeout)
{
	struct client_conf r;
	char err[256];

	cr_assert_eq(resolve_file("ock.mmc.client.rma_timeout_ms = 2500\n", &r, err), 0, "%s", err);
	cr_assert_eq(r.c.rma_timeout_ms, 2500);
	cr_assert_eq(resolve_file("ock.mmc.client.rma_timeout_ms = 50\n", &r, err), MMC_INVALID_PARAM, "at least 100");
	cr_assert(strstr(err, "rma_timeout_ms"), "%s", err);
}

Test(conf, client_config_versions)
{
	mmc_local_config c = mmc_default_local_config(), d;
	static const uint32_t bad[] = {0, MMC_LOCAL_CONFIG_VERSION + 1, 0xdeadbeef};
	struct client_conf r;
	mmc_store *s = mmc_create();
	char err[256];

	cr_assert_eq(c.version, MMC_LOCAL_CONFIG_VERSION);
	cr_assert_eq(local_config_layout_bytes(MMC_LOCAL_CONFIG_VERSION), sizeof(mmc_local_config));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c.version = bad[i];
		cr_assert_eq(mmc_setup(s, &c), MMC_INVALID_PARAM, "version %u", bad[i]);
		cr_assert_eq(local_config_resolve(&c, &r, err, sizeof(err)), MMC_INVALID_PARAM);
		cr_assert(strstr(err, "version"), "%s", err);
		memset(&d, 0x5a, sizeof(d));
		cr_assert_eq(mmc_local_config_init(&d, bad[i]), MMC_INVALID_PARAM);
		cr_assert_eq(d.version, 0x5a5a5a5a, "a refused init leaves the struct alone");
	}
	cr_assert_eq(mmc_local_config_init(NULL, MMC_LOCAL_CONFIG_VERSION), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_local_config_init(&d, MMC_LOCAL_CONFIG_VERSION), 0);
	cr_assert_eq(memcmp(&d.meta_service_url, c.meta_service_url, sizeof(d.meta_service_url)), 0);
	mmc_destroy(s);
}

/* Every layout's struct, put so that its last byte ends a readable page: neither mmc_local_config_init() nor
 * mmc_setup() touches a byte past what the caller's version has (a newer library, an older caller). */

/*
 * An older layout's bytes as its struct had them: up to its last field, then padded to the struct's alignment (an
 * older caller's sizeof). The struct then ends where a guard page starts, and stays aligned.
 */
static size_t aligned(size_t bytes)
{
	size_t a = _Alignof(mmc_local_config);

	return (bytes + a - 1) / a * a;
}

Test(conf, client_config_is_never_read_past_its_version)
{
	long page = sysconf(_SC_PAGESIZE);

	for (uint32_t v = 1; v <= MMC_LOCAL_CONFIG_VERSION; v++) {
		size_t bytes = aligned(local_config_layout_bytes(v)),
		       data = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
		char *map = mmap(NULL, data + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		mmc_local_config *c = (mmc_local_config *)(void *)(map + data - bytes);
		mmc_store *s = mmc_create();

		cr_assert_neq(map, MAP_FAILED);
		cr_assert_eq(mprotect(map + data, (size_t)page, PROT_NONE), 0);
		cr_assert_eq(mmc_local_config_init(c, v), 0, "version %u", v);
		cr_assert_eq(c->version, v);
		cr_assert_eq(mmc_setup(s, c), 0, "version %u", v);
		mmc_destroy(s);
		munmap(map, data + (size_t)page);
	}
}

/* ---- mmc_config_set(): every key of a client file, by name, from its text ---- */

/* A good value for key other than its default where one exists, as a file would carry it. */
static const char *good_value(const struct conf_key *k, const void *defaults, char *buf, size_t len)
{
	static const struct {
		const char *key, *value;
	} special[] = {
	    {"ock.mmc.meta_service_url", "tcp://10.1.2.3:5100"},
	    {"ock.mmc.local_service.protocol", "host_tcp"},
	    {"ock.mmc.local_service.hcom_url", "tcp://10.1.2.4:7000"},
	    {"ock.mmc.client.auth_token", "0123456789abcdef0123"},
	    {"ock.mmc.client.tenant", "tenant-a"},
	};

	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		if (strcmp(k->name, special[i].key) == 0)
			return special[i].value;
	switch (k->type) {
	case CONF_STR:
		return k->choices ? k->choices[0] : "/tmp/mmc-config-set-value";
	case CONF_BOOL:
		return *(const bool *)((const char *)defaults + k->offset) ? "false" : "true";
	case CONF_SIZE:
		return "2MB";
	case CONF_MS:
		return "7";
	default:
		snprintf(buf, len, "%llu", (unsigned long long)k->min + 1);
		return buf;
	}
}

/* Reads back what good_value() means, in the field's own type, and compares it with the field. */
static bool landed(const struct conf_key *k, const mmc_local_config *c, const char *value)
{
	const char *f = (const char *)c + k->offset;
	uint64_t n;
	uint32_t u;

	switch (k->type) {
	case CONF_STR:
		return strcmp(f, value) == 0;
	case CONF_BOOL:
		return *(const bool *)f == (strcmp(value, "true") == 0);
	case CONF_SIZE:
		memcpy(&n, f, sizeof(n));
		return n == 2u << 20;
	case CONF_MS:
		memcpy(&u, f, sizeof(u));
		return u == 7000;
	case CONF_U32:
		memcpy(&u, f, sizeof(u));
		return u == k->min + 1;
	default:
		memcpy(&n, f, sizeof(n));
		return n == k->min + 1;
	}
}

Test(conf, every_client_key_is_set_by_name)
{
	const mmc_local_config d = mmc_default_local_config();
	char buf[32], longer[MMC_PATH_SIZE + 8];
	int n = 0;

	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	for (const struct conf_key *k = local_config_keys(); k->name; k++, n++) {
		mmc_local_config c = d;
		const char *v = good_value(k, &d, buf, sizeof(buf));

		cr_assert_eq(mmc_config_set(&c, k->name, v), MMC_OK, "%s = %s", k->name, v);
		cr_assert(landed(k, &c, v), "%s = %s", k->name, v);
		cr_assert_eq(memcmp(&c, &d, k->offset), 0, "%s changed only its field", k->name);
		cr_assert_eq(memcmp((char *)&c + k->offset + k->size, (const char *)&d + k->offset + k->size,
		                    sizeof(c) - k->offset - k->size),
		             0, "%s changed only its field", k->name);
		/* refused: conf as it was */
		c = d;
		cr_assert_eq(mmc_config_set(&c, k->name, k->type == CONF_STR && !k->choices ? longer : "x1"),
		             MMC_INVALID_PARAM, "%s", k->name);
		cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0, "a refused %s leaves conf alone", k->name);
	}
	cr_assert_geq(n, 27, "every key of the client's table, the file-only ones included");
}

Test(conf, config_set_refusals)
{
	const mmc_local_config d = mmc_default_local_config();
	mmc_local_config c = d;
	char err[512];
	static const char *const bad[][2] = {
	    {"ock.mmc.no_such_key", "1"},
	    {"ock.mmc.local_service.dram.size", "1XB"},
	    {"ock.mmc.local_service.dram.size", "2TB"},
	    {"ock.mmc.local_service.world_size", "0"},
	    {"ock.mmc.local_service.protocol", "carrier_pigeon"},
	    {"ock.mmc.local_service.hcom_url", "tcp://10.0.0.1:99999"},
	    {"ock.mmc.meta_service_url", "tcp://127.0.0.1"},
	    {"ock.mmc.log_level", "chatty"},
	    {"ock.mmc.client.timeout.seconds", "601"},
	    {"ock.mmc.local_service.storage.enabled", "true"},
	    {"ubsio.disk.path", "/dev/nvme0n1"},
	    {"ock.mmc.client.read_thread_pool.size", "0"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(local_config_set(&c, bad[i][0], bad[i][1], err, sizeof(err)), MMC_INVALID_PARAM, "%s = %s",
		             bad[i][0], bad[i][1]);
		cr_assert(strstr(err, bad[i][0]), "the message names the key: %s", err);
		cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0, "%s = %s left conf alone", bad[i][0], bad[i][1]);
	}
	cr_assert_eq(mmc_config_set(NULL, "ock.mmc.log_level", "info"), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_config_set(&c, NULL, "info"), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_config_set(&c, "ock.mmc.log_level", NULL), MMC_INVALID_PARAM);
	c.version = 0;
	cr_assert_eq(mmc_config_set(&c, "ock.mmc.log_level", "info"), MMC_INVALID_PARAM, "a version it does not know");
	c = d;
	/* what a file accepts and ignores is accepted and ignored; MemCache's protocols are mmc's auto at setup */
	cr_assert_eq(mmc_config_set(&c, "ock.mmc.client.read_thread_pool.size", "8"), MMC_OK);
	cr_assert_eq(mmc_config_set(&c, "ubsio.mem.size_in_gb", "4"), MMC_OK);
	cr_assert_eq(memcmp(&c, &d, sizeof(c)), 0);
	cr_assert_eq(mmc_config_set(&c, "ock.mmc.local_service.protocol", "device_sdma"), MMC_OK);
	cr_assert_str_eq(c.protocol, "device_sdma");
	cr_assert_eq(mmc_config_set(&c, "ock.mmc.local_service.storage.size", "1GB"), MMC_OK);
	cr_assert_eq(c.ssd_size, 1ull << 30, "MemCache's name of ssd.size");
}

/* An older caller's struct: keys of its layout are set, later ones refused, no byte past it touched. */
Test(conf, config_set_keeps_to_the_callers_layout)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t bytes = aligned(local_config_layout_bytes(1)),
	       data = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
	char *map = mmap(NULL, data + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mmc_local_config *c = (mmc_local_config *)(void *)(map + data - bytes);

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + data, (size_t)page, PROT_NONE), 0);
	cr_assert_eq(mmc_local_config_init(c, 1), 0);
	cr_assert_eq(mmc_config_set(c, "ock.mmc.client.verify_checksum", "true"), MMC_OK);
	cr_assert(c->verify_checksum);
	cr_assert_eq(mmc_config_set(c, "ock.mmc.tls.key.pass.path", "/etc/mmc/pass"), MMC_INVALID_PARAM);
	cr_assert_eq(mmc_config_set(c, "ock.mmc.client.host_path", "false"), MMC_INVALID_PARAM);
	munmap(map, data + (size_t)page);
}

/* A key set by name and the same key in a file resolve to the same configuration, or to the same refusal. */
Test(conf, config_set_is_a_file_line)
{
	const mmc_local_config d = mmc_default_local_config();
	char buf[32], line[1200], path[] = "/tmp/mmc-conf-set-XXXXXX", err_set[256], err_file[256];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (const struct conf_key *k = local_config_keys(); k->name; k++) {
		mmc_local_config a = d, b = d;
		const char *v = good_value(k, &d, buf, sizeof(buf));
		struct client_conf *ra = calloc(1, sizeof(*ra)), *rb = calloc(1, sizeof(*rb));
		int rca, rcb;

		cr_assert(ra && rb);
		cr_assert_eq(mmc_config_set(&a, k->name, v), MMC_OK, "%s", k->name);
		snprintf(line, sizeof(line), "%s = %s\n", k->name, v);
		write_file(path, line);
		snprintf(b.config_path, sizeof(b.config_path), "%s", path);
		rca = local_config_resolve(&a, ra, err_set, sizeof(err_set));
		rcb = local_config_resolve(&b, rb, err_file, sizeof(err_file));
		cr_assert_eq(rca, rcb, "%s = %s: %s / %s", k->name, v, rca ? err_set : "ok", rcb ? err_file : "ok");
		if (rca) {
			cr_assert_str_eq(err_set, err_file, "%s", k->name);
		} else {
			memset(rb->c.config_path, 0, sizeof(rb->c.config_path));
			cr_assert_eq(memcmp(ra, rb, sizeof(*ra)), 0, "%s = %s resolves alike", k->name, v);
		}
		free(ra);
		free(rb);
	}
	unlink(path);
}

Test(conf, server_keys)
{
	struct meta_err e;
	struct meta_settings c;

	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_check(&c.conf, &e), 0);
	cr_assert_eq(c.conf.evict_high, 90);
	cr_assert_eq(c.conf.evict_low, 80);
	cr_assert_eq(c.conf.lease_ttl_ms, 10000);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.evict_threshold_high", "70", &e), 0);
	cr_assert_eq(meta_conf_check(&c.conf, &e), MMC_INVALID_PARAM, "high must stay above low");
	cr_assert(strstr(e.message, "evict_threshold"), "%s", e.message);
	cr_assert_str_eq(e.key, "ock.mmc.evict_threshold_high", "the check names the key it refuses");
	cr_assert_eq(e.exit_code, EXIT_CONFIG);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.evict_threshold_low", "60", &e), 0);
	cr_assert_eq(meta_conf_check(&c.conf, &e), 0);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.evict_threshold_high", "100", &e), MMC_INVALID_PARAM);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.lease_ttl_ms", "0", &e), MMC_INVALID_PARAM);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.lmdb.sync", "maybe", &e), MMC_INVALID_PARAM);
	meta_err_clear(&e);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.bogus", "1", &e), MMC_INVALID_PARAM);
	cr_assert(strstr(e.message, "ock.mmc.bogus"), "%s", e.message);
	cr_assert_str_eq(e.key, "ock.mmc.bogus");
	cr_assert_eq(meta_conf_set(&c, "no.prefix", "1", &e), MMC_INVALID_PARAM);
	cr_assert_str_eq(e.key, "no.prefix", "a key without a known prefix is named too");
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta_service_url", "tcp://0.0.0.0:5001", &e), 0);
	cr_assert_eq(meta_conf_check(&c.conf, &e), MMC_INVALID_PARAM, "reachable without credentials");
	cr_assert(strstr(e.message, "ock.mmc.meta.auth_token"), "%s", e.message);
	cr_assert_str_eq(e.key, "ock.mmc.meta_service_url");
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.allow_insecure_bind", "true", &e), 0);
	cr_assert_eq(meta_conf_check(&c.conf, &e), 0);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta_service_url", "udp://x", &e), 0);
	cr_assert_eq(meta_conf_check(&c.conf, &e), MMC_INVALID_PARAM);
	/* a Redis WAIT must end before the socket's timeout: else a batch Redis applied is counted lost */
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.redis.wait_replicas", "1", &e), 0);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.redis.wait_timeout_ms", "2000", &e), 0);
	cr_assert_eq(meta_conf_check(&c.conf, &e), MMC_INVALID_PARAM);
	cr_assert_str_eq(e.key, "ock.mmc.meta.redis.wait_timeout_ms");
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.redis.timeout_ms", "3000", &e), 0);
	cr_assert_eq(meta_conf_check(&c.conf, &e), 0);
}

/* The KV Cache Manager's keys are rows of the server's one table: their defaults come from the rows, their bounds
 * are checked by the same loader, and the flag says whether SIGHUP changes them. */
Test(conf, kvcm_keys_are_rows_of_the_server_table)
{
	const struct conf_key *port = conf_find(meta_conf_keys(), "kvcm.service.http_port");
	const struct conf_key *sessions = conf_find(meta_conf_keys(), "kvcm.write_session.max_sessions");
	struct meta_settings c;
	struct meta_err e;

	cr_assert_not_null(port);
	cr_assert_not_null(sessions);
	cr_assert_str_eq(port->def, "6382");
	cr_assert_eq(port->flags & CONF_RELOADABLE, 0, "a listener's port waits for a restart");
	cr_assert_neq(sessions->flags & CONF_RELOADABLE, 0, "read at each request: SIGHUP changes it");
	meta_settings_defaults(&c);
	cr_assert_eq(c.kvcm.http_port, 6382);
	cr_assert_eq(c.kvcm.max_body_bytes, 64u << 20);
	cr_assert_eq(c.kvcm.reclaim.pending_bytes, UINT64_C(4) << 40);
	cr_assert_str_eq(c.kvcm.rpc_bind, "127.0.0.1");
	cr_assert(c.kvcm.grpc_enabled);
	cr_assert_eq(c.conf.evict_high, 90, "the object store's rows in the same table");
	cr_assert_eq(meta_conf_set(&c, "kvcm.service.http_port", "6400", &e), 0);
	cr_assert_eq(c.kvcm.http_port, 6400);
	meta_err_clear(&e);
	cr_assert_eq(meta_conf_set(&c, "kvcm.service.http_port", "70000", &e), MMC_INVALID_PARAM);
	cr_assert_str_eq(e.key, "kvcm.service.http_port");
	cr_assert_eq(e.exit_code, EXIT_CONFIG);
	cr_assert(strstr(e.message, "[0, 65535]"), "%s", e.message);
	cr_assert_eq(c.kvcm.http_port, 6400, "a refused value leaves the field alone");
	cr_assert_eq(meta_conf_set(&c, "kvcm.raft.port", "7000", &e), 0, "the reference's keys of no effect");
	cr_assert_eq(meta_conf_set(&c, "kvcm.no_such_key", "1", &e), MMC_INVALID_PARAM);
	cr_assert_str_eq(e.key, "kvcm.no_such_key");
}

Test(conf, memcache_compatibility_keys_are_checked_and_ignored)
{
	struct meta_err e;
	char err[256];
	struct meta_settings c;

	cr_assert_eq(
	    conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.client.read_thread_pool.size", "32", err, sizeof(err)), 1);
	cr_assert_eq(
	    conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.client.read_thread_pool.size", "65", err, sizeof(err)),
	    MMC_INVALID_PARAM, "1..64");
	cr_assert(strstr(err, "read_thread_pool"), "%s", err);
	cr_assert_eq(conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.local_service.hcom.tls.cert.path", "/etc/c.pem", err,
	                               sizeof(err)),
	             1);
	cr_assert_eq(conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.config_store.tls.enable", "yes", err, sizeof(err)),
	             MMC_INVALID_PARAM);
	/* the meta connection's TLS keys are real now (the RPC port's TLS), but for the vendor plug-in's two */
	cr_assert_eq(conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.tls.enable", "true", err, sizeof(err)), 0);
	cr_assert_eq(conf_apply_compat(CONF_SCOPE_SERVER, "ock.mmc.tls.decrypter.path", "/d", err, sizeof(err)), 1);
	cr_assert_eq(
	    conf_apply_compat(CONF_SCOPE_SERVER, "ock.mmc.local_service.hcom.tls.enable", "true", err, sizeof(err)), 0,
	    "a client key is unknown to the server");
	cr_assert_eq(conf_apply_compat(CONF_SCOPE_CLIENT, "ock.mmc.tls.nonsense", "x", err, sizeof(err)), 0);
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.ha.enable", "false", &e), 0);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.log_rotation_file_count", "51", &e), MMC_INVALID_PARAM);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.config_store.tls.key.path", "/k", &e), 0);
}

/* D5: a comment line past 4095 bytes was read in pieces, and its tail parsed as a line of its own */
Test(conf, long_lines_are_one_line)
{
	struct meta_err e;
	char path[] = "/tmp/mmc-conf-XXXXXX", err[256];
	struct meta_settings c;
	struct client_conf r;
	size_t n = 4095 + 64;
	char *text = malloc(n + 2000);
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	text[0] = '#';
	memset(text + 1, 'x', 4094);
	strcpy(text + 4095, "ock.mmc.meta_service_url = tcp://127.0.0.1:15300\n");
	write_file(path, text);
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_load(&c, path, &e), 0, "%s", e.message);
	cr_assert_str_eq(c.conf.meta_service_url, "tcp://127.0.0.1:5000", "the comment's tail was parsed as a key");
	cr_assert_eq(resolve_file(text, &r, err), 0, "%s", err);
	cr_assert_eq(r.meta_port, 5000);

	/* a long value is read whole, and refused by the key's own bound with the key's name */
	strcpy(text, "ock.mmc.meta.data_dir = ");
	memset(text + 24, 'a', 5000);
	strcpy(text + 5024, "\nock.mmc.meta_service_url = tcp://127.0.0.1:15300\n");
	write_file(path, text);
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_load(&c, path, &e), MMC_INVALID_PARAM);
	cr_assert(strstr(e.message, "ock.mmc.meta.data_dir"), "%s", e.message);
	cr_assert_str_eq(e.key, "ock.mmc.meta.data_dir", "the failing line's key is named, not read from the message");
	cr_assert_eq(e.exit_code, EXIT_CONFIG);
	cr_assert_str_eq(c.conf.meta_service_url, "tcp://127.0.0.1:5000");
	unlink(path);
	free(text);
}

/* issue 20: the server took only IPv4 literals; both ends now read names and bracketed IPv6 the same way */
Test(conf, urls_take_names_and_ipv6)
{
	char host[256], err[256];
	uint16_t port;
	struct client_conf r;

	cr_assert_eq(tcp_url_parse("tcp://[::1]:5000", host, sizeof(host), &port), 0);
	cr_assert_str_eq(host, "::1");
	cr_assert_eq(port, 5000);
	cr_assert_eq(tcp_url_parse("tcp://localhost:0", host, sizeof(host), &port), 0);
	cr_assert_str_eq(host, "localhost");
	cr_assert_eq(tcp_url_parse("tcp://::1:5000", host, sizeof(host), &port), -1, "a bare IPv6 literal");
	cr_assert_eq(tcp_url_parse("tcp://[::1]5000", host, sizeof(host), &port), -1);
	cr_assert_eq(tcp_url_parse("tcp://[]:5000", host, sizeof(host), &port), -1);
	cr_assert_eq(tcp_url_parse("tcp://h:70000", host, sizeof(host), &port), -1);
	cr_assert_eq(tcp_url_parse("tcp://h:", host, sizeof(host), &port), -1);
	cr_assert_eq(resolve_file("ock.mmc.meta_service_url = tcp://[fe80::1]:5100\n", &r, err), 0, "%s", err);
	cr_assert_str_eq(r.meta_host, "fe80::1");
	cr_assert_eq(r.meta_port, 5100);
}

/* A file holding a secret (path: its template, made unique) and the client config line naming it. */
static void token_file(char *path, char *lines, size_t cap)
{
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_file(path, "0123456789abcdef-from-a-file\n");
	snprintf(lines, cap, "ock.mmc.client.auth_token_file = %s\n", path);
}

/* The cluster secret: from its key or its file, not both, long enough, and never in a message. */
Test(conf, secrets_come_from_a_key_or_a_file)
{
	struct meta_err e;
	char path[] = "/tmp/mmc-secret-XXXXXX", lines[256], err[256];
	struct client_conf r;
	struct meta_settings c;

	token_file(path, lines, sizeof(lines));
	cr_assert_eq(resolve_file(lines, &r, err), 0, "%s", err);
	cr_assert_str_eq(r.cred.token, "0123456789abcdef-from-a-file", "the trailing newline is not the secret's");
	snprintf(lines, sizeof(lines), "ock.mmc.client.auth_token_file = %s\nock.mmc.client.auth_token = %s\n", path,
	         "0123456789abcdef-too");
	cr_assert_eq(resolve_file(lines, &r, err), MMC_INVALID_PARAM, "both");
	cr_assert(strstr(err, "not both"), "%s", err);
	cr_assert_eq(resolve_file("ock.mmc.client.auth_token = short-secret\n", &r, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "at least 16") && !strstr(err, "short-secret"), "%s", err);
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.auth_token_file", "/no/such/file", &e), 0);
	cr_assert_eq(meta_conf_resolve_secrets(&c.conf, &e), MMC_INVALID_PARAM);
	cr_assert(strstr(e.message, "ock.mmc.meta.auth_token_file"), "%s", e.message);
	cr_assert_str_eq(e.key, "ock.mmc.meta.auth_token_file");
	write_file(path, "");
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.auth_token_file", path, &e), 0);
	cr_assert_eq(meta_conf_resolve_secrets(&c.conf, &e), MMC_INVALID_PARAM, "an empty file");
	cr_assert_eq(resolve_file("ock.mmc.tls.enable = true\n", &r, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.tls.ca.path"), "a TLS store must be able to verify the server: %s", err);
	unlink(path);
}

/* A '#' starts a comment at the start of a line or after a blank, not inside a value: a secret or a URI holding one
 * was cut there (and a Redis URI cut inside its password was echoed, unmasked, in the error). */
Test(conf, a_hash_inside_a_value_is_the_values)
{
	struct client_conf r;
	char err[256];

	cr_assert_eq(resolve_file("ock.mmc.client.auth_token = 0123456789#abcdef-secret\n", &r, err), 0, "%s", err);
	cr_assert_str_eq(r.cred.token, "0123456789#abcdef-secret");
	cr_assert_eq(
	    resolve_file("# a comment line\nock.mmc.client.auth_token = 0123456789abcdef-x   # a comment\n", &r, err),
	    0, "%s", err);
	cr_assert_str_eq(r.cred.token, "0123456789abcdef-x");
	cr_assert_eq(resolve_file("ock.mmc.client.auth_token = 0123456789abcdef-y\t# a comment\n", &r, err), 0, "%s",
	             err);
	cr_assert_str_eq(r.cred.token, "0123456789abcdef-y");
}

/* A secret file every user may open is refused, by the client and the server alike, with the chmod that mends it;
 * one its group may read is not (a container's fsGroup, a 0440 credential). */
Test(conf, a_secret_file_open_to_every_user_is_refused)
{
	struct meta_err e;
	char path[] = "/tmp/mmc-secret-XXXXXX", lines[256], err[256];
	struct client_conf r;
	struct meta_settings c;

	token_file(path, lines, sizeof(lines));
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(resolve_file(lines, &r, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ock.mmc.client.auth_token_file") && strstr(err, "644") && strstr(err, "chmod o-rwx"),
	          "%s", err);
	cr_assert(!strstr(err, "from-a-file"), "the message never holds the secret: %s", err);
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.auth_token_file", path, &e), 0);
	cr_assert_eq(meta_conf_resolve_secrets(&c.conf, &e), MMC_INVALID_PARAM);
	cr_assert(strstr(e.message, "chmod o-rwx"), "%s", e.message);
	cr_assert_eq(chmod(path, 0604), 0);
	cr_assert_eq(resolve_file(lines, &r, err), MMC_INVALID_PARAM, "read by others alone is enough to refuse");
	cr_assert_eq(chmod(path, 0640), 0);
	cr_assert_eq(resolve_file(lines, &r, err), 0, "%s", err);
	cr_assert_str_eq(r.cred.token, "0123456789abcdef-from-a-file");
	unlink(path);
}

/* A bare name in a key that names a file is a credential under $CREDENTIALS_DIRECTORY (systemd's LoadCredential=);
 * a path, another key, or no such directory leave the value as written. */
Test(conf, bare_file_names_are_credentials)
{
	char longdir[1100];
	struct meta_err e;
	struct meta_settings c;

	meta_settings_defaults(&c);
	unsetenv("CREDENTIALS_DIRECTORY");
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.auth_token_file", "cluster.token", &e), 0);
	cr_assert_str_eq(c.conf.auth_token_file, "cluster.token", "without the directory, a path relative to the cwd");
	setenv("CREDENTIALS_DIRECTORY", "/run/credentials/mmc-metaserver.service", 1);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.auth_token_file", "cluster.token", &e), 0);
	cr_assert_str_eq(c.conf.auth_token_file, "/run/credentials/mmc-metaserver.service/cluster.token");
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.tls.key.path", "tls.key", &e), 0);
	cr_assert_str_eq(c.conf.tls.key, "/run/credentials/mmc-metaserver.service/tls.key");
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.meta.store_password_file", "./redis.password", &e), 0);
	cr_assert_str_eq(c.conf.store_password_file, "./redis.password", "a path is a path");
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.log_path", "metaserver.log", &e), 0);
	cr_assert_str_eq(c.conf.log_path, "metaserver.log", "the log is no credential");
	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	setenv("CREDENTIALS_DIRECTORY", longdir, 1);
	cr_assert_eq(meta_conf_set(&c, "kvcm.service.admin_password_file", "admin.password", &e), MMC_INVALID_PARAM);
	cr_assert(strstr(e.message, "kvcm.service.admin_password_file"), "%s", e.message);
	unsetenv("CREDENTIALS_DIRECTORY");
}

/* the client too: an engine under systemd (or in a container) names its secret by the credential's name */
Test(conf, client_bare_file_names_are_credentials)
{
	char dir[] = "/tmp/mmc-cred-XXXXXX", path[64], err[256];
	struct client_conf r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cluster.token", dir);
	write_file(path, "0123456789abcdef0123456789abcdef\n");
	cr_assert_eq(chmod(path, 0400), 0); /* as systemd makes a credential */
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	cr_assert_eq(resolve_file("ock.mmc.client.auth_token_file = cluster.token\n", &r, err), 0, "%s", err);
	cr_assert_str_eq(r.cred.token, "0123456789abcdef0123456789abcdef");
	unsetenv("CREDENTIALS_DIRECTORY");
	cr_assert_eq(resolve_file("ock.mmc.client.auth_token_file = cluster.token\n", &r, err), MMC_INVALID_PARAM,
	             "without the directory, a path relative to the cwd (none there)");
	unlink(path);
	rmdir(dir);
}

/* ---- MemCache's own files: every key they carry is understood (mapped, or accepted with one warning) ---- */

static char warned[16384];

static void keep_warnings(int level, const char *msg)
{
	size_t at = strlen(warned);

	if (level >= MMC_LOG_WARN)
		snprintf(warned + at, sizeof(warned) - at, "%s\n", msg);
}

/* How many warning lines name every one of the words (NULL-terminated). */
static int warnings_naming(const char *word, ...)
{
	int n = 0;

	for (char *line = warned, *end; *line; line = end + 1) {
		va_list ap;
		const char *w = word;
		bool all = true;

		end = strchr(line, '\n');
		*end = '\0';
		va_start(ap, word);
		for (; w; w = va_arg(ap, const char *))
			all = all && strstr(line, w);
		va_end(ap);
		*end = '\n';
		n += all;
	}
	return n;
}

static int resolve_memcache_file(const char *text, struct client_conf *r, char *err)
{
	warned[0] = '\0';
	mmc_set_log_handler(keep_warnings);
	return resolve_file(text, r, err);
}

/* vLLM-Ascend's kv_pool.md @016a636, Scenario 2 step 3, as printed (<meta_service_ip> = 127.0.0.1): mmc_init failed
 * with "unknown configuration key ubsio.disk.path", and vLLM-Ascend's `assert res == 0` fired. */
static const char vllm_ascend_local_conf[] = "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
                                             "ock.mmc.local_service.config_store_url = tcp://127.0.0.1:6000\n"
                                             "ock.mmc.log_level = info\n"
                                             "ock.mmc.local_service.world_size = 256\n"
                                             "ock.mmc.local_service.protocol = device_sdma\n"
                                             "ock.mmc.local_service.dram.size = 1GB\n"
                                             "ock.mmc.local_service.max.dram.size = 1024GB\n"
                                             "# SSD feature related parameters below\n"
                                             "ock.mmc.local_service.storage.enabled = false\n"
                                             "ubsio.disk.path = /dev/nvmexn1:/dev/nvmexn2p1:/dev/loopX\n"
                                             "ubsio.mem.size_in_gb = 10\n"
                                             "ubsio.standalone.device_count = 8\n"
                                             "ubsio.standalone.force_new_disk = true\n";

Test(conf, vllm_ascend_guide_local_conf_loads)
{
	struct client_conf r;
	char err[256];

	cr_assert_eq(resolve_memcache_file(vllm_ascend_local_conf, &r, err), 0, "%s", err);
	mmc_set_log_handler(NULL);
	cr_assert_str_eq(r.c.protocol, "auto", "device_sdma: mmc's best provider");
	cr_assert_eq(r.c.dram_size, 1ull << 30);
	cr_assert_eq(r.c.max_dram_size, 1024ull << 30);
	cr_assert_str_eq(r.c.ssd_path, "", "storage.enabled = false: no SSD tier");
	cr_assert_eq(warnings_naming("device_sdma", "auto", NULL), 1, "%s", warned);
	cr_assert_eq(warnings_naming("ubsio.mem.size_in_gb", "10", NULL), 1, "%s", warned);
	cr_assert_eq(warnings_naming("ubsio.disk.path", NULL), 0, "storage is off: nothing to say\n%s", warned);
}

/* The same guide, step 8: the standalone MemCache process's file, as printed (SSD on, three disks) */
Test(conf, vllm_ascend_guide_ssd_files_load)
{
	static const char standalone[] = "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
	                                 "ock.mmc.local_service.config_store_url = tcp://127.0.0.1:6000\n"
	                                 "ock.mmc.log_level = info\n"
	                                 "ock.mmc.local_service.world_size = 256\n"
	                                 "ock.mmc.local_service.protocol = device_sdma\n"
	                                 "ock.mmc.local_service.dram.size = 600GB\n"
	                                 "ock.mmc.local_service.max.dram.size = 1024GB\n"
	                                 "# SSD feature related parameters below\n"
	                                 "ock.mmc.local_service.storage.enabled = true\n"
	                                 "ubsio.disk.path = /dev/nvmexn1:/dev/nvmexn2p1:/dev/loopX\n"
	                                 "ubsio.mem.size_in_gb = 50\n"
	                                 "ubsio.standalone.device_count = 1\n"
	                                 "ubsio.standalone.force_new_disk = true\n";
	static const char engine[] = "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
	                             "ock.mmc.local_service.config_store_url = tcp://127.0.0.1:6000\n"
	                             "ock.mmc.log_level = info\n"
	                             "ock.mmc.local_service.world_size = 256\n"
	                             "ock.mmc.local_service.protocol = device_sdma\n"
	                             "ock.mmc.local_service.dram.size = 0GB\n"
	                             "ock.mmc.local_service.max.dram.size = 1024GB\n";
	struct client_conf r;
	char err[256];

	cr_assert_eq(resolve_memcache_file(standalone, &r, err), 0, "%s", err);
	cr_assert_eq(r.c.dram_size, 600ull << 30);
	cr_assert_str_eq(r.c.ssd_path, "", "three disks are not one SSD tier");
	cr_assert_eq(warnings_naming("ubsio.disk.path", "/dev/nvmexn1:/dev/nvmexn2p1:/dev/loopX", "share", NULL), 1,
	             "%s", warned);
	cr_assert_eq(warnings_naming("ubsio.mem.size_in_gb", "50", NULL), 1, "%s", warned);
	cr_assert_eq(resolve_memcache_file(engine, &r, err), 0, "%s", err);
	mmc_set_log_handler(NULL);
	cr_assert_eq(r.c.dram_size, 0);
}

/* resolve_memcache_file() of the text fmt formats */
__attribute__((format(printf, 3, 4))) static int resolve_formatted(struct client_conf *r, char *err, const char *fmt,
                                                                   ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return resolve_memcache_file(text, r, err);
}

static void temp_disk(char *path, size_t bytes)
{
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)bytes), 0);
	close(fd);
}

/* One disk for one local service: the disk is the SSD tier, whole unless storage.size says how much */
Test(conf, memcache_ssd_is_the_ssd_tier)
{
	char disk[] = "/tmp/mmc-disk-XXXXXX", err[256];
	struct client_conf r;

	temp_disk(disk, 1u << 20);
	cr_assert_eq(resolve_formatted(&r, err,
	                               "ock.mmc.local_service.storage.enabled = true\nubsio.disk.path = %s\n"
	                               "ubsio.standalone.device_count = 1\nubsio.standalone.force_new_disk = true\n",
	                               disk),
	             0, "%s", err);
	cr_assert_str_eq(r.c.ssd_path, disk);
	cr_assert_eq(r.c.ssd_size, 1u << 20, "the whole disk");
	cr_assert_eq(warnings_naming("ubsio.standalone.force_new_disk", "wipe", NULL), 1, "%s", warned);

	cr_assert_eq(resolve_formatted(&r, err,
	                               "ubsio.disk.path = %s\nock.mmc.local_service.storage.size = 64KB\n"
	                               "ock.mmc.local_service.storage.enabled = true\n",
	                               disk),
	             0, "%s", err);
	cr_assert_str_eq(r.c.ssd_path, disk, "the order of the keys does not matter");
	cr_assert_eq(r.c.ssd_size, 64u << 10);

	/* shared by eight local services: UBS IO's split, which mmc's tier is not */
	cr_assert_eq(resolve_formatted(&r, err,
	                               "ock.mmc.local_service.storage.enabled = true\nubsio.disk.path = %s\n"
	                               "ubsio.standalone.device_count = 8\n",
	                               disk),
	             0, "%s", err);
	cr_assert_str_eq(r.c.ssd_path, "");
	cr_assert_eq(warnings_naming("ubsio.disk.path", "8 local services", NULL), 1, "%s", warned);

	/* mmc's own key wins */
	cr_assert_eq(resolve_formatted(&r, err,
	                               "ock.mmc.local_service.storage.enabled = true\nubsio.disk.path = /dev/null\n"
	                               "ock.mmc.local_service.ssd.path = %s\nock.mmc.local_service.ssd.size = 8KB\n",
	                               disk),
	             0, "%s", err);
	cr_assert_str_eq(r.c.ssd_path, disk);
	cr_assert_eq(warnings_naming("ubsio.disk.path", "ssd.path", NULL), 1, "%s", warned);

	unlink(disk);
	cr_assert_eq(
	    resolve_formatted(&r, err, "ock.mmc.local_service.storage.enabled = true\nubsio.disk.path = %s\n", disk),
	    MMC_INVALID_PARAM, "a disk that is not there");
	cr_assert(strstr(err, "ubsio.disk.path") && strstr(err, disk), "%s", err);
	mmc_set_log_handler(NULL);
}

/* MemCache's keys are checked like mmc's; unknown ock.mmc.* keys stay errors */
Test(conf, memcache_keys_are_checked)
{
	struct client_conf r;
	char err[256];

	cr_assert_eq(resolve_memcache_file("ubsio.standalone.device_count = 17\n", &r, err), MMC_INVALID_PARAM);
	cr_assert(strstr(err, "ubsio.standalone.device_count"), "%s", err);
	cr_assert_eq(resolve_memcache_file("ock.mmc.local_service.storage.enabled = maybe\n", &r, err),
	             MMC_INVALID_PARAM);
	cr_assert_eq(resolve_memcache_file("ubsio.mem.size_in_gb = 4000\n", &r, err), MMC_INVALID_PARAM);
	cr_assert_eq(resolve_memcache_file("ubsio.wcache.evict_water_level = 85\n", &r, err), 0, "%s", err);
	cr_assert_eq(warnings_naming("ubsio.wcache.evict_water_level", "UBS IO", NULL), 1, "%s", warned);
	cr_assert_eq(resolve_memcache_file("ock.mmc.local_service.storge.enabled = true\n", &r, err), MMC_INVALID_PARAM,
	             "a typo in an ock.mmc key is still an error");
	cr_assert(strstr(err, "unknown configuration key"), "%s", err);
	mmc_set_log_handler(NULL);
}

/* SGLang's guide sets protocol "device_sdma" through LocalConfig, the struct: the same rule as the file */
static void memcache_proto(mmc_local_config *c)
{
	strcpy(c->protocol, "device_sdma");
}

Test(conf, memcache_protocols_are_mmc_providers)
{
	static const char *const names[] = {"device_sdma", "device_rdma", "device_urma", "device_uboe", "host_urma"};
	struct client_conf r;
	char err[256], text[128];

	warned[0] = '\0';
	mmc_set_log_handler(keep_warnings);
	cr_assert_eq(resolve_with(memcache_proto, err), 0, "%s", err);
	cr_assert_eq(warnings_naming("device_sdma", NULL), 1, "%s", warned);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(text, sizeof(text), "ock.mmc.local_service.protocol = %s\n", names[i]);
		cr_assert_eq(resolve_memcache_file(text, &r, err), 0, "%s: %s", names[i], err);
		cr_assert_str_eq(r.c.protocol, "auto");
		cr_assert_eq(warnings_naming(names[i], "MemCache", NULL), 1, "%s", warned);
	}
	mmc_set_log_handler(NULL);
}

/* MemCache's repository, config/mmc-local.conf (Ascend/memcache @0eeb5ad, etru-177/memcache @0e4320d): their keys
 * and values, comments left out */
Test(conf, memcache_repo_local_conf_loads)
{
	static const char ascend[] =
	    "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
	    "ock.mmc.log_level = info\n"
	    "ock.mmc.tls.enable = true\n"
	    "ock.mmc.tls.ca.path = /opt/ock/security/certs/ca.cert.pem\n"
	    "ock.mmc.tls.ca.crl.path = /opt/ock/security/certs/ca.crl.pem\n"
	    "ock.mmc.tls.cert.path = /opt/ock/security/certs/client.cert.pem\n"
	    "ock.mmc.tls.key.path = /opt/ock/security/certs/client.private.key.pem\n"
	    "ock.mmc.tls.key.pass.path = /opt/ock/security/certs/client.passphrase\n"
	    "ock.mmc.tls.package.path = /opt/ock/security/libs/\n"
	    "ock.mmc.tls.decrypter.path =\n"
	    "ock.mmc.local_service.world_size = 16\n"
	    "ock.mmc.local_service.config_store_url = tcp://127.0.0.1:6000\n"
	    "ock.mmc.config_store.tls.enable = true\n"
	    "ock.mmc.config_store.tls.ca.path = /opt/ock/security/certs/ca.cert.pem\n"
	    "ock.mmc.config_store.tls.ca.crl.path = /opt/ock/security/certs/ca.crl.pem\n"
	    "ock.mmc.config_store.tls.cert.path = /opt/ock/security/certs/client.cert.pem\n"
	    "ock.mmc.config_store.tls.key.path = /opt/ock/security/certs/client.private.key.pem\n"
	    "ock.mmc.config_store.tls.key.pass.path = /opt/ock/security/certs/client.passphrase\n"
	    "ock.mmc.config_store.tls.package.path = /opt/ock/security/libs/\n"
	    "ock.mmc.config_store.tls.decrypter.path =\n"
	    "ock.mmc.local_service.protocol = host_rdma\n"
	    "ock.mmc.local_service.dram.size = 128MB\n"
	    "ock.mmc.local_service.hbm.size = 0\n"
	    "ock.mmc.local_service.hcom_url = tcp://127.0.0.1:7000\n"
	    "ock.mmc.local_service.hcom.tls.enable = true\n"
	    "ock.mmc.local_service.hcom.tls.ca.path = /opt/ock/security/certs/ca.cert.pem\n"
	    "ock.mmc.local_service.hcom.tls.ca.crl.path = /opt/ock/security/certs/ca.crl.pem\n"
	    "ock.mmc.local_service.hcom.tls.cert.path = /opt/ock/security/certs/client.cert.pem\n"
	    "ock.mmc.local_service.hcom.tls.key.path = "
	    "/opt/ock/security/certs/client.private.key.pem\n"
	    "ock.mmc.local_service.hcom.tls.key.pass.path = "
	    "/opt/ock/security/certs/client.passphrase\n"
	    "ock.mmc.local_service.hcom.tls.decrypter.path =\n"
	    "ock.mmc.client.retry_milliseconds = 0\n"
	    "ock.mmc.client.timeout.seconds = 60\n"
	    "ock.mmc.client.read_thread_pool.size = 32\n"
	    "ock.mmc.client.aggregate.io = false\n"
	    "ock.mmc.client.write_thread_pool.size = 4\n";
	static const char gva[] = "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
	                          "ock.mmc.local_service.config_store_url = tcp://127.0.0.1:6000\n"
	                          "ock.mmc.log_level = info\n"
	                          "ock.mmc.local_service.world_size = 256\n"
	                          "ock.mmc.local_service.protocol = host_rdma\n"
	                          "ock.mmc.local_service.dram.size = 1GB\n"
	                          "ock.mmc.local_service.storage.size = 0\n";
	struct client_conf r;
	char err[256];

	cr_assert_eq(resolve_memcache_file(ascend, &r, err), 0, "%s", err);
	cr_assert(r.tls.enable, "TLS on the meta connection is mmc's own");
	cr_assert_eq(resolve_memcache_file(gva, &r, err), 0, "%s", err);
	cr_assert_eq(r.c.ssd_size, 0);
	mmc_set_log_handler(NULL);
}

/* The meta server's files: vLLM-Ascend's guide (as printed, <meta_service_ip> = 127.0.0.1) and MemCache's
 * repository (Ascend/memcache @d2e2caf, etru-177/memcache @2949a2a; keys and values, comments left out) */
Test(conf, memcache_meta_confs_load)
{
	struct meta_err e;
	static const char *const files[] = {
	    "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
	    "ock.mmc.meta_service.config_store_url = tcp://127.0.0.1:6000\n"
	    "ock.mmc.meta_service.metrics_url = http://127.0.0.1:8000\n"
	    "ock.mmc.log_level = info\n"
	    "ock.mmc.evict_threshold_high = 70\n"
	    "ock.mmc.evict_threshold_low = 60\n",
	    "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
	    "ock.mmc.meta.ha.enable = false\n"
	    "ock.mmc.log_level = info\n"
	    "ock.mmc.log_path = .\n"
	    "ock.mmc.log_rotation_file_size = 20\n"
	    "ock.mmc.log_rotation_file_count = 50\n"
	    "ock.mmc.evict_threshold_high = 70\n"
	    "ock.mmc.evict_threshold_low = 60\n"
	    "ock.mmc.tls.enable = true\n"
	    "ock.mmc.tls.top.path = /opt/ock/security/\n"
	    "ock.mmc.tls.ca.path = certs/ca.cert.pem\n"
	    "ock.mmc.tls.ca.crl.path = certs/ca.crl.pem\n"
	    "ock.mmc.tls.cert.path = certs/server.cert.pem\n"
	    "ock.mmc.tls.key.path = certs/server.private.key.pem\n"
	    "ock.mmc.tls.key.pass.path = certs/server.passphrase\n"
	    "ock.mmc.tls.package.path = /opt/ock/security/libs/\n",
	    "ock.mmc.meta_service_url = tcp://127.0.0.1:5000\n"
	    "ock.mmc.meta_service.config_store_url = tcp://127.0.0.1:6000\n"
	    "ock.mmc.meta_service.metrics_url = http://127.0.0.1:8000\n"
	    "ock.mmc.log_level = info\n"
	    "ock.mmc.log_output_target = file\n",
	};
	char path[] = "/tmp/mmc-conf-XXXXXX";
	struct meta_settings c;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		write_file(path, files[i]);
		meta_settings_defaults(&c);
		cr_assert_eq(meta_conf_load(&c, path, &e), 0, "file %zu: %s", i, e.message);
		cr_assert_eq(meta_conf_check(&c.conf, &e), 0, "file %zu: %s", i, e.message);
	}
	cr_assert_eq(c.conf.evict_high, 90, "the last file leaves the thresholds alone");
	meta_settings_defaults(&c);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.log_output_target", "nowhere", &e), MMC_INVALID_PARAM);
	cr_assert(strstr(e.message, "ock.mmc.log_output_target"), "%s", e.message);
	cr_assert_eq(meta_conf_set(&c, "ock.mmc.tls.bottom.path", "/x", &e), MMC_INVALID_PARAM);
	unlink(path);
}
