/* collector/diag/diag_hw.c and diag_hwwin.c: the hardware evidence of a
 * report, on hand-built step records of an 8-rank peer group over a
 * 40-step window (steps 800..839) fed through diag_frame_add_record and
 * diag_rankwin_step as the engine feeds them: a thermally throttled
 * culprit is GPU_THROTTLED with its numbers; the same throttling on every
 * member stands out nowhere; records without hw leave the evidence as it
 * was; NIC drops lead a LINK suspect's sentence (LINK stays LINK); an XID
 * is cited with its step; a short buffer drops whole clauses. And the
 * per-step extraction rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector/diag/diag_colls.h"
#include "collector/diag/diag_evidence.h"
#include "collector/diag/diag_frame.h"
#include "collector/diag/diag_hw.h"
#include "collector/diag/diag_persist.h"
#include "collector/diag/diag_rankwin.h"

enum { RANKS = 8, STEPS = 40, FIRST = 800 };

/* What each rank's GPU and NICs said in one step (no_hw: no hw at all). */
typedef void (*hw_fn)(uint32_t rank, uint32_t step, Argus__V1__HwCounters *hw);

struct fixture {
    struct diag_rankwin w;
    struct diag_frame f;
    struct diag_dict d;
    struct diag_colls c;
    uint32_t members[RANKS];
};

static void healthy(uint32_t rank, uint32_t step, Argus__V1__HwCounters *hw)
{
    (void)rank;
    hw->samples = 1;
    hw->sm_clock_mhz = 1980;
    hw->temperature_c = 66;
    if (step % 10 == 3) { /* a SW power cap now and then, as every GPU has */
        hw->throttle = 0x4;
        hw->throttled_samples = 1;
    }
}

/* Rank 3 hot and slow in 38 of 40 steps; the others healthy. */
static void thermal_rank3(uint32_t rank, uint32_t step, Argus__V1__HwCounters *hw)
{
    healthy(rank, step, hw);
    if (rank == 3 && step % 20 != 5) {
        hw->throttle = 0x40;
        hw->samples = hw->throttled_samples = 4;
        hw->sm_clock_mhz = 1410;
        hw->temperature_c = 91;
    } else if (rank == 3) {
        hw->sm_clock_mhz = 1410;
        hw->temperature_c = 91;
    }
}

/* Every rank as throttled as rank 3 above. */
static void thermal_all(uint32_t rank, uint32_t step, Argus__V1__HwCounters *hw)
{
    thermal_rank3(3, step, hw);
    (void)rank;
}

/* Rank 2's node NICs drop packets (1,234 over the window) and lose carrier twice. */
static void nic_rank2(uint32_t rank, uint32_t step, Argus__V1__HwCounters *hw)
{
    healthy(rank, step, hw);
    if (rank == 2) {
        hw->nic_drops = step == 0 ? 1234 - 39 * 31 : 31;
        hw->nic_link_downs = step == 7 || step == 30;
    }
}

/* Rank 5's GPU: XID 79 at step 812, 3 uncorrected ECC errors, 2 rows remapped. */
static void xid_rank5(uint32_t rank, uint32_t step, Argus__V1__HwCounters *hw)
{
    healthy(rank, step, hw);
    if (rank == 5 && step == 12) {
        hw->xid_errors = 1;
        hw->xid = 79;
        hw->ecc_uncorrected = 3;
        hw->rows_remapped = 2;
    }
}

/* Feed STEPS closed steps whose records carry fn's hw (NULL: none). */
static void run(struct fixture *x, hw_fn fn)
{
    memset(x, 0, sizeof(*x));
    assert_int_equal(diag_frame_reserve(&x->f, RANKS), 0);
    diag_rankwin_init(&x->w, STEPS);
    assert_int_equal(diag_rankwin_reserve(&x->w, RANKS), 0);
    for (uint32_t r = 0; r < RANKS; r++)
        x->members[r] = r;
    for (uint32_t k = 0; k < STEPS; k++) {
        diag_frame_reset(&x->f, FIRST + k, 1);
        for (uint32_t r = 0; r < RANKS; r++) {
            Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;
            Argus__V1__HwCounters hw = ARGUS__V1__HW_COUNTERS__INIT;
            s.job = "j";
            s.rank = r;
            s.step = FIRST + k;
            s.duration_ns = 100000000;
            if (fn) {
                fn(r, k, &hw);
                s.hw = &hw;
            }
            assert_int_equal(diag_frame_add_record(&x->f, &x->d, &s), 0);
        }
        diag_rankwin_step(&x->w, &x->f, &x->c);
    }
}

