#include "clock.h"

_Atomic uint64_t clock_frozen_ms;

void clock_freeze(void)
{
	uint64_t zero = 0, now = clock_ns() / 1000000u;

	atomic_compare_exchange_strong(&clock_frozen_ms, &zero, now ? now : 1);
}

uint64_t clock_advance_ms(uint64_t ms)
{
	uint64_t t = atomic_load(&clock_frozen_ms);

	while (t && !atomic_compare_exchange_weak(&clock_frozen_ms, &t, t + ms))
		;
	return t ? t + ms : clock_ms();
}

bool clock_is_frozen(void)
{
	return atomic_load(&clock_frozen_ms) != 0;
}
