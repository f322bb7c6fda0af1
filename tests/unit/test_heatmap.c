/* The heatmap: a slow rank's cells are red, the median white, missing grey,
 * and a large grid is binned to the cell limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/argusctl/heatmap.h"

static char *render(struct heatmap *h, uint32_t rows, uint32_t cols)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_int_equal(heatmap_write_svg(h, "job <x> & y", rows, cols, f), 0);
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

static void test_colors(void **state)
{
    struct heatmap *h = heatmap_new(4, 10, 3);

    for (uint32_t r = 0; r < 4; r++)
        for (uint64_t s = 10; s < 13; s++)
            if (!(r == 3 && s == 12))
                heatmap_set(h, r, s, r == 2 ? 2000 : 1000);
    heatmap_set(h, 9, 10, 1); /* out of range: ignored */
    char *svg = render(h, 512, 400);
    assert_int_equal(count(svg, "<rect"), 12);
    assert_int_equal(count(svg, "fill=\"#b40000\""), 3); /* rank 2: 2x the median */
    assert_int_equal(count(svg, "fill=\"#ffffff\""), 8);
    assert_int_equal(count(svg, "fill=\"#dddddd\""), 1); /* rank 3, step 12 missing */
    assert_non_null(strstr(svg, "job &lt;x&gt; &amp; y"));
    assert_non_null(strstr(svg, "ranks 2-2 steps 11-11: 2.00x"));
    free(svg);
    heatmap_free(h);
}

static void test_binning(void **state)
{
    struct heatmap *h = heatmap_new(1000, 0, 1000);

    for (uint32_t r = 0; r < 1000; r++)
        for (uint64_t s = 0; s < 1000; s++)
            heatmap_set(h, r, s, r == 777 && s == 5 ? 4000 : 1000);
    char *svg = render(h, 100, 50);
    assert_int_equal(count(svg, "<rect"), 100 * 50);
    /* the one slow cell shows in its bin as the worst of the bin */
    assert_non_null(strstr(svg, "ranks 770-779 steps 0-19: 4.00x"));
    free(svg);
    heatmap_free(h);
    assert_null(heatmap_new(0, 0, 10));
    assert_null(heatmap_new(1u << 20, 0, 1u << 20));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colors),
        cmocka_unit_test(test_binning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
