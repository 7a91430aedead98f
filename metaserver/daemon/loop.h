/*
 * The loop thread's run: libevent's loop, awake for a moment after a request while requests come close together.
 *
 * A loop that sleeps in epoll_wait between two requests pays a sleep and a wake-up for each; on a virtual machine
 * the wake-up of a halted vCPU alone costs tens of microseconds, longer than a small call's work. When the last two
 * libmmc requests came less than spin_us apart, the loop polls its sockets without sleeping (epoll_wait with no
 * timeout, then sched_yield) for twice that gap, spin_us at most, and sleeps only then. Requests further apart than
 * spin_us, or none, leave it asleep as before: an idle server spins never, and a loaded one is busy anyway.
 */
#ifndef MMC_META_LOOP_H
#define MMC_META_LOOP_H

#include <stdint.h>

struct meta;

/* Runs m's event base until event_base_loopexit() (from a callback, or with a timeout: a loopbreak made between two
 * of its event_base_loop() calls would be lost). spin_us: ock.mmc.meta.loop_spin_us (0: never spin), read again at
 * every request so that a reload applies at once. Loop thread only. */
void loop_run(struct meta *m, const uint32_t *spin_us);

#endif
