#include "local_config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_parse.h"
#include "lg.h"
#include "log_level.h"
#include "meta_leader.h"
#include "mmc/mmc.h"
#include "secret_file.h"
#include "wire_limits.h"

#define TB       (UINT64_C(1) << 40)
#define F(field) offsetof(struct client_conf, field), sizeof(((struct client_conf *)0)->field)

static const char *const protocols[] = {"host_tcp", "host_shm", "host_rdma", "auto", NULL};

/* Every row lands in c, the caller's mmc_local_config: mmc_config_set() applies the same rows to it alone. */
static const struct conf_key keys[] = {
    {"ock.mmc.meta_service_url", CONF_STR, F(c.meta_service_url), 0, 0, NULL, NULL, 0},
    {"ock.mmc.local_service.config_store_url", CONF_STR, F(c.config_store_url), 0, 0, NULL, NULL, 0},
    {"ock.mmc.log_level", CONF_STR, F(c.log_level), 0, 0, log_level_names, NULL, 0},
    {"ock.mmc.local_service.world_size", CONF_U32, F(c.world_size), 1, MMC_RANKS_MAX, NULL, NULL, 0},
    /* no choices here: check() maps MemCache's protocol names (memcache_protocols), then refuses the rest */
    {"ock.mmc.local_service.protocol", CONF_STR, F(c.protocol), 0, 0, NULL, NULL, 0},
    {"ock.mmc.local_service.hcom_url", CONF_STR, F(c.hcom_url), 0, 0, NULL, NULL, 0},
    {"ock.mmc.local_service.dram.size", CONF_SIZE, F(c.dram_size), 0, TB, NULL, NULL, 0},
    {"ock.mmc.local_service.hbm.size", CONF_SIZE, F(c.hbm_size), 0, TB, NULL, NULL, 0},
    {"ock.mmc.local_service.max.dram.size", CONF_SIZE, F(c.max_dram_size), 0, TB, NULL, NULL, 0},
    {"ock.mmc.local_service.max.hbm.size", CONF_SIZE, F(c.max_hbm_size), 0, TB, NULL, NULL, 0},
    {"ock.mmc.local_service.ssd.path", CONF_STR, F(c.ssd_path), 0, 0, NULL, NULL, 0},
    {"ock.mmc.local_service.ssd.size", CONF_SIZE, F(c.ssd_size), 0, 64 * TB, NULL, NULL, 0},
    {"ock.mmc.client.retry_milliseconds", CONF_U32, F(c.retry_ms), 0, 600000, NULL, NULL, 0},
    {"ock.mmc.client.timeout.seconds", CONF_MS, F(c.timeout_ms), 1, 600, NULL, NULL, 0},
    {"ock.mmc.client.heartbeat_ms", CONF_U32, F(c.heartbeat_ms), 10, 60000, NULL, NULL, 0},
    {"ock.mmc.client.lease_ttl_ms", CONF_U64, F(c.lease_ttl_ms), 0, 2147483647, NULL, NULL, 0},
    {"ock.mmc.client.rma_timeout_ms", CONF_U32, F(c.rma_timeout_ms), 100, 3600000, NULL, NULL, 0},
    {"ock.mmc.client.verify_checksum", CONF_BOOL, F(c.verify_checksum), 0, 0, NULL, NULL, 0},
    {"ock.mmc.client.host_path", CONF_BOOL, F(c.host_path), 0, 0, NULL, NULL, 0},
    {"ock.mmc.client.auth_token", CONF_STR, F(c.auth_token), 0, 0, NULL, NULL, 0},
    {"ock.mmc.client.auth_token_file", CONF_STR, F(c.auth_token_file), 0, 0, NULL, NULL, 0},
    {"ock.mmc.client.tenant", CONF_STR, F(c.tenant), 0, 0, NULL, NULL, 0},
    {"ock.mmc.tls.enable", CONF_BOOL, F(c.tls_enable), 0, 0, NULL, NULL, 0},
    {"ock.mmc.tls.ca.path", CONF_STR, F(c.tls_ca_path), 0, 0, NULL, NULL, 0},
    {"ock.mmc.tls.ca.crl.path", CONF_STR, F(c.tls_crl_path), 0, 0, NULL, NULL, 0},
    {"ock.mmc.tls.cert.path", CONF_STR, F(c.tls_cert_path), 0, 0, NULL, NULL, 0},
    {"ock.mmc.tls.key.path", CONF_STR, F(c.tls_key_path), 0, 0, NULL, NULL, 0},
    {"ock.mmc.tls.key.pass.path", CONF_STR, F(c.tls_key_pass_path), 0, 0, NULL, NULL, 0},
    {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0},
};

