/* agent/steps/stepframes.c against a fake stacks source whose samples are named
 * up to a movable time: records wait until their window settles, leave in
 * order, run out of time with "[unresolved]" counted, overflow, flush, and
 * are deep copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/delivery/names.h"
#include "agent/steps/stepframes.h"
#include "common/name_id.h"

#define SEC 1000000000ull

static struct {
    uint64_t named_until; /* samples before this are named */
    Argus__V1__StepRecord got[16];
    char jobs[16][32];
    char last_frame[16][64];
    size_t ngot;
} fake;

static bool fake_settled(void *state, uint64_t to_ns)
{
    return to_ns <= fake.named_until;
}

static size_t fake_top(void *state, uint32_t pid, uint64_t from_ns, uint64_t to_ns,
                       struct probe_stacks_frame *out, size_t max)
{
    out[0] = (struct probe_stacks_frame){"train_step", 3, 5};
    if (to_ns <= fake.named_until || max < 2)
        return 1;
    out[1] = (struct probe_stacks_frame){PROBE_STACKS_UNRESOLVED, 2, 2};
    return 2;
}

static void fake_emit(void *ctx, const Argus__V1__StepRecord *s)
{
    size_t i = fake.ngot++;

    fake.got[i] = *s;
    snprintf(fake.jobs[i], sizeof(fake.jobs[i]), "%s", s->job);
    fake.got[i].job = fake.jobs[i];
    fake.last_frame[i][0] = '\0';
    if (s->n_top_frames) {
        const char *name = names_lookup(ctx, s->top_frames[s->n_top_frames - 1]->name_id);
        snprintf(fake.last_frame[i], sizeof(fake.last_frame[i]), "%s", name ? name : "?");
    }
    fake.got[i].n_top_frames = s->n_top_frames;
    fake.got[i].top_frames = NULL; /* valid during the call only */
}

static struct clock_offset clock = {.n = 1, .at[0] = {0, (int64_t)(1000 * SEC)}};

static struct stepframes *make(struct names *names, size_t max_waiting)
{
    struct stepframes_options o = {.clock = &clock,
                                   .wait_ns = 2 * SEC,
                                   .max_waiting = max_waiting,
                                   .names = names,
                                   .emit = fake_emit,
                                   .ctx = names};
    struct stepframes_source src = {fake_settled, fake_top, NULL};
    struct stepframes *sf = stepframes_new(&o);

    assert_non_null(sf);
    stepframes_set_source(sf, &src);
    memset(&fake, 0, sizeof(fake));
    return sf;
}

/* A step of monotonic [start_s, start_s + 1 s) of job. */
static Argus__V1__StepRecord step(char *job, uint64_t number, uint64_t start_s)
{
    Argus__V1__StepRecord s;

    argus__v1__step_record__init(&s);
    s.job = job;
    s.step = number;
    s.start_unix_ns = (1000 + start_s) * SEC;
    s.duration_ns = SEC;
    return s;
}

static void test_no_source_passes_through(void **state)
{
    struct names *names = names_new();
    struct stepframes_options o = {
        .clock = &clock, .names = names, .emit = fake_emit, .ctx = names};
    struct stepframes *sf = stepframes_new(&o);
    char job[] = "j";
    Argus__V1__StepRecord s = step(job, 1, 10);

    memset(&fake, 0, sizeof(fake));
    assert_int_equal(stepframes_add(sf, 7, &s, 0), 0);
    assert_int_equal(fake.ngot, 1);
    assert_int_equal(fake.got[0].n_top_frames, 0);
    stepframes_free(sf);
    names_free(names);
}

static void test_settled_goes_at_once(void **state)
{
    struct names *names = names_new();
    struct stepframes *sf = make(names, 0);
    char job[] = "j";
    Argus__V1__StepRecord s = step(job, 1, 10);
    struct stepframes_stats st;

    fake.named_until = 11 * SEC;
    assert_int_equal(stepframes_add(sf, 7, &s, 0), 0);
    assert_int_equal(fake.ngot, 1);
    assert_int_equal(fake.got[0].n_top_frames, 1);
    assert_string_equal(fake.last_frame[0], "train_step");
    assert_string_equal(names_lookup(names, name_id("train_step")), "train_step");
    stepframes_get_stats(sf, &st);
    assert_int_equal(st.waited, 0);
    stepframes_free(sf);
    names_free(names);
}

