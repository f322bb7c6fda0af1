/* agent/probes/coll_ident: a c10d group's id from the store made before it
 * (the same on every rank whatever its handle), gloo works ended in either
 * order, and the PrefixStore name read from a process (this one: objects laid
 * out as libstdc++ and c10d lay them out). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/probes/coll_ident.h"

static void test_hash(void **state)
{
    (void)state;
    assert_true(coll_ident_hash("0", 1, 4) == coll_ident_hash("0", 1, 4));
    assert_true(coll_ident_hash("0", 1, 4) != coll_ident_hash("0", 1, 2));
    assert_true(coll_ident_hash("0", 1, 4) != coll_ident_hash("1", 1, 4));
    assert_true(coll_ident_hash("", 0, 0) != 0);
}

/* Two ranks (pids 10 and 20) make the same group: different handles, the
 * same id; a group made without a store before it on its thread has none. */
static void test_group_named_by_store(void **state)
{
    struct coll_ident *ci = coll_ident_new();
    uint64_t want = coll_ident_hash("0/default_pg", 12, 4);

    (void)state;
    assert_non_null(ci);
    coll_ident_store(ci, 10, 11, 100, "0/default_pg");
    coll_ident_store(ci, 20, 21, 900, "0/default_pg");
    assert_true(coll_ident_group(ci, 10, 11, 200, 0xaaa0, 4) == want);
    assert_true(coll_ident_group(ci, 20, 21, 950, 0xbbb0, 4) == want);
    assert_true(coll_ident_lookup(ci, 10, 0xaaa0) == want);
    assert_true(coll_ident_lookup(ci, 20, 0xbbb0) == want);
    assert_true(coll_ident_lookup(ci, 20, 0xaaa0) == 0); /* another process's handle */
    /* the store was consumed; another thread's store names nothing here */
    assert_true(coll_ident_group(ci, 10, 11, 300, 0xccc0, 4) == 0);
    coll_ident_store(ci, 10, 12, 400, "1/default_pg");
    assert_true(coll_ident_group(ci, 10, 11, 500, 0xccc0, 2) == 0);
    assert_true(coll_ident_group(ci, 10, 12, 390, 0xccc0, 2) == 0); /* made before the store */
    coll_ident_bind(ci, 10, 0xddd0, 77);                            /* NCCL */
    assert_true(coll_ident_lookup(ci, 10, 0xddd0) == 77);
    coll_ident_forget(ci, 10);
    assert_true(coll_ident_lookup(ci, 10, 0xaaa0) == 0);
    assert_true(coll_ident_lookup(ci, 20, 0xbbb0) == want);
    coll_ident_free(ci);
}

static void test_work_ends(void **state)
{
    struct coll_ident *ci = coll_ident_new();
    uint64_t comm = 0;
    int64_t seq = -1;

    (void)state;
    /* the call first, then its work finishes */
    coll_ident_work(ci, 10, 11, 150, 0x7000);
    assert_true(coll_ident_call(ci, 10, 11, 100, 200, 0xaaa0, 7) == 0);
    assert_true(coll_ident_done(ci, 10, 0x7000, 500, &comm, &seq));
    assert_true(comm == 0xaaa0);
    assert_int_equal(seq, 7);
    assert_false(coll_ident_done(ci, 10, 0x7000, 600, &comm, &seq)); /* once */
    /* the work finishes before its call's record is seen */
    coll_ident_work(ci, 10, 11, 1150, 0x8000);
    assert_false(coll_ident_done(ci, 10, 0x8000, 1180, &comm, &seq));
    assert_true(coll_ident_call(ci, 10, 11, 1100, 1200, 0xaaa0, 8) == 1180);
    /* a finish of an older work at the same address is not this call's end */
    assert_false(coll_ident_done(ci, 10, 0x9000, 50, &comm, &seq));
    coll_ident_work(ci, 10, 11, 2150, 0x9000);
    assert_true(coll_ident_call(ci, 10, 11, 2100, 2200, 0xaaa0, 9) == 0);
    assert_true(coll_ident_done(ci, 10, 0x9000, 2500, &comm, &seq));
    assert_int_equal(seq, 9);
    /* a work made outside the call, or on another thread, is not its work */
    coll_ident_work(ci, 10, 11, 3050, 0xa000);
    assert_true(coll_ident_call(ci, 10, 11, 3100, 3200, 0xaaa0, 10) == 0);
    assert_false(coll_ident_done(ci, 10, 0xa000, 3300, &comm, &seq));
    coll_ident_free(ci);
}

/* A libstdc++ std::string and a c10d::PrefixStore as they are laid out. */
struct fake_string {
    char *ptr;
    uint64_t len;
    char buf[16];
};

struct fake_prefix_store {
    void *vptr;
    uint64_t refcount, weakcount, timeout_ms;
    struct fake_string prefix;
    void *store;
};

static void fake_set(struct fake_prefix_store *s, const char *prefix, void *under)
{
    memset(s, 0, sizeof(*s));
    s->prefix.ptr = s->prefix.buf;
    s->prefix.len = strlen(prefix);
    memcpy(s->prefix.buf, prefix, s->prefix.len + 1);
    s->store = under;
}

static void test_read_name(void **state)
{
    struct fake_prefix_store group, base;
    uint64_t tcp[16] = {0x1234, 1, 0, 30000, 5, 6, 7, 8}; /* not a PrefixStore */
    char name[COLL_IDENT_NAME_MAX];
    uint32_t self = (uint32_t)getpid();

    (void)state;
    assert_int_equal(offsetof(struct fake_prefix_store, prefix), 32);
    fake_set(&group, "0", &base);
    fake_set(&base, "default_pg", tcp);
    assert_int_equal(coll_ident_read_name(self, (uint64_t)(uintptr_t)&group, name, sizeof(name)),
                     12);
    assert_string_equal(name, "0/default_pg");
    /* a long (heap) prefix or a wrong layout is not read */
    group.prefix.ptr = (char *)"a-group-name-longer-than-fifteen";
    group.prefix.len = 32;
    assert_int_equal(coll_ident_read_name(self, (uint64_t)(uintptr_t)&group, name, sizeof(name)),
                     -EINVAL);
    fake_set(&group, "bad\001", NULL);
    assert_int_equal(coll_ident_read_name(self, (uint64_t)(uintptr_t)&group, name, sizeof(name)),
                     -EINVAL);
    assert_int_equal(coll_ident_read_name(self, 16, name, sizeof(name)), -EFAULT);
}

static void test_parse_string(void **state)
{
    struct fake_string s = {0};
    uint64_t at = 0x7f0000001000ULL;
    uint8_t raw[32];
    char out[16];

    (void)state;
    s.ptr = (char *)(uintptr_t)(at + 16);
    s.len = 3;
    memcpy(s.buf, "abc", 4);
    memcpy(raw, &s, sizeof(raw));
    assert_int_equal(coll_ident_parse_string(raw, at, out, sizeof(out)), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(coll_ident_parse_string(raw, at + 8, out, sizeof(out)), -EINVAL);
    assert_int_equal(coll_ident_parse_string(raw, at, out, 3), -EINVAL); /* no room */
    raw[19] = 'x';                                                       /* no terminator */
    assert_int_equal(coll_ident_parse_string(raw, at, out, sizeof(out)), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash),         cmocka_unit_test(test_group_named_by_store),
        cmocka_unit_test(test_work_ends),    cmocka_unit_test(test_read_name),
        cmocka_unit_test(test_parse_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