const struct conf_key *local_config_keys(void)
{
	return keys;
}

/* ---- the keys of MemCache's own files that are not mmc's (vLLM-Ascend's guide, MemCache's repository) ---- */

/* What such a key does here. */
enum memcache_use {
	MC_SAME, /* sets the mmc field of the same meaning */
	MC_SSD,  /* an input of the SSD mapping (memcache_ssd_resolve), once the whole file is read */
	MC_WARN, /* no equivalent: the value is checked, then one warning says what MemCache would have done */
};

struct memcache_key {
	struct conf_key k; /* where the value lands (MC_WARN: a sink); a name ending in '.' is a whole family */
	enum memcache_use use;
	const char *memcache; /* MC_WARN: what MemCache does with it */
};

struct mc_sink {
	char str[1024];
	uint32_t u32;
};

#define S(field) offsetof(struct mc_sink, field), sizeof(((struct mc_sink *)0)->field)

static const struct memcache_key memcache_keys[] = {
    {{"ock.mmc.local_service.storage.enabled", CONF_BOOL, F(mc_ssd.storage_enabled), 0, 0, NULL, NULL, 0},
     MC_SSD,
     NULL},
    {{"ock.mmc.local_service.storage.size", CONF_SIZE, F(c.ssd_size), 0, 64 * TB, NULL, NULL, 0}, MC_SAME, NULL},
    {{"ubsio.disk.path", CONF_STR, F(mc_ssd.disk_path), 0, 0, NULL, NULL, 0}, MC_SSD, NULL},
    {{"ubsio.standalone.device_count", CONF_U32, F(mc_ssd.device_count), 0, 16, NULL, NULL, 0}, MC_SSD, NULL},
    {{"ubsio.standalone.force_new_disk", CONF_BOOL, F(mc_ssd.force_new_disk), 0, 0, NULL, NULL, 0}, MC_SSD, NULL},
    {{"ubsio.mem.size_in_gb", CONF_U32, S(u32), 0, 3072, NULL, NULL, 0},
     MC_WARN,
     "MemCache's UBS IO would reserve that many GB of DRAM per local service as a cache in front of the SSD; "
     "mmc moves objects between its DRAM pool and its SSD tier directly"},
    {{"ubsio.", CONF_STR, S(str), 0, 0, NULL, NULL, 0},
     MC_WARN,
     "a setting of MemCache's UBS IO SSD cache, which mmc has not"},
    {{NULL, 0, 0, 0, 0, 0, NULL, NULL, 0}, 0, NULL},
};

static const struct memcache_key *memcache_find(const char *key)
{
	for (const struct memcache_key *m = memcache_keys; m->k.name; m++) {
		size_t n = strlen(m->k.name);

		if (strcmp(m->k.name, key) == 0 || (m->k.name[n - 1] == '.' && strncmp(m->k.name, key, n) == 0))
			return m;
	}
	return NULL;
}

/* Applies a MemCache key (1), or says it is not one (0), or refuses its value (MMC_INVALID_PARAM, message in msg). */
static int memcache_apply(struct client_conf *out, const char *key, const char *value, const char *path, int line,
                          char *msg, size_t len)
{
	const struct memcache_key *m = memcache_find(key);
	struct conf_key one[2] = {{NULL, 0, 0, 0, 0, 0, NULL, NULL, 0}, {NULL, 0, 0, 0, 0, 0, NULL, NULL, 0}};
	struct mc_sink sink;

	if (!m)
		return 0;
	one[0] = m->k;
	one[0].name = key; /* a family's member */
	if (conf_apply(one, m->use == MC_WARN ? (void *)&sink : (void *)out, key, value, msg, len))
		return MMC_INVALID_PARAM;
	if (m->use == MC_WARN)
		lg_warn("%s:%d: %s = %s ignored: %s", path, line, key, value, m->memcache);
	return 1;
}

