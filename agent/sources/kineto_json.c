/* The Kineto reader's pull tokenizer: see kineto_json.h. */
#include "agent/sources/kineto_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

int kjson_fail(struct kjson *j, int code, const char *fmt, ...)
{
    va_list ap;

    if (j->error)
        return j->error;
    j->error = code;
    va_start(ap, fmt);
    vsnprintf(j->message, sizeof(j->message), fmt, ap);
    va_end(ap);
    return code;
}

static int kjson_alloc_string(struct kjson *j, size_t max_string)
{
    j->max_string = max_string;
    j->str_cap = 256;
    j->str = malloc(j->str_cap);
    if (!j->str)
        return kjson_fail(j, -ENOMEM, "out of memory");
    j->str[0] = 0;
    return 0;
}

int kjson_open_memory(struct kjson *j, const char *buf, size_t len, size_t max_string)
{
    *j = (struct kjson){.buf = buf, .len = len, .max_bytes = len};
    return kjson_alloc_string(j, max_string);
}

int kjson_open_file(struct kjson *j, const char *path, size_t max_bytes, size_t max_string)
{
    *j = (struct kjson){.max_bytes = max_bytes};
    errno = 0;
    j->gz = gzopen(path, "rb");
    if (!j->gz)
        return kjson_fail(j, errno ? -errno : -ENOMEM, "%s: cannot open: %s", path,
                          errno ? strerror(errno) : "out of memory");
    gzbuffer(j->gz, 128u << 10);
    j->own = malloc(KJSON_READ_CHUNK);
    if (!j->own)
        return kjson_fail(j, -ENOMEM, "out of memory");
    j->buf = j->own;
    return kjson_alloc_string(j, max_string);
}

void kjson_close(struct kjson *j)
{
    if (j->gz)
        gzclose(j->gz);
    free(j->own);
    free(j->str);
    j->gz = NULL;
    j->own = j->str = NULL;
}

uint64_t kjson_offset(const struct kjson *j)
{
    return j->base + j->pos;
}

/* Read the next window of a file. Returns 1 with bytes, 0 at the end, < 0. */
static int kjson_refill(struct kjson *j)
{
    int got, zerr = Z_OK;
    const char *msg;

    if (!j->gz || j->error)
        return j->error ? j->error : 0;
    j->base += j->len;
    j->pos = j->len = 0;
    got = gzread(j->gz, j->own, KJSON_READ_CHUNK);
    if (got > 0) {
        j->len = (size_t)got;
        if (j->base + j->len > j->max_bytes)
            return kjson_fail(j, -EFBIG, "more than %zu bytes of JSON (limit %zu)", j->max_bytes,
                              j->max_bytes);
        return 1;
    }
    msg = gzerror(j->gz, &zerr);
    if (got < 0 || (zerr != Z_OK && zerr != Z_BUF_ERROR))
        return kjson_fail(j, zerr == Z_DATA_ERROR ? -EBADMSG : -EIO,
                          "gzip stream corrupt after %" PRIu64 " bytes of JSON: %s", j->base,
                          msg ? msg : "read error");
    if (zerr == Z_BUF_ERROR) /* the compressed stream ended early */
        return kjson_fail(j, -EBADMSG,
                          "not JSON: the gzip stream is truncated: unexpected end of input at "
                          "byte %" PRIu64,
                          j->base);
    return 0;
}

/* The next byte, consumed; -1 at the end (or after an error). */
static int kjson_getc(struct kjson *j)
{
    if (j->pos == j->len && kjson_refill(j) <= 0)
        return -1;
    return (unsigned char)j->buf[j->pos++];
}

