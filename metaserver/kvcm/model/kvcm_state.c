#include "kvcm_state.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

uint64_t kvcm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bool kvcm_demoted(struct kvcm *k)
{
	if (!k->demoted_until_ms)
		return false;
	if (clock_ms() < k->demoted_until_ms)
		return true;
	k->demoted_until_ms = 0;
	log_info("op=kvcm_leader node=\"%s\" note=\"leading again after leaderDemote: the only candidate\"",
	         k->node_id);
	return false;
}

/* xoroshiro128+: ids only need to be unpredictable enough not to collide, not to be secret. */
static uint64_t next_random(struct kvcm *k)
{
	uint64_t s0 = k->rng[0], s1 = k->rng[1], r = s0 + s1;

	s1 ^= s0;
	k->rng[0] = ((s0 << 24) | (s0 >> 40)) ^ s1 ^ (s1 << 16);
	k->rng[1] = (s1 << 37) | (s1 >> 27);
	return r;
}

void kvcm_random_id(struct kvcm *k, char *out, size_t n)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";

	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[next_random(k) % 36];
	out[n] = '\0';
}

void kvcm_seed_random(struct kvcm *k)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, k->rng, sizeof(k->rng)) != sizeof(k->rng)) {
		k->rng[0] = kvcm_now_us() ^ (uint64_t)getpid() << 32;
		k->rng[1] = (uint64_t)(uintptr_t)k ^ UINT64_C(0x9e3779b97f4a7c15);
	}
	if (fd >= 0)
		close(fd);
	if (!k->rng[0] && !k->rng[1])
		k->rng[1] = 1;
}
