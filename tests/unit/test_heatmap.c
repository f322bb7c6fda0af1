/* The heatmap that points at the rank: own time (step less time inside
 * collectives) separates a culprit from the coupled peers that wait for it,
 * ratios are to the peer group's median, rows aggregate by node with the
 * suspect drawn on top, and the SVG escapes what comes from the data. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/heatmap.h"
#include "common/heatmap_svg.h"
#include "common/heatmap_wire.h"

#define MS 1000000ull

static char *render(struct heatmap *h, uint32_t rows, uint32_t cols)
{
    struct heatmap_svg_options o = {.title = "job <x> & y", .max_rows = rows, .max_cols = cols};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_int_equal(heatmap_write_svg(h, &o, f), 0);
    fclose(f);
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* A step of ranks coupled by one collective per group of `tp`: each
 * computes own[r] ns, then waits in the collective until the group's last
 * arrives, plus 1 ms of transfer. Fills the heatmap with own time or step
 * time (the time the group shares). */
static void coupled_step(struct heatmap *h, uint32_t n, uint32_t tp, uint64_t step,
                         const uint64_t *own, bool step_metric)
{
    for (uint32_t g = 0; g < n; g += tp) {
        uint64_t last = 0, t0 = 1000 * MS * step;
        for (uint32_t r = g; r < g + tp; r++)
            last = own[r] > last ? own[r] : last;
        for (uint32_t r = g; r < g + tp; r++) {
            Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;
            Argus__V1__Collective c = ARGUS__V1__COLLECTIVE__INIT, *cp = &c;
            s.rank = r;
            s.step = step;
            s.start_unix_ns = t0;
            s.duration_ns = last + MS;
            c.gpu_start_unix_ns = t0 + own[r];
            c.gpu_end_unix_ns = t0 + last + MS;
            s.collectives = &cp;
            s.n_collectives = 1;
            heatmap_set(h, r, step, step_metric ? s.duration_ns : heatmap_own_ns(&s));
        }
    }
}

static struct heatmap *coupled(uint32_t n, uint32_t tp, uint32_t culprit, bool step_metric)
{
    struct heatmap *h = heatmap_new(n, 0, 30);
    uint64_t *own = calloc(n, sizeof(*own));
    char node[32];

    for (uint32_t r = 0; r < n; r++) {
        snprintf(node, sizeof(node), "node%03u", r / 8);
        assert_int_equal(heatmap_set_rank(h, r, node, 0), 0);
    }
    for (uint64_t s = 0; s < 30; s++) {
        for (uint32_t r = 0; r < n; r++)
            own[r] = (100 + (r * 7 + s * 3) % 5) * MS; /* 100-104 ms */
        if (s >= 10)
            own[culprit] = own[culprit] * 16 / 10;
        coupled_step(h, n, tp, s, own, step_metric);
    }
    free(own);
    assert_int_equal(heatmap_finish(h), 0);
    return h;
}

static void test_own_time(void **state)
{
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__Collective c[4] = {ARGUS__V1__COLLECTIVE__INIT, ARGUS__V1__COLLECTIVE__INIT,
                                  ARGUS__V1__COLLECTIVE__INIT, ARGUS__V1__COLLECTIVE__INIT};
    Argus__V1__Collective *cp[4] = {&c[0], &c[1], &c[2], &c[3]};

    s.start_unix_ns = 1000;
    s.duration_ns = 100;
    assert_int_equal(heatmap_own_ns(&s), 100); /* no collectives: all its own */
    c[0].gpu_start_unix_ns = 1010, c[0].gpu_end_unix_ns = 1030;
    c[1].gpu_start_unix_ns = 1020, c[1].gpu_end_unix_ns = 1040;        /* overlaps c[0] */
    c[2].host_arrival_unix_ns = 1090, c[2].host_return_unix_ns = 1200; /* clipped at 1100 */
    c[3].host_arrival_unix_ns = 1050;                                  /* untimed */
    s.collectives = cp;
    s.n_collectives = 4;
    assert_int_equal(heatmap_own_ns(&s), 100 - 30 - 10);
}

/* The packed-bytes reader gives what heatmap_own_ns gives on the unpacked
 * record, skipping kernels and phases; broken bytes are an error. */
