#include "host_id.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char boot_id[HOST_BOOT_ID_SIZE];
static char name[HOST_NAME_SIZE];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_once(void)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (f) {
		if (!fgets(boot_id, sizeof(boot_id), f))
			boot_id[0] = '\0';
		boot_id[strcspn(boot_id, "\n")] = '\0';
		fclose(f);
	}
	if (gethostname(name, sizeof(name) - 1))
		name[0] = '\0';
}

const char *host_boot_id(void)
{
	pthread_once(&once, read_once);
	return boot_id;
}

bool host_is_mine(const char *peer_boot_id, const char *peer_name)
{
	pthread_once(&once, read_once);
	return boot_id[0] && name[0] && peer_boot_id && peer_name && strcmp(peer_boot_id, boot_id) == 0 &&
	       strcmp(peer_name, name) == 0;
}
