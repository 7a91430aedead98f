/* Placeholder until the KV Cache Manager lands (issue 5): accepts no keys and serves nothing. */
#include "kvcm.h"

#include <stdlib.h>

#include "mmc/mmc.h"

struct kvcm {
	int unused;
};

int kvcm_conf_set(const char *key, const char *value, char *err, size_t errlen)
{
	snprintf(err, errlen, "unknown configuration key \"%s\"", key);
	return MMC_INVALID_PARAM;
}

int kvcm_start(struct kvcm **out, struct event_base *base, struct persist *p, struct meta *meta, char *ready_line,
	       size_t ready_len, char *err, size_t errlen)
{
	*out = calloc(1, sizeof(**out));
	if (ready_len)
		ready_line[0] = '\0';
	return *out ? 0 : MMC_MALLOC_FAILED;
}

void kvcm_stop(struct kvcm *k)
{
	free(k);
}
