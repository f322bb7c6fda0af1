/* Benchmark of the spool: appends of 16 KiB records under each fsync policy
 * (appends/s, MB/s, CPU ns per MB), then reopen (scan and check everything),
 * replay and ack. The spool lives in $ARGUS_BENCH_DIR or /tmp; each run
 * stops after RECORDS records (or $ARGUS_BENCH_RECORDS) or SECONDS seconds, whichever comes first.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/delivery/spool.h"
#include "common/clock.h"

#define RECORD (16 * 1024)
#define RECORDS 4096 /* 64 MiB; $ARGUS_BENCH_RECORDS overrides */
#define SECONDS 3

struct cpu {
    uint64_t user, sys;
};

static uint64_t tv_ns(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * NSEC_PER_SEC + (uint64_t)tv.tv_usec * NSEC_PER_USEC;
}

static struct cpu cpu_now(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (struct cpu){tv_ns(ru.ru_utime), tv_ns(ru.ru_stime)};
}

static struct cpu cpu_since(struct cpu c0)
{
    struct cpu c = cpu_now();

    return (struct cpu){c.user - c0.user, c.sys - c0.sys};
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

/* CPU per MB of the whole process: user + system is exact, the split between
 * them is sampled by the kernel (approximate on short runs). System time is
 * the kernel's: page-cache copies, fsync, unlink. */
static void report(const char *what, uint64_t n, uint64_t bytes, uint64_t wall, struct cpu cpu)
{
    double s = (double)wall / 1e9, mb = (double)bytes / 1e6;

    printf("%-36s %7.0f ops/s %7.1f MB/s  CPU %8.0f ns/MB (user ~%6.0f sys ~%8.0f)  %" PRIu64
           " x %d B in %.2f s\n",
           what, (double)n / s, mb / s, (double)(cpu.user + cpu.sys) / mb, (double)cpu.user / mb,
           (double)cpu.sys / mb, n, RECORD, s);
}

/* Append until RECORDS or SECONDS; returns the records appended. */
static uint64_t records = RECORDS;

static uint64_t bench_append(struct spool *s, const char *what, const uint8_t *buf)
{
    uint64_t t0 = clock_mono_ns(), n = 0, t1 = t0, seq;
    struct cpu c0 = cpu_now();

    while (n < records && t1 - t0 < SECONDS * NSEC_PER_SEC) {
        if (spool_append(s, buf, RECORD, &seq) != 0) {
            fprintf(stderr, "append failed\n");
            break;
        }
        spool_tick(s, t1);
        n++;
        t1 = clock_mono_ns();
    }
    report(what, n, n * RECORD, t1 - t0, cpu_since(c0));
    return n;
}

static void bench_replay(const char *dir, const struct spool_options *o, uint64_t n)
{
    struct spool *s;
    uint64_t t0 = clock_mono_ns(), seq = 0, got = 0, t1;
    struct cpu c0 = cpu_now();
    const void *data;
    size_t len;

    if (spool_open(dir, o, &s) != 0)
        return;
    t1 = clock_mono_ns();
    report("  reopen (scan + crc every record)", n, n * RECORD, t1 - t0, cpu_since(c0));
    t0 = clock_mono_ns();
    c0 = cpu_now();
    while (spool_read(s, seq, &seq, &data, &len) == 1)
        got++;
    report("  replay (spool_read)", got, got * RECORD, clock_mono_ns() - t0, cpu_since(c0));
    t0 = clock_mono_ns();
    c0 = cpu_now();
    for (uint64_t i = 1; i <= got; i++)
        spool_ack(s, i);
    report("  ack one by one (deletes segments)", got, got * RECORD, clock_mono_ns() - t0,
           cpu_since(c0));
    spool_close(s);
}

int main(void)
{
    const char *base = getenv("ARGUS_BENCH_DIR") ? getenv("ARGUS_BENCH_DIR") : "/tmp";
    const struct {
        const char *name;
        struct spool_options o;
    } runs[] = {
        {"append fsync=segment (16 MiB)", {.fsync = SPOOL_FSYNC_SEGMENT}},
        {"append fsync=interval (1 s)", {.fsync = SPOOL_FSYNC_INTERVAL}},
        {"append fsync=always", {.fsync = SPOOL_FSYNC_ALWAYS}},
        {"append interval, cap 16 MiB (drops)",
         {.fsync = SPOOL_FSYNC_INTERVAL, .cap_bytes = 16 << 20}},
    };
    uint8_t *buf = malloc(RECORD);
    char dir[256];

    if (getenv("ARGUS_BENCH_RECORDS"))
        records = strtoull(getenv("ARGUS_BENCH_RECORDS"), NULL, 10);
    for (size_t i = 0; i < RECORD; i++)
        buf[i] = (uint8_t)(i * 131 + (i >> 9));
    for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
        struct spool *s;
        uint64_t n;
        snprintf(dir, sizeof(dir), "%s/bench_spool.%d.%zu", base, (int)getpid(), r);
        if (spool_open(dir, &runs[r].o, &s) != 0) {
            fprintf(stderr, "cannot open a spool in %s\n", dir);
            return 1;
        }
        n = bench_append(s, runs[r].name, buf);
        spool_close(s);
        if (r == 0)
            bench_replay(dir, &runs[r].o, n);
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    free(buf);
    return 0;
}