static void done(struct fixture *x)
{
    diag_rankwin_free(&x->w);
    diag_frame_free(&x->f);
}

static void get(struct fixture *x, uint32_t rank, struct diag_rank_evidence *re)
{
    assert_int_equal(diag_rankwin_get(&x->w, rank, x->members, RANKS, re), 0);
}

static void test_throttled_culprit(void **state)
{
    struct fixture x;
    struct diag_rank_evidence re;
    char buf[512];

    (void)state;
    run(&x, thermal_rank3);
    get(&x, 3, &re);
    assert_int_equal(re.hw.steps, 40);
    assert_int_equal(re.hw.throttled, 38);
    assert_int_equal(re.hw.reason, DIAG_HW_HW_THERMAL);
    assert_int_equal(re.hw.peers, 7);
    assert_true(re.hw.peer_throttled < 0.25);
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw),
                     ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED);
    assert_string_equal(diag_hw_sentence(&re.hw, DIAG_CAUSE_COMPUTE, buf, sizeof(buf)),
                        "; GPU: HW thermal slowdown in 38 of 40 steps, SM clock 1,410 vs 1,980 "
                        "MHz (peers' median), 91 C vs 66 C");
    /* A LINK or HOST suspect is never relabelled. */
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_HOST, &re.hw), ARGUS__V1__CAUSE__CAUSE_HOST);
    /* A healthy peer: nothing stands out. */
    get(&x, 4, &re);
    assert_int_equal(re.hw.throttled, 4); /* its power caps */
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw), ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_string_equal(diag_hw_sentence(&re.hw, DIAG_CAUSE_COMPUTE, buf, sizeof(buf)), "");
    done(&x);
}

/* Rank 3 throttled (slow clock) in a share of its steps: 60% from the
 * start, or 40% (the half-way rule's grey zone). */
static double share;
static void thermal_share(uint32_t rank, uint32_t step, Argus__V1__HwCounters *hw)
{
    healthy(rank, step, hw);
    if (rank == 3 && step % 10 < (uint32_t)(share * 10)) {
        hw->throttle = 0x40;
        hw->samples = hw->throttled_samples = 1;
        hw->sm_clock_mhz = 1410;
    }
}

/* Hysteresis: a rank found throttled keeps GPU_THROTTLED while a quarter
 * of its steps are (its alert does not flip between causes); one never
 * found so needs half. */
static void test_throttled_label_sticks(void **state)
{
    struct fixture x;
    struct diag_rank_evidence re;

    (void)state;
    share = 0.4;
    run(&x, thermal_share);
    get(&x, 3, &re);
    assert_false(re.hw.was_throttled);
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw), ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    done(&x);
    share = 0.6;
    run(&x, thermal_share);
    get(&x, 3, &re);
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw),
                     ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED);
    share = 0.4; /* the same window now at 40%: kept */
    for (uint32_t k = 0; k < STEPS; k++) {
        diag_frame_reset(&x.f, FIRST + STEPS + k, 1);
        for (uint32_t r = 0; r < RANKS; r++) {
            Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;
            Argus__V1__HwCounters hw = ARGUS__V1__HW_COUNTERS__INIT;
            s.job = "j";
            s.rank = r;
            s.step = FIRST + STEPS + k;
            s.duration_ns = 100000000;
            thermal_share(r, k, &hw);
            s.hw = &hw;
            assert_int_equal(diag_frame_add_record(&x.f, &x.d, &s), 0);
        }
        diag_rankwin_step(&x.w, &x.f, &x.c);
    }
    get(&x, 3, &re);
    assert_true(re.hw.was_throttled);
    assert_int_equal(re.hw.throttled, 16);
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw),
                     ARGUS__V1__CAUSE__CAUSE_GPU_THROTTLED);
    done(&x);
}