int kjson_peek(struct kjson *j)
{
    for (;;) {
        if (j->error)
            return -1;
        if (j->pos == j->len && kjson_refill(j) <= 0)
            return -1;
        char c = j->buf[j->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return (unsigned char)c;
        j->pos++;
    }
}

/* An error for byte c just peeked (or the end of input). */
static int kjson_unexpected(struct kjson *j, int c, const char *what)
{
    if (j->error)
        return j->error;
    if (c < 0)
        return kjson_fail(j, -EBADMSG, "not JSON: unexpected end of input at byte %" PRIu64,
                          kjson_offset(j));
    if (c >= 0x20 && c < 0x7f)
        return kjson_fail(j, -EBADMSG, "not JSON: '%c' where %s was expected at byte %" PRIu64, c,
                          what, kjson_offset(j));
    return kjson_fail(j, -EBADMSG, "not JSON: byte 0x%02x where %s was expected at byte %" PRIu64,
                      c, what, kjson_offset(j));
}

int kjson_expect(struct kjson *j, char c, const char *what)
{
    int got = kjson_peek(j);

    if (got != (unsigned char)c)
        return kjson_unexpected(j, got, what);
    j->pos++;
    return 0;
}

int kjson_enter(struct kjson *j, char open)
{
    int r = kjson_expect(j, open, open == '{' ? "an object" : "an array");

    if (r < 0)
        return r;
    if (++j->depth > KJSON_MAX_DEPTH)
        return kjson_fail(j, -EBADMSG, "not JSON: nested deeper than %d at byte %" PRIu64,
                          KJSON_MAX_DEPTH, kjson_offset(j));
    return 0;
}

/* After the first member or element: ',' continues, close ends. */
static int kjson_next(struct kjson *j, bool *first, char close, const char *what)
{
    int c = kjson_peek(j);

    if (c == (unsigned char)close) {
        j->pos++;
        j->depth--;
        return 0;
    }
    if (!*first) {
        if (c != ',')
            return kjson_unexpected(j, c, what);
        j->pos++;
    }
    *first = false;
    return 1;
}

int kjson_object_next(struct kjson *j, bool *first)
{
    int r = kjson_next(j, first, '}', "',' or '}'");

    if (r <= 0)
        return r;
    if (kjson_peek(j) != '"')
        return kjson_unexpected(j, kjson_peek(j), "a member name");
    if ((r = kjson_string(j)) < 0 || (r = kjson_expect(j, ':', "':'")) < 0)
        return r;
    return 1;
}

int kjson_array_next(struct kjson *j, bool *first)
{
    return kjson_next(j, first, ']', "',' or ']'");
}

/* Append one decoded byte to the string (its head only beyond max_string). */
static int kjson_put(struct kjson *j, char c)
{
    if (j->str_len < j->max_string) {
        if (j->str_len + 1 >= j->str_cap) {
            size_t cap = j->str_cap * 2;
            char *tmp = realloc(j->str, cap);

            if (!tmp)
                return kjson_fail(j, -ENOMEM, "out of memory");
            j->str = tmp;
            j->str_cap = cap;
        }
        j->str[j->str_len] = c;
    }
    j->str_len++;
    return 0;
}

static int kjson_hex4(struct kjson *j, uint32_t *out)
{
    *out = 0;
    for (int i = 0; i < 4; i++) {
        int c = kjson_getc(j);
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;

        if (v < 0)
            return kjson_fail(j, -EBADMSG, "not JSON: bad \\u escape at byte %" PRIu64,
                              kjson_offset(j));
        *out = *out << 4 | (uint32_t)v;
    }
    return 0;
}

/* \uXXXX (after the 'u'), with a following low surrogate, as UTF-8. */
static int kjson_unicode(struct kjson *j)
{
    uint32_t cp, lo;
    int r = kjson_hex4(j, &cp);

    if (r < 0)
        return r;
    if (cp >= 0xd800 && cp < 0xdc00) {
        if (kjson_getc(j) != '\\' || kjson_getc(j) != 'u' || kjson_hex4(j, &lo) < 0 ||
            lo < 0xdc00 || lo > 0xdfff)
            return kjson_fail(j, -EBADMSG, "not JSON: lone surrogate at byte %" PRIu64,
                              kjson_offset(j));
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (cp < 0x80)
        return kjson_put(j, (char)cp);
    if (cp < 0x800)
        return kjson_put(j, (char)(0xc0 | cp >> 6)) | kjson_put(j, (char)(0x80 | (cp & 0x3f)));
    if (cp < 0x10000)
        return kjson_put(j, (char)(0xe0 | cp >> 12)) |
               kjson_put(j, (char)(0x80 | (cp >> 6 & 0x3f))) |
               kjson_put(j, (char)(0x80 | (cp & 0x3f)));
    return kjson_put(j, (char)(0xf0 | cp >> 18)) | kjson_put(j, (char)(0x80 | (cp >> 12 & 0x3f))) |
           kjson_put(j, (char)(0x80 | (cp >> 6 & 0x3f))) | kjson_put(j, (char)(0x80 | (cp & 0x3f)));
}

static int kjson_escape(struct kjson *j)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    int c = kjson_getc(j);
    const char *at = c > 0 ? strchr(from, c) : NULL;

    if (c == 'u')
        return kjson_unicode(j);
    if (!at)
        return c < 0 ? kjson_unexpected(j, c, "an escape")
                     : kjson_fail(j, -EBADMSG, "not JSON: bad escape at byte %" PRIu64,
                                  kjson_offset(j) - 1);
    return kjson_put(j, to[at - from]);
}

int kjson_string(struct kjson *j)
{
    int r = kjson_expect(j, '"', "a string");

    j->str_len = 0;
    while (r == 0) {
        /* the plain run inside the current window, copied at once */
        size_t start = j->pos, end = start;

        while (end < j->len && j->buf[end] != '"' && j->buf[end] != '\\' &&
               (unsigned char)j->buf[end] >= 0x20)
            end++;
        for (size_t i = start; i < end && r == 0; i++)
            r = kjson_put(j, j->buf[i]);
        j->pos = end;
        if (r < 0)
            break;
        int c = kjson_getc(j);
        if (c == '"')
            break;
        if (c == '\\')
            r = kjson_escape(j);
        else if (c >= 0x20) /* the window ended inside a plain run */
            r = kjson_put(j, (char)c);
        else
            r = c < 0 ? kjson_unexpected(j, c, "the end of a string")
                      : kjson_fail(j, -EBADMSG,
                                   "not JSON: control byte 0x%02x in a string at byte %" PRIu64, c,
                                   kjson_offset(j) - 1);
    }
    if (r == 0)
        j->str[j->str_len < j->max_string ? j->str_len : j->max_string] = 0;
    return r;
}

/* JSON number syntax: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool kjson_number_valid(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return false;
    if (*s == '.') {
        if (!(*++s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        if (*++s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == 0;
}

int kjson_number(struct kjson *j)
{
    uint64_t at = (kjson_peek(j), kjson_offset(j));
    size_t n = 0;

    for (;;) {
        if (j->pos == j->len && kjson_refill(j) < 0)
            return j->error;
        if (j->pos == j->len)
            break;
        char c = j->buf[j->pos];
        if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'))
            break;
        if (n == KJSON_MAX_NUMBER)
            return kjson_fail(j, -EBADMSG, "not JSON: number too long at byte %" PRIu64, at);
        j->num[n++] = c;
        j->pos++;
    }
    j->num[n] = 0;
    if (!kjson_number_valid(j->num))
        return n ? kjson_fail(j, -EBADMSG, "not JSON: bad number '%s' at byte %" PRIu64, j->num, at)
                 : kjson_unexpected(j, kjson_peek(j), "a value");
    return 0;
}

static int kjson_literal(struct kjson *j, const char *word)
{
    uint64_t at = kjson_offset(j);

    for (const char *w = word; *w; w++) {
        int c = kjson_getc(j);

        if (c != *w)
            return c < 0 ? kjson_unexpected(j, c, word)
                         : kjson_fail(j, -EBADMSG, "not JSON: bad literal at byte %" PRIu64, at);
    }
    return 0;
}

int kjson_skip(struct kjson *j)
{
    int c = kjson_peek(j), r;
    bool first = true;

    switch (c) {
    case '{':
        if ((r = kjson_enter(j, '{')) < 0)
            return r;
        while ((r = kjson_object_next(j, &first)) > 0)
            if ((r = kjson_skip(j)) < 0)
                return r;
        return r;
    case '[':
        if ((r = kjson_enter(j, '[')) < 0)
            return r;
        while ((r = kjson_array_next(j, &first)) > 0)
            if ((r = kjson_skip(j)) < 0)
                return r;
        return r;
    case '"':
        return kjson_string(j);
    case 't':
        return kjson_literal(j, "true");
    case 'f':
        return kjson_literal(j, "false");
    case 'n':
        return kjson_literal(j, "null");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return kjson_number(j);
        return kjson_unexpected(j, c, "a value");
    }
}
