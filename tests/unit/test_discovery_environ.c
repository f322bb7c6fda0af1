/* Rank discovery's environ parser (agent/discovery/environ.c) on synthetic
 * environments: ranks, rejects, job ids, parallel groups, GPUs, and 20,000
 * random environments checked against the invariants. The process table is
 * tested in test_discovery.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/discovery/environ.h"

static const struct discovery_options node1 = {.node = "node1"};

/* Join NULL-terminated "K=V" strings into a NUL-separated environ. */
static size_t env_build(char *buf, size_t cap, const char *const *vars)
{
    size_t len = 0;
    for (; *vars; vars++) {
        size_t n = strlen(*vars) + 1;
        assert_true(len + n <= cap);
        memcpy(buf + len, *vars, n);
        len += n;
    }
    return len;
}

static int parse_with(const struct discovery_options *o, struct rank_info *ri,
                      const char *const *vars)
{
    char buf[8192];
    size_t len = env_build(buf, sizeof(buf), vars);
    return discovery_parse_environ(buf, len, o, ri);
}

#define PARSE(ri, ...) parse_with(&node1, (ri), (const char *const[]){__VA_ARGS__, NULL})
#define PARSE_O(o, ri, ...) parse_with((o), (ri), (const char *const[]){__VA_ARGS__, NULL})

static void test_parse_good(void **state)
{
    struct rank_info ri;

    assert_int_equal(PARSE(&ri, "PATH=/usr/bin", "RANK=3", "LOCAL_RANK=3", "WORLD_SIZE=8",
                           "ARGUS_JOB=j1", "HOME=/root"),
                     1);
    assert_int_equal(ri.rank, 3);
    assert_int_equal(ri.local_rank, 3);
    assert_int_equal(ri.world_size, 8);
    assert_string_equal(ri.job, "j1");
    assert_string_equal(ri.job_source, "ARGUS_JOB");
    assert_string_equal(ri.node, "node1");
    assert_int_equal(ri.gpu, 3); /* no CUDA_VISIBLE_DEVICES: LOCAL_RANK */
    assert_int_equal(ri.tp_size + ri.dp_size + ri.pp_size + ri.ep_size, 0);
    assert_int_equal(ri.flags, 0);
    assert_null(ri.reason);
    /* no final NUL, and the last entry is the one that matters */
    const char raw[] = "X=1\0WORLD_SIZE=2\0RANK=1";
    assert_int_equal(discovery_parse_environ(raw, sizeof(raw) - 1, &node1, &ri), 1);
    assert_int_equal(ri.rank, 1);
    /* duplicates: the first wins (getenv); junk without '=' is skipped */
    assert_int_equal(PARSE(&ri, "junk", "=x", "RANK=2", "RANK=7", "WORLD_SIZE=4"), 1);
    assert_int_equal(ri.rank, 2);
    assert_true(ri.flags & DISCOVERY_LOCAL_RANK_UNKNOWN);
    assert_int_equal(ri.gpu, -1);
}

static void test_parse_not_rank(void **state)
{
    struct rank_info ri;

    assert_int_equal(PARSE(&ri, "PATH=/bin", "WORLD_SIZE=8"), 0);
    assert_string_equal(ri.reason, "no RANK or LOCAL_RANK");
    assert_int_equal(discovery_parse_environ("", 0, &node1, &ri), 0);
    assert_int_equal(PARSE(&ri, "RANK=3"), 0);
    assert_string_equal(ri.reason, "RANK without WORLD_SIZE");
    assert_int_equal(PARSE(&ri, "RANK=8", "WORLD_SIZE=8"), 0);
    assert_string_equal(ri.reason, "RANK >= WORLD_SIZE");
    assert_int_equal(PARSE(&ri, "RANK=0", "LOCAL_RANK=9", "WORLD_SIZE=8"), 0);
    assert_string_equal(ri.reason, "LOCAL_RANK >= WORLD_SIZE");
    /* arguments */
    assert_int_equal(discovery_parse_environ(NULL, 4, &node1, &ri), -EINVAL);
    assert_int_equal(discovery_parse_environ("RANK=1", 6, &node1, NULL), -EINVAL);
    struct discovery_options bad = {.job_vars = "A,B,C,D,E,F,G,H,I"};
    assert_int_equal(PARSE_O(&bad, &ri, "RANK=0", "WORLD_SIZE=1"), -EINVAL);
    assert_int_equal(discovery_parse_environ(NULL, 0, NULL, &ri), 0);
}

