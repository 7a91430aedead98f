/*
 * The GVA one-copy flow: batch_malloc / batch_copy / batch_write_finish on the write side, batch_add_lease /
 * batch_copy / batch_remove_lease on the read side. A store tracks the GVA ranges it may touch: ranges it
 * allocated (until finished) and ranges it leased (until released or expired); batch_copy refuses anything else.
 */
#ifndef MMC_STORE_GVA_H
#define MMC_STORE_GVA_H

#include "gva_tracker.h"

#endif
