/* One Kineto traceEvents entry from the pull tokenizer: see kineto_event.h. */
#include "agent/sources/kineto_event.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number just read as ns from microseconds; false when negative or out
 * of range. Integers are exact; others keep ns precision. */
static bool us_as_ns(const char *num, uint64_t *ns)
{
    double d, whole;

    if (!strpbrk(num, ".eE")) {
        char *end;
        long long us;

        errno = 0;
        us = strtoll(num, &end, 10);
        if (errno || us < 0 || us > INT64_MAX / 1000)
            return false;
        *ns = (uint64_t)us * 1000;
        return true;
    }
    d = strtod(num, NULL);
    if (!(d >= 0 && d < 9.2e15))
        return false;
    whole = floor(d);
    *ns = (uint64_t)whole * 1000 + (uint64_t)llround((d - whole) * 1000);
    return true;
}

/* The number just read as an integer (a fraction is cut, like json-c). */
static int64_t as_int(const char *num)
{
    double d;

    if (!strpbrk(num, ".eE"))
        return strtoll(num, NULL, 10);
    d = strtod(num, NULL);
    return d >= (double)INT64_MAX ? INT64_MAX : d <= (double)INT64_MIN ? INT64_MIN : (int64_t)d;
}

/* Read an integer-valued member: *v set when the value is a number, the
 * value skipped otherwise. */
int kineto_event_read_int(struct kjson *j, int64_t *v, bool *set)
{
    int c = kjson_peek(j), r;

    if (c != '-' && !(c >= '0' && c <= '9'))
        return kjson_skip(j);
    if ((r = kjson_number(j)) < 0)
        return r;
    *v = as_int(j->num);
    if (set)
        *set = true;
    return 0;
}

/* Read a string member into buf (cap bytes, cut); *set when it is one. */
static int read_small_string(struct kjson *j, char *buf, size_t cap, bool *set)
{
    int r;

    if (kjson_peek(j) != '"')
        return kjson_skip(j);
    if ((r = kjson_string(j)) < 0)
        return r;
    snprintf(buf, cap, "%s", j->str_len < cap ? j->str : "");
    *set = j->str_len < cap;
    return 0;
}

/* Read a time member (us) as ns: *has when present, *ok when usable. */
static int read_us(struct kjson *j, uint64_t *ns, bool *has, bool *ok)
{
    int c = kjson_peek(j), r;

    *has = true;
    *ok = false;
    if (c != '-' && !(c >= '0' && c <= '9'))
        return kjson_skip(j);
    if ((r = kjson_number(j)) < 0)
        return r;
    *ok = us_as_ns(j->num, ns);
    return 0;
}

/* A launch dimension array ([x, y, z] of non-negative integers) into d;
 * *set when all three were usable. Anything else is skipped. */
static int read_dims(struct kjson *j, uint32_t d[3], bool *set)
{
    bool first = true;
    int r, n = 0, ok = 0;

    if (kjson_peek(j) != '[')
        return kjson_skip(j);
    if ((r = kjson_enter(j, '[')) < 0)
        return r;
    while ((r = kjson_array_next(j, &first)) > 0) {
        int64_t v = -1;

        if ((r = kineto_event_read_int(j, &v, NULL)) < 0)
            return r;
        if (n < 3 && v >= 0 && v <= UINT32_MAX) {
            d[n] = (uint32_t)v;
            ok++;
        }
        n++;
    }
    *set = r == 0 && n == 3 && ok == 3;
    return r;
}

static int read_args(struct kjson *j, struct kineto_event *ev)
{
    bool first = true;
    int r;

    if (kjson_peek(j) != '{')
        return kjson_skip(j);
    if ((r = kjson_enter(j, '{')) < 0)
        return r;
    ev->has_args = true;
    while ((r = kjson_object_next(j, &first)) > 0) {
        if (!strcmp(j->str, "stream"))
            r = kineto_event_read_int(j, &ev->stream, NULL);
        else if (!strcmp(j->str, "device"))
            r = kineto_event_read_int(j, &ev->device, NULL);
        else if (!strcmp(j->str, "correlation"))
            r = kineto_event_read_int(j, &ev->correlation, NULL);
        else if (!strcmp(j->str, "grid"))
            r = read_dims(j, ev->grid, &ev->has_grid);
        else if (!strcmp(j->str, "block"))
            r = read_dims(j, ev->block, &ev->has_block);
        else
            r = kjson_skip(j);
        if (r < 0)
            return r;
    }
    return r;
}

static int read_name(struct kjson *j, struct kineto_event *ev)
{
    int r;

    if (kjson_peek(j) != '"')
        return kjson_skip(j);
    if ((r = kjson_string(j)) < 0)
        return r;
    ev->has_name = true;
    ev->name_len = j->str_len;
    memcpy(ev->name, j->str, (j->str_len < j->max_string ? j->str_len : j->max_string) + 1);
    return 0;
}

/* One traceEvents entry into ev; a non-object is skipped (ev->has_ph false). */
int kineto_event_read(struct kjson *j, struct kineto_event *ev)
{
    bool first = true;
    int r;

    *ev = (struct kineto_event){.name = ev->name, .device = -1};
    if (kjson_peek(j) != '{')
        return kjson_skip(j);
    if ((r = kjson_enter(j, '{')) < 0)
        return r;
    while ((r = kjson_object_next(j, &first)) > 0) {
        const char *k = j->str;

        if (!strcmp(k, "ph"))
            r = read_small_string(j, ev->ph, sizeof(ev->ph), &ev->has_ph);
        else if (!strcmp(k, "cat"))
            r = read_small_string(j, ev->cat, sizeof(ev->cat), &ev->has_cat);
        else if (!strcmp(k, "name"))
            r = read_name(j, ev);
        else if (!strcmp(k, "ts"))
            r = read_us(j, &ev->ts_ns, &ev->has_ts, &ev->ts_ok);
        else if (!strcmp(k, "dur"))
            r = read_us(j, &ev->dur_ns, &ev->has_dur, &ev->dur_ok);
        else if (!strcmp(k, "args"))
            r = read_args(j, ev);
        else
            r = kjson_skip(j);
        if (r < 0)
            return r;
    }
    return r;
}
