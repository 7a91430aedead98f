#include "auth_proof.h"

#include "mmc/mmc.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

int auth_mac(const void *key, size_t keylen, const char *label, const void *a, size_t alen, const void *b, size_t blen,
             uint8_t out[MMC_WIRE_MAC])
{
	uint8_t msg[256];
	size_t llen = strlen(label) + 1; /* with its NUL: no label is a prefix of another's message */
	unsigned int n = 0;

	if (llen + alen + blen > sizeof(msg) || keylen > INT32_MAX)
		return MMC_ERROR;
	memcpy(msg, label, llen);
	memcpy(msg + llen, a, alen);
	memcpy(msg + llen + alen, b, blen);
	if (!HMAC(EVP_sha256(), key, (int)keylen, msg, llen + alen + blen, out, &n) || n != MMC_WIRE_MAC)
		return MMC_ERROR;
	OPENSSL_cleanse(msg, sizeof(msg));
	return 0;
}

const char *auth_tenant_label(char *buf, size_t cap, const char *label, const char *tenant)
{
	snprintf(buf, cap, tenant && tenant[0] ? "%s tenant=%s" : "%s", label, tenant);
	return buf;
}

bool auth_mac_equal(const void *a, size_t len, const uint8_t expected[MMC_WIRE_MAC])
{
	return len == MMC_WIRE_MAC && CRYPTO_memcmp(a, expected, MMC_WIRE_MAC) == 0;
}

int auth_random(void *out, size_t len)
{
	uint8_t *p = out;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n <= 0)
			return MMC_ERROR;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
