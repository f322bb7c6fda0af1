/* collector/diag/diag_steps: the memory budget of a job's steps follows its
 * ranks (DIAG_STEPS_BYTES_PER_RANK each), never below the configured size
 * and at most DIAG_STEPS_GROWTH times it; at the budget, a new step's frame
 * takes the memory of the oldest kept one (no new allocation a step). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collector/diag/diag_steps.h"

#define MiB ((size_t)1 << 20)

static void test_budget_follows_ranks(void **state)
{
    struct diag_steps w;

    (void)state;
    assert_int_equal(diag_steps_init(&w, 256 * MiB, 40), 0);
    assert_int_equal(w.max_bytes, 256 * MiB);
    assert_int_equal(diag_steps_reserve(&w, 1024), 0); /* 32 MiB: the configured size */
    assert_int_equal(w.max_bytes, 256 * MiB);
    assert_int_equal(diag_steps_reserve(&w, 20480), 0); /* 640 MiB */
    assert_int_equal(w.max_bytes, (size_t)20480 * DIAG_STEPS_BYTES_PER_RANK);
    assert_int_equal(diag_steps_reserve(&w, 65536), 0); /* 2 GiB: at most 4 x 256 MiB */
    assert_int_equal(w.max_bytes, DIAG_STEPS_GROWTH * 256 * MiB);
    assert_int_equal(diag_steps_reserve(&w, 16), 0); /* ranks never shrink */
    assert_int_equal(w.max_bytes, DIAG_STEPS_GROWTH * 256 * MiB);
    diag_steps_free(&w);
    /* a small configured size grows at most 4 times */
    assert_int_equal(diag_steps_init(&w, 1 * MiB, 40), 0);
    assert_int_equal(diag_steps_reserve(&w, 1024), 0);
    assert_int_equal(w.max_bytes, DIAG_STEPS_GROWTH * MiB);
    diag_steps_free(&w);
}

/* A budget of three frames: steps 0..11 opened and closed one after the
 * other, every frame from step 3 on uses the buffers of one of the first
 * three, and the frames never hold more than the budget. */
static void test_frames_reuse_memory(void **state)
{
    struct diag_steps w;
    const uint32_t ranks = 1000;
    void *first[3] = {0};

    (void)state;
    assert_int_equal(diag_steps_init(&w, 3 * (size_t)ranks * DIAG_FRAME_RANK_BYTES, 40), 0);
    w.base_bytes = w.max_bytes; /* no growth with the ranks below */
    assert_int_equal(diag_steps_reserve(&w, ranks), 0);
    w.max_bytes = w.base_bytes;
    for (uint64_t step = 0; step < 12; step++) {
        struct diag_frame *f, *ready;
        enum diag_close_reason why;

        assert_int_equal(diag_steps_slot(&w, step, step * 1000, &f), DIAG_SLOT_OPEN);
        assert_non_null(f->ranks);
        if (step < 3) {
            first[step] = f->ranks;
        } else {
            assert_true(f->ranks == first[0] || f->ranks == first[1] || f->ranks == first[2]);
        }
        assert_true(diag_steps_bytes(&w) <= w.max_bytes);
        ready = diag_steps_ready(&w, step * 1000, 0, step + 1, 0, DIAG_STEPS_NO_FORCE, 0, &why);
        assert_ptr_equal(ready, f);
        diag_steps_closed(&w, ready, step);
    }
    diag_steps_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_reuse_memory),
        cmocka_unit_test(test_budget_follows_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