static void test_throttled_everywhere_stands_out_nowhere(void **state)
{
    struct fixture x;
    struct diag_rank_evidence re;
    char buf[512];

    (void)state;
    run(&x, thermal_all);
    get(&x, 3, &re);
    assert_int_equal(re.hw.throttled, 38);
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw), ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    assert_string_equal(diag_hw_sentence(&re.hw, DIAG_CAUSE_COMPUTE, buf, sizeof(buf)), "");
    done(&x);
}

/* Throttled while its peers are not, but at their clock: not the cause. */
static void test_throttled_at_full_clock_stays_compute(void **state)
{
    struct diag_hw_evidence e = {.steps = 40,
                                 .throttled = 30,
                                 .reason = DIAG_HW_SW_POWER_CAP,
                                 .reason_steps = 30,
                                 .sm_clock = 1960,
                                 .peers = 7,
                                 .peer_sm_clock = 1980};

    (void)state;
    assert_false(diag_hw_throttled(&e));
    e.sm_clock = 0; /* clock unknown: the reasons decide */
    assert_true(diag_hw_throttled(&e));
    e.peers = 0; /* nobody to compare with */
    assert_false(diag_hw_throttled(&e));
}

/* Records without hw: the evidence is what it was before hardware evidence. */
static void test_no_hw_leaves_evidence_alone(void **state)
{
    struct fixture x;
    struct diag_rank_evidence re;
    struct diag_flag f = {.set = true, .kind = DIAG_WHERE_ARRIVAL, .value = 5e6, .median = 1e6};
    struct diag_namer nm = {NULL, NULL, NULL};
    char ev[1024], want[1024];

    (void)state;
    run(&x, NULL);
    get(&x, 3, &re);
    struct diag_hw_evidence zero = {0};
    assert_memory_equal(&re.hw, &zero, sizeof(zero));
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw), ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    diag_evidence_flag(&nm, &f, DIAG_CAUSE_HOST, "g", 30, 40, &re, ev, sizeof(ev));
    diag_evidence_flag(&nm, &f, DIAG_CAUSE_HOST, "g", 30, 40, NULL, want, sizeof(want));
    assert_string_equal(ev, want); /* no window part here, and no hardware part */
    assert_null(strstr(ev, "GPU"));
    done(&x);
}

static void test_nic_drops_lead_a_link_suspect(void **state)
{
    struct fixture x;
    struct diag_rank_evidence re;
    struct diag_flag f = {.set = true, .kind = DIAG_WHERE_ARRIVAL, .value = 5e6, .median = 1e6};
    struct diag_namer nm = {NULL, NULL, NULL};
    char buf[1024];

    (void)state;
    run(&x, nic_rank2);
    get(&x, 2, &re);
    assert_int_equal(re.hw.total[DIAG_HW_NIC_DROPS], 1234);
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_LINK, &re.hw), ARGUS__V1__CAUSE__CAUSE_LINK);
    assert_string_equal(diag_hw_sentence(&re.hw, DIAG_CAUSE_LINK, buf, sizeof(buf)),
                        "; node NICs: 1,234 drops and 2 link downs over the window vs 0 (peers' "
                        "median)");
    diag_evidence_flag(&nm, &f, DIAG_CAUSE_LINK, "g", 30, 40, &re, buf, sizeof(buf));
    assert_non_null(strstr(buf, ", persisted 30/40 steps; node NICs: 1,234 drops and 2 link "
                                "downs over the window vs 0 (peers' median)"));
    done(&x);
}

