/* Prints the size of each public struct of mmc.h and the offset and size of each field, one per line, for
 * tests/python/test_layout.py to compare with the ctypes structures of python/mmc/_lib.py. */
#include <mmc/mmc.h>

#include <stddef.h>
#include <stdio.h>

#define STRUCT(t)   printf("%s - %zu %zu\n", #t, sizeof(t), _Alignof(t))
#define FIELD(t, f) printf("%s %s %zu %zu\n", #t, #f, offsetof(t, f), sizeof(((t *)0)->f))

int main(void)
{
	STRUCT(mmc_local_config);
	FIELD(mmc_local_config, version);
	FIELD(mmc_local_config, config_path);
	FIELD(mmc_local_config, meta_service_url);
	FIELD(mmc_local_config, config_store_url);
	FIELD(mmc_local_config, log_level);
	FIELD(mmc_local_config, world_size);
	FIELD(mmc_local_config, protocol);
	FIELD(mmc_local_config, hcom_url);
	FIELD(mmc_local_config, dram_size);
	FIELD(mmc_local_config, hbm_size);
	FIELD(mmc_local_config, max_dram_size);
	FIELD(mmc_local_config, max_hbm_size);
	FIELD(mmc_local_config, lease_ttl_ms);
	FIELD(mmc_local_config, timeout_ms);
	FIELD(mmc_local_config, retry_ms);
	FIELD(mmc_local_config, heartbeat_ms);
	FIELD(mmc_local_config, ssd_path);
	FIELD(mmc_local_config, ssd_size);
	FIELD(mmc_local_config, rma_timeout_ms);
	FIELD(mmc_local_config, verify_checksum);
	FIELD(mmc_local_config, host_path);
	FIELD(mmc_local_config, auth_token);
	FIELD(mmc_local_config, auth_token_file);
	FIELD(mmc_local_config, tls_enable);
	FIELD(mmc_local_config, tls_ca_path);
	FIELD(mmc_local_config, tls_crl_path);
	FIELD(mmc_local_config, tls_cert_path);
	FIELD(mmc_local_config, tls_key_path);
	FIELD(mmc_local_config, tls_key_pass_path);
	FIELD(mmc_local_config, tenant);
	STRUCT(mmc_replicate_config);
	FIELD(mmc_replicate_config, replica_num);
	FIELD(mmc_replicate_config, preferred_count);
	FIELD(mmc_replicate_config, preferred_local_service_ids);
	STRUCT(mmc_key_info);
	FIELD(mmc_key_info, size);
	FIELD(mmc_key_info, blob_num);
	FIELD(mmc_key_info, loc);
	FIELD(mmc_key_info, type);
	FIELD(mmc_key_info, gva);
	printf("MMC_LOCAL_CONFIG_VERSION - %d 0\n", MMC_LOCAL_CONFIG_VERSION);
	printf("MMC_BATCH_MAX - %d 0\n", MMC_BATCH_MAX);
	printf("MMC_KEY_MAX - %d 0\n", MMC_KEY_MAX);
	printf("MMC_LAYERS_MAX - %d 0\n", MMC_LAYERS_MAX);
	printf("MMC_REPLICA_MAX - %d 0\n", MMC_REPLICA_MAX);
	return 0;
}