static void test_wire(void **state)
{
    Argus__V1__StepRecord s = ARGUS__V1__STEP_RECORD__INIT;
    Argus__V1__Collective c[70], *cp[70];
    Argus__V1__Phase ph = ARGUS__V1__PHASE__INIT, *php = &ph;
    Argus__V1__Cluster cl = ARGUS__V1__CLUSTER__INIT, *clp = &cl;
    Argus__V1__KernelGroup kg = ARGUS__V1__KERNEL_GROUP__INIT, *kgp = &kg;
    struct heatmap_wire_cell cell;

    for (int i = 0; i < 70; i++) { /* more than the decoder's stack holds */
        argus__v1__collective__init(&c[i]);
        c[i].name_id = 0xfeedULL << 40;
        c[i].gpu_start_unix_ns = 5000 + 40 * i;
        c[i].gpu_end_unix_ns = 5000 + 40 * i + (i % 3 ? 20 : 0); /* every third untimed */
        c[i].host_arrival_unix_ns = c[i].gpu_start_unix_ns - 5;
        c[i].host_return_unix_ns = i % 3 ? 0 : c[i].host_arrival_unix_ns + 10;
        cp[i] = &c[i];
    }
    s.job = "j", s.rank = 77, s.step = 123456789, s.start_unix_ns = 4000, s.duration_ns = 4000;
    s.collectives = cp, s.n_collectives = 70;
    ph.name_id = 9, ph.duration_ns = 100, s.phases = &php, s.n_phases = 1;
    cl.count = 3, kg.clusters = &clp, kg.n_clusters = 1, s.kernels = &kgp, s.n_kernels = 1;
    size_t len = argus__v1__step_record__get_packed_size(&s);
    uint8_t *buf = malloc(len);
    argus__v1__step_record__pack(&s, buf);
    assert_int_equal(heatmap_wire_cell(buf, len, &cell), 0);
    assert_int_equal(cell.rank, 77);
    assert_int_equal(cell.step, 123456789);
    assert_int_equal(cell.duration_ns, 4000);
    assert_int_equal(cell.own_ns, heatmap_own_ns(&s));
    assert_true(cell.own_ns < 4000 - 46 * 20);
    assert_int_equal(heatmap_wire_cell(buf, len - 1, &cell), -EBADMSG); /* cut inside a field */
    buf[0] = 0x07;                                                      /* wire type 7 */
    assert_int_equal(heatmap_wire_cell(buf, len, &cell), -EBADMSG);
    free(buf);
}

/* Own time: the culprit alone is red, the TP peers that wait for it are
 * white. Step time: the whole group shares the culprit's ratio. */
static void test_culprit_not_peers(void **state)
{
    struct heatmap *own = coupled(64, 8, 21, false), *step = coupled(64, 8, 21, true);

    for (uint64_t s = 10; s < 30; s++) {
        assert_true(heatmap_ratio(own, 21, s) > 1.45);
        for (uint32_t r = 16; r < 24; r++)
            if (r != 21)
                assert_true(heatmap_ratio(own, r, s) < 1.08);
        assert_true(heatmap_ratio(step, 20, s) > 1.45); /* a peer: as red as the culprit */
    }
    assert_true(heatmap_ratio(own, 21, 5) < 1.08); /* before the fault */
    heatmap_free(own);
    heatmap_free(step);
}

/* Ratios go against the rank's own group: a slower pipeline stage is not a
 * straggler. */
static void test_groups(void **state)
{
    struct heatmap *h = heatmap_new(8, 0, 1);

    for (uint32_t r = 0; r < 8; r++) {
        heatmap_set_rank(h, r, "n", r < 4 ? 0 : 1);
        heatmap_set(h, r, 0, (r < 4 ? 100 : 300) + (r == 6 ? 300 : 0));
    }
    assert_int_equal(heatmap_finish(h), 0);
    assert_true(heatmap_ratio(h, 0, 0) > 0.99 && heatmap_ratio(h, 0, 0) < 1.01);
    assert_true(heatmap_ratio(h, 4, 0) > 0.99 && heatmap_ratio(h, 4, 0) < 1.01);
    assert_true(heatmap_ratio(h, 6, 0) > 1.99);
    heatmap_free(h);
}

/* 1024 ranks on 128 nodes into 64 rows: two nodes a row, the worst of
 * their ranks; the culprit's row stands out, no other does; the suspect is
 * drawn on top with its label, and the onset is where it turned red. */