static void test_parse_garbage_numbers(void **state)
{
    static const char *const bad_ranks[] = {
        "RANK=abc", "RANK=-1", "RANK=+3",  "RANK= 3",          "RANK=3 ",
        "RANK=3x",  "RANK=",   "RANK=0x1", "RANK=99999999999", "RANK=4294967296"};
    struct rank_info ri;

    for (size_t i = 0; i < sizeof(bad_ranks) / sizeof(bad_ranks[0]); i++) {
        assert_int_equal(PARSE(&ri, bad_ranks[i], "WORLD_SIZE=8"), 0);
        assert_string_equal(ri.reason, "RANK is not a number");
    }
    static const char *const bad_worlds[] = {"WORLD_SIZE=0", "WORLD_SIZE=abc",
                                             "WORLD_SIZE=16777217", "WORLD_SIZE=-8"};
    for (size_t i = 0; i < sizeof(bad_worlds) / sizeof(bad_worlds[0]); i++) {
        assert_int_equal(PARSE(&ri, "RANK=0", bad_worlds[i]), 0);
        assert_non_null(strstr(ri.reason, "WORLD_SIZE"));
    }
    assert_int_equal(PARSE(&ri, "RANK=1", "LOCAL_RANK=x", "WORLD_SIZE=8"), 0);
    assert_string_equal(ri.reason, "LOCAL_RANK is not a number");
    /* leading zeros are digits; SLURM_LOCALID stands in for LOCAL_RANK */
    assert_int_equal(PARSE(&ri, "RANK=007", "WORLD_SIZE=0016", "SLURM_LOCALID=2"), 1);
    assert_int_equal(ri.rank, 7);
    assert_int_equal(ri.world_size, 16);
    assert_int_equal(ri.local_rank, 2);
}