static void test_xid_and_ecc_cited(void **state)
{
    struct fixture x;
    struct diag_rank_evidence re;
    char buf[512];

    (void)state;
    run(&x, xid_rank5);
    get(&x, 5, &re);
    assert_string_equal(diag_hw_sentence(&re.hw, DIAG_CAUSE_COMPUTE, buf, sizeof(buf)),
                        "; GPU: XID 79 at step 812, 3 uncorrected ECC errors, 2 rows remapped");
    assert_int_equal(diag_hw_cause(DIAG_CAUSE_COMPUTE, &re.hw), ARGUS__V1__CAUSE__CAUSE_COMPUTE);
    done(&x);
}

/* A buffer too short for every clause keeps whole clauses only. */
static void test_truncates_by_clause(void **state)
{
    struct diag_hw_evidence e = {.steps = 40, .peers = 7};
    char buf[512];

    (void)state;
    e.total[DIAG_HW_PCIE] = 1204;
    e.total[DIAG_HW_NIC_DROPS] = 500;
    assert_string_equal(diag_hw_sentence(&e, DIAG_CAUSE_COMPUTE, buf, sizeof(buf)),
                        "; PCIe replays 1,204 vs 0; node NICs: 500 drops over the window vs 0 "
                        "(peers' median)");
    assert_string_equal(diag_hw_sentence(&e, DIAG_CAUSE_COMPUTE, buf, 40),
                        "; PCIe replays 1,204 vs 0");
    assert_string_equal(diag_hw_sentence(&e, DIAG_CAUSE_LINK, buf, 40), "");
    assert_string_equal(diag_hw_sentence(&e, DIAG_CAUSE_COMPUTE, buf, 10), "");
    e.peer_total[DIAG_HW_PCIE] = 1000; /* not twice its peers' */
    assert_null(strstr(diag_hw_sentence(&e, DIAG_CAUSE_COMPUTE, buf, sizeof(buf)), "PCIe"));
}

static void test_extract(void **state)
{
    Argus__V1__HwCounters hw = ARGUS__V1__HW_COUNTERS__INIT;
    struct diag_hw_step s;
    uint32_t xid;

    (void)state;
    diag_hw_extract(NULL, &s, &xid);
    assert_int_equal(s.bits, 0);
    hw.samples = 4;
    hw.throttled_samples = 2;
    hw.throttle = 0x40 | 0x1; /* 0x1: GPU idle, no slowdown */
    hw.nic_drops = 1u << 20;
    hw.xid_errors = 300;
    hw.xid = 48;
    diag_hw_extract(&hw, &s, &xid);
    assert_int_equal(s.bits, DIAG_HW_HAS | DIAG_HW_THROTTLED | DIAG_HW_HW_THERMAL);
    assert_int_equal(s.nic_drops, UINT16_MAX);
    assert_int_equal(s.xid_errors, UINT8_MAX);
    assert_int_equal(xid, 48);
    hw.throttled_samples = 1; /* a minority of the samples */
    diag_hw_extract(&hw, &s, &xid);
    assert_int_equal(s.bits & DIAG_HW_THROTTLED, 0);
    hw.samples = 0; /* no samples inside the step: the reasons decide */
    hw.throttle = 0x1;
    diag_hw_extract(&hw, &s, &xid);
    assert_int_equal(s.bits & DIAG_HW_THROTTLED, 0);
    hw.throttle = 0x4;
    diag_hw_extract(&hw, &s, &xid);
    assert_int_equal(s.bits, DIAG_HW_HAS | DIAG_HW_THROTTLED | DIAG_HW_SW_POWER_CAP);
    assert_int_equal(sizeof(struct diag_hw_step), 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_throttled_culprit),
        cmocka_unit_test(test_throttled_label_sticks),
        cmocka_unit_test(test_throttled_everywhere_stands_out_nowhere),
        cmocka_unit_test(test_throttled_at_full_clock_stays_compute),
        cmocka_unit_test(test_no_hw_leaves_evidence_alone),
        cmocka_unit_test(test_nic_drops_lead_a_link_suspect),
        cmocka_unit_test(test_xid_and_ecc_cited),
        cmocka_unit_test(test_truncates_by_clause),
        cmocka_unit_test(test_extract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
