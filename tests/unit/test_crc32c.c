/* CRC32C against the RFC 3720 (iSCSI) test vectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"

static void test_check_value(void **state)
{
    assert_int_equal(crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(crc32c_sw(0, "123456789", 9), 0xE3069283u);
}

static void test_rfc3720_vectors(void **state)
{
    uint8_t buf[32];

    memset(buf, 0, sizeof(buf));
    assert_int_equal(crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, sizeof(buf));
    assert_int_equal(crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(crc32c(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(crc32c(0, buf, 32), 0x113FDB5Cu);
}

static void test_empty_and_chaining(void **state)
{
    const char *text = "the quick brown fox jumps over the lazy dog, twice over";
    size_t n = strlen(text);

    assert_int_equal(crc32c(0, "", 0), 0);
    for (size_t cut = 0; cut <= n; cut++)
        assert_int_equal(crc32c(crc32c(0, text, cut), text + cut, n - cut), crc32c(0, text, n));
}

static void test_hw_matches_sw(void **state)
{
    uint8_t buf[1031];

    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len + off <= sizeof(buf); len += 37)
            assert_int_equal(crc32c(0, buf + off, len), crc32c_sw(0, buf + off, len));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_value),
        cmocka_unit_test(test_rfc3720_vectors),
        cmocka_unit_test(test_empty_and_chaining),
        cmocka_unit_test(test_hw_matches_sw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
