/* The resolved configuration of one store: mmc_local_config, the file it names, and defaults, checked. */
#ifndef MMC_LOCAL_CONFIG_H
#define MMC_LOCAL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta_auth.h"
#include "mmc/mmc.h"
#include "tls_files.h"

/* The SSD keys of MemCache's mmc-local.conf (vLLM-Ascend's guide), read from a file and resolved once it is all
 * read: when their meaning is mmc's SSD tier they set ssd_path and ssd_size (local_config.c, memcache_keys[]). */
struct memcache_ssd {
	bool storage_enabled;  /* ock.mmc.local_service.storage.enabled */
	bool force_new_disk;   /* ubsio.standalone.force_new_disk */
	uint32_t device_count; /* ubsio.standalone.device_count: local services sharing the disks */
	char disk_path[1024];  /* ubsio.disk.path: devices separated by ':' */
};

struct client_conf {
	mmc_local_config c;
	/* derived */
	char meta_host[256];
	uint16_t meta_port;
	int log_level;
	bool host_path; /* c.host_path, then $MMC_HOST_PATH: same-host peers by memcpy */
	/* the meta connection's guards (docs/operations.md, Security), from c's fields */
	struct meta_credentials cred; /* c.auth_token (or read from c.auth_token_file) and c.tenant */
	struct tls_files tls;         /* c.tls_*, in the form tls_files_load() takes */
	struct memcache_ssd mc_ssd;   /* MemCache's SSD keys (file only) */
};

struct conf_key;

/* The ock.mmc.* keys a client configuration file may set (offsets into struct client_conf), NULL-terminated; the
 * MemCache compatibility keys are conf_apply_compat()'s. tests/unit/documented_keys.py holds docs to this list. */
const struct conf_key *local_config_keys(void);

/* Bytes of mmc_local_config in layout version, 0 for a version this library does not know. */
size_t local_config_layout_bytes(uint32_t version);

/*
 * Resolves in into out: copies it, loads the file named by in->config_path (or $MMC_LOCAL_CONFIG_PATH when in is
 * NULL), then checks every field. Returns 0 or MMC_INVALID_PARAM with a message naming the key in err.
 */
int local_config_resolve(const mmc_local_config *in, struct client_conf *out, char *err, size_t errlen);

/* mmc_config_set() with its message in err instead of the log. */
int local_config_set(mmc_local_config *conf, const char *key, const char *value, char *err, size_t errlen);

#endif