/* Bytes of the file or block device at path, for an SSD tier that takes it whole. */
static int device_bytes(const char *path, uint64_t *bytes, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "ubsio.disk.path: cannot open \"%s\": %s", path, strerror(errno));
		rc = MMC_INVALID_PARAM;
	} else if (S_ISBLK(st.st_mode) ? ioctl(fd, BLKGETSIZE64, bytes) != 0 : (*bytes = (uint64_t)st.st_size, 0)) {
		snprintf(err, errlen, "ubsio.disk.path: cannot read the size of \"%s\": %s", path, strerror(errno));
		rc = MMC_INVALID_PARAM;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * MemCache's SSD storage (UBS IO) as mmc's SSD tier where the two mean the same: storage enabled, one disk, one
 * local service on it (vLLM-Ascend's standalone MemCache process). Then the disk is this store's SSD tier, whole
 * unless ock.mmc.local_service.storage.size (or .ssd.size) says how much. Several disks, or one shared by several
 * local services, UBS IO splits among them; mmc's tier is one file or device per local service, so none is made.
 */
static int memcache_ssd_resolve(struct client_conf *o, const char *path, char *err, size_t errlen)
{
	struct memcache_ssd *m = &o->mc_ssd;
	unsigned services = m->device_count ? m->device_count : 1;

	if (!m->disk_path[0])
		return 0;
	if (!m->storage_enabled) {
		lg_info("%s: ubsio.disk.path unused: ock.mmc.local_service.storage.enabled is false", path);
		return 0;
	}
	if (o->c.ssd_path[0]) {
		lg_warn("%s: ubsio.disk.path = %s ignored: ock.mmc.local_service.ssd.path = %s is the SSD tier", path,
		        m->disk_path, o->c.ssd_path);
		return 0;
	}
	if (strchr(m->disk_path, ':') || services > 1) {
		lg_warn("%s: ubsio.disk.path = %s ignored: MemCache's UBS IO would share these disks among %u local "
		        "services of this host; mmc's SSD tier is one file or device per local service "
		        "(ock.mmc.local_service.ssd.path and .ssd.size): this store has none",
		        path, m->disk_path, services);
		return 0;
	}
	if (strlen(m->disk_path) >= sizeof(o->c.ssd_path)) {
		snprintf(err, errlen, "%s: ubsio.disk.path is longer than %zu bytes", path, sizeof(o->c.ssd_path) - 1);
		return MMC_INVALID_PARAM;
	}
	if (!o->c.ssd_size && device_bytes(m->disk_path, &o->c.ssd_size, err, errlen))
		return MMC_INVALID_PARAM;
	strcpy(o->c.ssd_path, m->disk_path);
	if (m->force_new_disk)
		lg_warn(
		    "%s: ubsio.standalone.force_new_disk = true ignored: MemCache would wipe %s at every start; mmc "
		    "keeps this local service's SSD objects for a restarted service with the same file and size",
		    path, m->disk_path);
	return 0;
}

/* MemCache's protocols that move data with an NPU or over UB: mmc moves host memory over its own providers. */
static const struct {
	const char *name, *memcache;
} memcache_protocols[] = {
    {"device_sdma", "copies between NPUs with their SDMA engines (HCCS)"},
    {"device_rdma", "moves NPU memory over RDMA (RoCE)"},
    {"device_urma", "moves NPU memory over UB"},
    {"device_uboe", "moves NPU memory over UB over Ethernet"},
    {"host_urma", "moves host memory over UB"},
};

/* One of those becomes auto (the best provider there is), with a warning naming what MemCache would have done. */
static void memcache_protocol(mmc_local_config *c)
{
	for (size_t i = 0; i < sizeof(memcache_protocols) / sizeof(memcache_protocols[0]); i++) {
		if (strcmp(c->protocol, memcache_protocols[i].name) != 0)
			continue;
		lg_warn(
		    "ock.mmc.local_service.protocol = %s: MemCache %s; mmc has no such transport and uses auto (its "
		    "best network provider)",
		    c->protocol, memcache_protocols[i].memcache);
		strcpy(c->protocol, "auto");
		return;
	}
}

/*
 * Bytes of mmc_local_config in each layout a caller may have been built with: a caller's struct is read (and
 * initialised) only this far; the fields after it come from the defaults. Appending a field: bump
 * MMC_LOCAL_CONFIG_VERSION, add the new version here as sizeof(mmc_local_config), and set the previous one to
 * offsetof(mmc_local_config, <the first new field>) — never more than that older struct's size, so it is never read
 * past its end.
 */
static const size_t layout_bytes[] = {
    [1] = offsetof(mmc_local_config, host_path),
    [2] = offsetof(mmc_local_config, tenant),
    [3] = sizeof(mmc_local_config),
};

_Static_assert(sizeof(layout_bytes) / sizeof(layout_bytes[0]) == MMC_LOCAL_CONFIG_VERSION + 1,
               "every version up to MMC_LOCAL_CONFIG_VERSION has its size");
_Static_assert(offsetof(mmc_local_config, version) == 0, "the version is the first field");
_Static_assert(offsetof(struct client_conf, c) == 0, "the keys' offsets into client_conf are offsets into c");
_Static_assert(sizeof(((struct tls_files *)0)->ca) == MMC_TLS_PATH_SIZE, "tls_*_path copy into tls_files whole");

size_t local_config_layout_bytes(uint32_t version)
{
	return version >= 1 && version <= MMC_LOCAL_CONFIG_VERSION ? layout_bytes[version] : 0;
}

static void defaults(mmc_local_config *out)
{
	mmc_local_config c;

	memset(&c, 0, sizeof(c));
	c.version = MMC_LOCAL_CONFIG_VERSION;
	strcpy(c.meta_service_url, "tcp://127.0.0.1:5000");
	strcpy(c.config_store_url, "tcp://127.0.0.1:6000");
	strcpy(c.log_level, "warn");
	c.world_size = 256;
	strcpy(c.protocol, "auto");
	c.dram_size = UINT64_C(1) << 30;
	c.max_dram_size = UINT64_C(64) << 30;
	c.timeout_ms = 60000;
	c.heartbeat_ms = 1000;
	c.rma_timeout_ms = 10000;
	c.host_path = true;
	*out = c;
}

int mmc_local_config_init(mmc_local_config *cfg, uint32_t version)
{
	size_t bytes = local_config_layout_bytes(version);
	mmc_local_config d;

	if (!cfg || !bytes)
		return MMC_INVALID_PARAM;
	defaults(&d);
	d.version = version;
	memcpy(cfg, &d, bytes);
	return 0;
}

struct load_ctx {
	struct client_conf *out;
	const char *path;
	char *err;
	size_t errlen;
};

/* One `key = value` into o, for a file line and mmc_config_set() alike; 0 or MMC_INVALID_PARAM (message in msg). */
static int apply_line(struct client_conf *o, const char *key, const char *value, const char *path, int line, char *msg,
                      size_t len)
{
	char cred[1024];
	int rc;

	/* a bare file name is a credential under $CREDENTIALS_DIRECTORY, as on the server (secret_file.h) */
	if (!(value = secret_file_path(key, value, cred, sizeof(cred)))) {
		snprintf(msg, len, "%s: the credential's path under $CREDENTIALS_DIRECTORY is too long", key);
		return MMC_INVALID_PARAM;
	}
	if (conf_find(keys, key))
		return conf_apply(keys, o, key, value, msg, len);
	rc = memcache_apply(o, key, value, path, line, msg, len);
	if (rc == 0)
		rc = conf_apply_compat(CONF_SCOPE_CLIENT, key, value, msg, len);
	if (rc == 1)
		return 0;
	if (rc == 0)
		snprintf(msg, len, "unknown configuration key \"%s\"", key);
	return MMC_INVALID_PARAM;
}

static int load_line(void *arg, const char *key, const char *value, int line)
{
	struct load_ctx *l = arg;
	char msg[512];

	if (apply_line(l->out, key, value, l->path, line, msg, sizeof(msg))) {
		snprintf(l->err, l->errlen, "%s:%d: %s", l->path, line, msg);
		return MMC_INVALID_PARAM;
	}
	return 0;
}

/* One address or several (leader election): meta_leader.c parses both; the first is the one logged. */
static int parse_meta_url(struct client_conf *o, char *err, size_t errlen)
{
	return meta_leader_parse(NULL, o->c.meta_service_url, o->meta_host, sizeof(o->meta_host), &o->meta_port, err,
	                         errlen);
}

/* "" or "default" (the default tenant), or a name the server's tenants file may hold. */
static int check_tenant(const char *t, char *err, size_t errlen)
{
	size_t n = strlen(t);

	for (const char *p = t; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		      *p == '-'))
			n = 0;
	if (!t[0] || (n && n <= MMC_TENANT_NAME_MAX))
		return 0;
	snprintf(err, errlen, "bad value for \"ock.mmc.client.tenant\" (1 to %d letters, digits, '_' or '-')",
	         MMC_TENANT_NAME_MAX);
	return MMC_INVALID_PARAM;
}

/* The cluster (or tenant) secret from its key or its file, and TLS that can verify the server. */
static int check_guards(struct client_conf *o, char *err, size_t errlen)
{
	mmc_local_config *c = &o->c;
	int rc;

	memcpy(o->cred.token, c->auth_token, sizeof(o->cred.token));
	rc = secret_resolve("ock.mmc.client.auth_token", "ock.mmc.client.auth_token_file", c->auth_token_file,
	                    o->cred.token, sizeof(o->cred.token), err, errlen);
	if (rc || (rc = check_tenant(c->tenant, err, errlen)))
		return rc;
	memcpy(o->cred.tenant, c->tenant, sizeof(o->cred.tenant));
	o->tls.enable = c->tls_enable;
	memcpy(o->tls.ca, c->tls_ca_path, sizeof(o->tls.ca));
	memcpy(o->tls.crl, c->tls_crl_path, sizeof(o->tls.crl));
	memcpy(o->tls.cert, c->tls_cert_path, sizeof(o->tls.cert));
	memcpy(o->tls.key, c->tls_key_path, sizeof(o->tls.key));
	memcpy(o->tls.key_pass, c->tls_key_pass_path, sizeof(o->tls.key_pass));
	if (o->tls.enable && !o->tls.ca[0]) {
		snprintf(err, errlen, "ock.mmc.tls.enable needs ock.mmc.tls.ca.path to verify the meta server");
		return MMC_INVALID_PARAM;
	}
	if (o->tls.enable && !o->tls.cert[0] != !o->tls.key[0]) {
		snprintf(err, errlen, "ock.mmc.tls.cert.path and ock.mmc.tls.key.path go together");
		return MMC_INVALID_PARAM;
	}
	return 0;
}

/* $MMC_HOST_PATH overrides the file, like FI_PROVIDER the protocol: benchmarks and tests turn the host path off
 * for every process they start, to stand in for peers on other hosts. */
static int host_path_env(struct client_conf *o, char *err, size_t errlen)
{
	const char *v = getenv("MMC_HOST_PATH");

	o->host_path = o->c.host_path;
	if (!v || !v[0])
		return 0;
	if (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0) {
		o->host_path = false;
		return 0;
	}
	if (strcmp(v, "1") == 0 || strcmp(v, "on") == 0 || strcmp(v, "true") == 0) {
		o->host_path = true;
		return 0;
	}
	snprintf(err, errlen, "bad value \"%s\" for $MMC_HOST_PATH (on, off, 1, 0, true or false)", v);
	return MMC_ERROR;
}

static int bounded(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL;
}

/* "" (libfabric picks), or tcp://IP[:PORT] as fabric.c splits it: named in the message, not left to fi_getinfo. */
static int check_hcom_url(const char *url, char *err, size_t errlen)
{
	const char *h = strncmp(url, "tcp://", 6) == 0 ? url + 6 : url, *colon = strrchr(h, ':');
	size_t hlen = colon ? (size_t)(colon - h) : strlen(h);
	char *end;
	long port = colon ? strtol(colon + 1, &end, 10) : 0;

	if (!url[0])
		return 0;
	if (hlen && !memchr(h, '/', hlen) && (!colon || (colon[1] && !*end && port >= 0 && port <= 65535)))
		return 0;
	snprintf(err, errlen,
	         "bad value \"%s\" for \"ock.mmc.local_service.hcom_url\" (expected tcp://IP[:PORT], the address of "
	         "this host's NIC to use; empty: libfabric picks)",
	         url);
	return MMC_INVALID_PARAM;
}

/* One of protocols[], or a MemCache protocol (which memcache_protocol() makes auto). */
static int check_protocol(const char *protocol, char *err, size_t errlen)
{
	for (const char *const *p = protocols; *p; p++)
		if (strcmp(*p, protocol) == 0)
			return 0;
	for (size_t i = 0; i < sizeof(memcache_protocols) / sizeof(memcache_protocols[0]); i++)
		if (strcmp(memcache_protocols[i].name, protocol) == 0)
			return 0;
	snprintf(err, errlen,
	         "bad value \"%s\" for \"ock.mmc.local_service.protocol\" (host_tcp, host_shm, host_rdma or auto; "
	         "MemCache's device_* and host_urma mean auto)",
	         protocol);
	return MMC_INVALID_PARAM;
}

static int check(struct client_conf *o, char *err, size_t errlen)
{
	mmc_local_config *c = &o->c;

	if (!bounded(c->meta_service_url, sizeof(c->meta_service_url)) ||
	    !bounded(c->log_level, sizeof(c->log_level)) || !bounded(c->protocol, sizeof(c->protocol)) ||
	    !bounded(c->hcom_url, sizeof(c->hcom_url)) || !bounded(c->config_store_url, sizeof(c->config_store_url)) ||
	    !bounded(c->ssd_path, sizeof(c->ssd_path)) || !bounded(c->auth_token, sizeof(c->auth_token)) ||
	    !bounded(c->auth_token_file, sizeof(c->auth_token_file)) || !bounded(c->tls_ca_path, MMC_TLS_PATH_SIZE) ||
	    !bounded(c->tls_crl_path, MMC_TLS_PATH_SIZE) || !bounded(c->tls_cert_path, MMC_TLS_PATH_SIZE) ||
	    !bounded(c->tls_key_path, MMC_TLS_PATH_SIZE) || !bounded(c->tls_key_pass_path, MMC_TLS_PATH_SIZE) ||
	    !bounded(c->tenant, sizeof(c->tenant))) {
		snprintf(err, errlen, "a string field of mmc_local_config is not NUL-terminated");
		return MMC_INVALID_PARAM;
	}
	memcache_protocol(c);
	if (check_hcom_url(c->hcom_url, err, errlen))
		return MMC_INVALID_PARAM;
	if (log_level_parse(c->log_level, &o->log_level)) {
		snprintf(err, errlen, "bad value \"%s\" for \"ock.mmc.log_level\" (debug, info, warn or error)",
		         c->log_level);
		return MMC_INVALID_PARAM;
	}
	if (check_protocol(c->protocol, err, errlen))
		return MMC_INVALID_PARAM;
	if (c->world_size < 1 || c->world_size > MMC_RANKS_MAX) {
		snprintf(err, errlen, "bad value %u for \"ock.mmc.local_service.world_size\" (1..1024)", c->world_size);
		return MMC_INVALID_PARAM;
	}
	if (c->dram_size > TB || c->hbm_size) {
		snprintf(err, errlen,
		         c->hbm_size ? "\"ock.mmc.local_service.hbm.size\" must be 0: no accelerator"
		                     : "\"ock.mmc.local_service.dram.size\" exceeds 1TB");
		return MMC_INVALID_PARAM;
	}
	if (c->max_dram_size && c->max_dram_size < c->dram_size) {
		snprintf(err, errlen, "\"ock.mmc.local_service.max.dram.size\" is below \"...dram.size\"");
		return MMC_INVALID_PARAM;
	}
	if (c->timeout_ms == 0 || c->heartbeat_ms < 10 || c->rma_timeout_ms < 100) {
		snprintf(err, errlen, "timeout_ms must be > 0, heartbeat_ms >= 10 and rma_timeout_ms >= 100");
		return MMC_INVALID_PARAM;
	}
	if (c->ssd_path[0] && c->ssd_size < 8192) {
		snprintf(err, errlen, "\"ock.mmc.local_service.ssd.size\" must be at least 8KB when ssd.path is set");
		return MMC_INVALID_PARAM;
	}
	if (parse_meta_url(o, err, errlen))
		return MMC_INVALID_PARAM;
	return check_guards(o, err, errlen);
}

int local_config_resolve(const mmc_local_config *in, struct client_conf *out, char *err, size_t errlen)
{
	const char *path;
	struct load_ctx l = {out, NULL, err, errlen};
	int rc;

	memset(out, 0, sizeof(*out));
	defaults(&out->c);
	out->host_path = true;
	if (in) {
		size_t bytes = local_config_layout_bytes(in->version);

		if (!bytes) {
			snprintf(err, errlen,
			         "mmc_local_config.version is %u, not a layout this library knows (1..%u): fill the "
			         "struct with mmc_default_local_config()",
			         in->version, MMC_LOCAL_CONFIG_VERSION);
			return MMC_INVALID_PARAM;
		}
		memcpy(&out->c, in, bytes); /* the caller's layout; later fields keep their defaults */
		out->c.version = MMC_LOCAL_CONFIG_VERSION;
	}
	out->c.config_path[sizeof(out->c.config_path) - 1] = '\0';
	path = in ? out->c.config_path : getenv("MMC_LOCAL_CONFIG_PATH");
	if (path && path[0]) {
		l.path = path;
		rc = conf_file_read(path, load_line, &l, err, errlen);
		if (rc || memcache_ssd_resolve(out, path, err, errlen))
			return MMC_INVALID_PARAM;
	}
	return host_path_env(out, err, errlen) ? MMC_INVALID_PARAM : check(out, err, errlen);
}

/* The checks of check() that concern key alone, so mmc_config_set() refuses what mmc_setup() would. */
static int check_key(struct client_conf *o, const char *key, char *err, size_t errlen)
{
	if (strcmp(key, "ock.mmc.local_service.protocol") == 0)
		return check_protocol(o->c.protocol, err, errlen);
	if (strcmp(key, "ock.mmc.local_service.hcom_url") == 0)
		return check_hcom_url(o->c.hcom_url, err, errlen);
	if (strcmp(key, "ock.mmc.meta_service_url") == 0)
		return parse_meta_url(o, err, errlen) ? MMC_INVALID_PARAM : 0;
	return 0;
}

/* Applies key to o as a file line would, refusing what o's first bytes (the caller's layout) cannot hold. */
static int set_key(struct client_conf *o, size_t bytes, const char *key, const char *value, char *err, size_t errlen)
{
	const struct conf_key *k = conf_find(keys, key);
	const struct memcache_key *m = k ? NULL : memcache_find(key);

	if (k && k->offset + k->size > bytes) {
		snprintf(err, errlen,
		         "\"%s\" is not in mmc_local_config version %u: fill it with mmc_default_local_config()", key,
		         o->c.version);
		return MMC_INVALID_PARAM;
	}
	if (m && m->use == MC_SSD) {
		snprintf(err, errlen, "\"%s\" is read from a configuration file only, with MemCache's other SSD keys",
		         key);
		return MMC_INVALID_PARAM;
	}
	if (apply_line(o, key, value, "mmc_config_set()", 0, err, errlen))
		return MMC_INVALID_PARAM;
	return k ? check_key(o, key, err, errlen) : 0;
}

int local_config_set(mmc_local_config *conf, const char *key, const char *value, char *err, size_t errlen)
{
	size_t bytes = conf ? local_config_layout_bytes(conf->version) : 0;
	struct client_conf *o;
	int rc;

	if (!key || !value || !bytes) {
		snprintf(err, errlen, "%s",
		         !conf || !key || !value ? "conf, key and value must not be NULL"
		                                 : "conf->version is not a layout this library knows: fill it with "
		                                   "mmc_default_local_config()");
		return MMC_INVALID_PARAM;
	}
	/* a scratch copy: a refused value leaves conf as it was, and no field past the caller's layout is touched */
	o = calloc(1, sizeof(*o));
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return MMC_MALLOC_FAILED;
	}
	memcpy(&o->c, conf, bytes);
	rc = set_key(o, bytes, key, value, err, errlen);
	if (rc == 0)
		memcpy(conf, &o->c, bytes);
	explicit_bzero(o, sizeof(*o)); /* it may hold the cluster secret */
	free(o);
	return rc;
}

int mmc_config_set(mmc_local_config *conf, const char *key, const char *value)
{
	char err[512];
	int rc = local_config_set(conf, key, value, err, sizeof(err));

	if (rc)
		lg_error("mmc_config_set: %s", err);
	return rc;
}
