/*
 * The LRU order across restarts and failovers. Every READABLE object carries a stamp from one counter
 * (meta.lru_clock), taken when it goes to the head of its media's LRU, so stamps fall from head to tail; its record
 * keeps the stamp, and a load rebuilds each LRU in stamp order instead of key order (records written before stamps
 * existed load as the oldest, in key order). A get does not write a record: the stamps that moved since the last
 * checkpoint are written once a second, at most LRU_CHECKPOINT_MAX of them, newest first, and all at shutdown. So
 * reads cost the store at most that many record writes a second however many keys they touch (an uncapped
 * checkpoint rewrote every key a heavy random read had touched: at 10^6 keys it cut get_key_info's rate by 3 and
 * stalled puts for seconds); under heavier reads the older touches of a second keep their previous stamps, and a
 * kill -9 forgets at most the last second. Loop thread only.
 */
#ifndef MMC_LRU_H
#define MMC_LRU_H

#include <stdbool.h>
#include <stdint.h>

#include "meta.h"

#define LRU_CHECKPOINT_MS  1000
#define LRU_CHECKPOINT_MAX 2048

/* Puts o (off any list) at the head of its media's LRU with a new stamp, to be written by the next checkpoint
 * unless its record is written first. */
void lru_push(struct meta *m, struct object *o);
/* Writes the records of objects whose stamp moved since the last checkpoint: once LRU_CHECKPOINT_MS has passed
 * since it, or now with force (shutdown). */
void lru_checkpoint(struct meta *m, uint64_t now_ms, bool force);

#endif
