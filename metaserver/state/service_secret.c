#include "service_secret.h"

#include <string.h>

#include "auth_proof.h"
#include "log.h"
#include "mmc/mmc.h"
#include "persist.h"

#define LABEL "mmc-service-secret-1"

static const char key_name[] = "service_key";

int service_secret_init(struct meta *m)
{
	uint8_t key[64]; /* room for a record of another size, which is not a key */
	size_t len = 0;
	int rc = persist_get(m->persist, m->db_info, key_name, sizeof(key_name) - 1, key, sizeof(key), &len);

	if (rc == 0 && len == sizeof(m->service_key)) {
		memcpy(m->service_key, key, sizeof(m->service_key));
		return 0;
	}
	if (rc != 0 && rc != MMC_OBJECT_NOT_EXISTS)
		return MMC_ERROR;
	if (auth_random(m->service_key, sizeof(m->service_key))) {
		log_error("op=start err=\"no random bytes for the service key\"");
		return MMC_ERROR;
	}
	/* durable with the first flush, before any Register can be answered */
	persist_put(m->persist, m->db_info, key_name, sizeof(key_name) - 1, m->service_key, sizeof(m->service_key));
	return 0;
}

int service_secret(const struct meta *m, uint32_t rank, uint64_t incarnation, uint8_t out[MMC_WIRE_MAC])
{
	uint8_t r[4] = {(uint8_t)(rank >> 24), (uint8_t)(rank >> 16), (uint8_t)(rank >> 8), (uint8_t)rank}, inc[8];

	for (int i = 0; i < 8; i++)
		inc[i] = (uint8_t)(incarnation >> (56 - 8 * i));
	return auth_mac(m->service_key, sizeof(m->service_key), LABEL, r, sizeof(r), inc, sizeof(inc), out) ? MMC_ERROR
	                                                                                                    : 0;
}

bool service_secret_ok(const struct meta *m, const struct service *svc, const void *secret, size_t len)
{
	uint8_t expected[MMC_WIRE_MAC];

	return service_secret(m, svc->rank, svc->incarnation, expected) == 0 && auth_mac_equal(secret, len, expected);
}
