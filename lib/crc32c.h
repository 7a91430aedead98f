/*
 * CRC32C (Castagnoli, the iSCSI / ext4 / RocksDB checksum): the per-object checksum of
 * ock.mmc.client.verify_checksum. SSE4.2's crc32 instruction on three interleaved streams where the CPU has it,
 * slicing-by-8 tables elsewhere; both give the same values. Thread-safe.
 */
#ifndef MMC_CRC32C_H
#define MMC_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Extends crc (0 to start) over len bytes: crc32c(crc32c(0, a, n), b, m) is the CRC of a then b, so an object's
 * pieces are checksummed in order without joining them. crc32c(0, "123456789", 9) == 0xE3069283.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/* The two implementations, for the unit test: crc32c_hw is crc32c_sw where the CPU lacks SSE4.2. */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool crc32c_hw_available(void);

#endif
