/* CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected), as used by iSCSI,
 * ext4 and RocksDB. Uses the SSE4.2 crc32 instruction when the CPU has it,
 * else slicing-by-8 tables. */
#ifndef ARGUS_COMMON_CRC32C_H
#define ARGUS_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend crc (0 for a fresh checksum) with len bytes of data. Chaining is
 * exact: crc32c(crc32c(0, a, n), b, m) == CRC of a||b. */
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

/* The portable implementation, exported so tests can compare both paths. */
uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len);

#endif