static void test_parse_local_rank_only(void **state)
{
    struct rank_info ri;

    assert_int_equal(PARSE(&ri, "LOCAL_RANK=1", "WORLD_SIZE=2"), 1);
    assert_int_equal(ri.rank, 1);
    assert_true(ri.flags & DISCOVERY_RANK_FROM_LOCAL);
    assert_int_equal(PARSE(&ri, "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "WORLD_SIZE=4"), 0);
    assert_non_null(strstr(ri.reason, "multi-node"));
    assert_int_equal(
        PARSE(&ri, "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=1", "WORLD_SIZE=4"), 1);
    assert_int_equal(ri.rank, 3);
    assert_int_equal(ri.local_rank, 1);
}

static void test_parse_job_precedence(void **state)
{
    struct rank_info ri;

    /* order in the environment does not matter, the configured order does */
    assert_int_equal(PARSE(&ri, "SLURM_JOB_ID=77", "TORCHELASTIC_RUN_ID=te", "ARGUS_JOB=aj",
                           "RANK=0", "WORLD_SIZE=1"),
                     1);
    assert_string_equal(ri.job, "aj");
    assert_int_equal(
        PARSE(&ri, "SLURM_JOB_ID=77", "TORCHELASTIC_RUN_ID=te", "RANK=0", "WORLD_SIZE=1"), 1);
    assert_string_equal(ri.job, "te");
    assert_string_equal(ri.job_source, "TORCHELASTIC_RUN_ID");
    /* empty ARGUS_JOB and torchrun's default run id "none" count as unset */
    assert_int_equal(PARSE(&ri, "ARGUS_JOB=", "TORCHELASTIC_RUN_ID=none", "SLURM_JOB_ID=77",
                           "RANK=0", "WORLD_SIZE=1"),
                     1);
    assert_string_equal(ri.job, "77");
    struct discovery_options custom = {.node = "n", .job_vars = " SLURM_JOB_ID , ARGUS_JOB"};
    assert_int_equal(
        PARSE_O(&custom, &ri, "ARGUS_JOB=aj", "SLURM_JOB_ID=77", "RANK=0", "WORLD_SIZE=1"), 1);
    assert_string_equal(ri.job, "77");
    /* fallbacks */
    assert_int_equal(
        PARSE(&ri, "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "RANK=0", "WORLD_SIZE=1"), 1);
    assert_string_equal(ri.job, "torch-10.0.0.1:29500");
    assert_string_equal(ri.job_source, "MASTER_ADDR");
    assert_int_equal(
        PARSE(&ri, "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500", "RANK=0", "WORLD_SIZE=1"), 1);
    assert_string_equal(ri.job, "torch-node1:29500");
    assert_int_equal(PARSE(&ri, "RANK=0", "WORLD_SIZE=1"), 1);
    assert_string_equal(ri.job, "default@node1");
    assert_string_equal(ri.job_source, "default");
}

static void test_parse_job_validation(void **state)
{
    char long_job[16 + DISCOVERY_JOB_MAX + 2];
    struct rank_info ri;

    snprintf(long_job, sizeof(long_job), "ARGUS_JOB=%0*d", DISCOVERY_JOB_MAX, 0);
    assert_int_equal(PARSE(&ri, long_job, "RANK=0", "WORLD_SIZE=1"), 1);
    assert_int_equal(strlen(ri.job), DISCOVERY_JOB_MAX);
    snprintf(long_job, sizeof(long_job), "ARGUS_JOB=%0*d", DISCOVERY_JOB_MAX + 1, 0);
    assert_int_equal(PARSE(&ri, long_job, "RANK=0", "WORLD_SIZE=1"), 0);
    assert_non_null(strstr(ri.reason, "job id"));
    assert_int_equal(PARSE(&ri, "ARGUS_JOB=a\tb", "RANK=0", "WORLD_SIZE=1"), 0);
    assert_int_equal(PARSE(&ri, "ARGUS_JOB=caf\xc3\xa9", "RANK=0", "WORLD_SIZE=1"), 0);
    /* a bad value is not skipped for the next variable: that could merge jobs */
    assert_int_equal(PARSE(&ri, "ARGUS_JOB=\x01", "SLURM_JOB_ID=1", "RANK=0", "WORLD_SIZE=1"), 0);
}

static void test_parse_groups_derived(void **state)
{
    char rank_var[32];
    struct rank_info ri;
    bool seen[16][2][4] = {{{false}}};

    for (uint32_t r = 0; r < 16; r++) {
        snprintf(rank_var, sizeof(rank_var), "RANK=%u", r);
        assert_int_equal(PARSE(&ri, rank_var, "WORLD_SIZE=16", "TP_SIZE=2", "PP_SIZE=2"), 1);
        assert_int_equal(ri.tp_size, 2);
        assert_int_equal(ri.pp_size, 2);
        assert_int_equal(ri.dp_size, 4);
        assert_int_equal(ri.ep_size, 1);
        assert_true(ri.flags & DISCOVERY_GROUPS_DERIVED);
        /* Megatron order: tp fastest, then dp, then pp */
        assert_int_equal((ri.pp * ri.dp_size + ri.dp) * ri.tp_size + ri.tp, r);
        assert_false(seen[ri.dp][ri.tp][ri.pp]);
        seen[ri.dp][ri.tp][ri.pp] = true;
    }
    assert_int_equal(PARSE(&ri, "RANK=13", "WORLD_SIZE=16", "TP_SIZE=2", "PP_SIZE=2"), 1);
    assert_int_equal(ri.tp, 1);
    assert_int_equal(ri.dp, 2);
    assert_int_equal(ri.pp, 1);
    /* ARGUS_ names win; EP is carved out of DP */
    assert_int_equal(PARSE(&ri, "RANK=13", "WORLD_SIZE=16", "TP_SIZE=8", "ARGUS_TP_SIZE=2",
                           "ARGUS_PP_SIZE=2", "ARGUS_EP_SIZE=2"),
                     1);
    assert_int_equal(ri.tp_size, 2);
    assert_int_equal(ri.ep_size, 2);
    assert_int_equal(ri.ep, 0); /* dp 2 % 2 */
    assert_int_equal(PARSE(&ri, "RANK=5", "WORLD_SIZE=8", "ARGUS_DP_SIZE=8"), 1);
    assert_int_equal(ri.dp, 5);
    assert_int_equal(ri.tp_size, 1);
}

static void test_parse_groups_explicit_and_bad(void **state)
{
    struct rank_info ri;

    assert_int_equal(PARSE(&ri, "RANK=5", "WORLD_SIZE=8", "ARGUS_DP=1", "ARGUS_TP=1", "ARGUS_PP=0",
                           "ARGUS_EP=1", "ARGUS_DP_SIZE=2", "ARGUS_TP_SIZE=4", "ARGUS_PP_SIZE=1",
                           "ARGUS_EP_SIZE=2"),
                     1);
    assert_int_equal(ri.dp, 1);
    assert_int_equal(ri.tp, 1);
    assert_int_equal(ri.ep, 1);
    assert_true(ri.flags & DISCOVERY_GROUPS_EXPLICIT);
    /* coordinates without sizes: kept, sizes unknown */
    assert_int_equal(PARSE(&ri, "RANK=5", "WORLD_SIZE=8", "ARGUS_PP=3"), 1);
    assert_int_equal(ri.pp, 3);
    assert_int_equal(ri.pp_size, 0);
    /* inconsistent or garbage: groups dropped, still a rank */
    static const char *const bad[] = {"TP_SIZE=3",        "TP_SIZE=0",  "TP_SIZE=x",
                                      "ARGUS_TP_SIZE=16", "ARGUS_TP=9", "ARGUS_DP=-1",
                                      "ARGUS_EP_SIZE=3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(PARSE(&ri, "RANK=5", "WORLD_SIZE=8", "PP_SIZE=2", bad[i]), 1);
        assert_int_equal(ri.rank, 5);
        assert_true(ri.flags & DISCOVERY_GROUPS_DROPPED);
        assert_int_equal(ri.pp_size + ri.tp_size + ri.dp_size + ri.tp + ri.dp + ri.pp, 0);
        assert_non_null(ri.note);
    }
}

static void test_parse_cuda_visible_devices(void **state)
{
    struct rank_info ri;

    assert_int_equal(
        PARSE(&ri, "RANK=2", "LOCAL_RANK=2", "WORLD_SIZE=8", "CUDA_VISIBLE_DEVICES=4,5,6,7"), 1);
    assert_int_equal(ri.gpu, 6);
    assert_int_equal(PARSE(&ri, "RANK=2", "LOCAL_RANK=2", "WORLD_SIZE=8", "CUDA_VISIBLE_DEVICES=3"),
                     1);
    assert_int_equal(ri.gpu, 3); /* one device per rank */
    static const char *const none[] = {"CUDA_VISIBLE_DEVICES=", "CUDA_VISIBLE_DEVICES=-1",
                                       "CUDA_VISIBLE_DEVICES=NoDevFiles"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(PARSE(&ri, "RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=8", none[i]), 1);
        assert_int_equal(ri.gpu, -1);
        assert_string_equal(ri.gpu_uuid, "");
    }
    assert_int_equal(
        PARSE(&ri, "RANK=5", "LOCAL_RANK=5", "WORLD_SIZE=8", "CUDA_VISIBLE_DEVICES=0,1"), 1);
    assert_int_equal(ri.gpu, -1);
    assert_true(ri.flags & DISCOVERY_GPU_UNKNOWN);
    /* the list ends at the first invalid entry, like CUDA */
    assert_int_equal(
        PARSE(&ri, "RANK=3", "LOCAL_RANK=3", "WORLD_SIZE=8", "CUDA_VISIBLE_DEVICES=0,1,x,3"), 1);
    assert_int_equal(ri.gpu, -1);
    assert_int_equal(
        PARSE(&ri, "RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=8", "CUDA_VISIBLE_DEVICES=0,2,x,3"), 1);
    assert_int_equal(ri.gpu, 2);
    assert_int_equal(
        PARSE(&ri, "RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=8",
              "CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-8f1e2d3c-0000-1111-2222-333344445555"),
        1);
    assert_int_equal(ri.gpu, -1);
    assert_string_equal(ri.gpu_uuid, "GPU-8f1e2d3c-0000-1111-2222-333344445555");
}

/* Hostile input: random environments built from the variables that matter
 * and values that are good, bad, huge or binary, cut at random places. What
 * comes out must keep the invariants the rest of the agent relies on. */
static void check_invariants(int r, const struct rank_info *ri)
{
    assert_true(r == 0 || r == 1);
    if (r == 0) {
        assert_non_null(ri->reason);
        return;
    }
    size_t jl = strlen(ri->job);
    assert_true(jl > 0 && jl <= DISCOVERY_JOB_MAX);
    for (size_t i = 0; i < jl; i++)
        assert_true(ri->job[i] >= 0x20 && ri->job[i] <= 0x7e);
    assert_true(ri->world_size >= 1 && ri->world_size <= DISCOVERY_WORLD_MAX);
    assert_true(ri->rank < ri->world_size);
    assert_true(ri->local_rank < ri->world_size);
    assert_true(ri->gpu >= -1);
    assert_true(strlen(ri->gpu_uuid) < DISCOVERY_UUID_MAX);
    if (ri->tp_size && ri->dp_size && ri->pp_size) {
        assert_int_equal((uint64_t)ri->tp_size * ri->dp_size * ri->pp_size, ri->world_size);
        assert_true(ri->tp < ri->tp_size && ri->dp < ri->dp_size && ri->pp < ri->pp_size);
        assert_true(ri->ep_size >= 1 && ri->dp_size % ri->ep_size == 0 && ri->ep < ri->ep_size);
    }
}

static void test_parse_random(void **state)
{
    static const char *const names[] = {"RANK",
                                        "LOCAL_RANK",
                                        "WORLD_SIZE",
                                        "LOCAL_WORLD_SIZE",
                                        "GROUP_RANK",
                                        "SLURM_LOCALID",
                                        "CUDA_VISIBLE_DEVICES",
                                        "MASTER_ADDR",
                                        "MASTER_PORT",
                                        "ARGUS_JOB",
                                        "TORCHELASTIC_RUN_ID",
                                        "SLURM_JOB_ID",
                                        "ARGUS_TP",
                                        "ARGUS_DP",
                                        "ARGUS_PP",
                                        "ARGUS_EP",
                                        "ARGUS_TP_SIZE",
                                        "ARGUS_DP_SIZE",
                                        "ARGUS_PP_SIZE",
                                        "ARGUS_EP_SIZE",
                                        "TP_SIZE",
                                        "PP_SIZE",
                                        "DP_SIZE",
                                        "EP_SIZE",
                                        "PATH",
                                        ""};
    static const char *const values[] = {"0",          "1",          "2",       "3",
                                         "4",          "7",          "8",       "16",
                                         "abc",        "",           "-1",      "4294967295",
                                         "4294967296", "16777216",   "0,1,2,3", "GPU-1234-abcd",
                                         "MIG-x/1/0",  "NoDevFiles", "none",    "j1",
                                         "127.0.0.1",  "10.1.2.3",   "29500",   "\x01\x02",
                                         "\xff\xfe",   "00000000001"};
    const size_t nn = sizeof(names) / sizeof(names[0]), nv = sizeof(values) / sizeof(values[0]);
    char buf[8192];
    struct rank_info ri;
    unsigned seed = 12345;
    int ranks = 0, grouped = 0;

    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 0;
        int nvars = rand_r(&seed) % 12;
        if (rand_r(&seed) % 2) /* most random environments are not ranks: help it */
            len = (size_t)snprintf(buf, sizeof(buf), "RANK=%d%cWORLD_SIZE=%d", rand_r(&seed) % 5,
                                   '\0', 1 + rand_r(&seed) % 16) +
                  1;
        for (int v = 0; v < nvars; v++) {
            const char *name = names[rand_r(&seed) % nn];
            if (rand_r(&seed) % 8 == 0) { /* a long or binary value */
                size_t n = (size_t)(rand_r(&seed) % 300);
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s=", name);
                for (size_t i = 0; i < n && len < sizeof(buf) - 1; i++)
                    buf[len++] = (char)(rand_r(&seed) % 256);
                buf[len++] = '\0';
            } else {
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s=%s", name,
                                        values[rand_r(&seed) % nv]) +
                       1;
            }
        }
        size_t cut = len ? (size_t)rand_r(&seed) % (len + 1) : 0;
        int r = discovery_parse_environ(buf, rand_r(&seed) % 4 ? len : cut, &node1, &ri);
        check_invariants(r, &ri);
        ranks += r == 1;
        grouped += r == 1 && ri.tp_size && ri.dp_size && ri.pp_size;
    }
    printf("# random environments: %d ranks, %d with parallel groups, of 20000\n", ranks, grouped);
    assert_true(ranks > 1000 && grouped > 20); /* the generator reaches the interesting cases */
}

/* The process table's entry points: checked options, a three-way result. */
static void test_environ_config_and_result(void **state)
{
    struct environ_config c;
    struct rank_info ri;
    char slots[4][8];
    size_t n;

    assert_int_equal(environ_config_init(&c, &node1), 0);
    assert_string_equal(c.node, "node1");
    assert_int_equal(c.njob_vars, 4);
    assert_string_equal(c.job_vars[2], "SLURM_JOB_ID");
    struct discovery_options bad_node = {.node = "a\nb"};
    assert_int_equal(environ_config_init(&c, &bad_node), -EINVAL);
    assert_int_equal(environ_config_init(&c, NULL), 0);
    assert_string_equal(c.node, "");

    assert_int_equal(environ_split_list(" a ,, b\t,", &slots[0][0], 8, 4, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(slots[0], "a");
    assert_string_equal(slots[1], "b");
    assert_int_equal(environ_split_list("a,b,c,d,e", &slots[0][0], 8, 4, &n), -EINVAL);
    assert_int_equal(environ_split_list("eightchr", &slots[0][0], 8, 4, &n), -EINVAL);
    assert_int_equal(environ_split_list("", &slots[0][0], 8, 4, &n), 0);
    assert_int_equal(n, 0);

    assert_int_equal(environ_config_init(&c, &node1), 0);
    assert_int_equal(environ_parse("PATH=/bin", 10, &c, &ri), ENVIRON_NOT_CANDIDATE);
    assert_int_equal(environ_parse(NULL, 0, &c, &ri), ENVIRON_NOT_CANDIDATE);
    static const char bad[] = "RANK=abc\0WORLD_SIZE=8";
    assert_int_equal(environ_parse(bad, sizeof(bad), &c, &ri), ENVIRON_REJECTED);
    assert_string_equal(ri.reason, "RANK is not a number");
    static const char good[] = "RANK=1\0WORLD_SIZE=8\0ARGUS_JOB=j";
    assert_int_equal(environ_parse(good, sizeof(good), &c, &ri), ENVIRON_RANK);
    assert_int_equal(ri.rank, 1);
    assert_string_equal(ri.node, "node1");
}

/* srun, mpirun and hydra give the rank in their own variables. */
static void test_parse_launchers(void **state)
{
    struct rank_info ri;

    /* srun: SLURM_PROCID/SLURM_NTASKS, job SLURM_JOB_ID.SLURM_STEP_ID */
    assert_int_equal(PARSE(&ri, "SLURM_JOB_ID=4242", "SLURM_STEP_ID=3", "SLURM_PROCID=5",
                           "SLURM_NTASKS=8", "SLURM_LOCALID=1"),
                     1);
    assert_int_equal(ri.rank, 5);
    assert_int_equal(ri.world_size, 8);
    assert_int_equal(ri.local_rank, 1);
    assert_string_equal(ri.job, "4242.3");
    assert_string_equal(ri.job_source, "SLURM_JOB_ID");
    assert_string_equal(ri.rank_source, "SLURM_PROCID");
    assert_true(ri.flags & DISCOVERY_RANK_FROM_LAUNCHER);
    assert_int_equal(ri.gpu, 1);
    /* a batch script (no step) is not a rank; it is in a job */
    assert_int_equal(PARSE(&ri, "SLURM_JOB_ID=4242", "SLURM_PROCID=0", "SLURM_NTASKS=8"), 0);
    assert_string_equal(ri.reason, "no RANK or LOCAL_RANK");
    assert_true(ri.flags & DISCOVERY_JOB_HINT);
    assert_int_equal(PARSE(&ri, "SLURM_STEP_ID=0", "SLURM_PROCID=0"), 0);
    assert_string_equal(ri.reason, "SLURM_PROCID without SLURM_NTASKS");
    assert_int_equal(PARSE(&ri, "SLURM_STEP_ID=0", "SLURM_PROCID=8", "SLURM_NTASKS=8"), 0);
    assert_string_equal(ri.reason, "SLURM_PROCID >= SLURM_NTASKS");
    assert_int_equal(PARSE(&ri, "SLURM_STEP_ID=0", "SLURM_PROCID=x", "SLURM_NTASKS=8"), 0);
    assert_string_equal(ri.reason, "SLURM_PROCID is not a number");
    assert_int_equal(PARSE(&ri, "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=0"), 0);
    assert_string_equal(ri.reason, "SLURM_NTASKS is not a number in 1..2^24");
    /* torchrun under srun: RANK wins over the launcher's task id */
    assert_int_equal(PARSE(&ri, "SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_PROCID=1",
                           "SLURM_NTASKS=2", "RANK=6", "LOCAL_RANK=2", "WORLD_SIZE=8"),
                     1);
    assert_int_equal(ri.rank, 6);
    assert_string_equal(ri.rank_source, "RANK");
    assert_false(ri.flags & DISCOVERY_RANK_FROM_LAUNCHER);
    assert_string_equal(ri.job, "7.0");

    /* Open MPI's mpirun, job from PMIX_NAMESPACE */
    assert_int_equal(PARSE(&ri, "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
                           "OMPI_COMM_WORLD_LOCAL_RANK=1", "PMIX_NAMESPACE=prterun-h-12@1"),
                     1);
    assert_int_equal(ri.rank, 3);
    assert_int_equal(ri.world_size, 4);
    assert_int_equal(ri.local_rank, 1);
    assert_string_equal(ri.job, "prterun-h-12@1");
    assert_string_equal(ri.rank_source, "OMPI_COMM_WORLD_RANK");
    assert_int_equal(PARSE(&ri, "OMPI_COMM_WORLD_RANK=3"), 0);
    assert_string_equal(ri.reason, "OMPI_COMM_WORLD_RANK without OMPI_COMM_WORLD_SIZE");
    assert_int_equal(PARSE(&ri, "OMPI_COMM_WORLD_RANK=4", "OMPI_COMM_WORLD_SIZE=4"), 0);
    assert_string_equal(ri.reason, "OMPI_COMM_WORLD_RANK >= OMPI_COMM_WORLD_SIZE");

    /* MPICH / Intel MPI hydra */
    assert_int_equal(PARSE(&ri, "PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=0",
                           "MASTER_ADDR=10.1.1.1", "MASTER_PORT=29500"),
                     1);
    assert_int_equal(ri.rank, 2);
    assert_int_equal(ri.local_rank, 0);
    assert_string_equal(ri.job, "torch-10.1.1.1:29500");
    assert_string_equal(ri.rank_source, "PMI_RANK");
    assert_int_equal(PARSE(&ri, "PMI_RANK=2", "PMI_SIZE=two"), 0);
    assert_string_equal(ri.reason, "PMI_SIZE is not a number in 1..2^24");
    /* precedence: srun before mpirun before hydra */
    assert_int_equal(PARSE(&ri, "PMI_RANK=2", "PMI_SIZE=4", "OMPI_COMM_WORLD_RANK=1",
                           "OMPI_COMM_WORLD_SIZE=4", "SLURM_STEP_ID=1", "SLURM_PROCID=0",
                           "SLURM_NTASKS=4"),
                     1);
    assert_int_equal(ri.rank, 0);
    assert_string_equal(ri.rank_source, "SLURM_PROCID");
}

/* A rank known from its communicator: the rest from the environment. */
static void test_parse_comm(void **state)
{
    struct environ_config c;
    struct rank_info ri;
    static const char spawn[] = "PATH=/bin\0ARGUS_JOB=ddp\0MASTER_PORT=29500";
    static const char bare[] = "PATH=/bin";
    static const char local[] = "LOCAL_RANK=1\0TORCHELASTIC_RUN_ID=te";

    assert_int_equal(environ_config_init(&c, &node1), 0);
    assert_int_equal(environ_parse(spawn, sizeof(spawn), &c, &ri), ENVIRON_NOT_CANDIDATE);
    assert_true(ri.flags & DISCOVERY_JOB_HINT);
    assert_int_equal(environ_parse(bare, sizeof(bare), &c, &ri), ENVIRON_NOT_CANDIDATE);
    assert_false(ri.flags & DISCOVERY_JOB_HINT);

    assert_int_equal(environ_parse_comm(spawn, sizeof(spawn), &c, 2, 4, &ri), ENVIRON_RANK);
    assert_int_equal(ri.rank, 2);
    assert_int_equal(ri.world_size, 4);
    assert_int_equal(ri.local_rank, 2); /* unknown: one node */
    assert_true(ri.flags & DISCOVERY_LOCAL_RANK_UNKNOWN);
    assert_true(ri.flags & DISCOVERY_RANK_FROM_COMM);
    assert_string_equal(ri.job, "ddp");
    assert_string_equal(ri.rank_source, "communicator");
    assert_string_equal(ri.node, "node1");
    assert_int_equal(environ_parse_comm(bare, sizeof(bare), &c, 0, 1, &ri), ENVIRON_RANK);
    assert_string_equal(ri.job_source, "default");
    assert_int_equal(environ_parse_comm(local, sizeof(local), &c, 5, 8, &ri), ENVIRON_RANK);
    assert_int_equal(ri.local_rank, 1);
    assert_string_equal(ri.job, "te");
    assert_int_equal(environ_parse_comm(bare, sizeof(bare), &c, 4, 4, &ri), ENVIRON_REJECTED);
    assert_non_null(ri.reason);
    assert_int_equal(environ_parse_comm(bare, sizeof(bare), &c, 0, 0, &ri), ENVIRON_REJECTED);
    assert_int_equal(environ_parse_comm(NULL, 0, &c, 0, DISCOVERY_WORLD_MAX + 1, &ri),
                     ENVIRON_REJECTED);
    static const char badjob[] = "ARGUS_JOB=a\tb";
    assert_int_equal(environ_parse_comm(badjob, sizeof(badjob), &c, 0, 2, &ri), ENVIRON_REJECTED);
    assert_non_null(strstr(ri.reason, "job id"));
}

/* torchelastic's attempt: a restart is a new epoch of the same job. */
static void test_parse_restart(void **state)
{
    struct environ_config c;
    struct rank_info ri;
    static const char spawned[] = "TORCHELASTIC_RESTART_COUNT=3\0ARGUS_JOB=j";

    assert_int_equal(PARSE(&ri, "RANK=0", "WORLD_SIZE=2", "TORCHELASTIC_RESTART_COUNT=2"), 1);
    assert_int_equal(ri.restart, 2);
    assert_null(ri.note);
    assert_int_equal(PARSE(&ri, "RANK=0", "WORLD_SIZE=2"), 1);
    assert_int_equal(ri.restart, 0);
    /* a malformed count: the rank stays, restart 0, with a note */
    assert_int_equal(PARSE(&ri, "RANK=1", "WORLD_SIZE=2", "TORCHELASTIC_RESTART_COUNT=-1"), 1);
    assert_int_equal(ri.restart, 0);
    assert_non_null(strstr(ri.note, "TORCHELASTIC_RESTART_COUNT"));
    assert_int_equal(PARSE(&ri, "RANK=1", "WORLD_SIZE=2", "TORCHELASTIC_RESTART_COUNT=99999999999"),
                     1);
    assert_int_equal(ri.restart, 0);
    /* a rank from its communicator reads it too */
    assert_int_equal(environ_config_init(&c, &node1), 0);
    assert_int_equal(environ_parse_comm(spawned, sizeof(spawned), &c, 1, 2, &ri), ENVIRON_RANK);
    assert_int_equal(ri.restart, 3);
}

/* The job a store's address names: as MASTER_ADDR/MASTER_PORT would. */
static void test_rendezvous_job(void **state)
{
    struct environ_config c;
    struct rank_info ri;
    char job[DISCOVERY_JOB_MAX + 1], host[80];

    assert_int_equal(environ_config_init(&c, &node1), 0);
    assert_int_equal(environ_rendezvous_job(&c, "10.0.0.1", 29500, job, sizeof(job)), 0);
    assert_string_equal(job, "torch-10.0.0.1:29500");
    /* the same name a rank with MASTER_ADDR at exec gets */
    assert_int_equal(
        PARSE(&ri, "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "RANK=0", "WORLD_SIZE=1"), 1);
    assert_string_equal(ri.job, job);
    assert_int_equal(environ_rendezvous_job(&c, "master-0.train.svc", 1, job, sizeof(job)), 0);
    assert_string_equal(job, "torch-master-0.train.svc:1");
    /* loopback: the node, as every single-node job would share it */
    assert_int_equal(environ_rendezvous_job(&c, "127.0.0.1", 29501, job, sizeof(job)), 0);
    assert_string_equal(job, "torch-node1:29501");
    assert_int_equal(environ_rendezvous_job(&c, "localhost", 29501, job, sizeof(job)), 0);
    assert_string_equal(job, "torch-node1:29501");
    /* unusable addresses */
    assert_int_equal(environ_rendezvous_job(&c, NULL, 29500, job, sizeof(job)), -EINVAL);
    assert_int_equal(environ_rendezvous_job(&c, "", 29500, job, sizeof(job)), -EINVAL);
    assert_int_equal(environ_rendezvous_job(&c, "10.0.0.1", 0, job, sizeof(job)), -EINVAL);
    assert_int_equal(environ_rendezvous_job(&c, "a\tb", 29500, job, sizeof(job)), -EINVAL);
    memset(host, 'h', 65);
    host[65] = 0;
    assert_int_equal(environ_rendezvous_job(&c, host, 29500, job, sizeof(job)), -EINVAL);
    host[64] = 0;
    assert_int_equal(environ_rendezvous_job(&c, host, 65535, job, sizeof(job)), 0);
    assert_int_equal(strlen(job), strlen("torch-:65535") + 64);
    /* where a job came from */
    assert_int_equal(PARSE(&ri, "RANK=0", "WORLD_SIZE=1", "ARGUS_JOB=x"), 1);
    assert_true(environ_job_from_variable(&ri));
    assert_int_equal(PARSE(&ri, "RANK=0", "WORLD_SIZE=1"), 1);
    assert_false(environ_job_from_variable(&ri));
    assert_int_equal(
        PARSE(&ri, "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "RANK=0", "WORLD_SIZE=1"), 1);
    assert_false(environ_job_from_variable(&ri));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_not_rank),
        cmocka_unit_test(test_parse_garbage_numbers),
        cmocka_unit_test(test_parse_local_rank_only),
        cmocka_unit_test(test_parse_job_precedence),
        cmocka_unit_test(test_parse_job_validation),
        cmocka_unit_test(test_parse_groups_derived),
        cmocka_unit_test(test_parse_groups_explicit_and_bad),
        cmocka_unit_test(test_parse_cuda_visible_devices),
        cmocka_unit_test(test_parse_random),
        cmocka_unit_test(test_environ_config_and_result),
        cmocka_unit_test(test_parse_launchers),
        cmocka_unit_test(test_parse_comm),
        cmocka_unit_test(test_parse_restart),
        cmocka_unit_test(test_rendezvous_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