static void test_aggregate(void **state)
{
    struct heatmap *h = coupled(1024, 8, 500, false);
    Argus__V1__Report rep = ARGUS__V1__REPORT__INIT;
    Argus__V1__Suspect sus[3] = {ARGUS__V1__SUSPECT__INIT, ARGUS__V1__SUSPECT__INIT,
                                 ARGUS__V1__SUSPECT__INIT};
    Argus__V1__Suspect *sp[3] = {&sus[0], &sus[1], &sus[2]};
    uint32_t n, hot = 0;
    struct heatmap_row *rows = heatmap_rows(h, 64, &n);

    assert_int_equal(n, 64);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(rows[i].nodes, 2);
        assert_int_equal(rows[i].last - rows[i].first, 15);
        double worst = heatmap_max_ratio(h, rows[i].first, rows[i].last, 10, 29);
        if (worst > 1.45) {
            hot++;
            assert_true(rows[i].first <= 500 && 500 <= rows[i].last);
        } else {
            assert_true(worst < 1.08);
        }
    }
    assert_int_equal(hot, 1);
    free(rows);
    sus[0].rank = 500, sus[0].pages = true, sus[0].cause = ARGUS__V1__CAUSE__CAUSE_COMPUTE;
    sus[1].rank = 500, sus[1].pages = true; /* the same rank again: marked once */
    sus[2].rank = 7, sus[2].pages = false;  /* a finding: not marked */
    rep.suspects = sp;
    rep.n_suspects = 3;
    rep.from_step = 2;
    assert_int_equal(heatmap_add_report(h, &rep), 0);
    assert_int_equal(heatmap_nsuspects(h), 1);
    assert_int_equal(heatmap_finish(h), 0);
    uint64_t onset;
    assert_true(heatmap_onset(h, &onset));
    assert_int_equal(onset, 10);
    char *svg = render(h, 64, 400);
    assert_int_equal(count(svg, "<text class=\"suspect\""), 1);
    assert_non_null(strstr(svg, ">rank 500 COMPUTE</text>"));
    assert_non_null(strstr(svg, "onset: step 10"));
    assert_non_null(strstr(svg, "rank 500 (node062) steps 10-"));
    assert_non_null(strstr(svg, "job &lt;x&gt; &amp; y"));
    assert_true(strlen(svg) < 200000); /* white runs are the background */
    free(svg);
    heatmap_free(h);
}

static void test_per_rank_svg(void **state)
{
    struct heatmap *h = heatmap_new(4, 10, 3);
    char color[8];

    heatmap_set_rank(h, 0, "<b>\"evil\"</b>", 0);
    heatmap_set_rank(h, 1, "<b>\"evil\"</b>", 0);
    for (uint32_t r = 0; r < 4; r++)
        for (uint64_t s = 10; s < 13; s++)
            if (!(r == 3 && s == 12))
                heatmap_set(h, r, s, r == 2 ? 2000 : 1000);
    heatmap_set(h, 9, 10, 1); /* out of range: ignored */
    assert_int_equal(heatmap_add_suspect(h, 2, "rank 2 <COMPUTE>"), 0);
    assert_int_equal(heatmap_add_suspect(h, 9, "x"), -ERANGE);
    assert_int_equal(heatmap_finish(h), 0);
    char *svg = render(h, 256, 400);
    assert_non_null(strstr(svg, "&lt;b&gt;&quot;evil&quot;&lt;/b&gt;"));
    assert_null(strstr(svg, "<b>"));
    assert_non_null(strstr(svg, "rank 2 &lt;COMPUTE&gt;"));
    assert_non_null(strstr(svg, "rank 2 steps 10-12: 2.00x"));          /* one run of three steps */
    assert_int_equal(count(svg, heatmap_svg_color(2.0, color)), 1 + 1); /* the run, the scale */
    assert_non_null(strstr(svg, "rank 3 steps 12-12: 0.00x"));          /* no record: grey */
    assert_non_null(strstr(svg, "onset: step 10"));
    free(svg);
    heatmap_free(h);
    assert_null(heatmap_new(0, 0, 10));
    assert_null(heatmap_new(1u << 20, 0, 1u << 20));
}

/* The text elements of an SVG, read back: position, font size, anchor,
 * class and the characters shown (an entity counts as one). */
struct svg_text {
    double x, y, fs;
    char anchor, cls[32], text[128];
    size_t chars;
};

static double attr_num(const char *tag, const char *name, double dflt)
{
    char key[32];
    snprintf(key, sizeof(key), " %s=\"", name);
    const char *p = strstr(tag, key);
    return p ? strtod(p + strlen(key), NULL) : dflt;
}

static void attr_str(const char *tag, const char *name, char *out, size_t cap)
{
    char key[32];
    snprintf(key, sizeof(key), " %s=\"", name);
    const char *p = strstr(tag, key);
    size_t n = 0;
    if (p)
        for (p += strlen(key); *p && *p != '"' && n + 1 < cap; p++)
            out[n++] = *p;
    out[n] = 0;
}

