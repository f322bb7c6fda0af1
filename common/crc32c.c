#include "common/crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_table_once = PTHREAD_ONCE_INIT;

static void crc32c_build_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
        crc32c_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++)
            crc32c_table[t][n] =
                (crc32c_table[t - 1][n] >> 8) ^ crc32c_table[0][crc32c_table[t - 1][n] & 0xff];
}

uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&crc32c_table_once, crc32c_build_tables);
    crc = ~crc;
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        word ^= crc; /* little-endian: the CRC lines up with the first 4 bytes */
        crc = crc32c_table[7][word & 0xff] ^ crc32c_table[6][(word >> 8) & 0xff] ^
              crc32c_table[5][(word >> 16) & 0xff] ^ crc32c_table[4][(word >> 24) & 0xff] ^
              crc32c_table[3][(word >> 32) & 0xff] ^ crc32c_table[2][(word >> 40) & 0xff] ^
              crc32c_table[1][(word >> 48) & 0xff] ^ crc32c_table[0][word >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

#if defined(__x86_64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *data,
                                                            size_t len)
{
    const uint8_t *p = data;
    uint64_t c = ~crc;

    while (len >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return ~c32;
}

uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
    static int have_sse42 = -1;

    if (have_sse42 < 0)
        have_sse42 = __builtin_cpu_supports("sse4.2");
    return have_sse42 ? crc32c_hw(crc, data, len) : crc32c_sw(crc, data, len);
}
#else
uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
    return crc32c_sw(crc, data, len);
}
#endif