/* Waits for its window, as a deep copy; then leaves in order. */
static void test_waits_until_settled(void **state)
{
    struct names *names = names_new();
    struct stepframes *sf = make(names, 0);
    char job[] = "job-a";
    Argus__V1__StepRecord s1 = step(job, 1, 10), s2 = step(job, 2, 11);
    struct stepframes_stats st;

    fake.named_until = 10 * SEC;
    stepframes_add(sf, 7, &s1, 0);
    stepframes_add(sf, 7, &s2, 0);
    strcpy(job, "XXXXX"); /* the caller's record is gone */
    stepframes_tick(sf, SEC);
    assert_int_equal(fake.ngot, 0);
    fake.named_until = 12 * SEC;
    stepframes_tick(sf, SEC);
    assert_int_equal(fake.ngot, 2);
    assert_int_equal(fake.got[0].step, 1);
    assert_int_equal(fake.got[1].step, 2);
    assert_string_equal(fake.jobs[0], "job-a");
    assert_string_equal(fake.last_frame[1], "train_step"); /* no "[unresolved]" */
    stepframes_get_stats(sf, &st);
    assert_int_equal(st.waited, 2);
    assert_int_equal(st.expired, 0);
    assert_int_equal(st.waiting, 0);
    stepframes_free(sf);
    names_free(names);
}

static void test_runs_out_of_time(void **state)
{
    struct names *names = names_new();
    struct stepframes *sf = make(names, 0);
    char job[] = "j";
    Argus__V1__StepRecord s = step(job, 1, 10);
    struct stepframes_stats st;

    stepframes_add(sf, 7, &s, 5 * SEC);
    stepframes_tick(sf, 7 * SEC - 1);
    assert_int_equal(fake.ngot, 0);
    stepframes_tick(sf, 7 * SEC);
    assert_int_equal(fake.ngot, 1);
    assert_int_equal(fake.got[0].n_top_frames, 2);
    assert_string_equal(fake.last_frame[0], PROBE_STACKS_UNRESOLVED);
    stepframes_get_stats(sf, &st);
    assert_int_equal(st.expired, 1);
    stepframes_free(sf);
    names_free(names);
}

static void test_overflow_and_flush(void **state)
{
    struct names *names = names_new();
    struct stepframes *sf = make(names, 2);
    char job[] = "j";
    struct stepframes_stats st;

    for (uint64_t i = 1; i <= 3; i++) {
        Argus__V1__StepRecord s = step(job, i, 10 + i);
        stepframes_add(sf, 7, &s, 0);
    }
    assert_int_equal(fake.ngot, 1); /* the oldest went on to make room */
    assert_int_equal(fake.got[0].step, 1);
    stepframes_flush(sf);
    assert_int_equal(fake.ngot, 3);
    assert_int_equal(fake.got[2].step, 3);
    stepframes_get_stats(sf, &st);
    assert_int_equal(st.overflowed, 1);
    assert_int_equal(st.waiting, 0);
    stepframes_free(sf);
    names_free(names);
}

/* Freed with records still waiting: no leak (ASan), nothing emitted. */
static void test_free_waiting(void **state)
{
    struct names *names = names_new();
    struct stepframes *sf = make(names, 0);
    char job[] = "j";
    Argus__V1__StepRecord s = step(job, 1, 10);

    stepframes_add(sf, 7, &s, 0);
    stepframes_free(sf);
    assert_int_equal(fake.ngot, 0);
    stepframes_free(NULL);
    names_free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_source_passes_through),
        cmocka_unit_test(test_settled_goes_at_once),
        cmocka_unit_test(test_waits_until_settled),
        cmocka_unit_test(test_runs_out_of_time),
        cmocka_unit_test(test_overflow_and_flush),
        cmocka_unit_test(test_free_waiting),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