/* Every <text> that is not rotated; *n of them (caller frees). */
static struct svg_text *svg_texts(const char *svg, size_t *n)
{
    struct svg_text *t = calloc(4096, sizeof(*t));
    *n = 0;
    for (const char *p = svg; (p = strstr(p, "<text")) && *n < 4096; p++) {
        const char *gt = strchr(p, '>'), *end = strstr(p, "</text>");
        char tag[512], anchor[16];
        assert_non_null(gt);
        assert_non_null(end);
        snprintf(tag, sizeof(tag), "%.*s", (int)(gt - p), p);
        if (strstr(tag, "transform="))
            continue;
        struct svg_text *e = &t[(*n)++];
        e->x = attr_num(tag, "x", 0);
        e->y = attr_num(tag, "y", 0);
        e->fs = attr_num(tag, "font-size", 11);
        attr_str(tag, "text-anchor", anchor, sizeof(anchor));
        e->anchor = anchor[0] ? anchor[0] : 's';
        attr_str(tag, "class", e->cls, sizeof(e->cls));
        snprintf(e->text, sizeof(e->text), "%.*s", (int)(end - gt - 1), gt + 1);
        for (const char *c = gt + 1; c < end; c++, e->chars++)
            if (*c == '&')
                c = strchr(c, ';');
    }
    return t;
}

/* The box of a text: 0.6 font size a character, one font size high. */
static void text_box(const struct svg_text *e, double b[4])
{
    double w = (double)e->chars * e->fs * 0.6;
    b[0] = e->anchor == 'e' ? e->x - w : e->anchor == 'm' ? e->x - w / 2 : e->x;
    b[1] = b[0] + w;
    b[2] = e->y - 0.8 * e->fs;
    b[3] = e->y + 0.2 * e->fs;
}

/* The tick labels of class cls are multiples of one 1-2-5 x 10^k spacing. */
static void assert_round_ticks(const struct svg_text *t, size_t n, const char *cls)
{
    unsigned long long v[256], d = 0;
    size_t k = 0;

    for (size_t i = 0; i < n && k < 256; i++)
        if (strcmp(t[i].cls, cls) == 0)
            v[k++] = strtoull(t[i].text, NULL, 10);
    assert_true(k >= 4);
    for (size_t i = 1; i < k; i++) {
        unsigned long long diff = v[i] > v[i - 1] ? v[i] - v[i - 1] : 0;
        assert_true(diff > 0); /* ascending */
        d = !d || diff < d ? diff : d;
    }
    unsigned long long m = d;
    while (m % 10 == 0)
        m /= 10;
    assert_true(m == 1 || m == 2 || m == 5);
    for (size_t i = 0; i < k; i++)
        assert_int_equal(v[i] % d, 0);
}

/* At 4,096 and 10,240 ranks (8 a node) with the culprit on a known node:
 * the node label beside the culprit's strip names its own node, tick labels
 * are round, and no two labels cover each other. */
static void check_big(uint32_t nranks, uint32_t culprit)
{
    struct heatmap *h = coupled(nranks, 8, culprit, false);
    char label[32], node[32];
    size_t n;

    snprintf(label, sizeof(label), "rank %u COMPUTE", culprit);
    snprintf(node, sizeof(node), "node%03u", culprit / 8);
    assert_int_equal(heatmap_add_suspect(h, culprit, label), 0);
    assert_int_equal(heatmap_finish(h), 0);
    char *svg = render(h, 256, 400);
    const char *strip = strstr(svg, "<rect class=\"suspect\"");
    assert_non_null(strip);
    double cy = attr_num(strip, "y", 0) + attr_num(strip, "height", 0) / 2;
    struct svg_text *t = svg_texts(svg, &n), *beside = NULL, *sus = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(t[i].cls, "node", 4) == 0 &&
            (!beside || fabs(t[i].y - 4 - cy) < fabs(beside->y - 4 - cy)))
            beside = &t[i];
        if (strcmp(t[i].cls, "suspect") == 0)
            sus = &t[i];
    }
    assert_non_null(beside);
    assert_string_equal(beside->text, node);
    assert_non_null(sus);
    assert_string_equal(sus->text, label);
    assert_true(fabs(sus->y - 4 - cy) < 3);
    assert_round_ticks(t, n, "rank");
    assert_round_ticks(t, n, "step");
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++) {
            double a[4], b[4];
            text_box(&t[i], a);
            text_box(&t[k], b);
            if (a[0] < b[1] && b[0] < a[1] && a[2] < b[3] && b[2] < a[3])
                fail_msg("\"%s\" (%.1f,%.1f) covers \"%s\" (%.1f,%.1f)", t[i].text, t[i].x, t[i].y,
                         t[k].text, t[k].x, t[k].y);
        }
    free(t);
    free(svg);
    heatmap_free(h);
}

static void test_big_labels(void **state)
{
    check_big(4096, 256 * 8 + 3);  /* node256 */
    check_big(10240, 777 * 8 + 5); /* node777 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_time),          cmocka_unit_test(test_wire),
        cmocka_unit_test(test_culprit_not_peers), cmocka_unit_test(test_groups),
        cmocka_unit_test(test_aggregate),         cmocka_unit_test(test_per_rank_svg),
        cmocka_unit_test(test_big_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
