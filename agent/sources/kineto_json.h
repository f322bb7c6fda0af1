/* A small pull tokenizer for the Kineto reader (kineto.c): JSON text from a
 * memory buffer or from a gzip'd or plain file (zlib gzread, one fixed read
 * buffer), consumed value by value, so a trace is never held whole in memory
 * (no DOM). The caller walks the document with kjson_object_next and
 * kjson_array_next, reads scalars with kjson_string and kjson_number and
 * skips what it does not need with kjson_skip.
 *
 * Strings are decoded (escapes, \u with surrogate pairs to UTF-8) into one
 * buffer of at most max_string bytes; a longer string is consumed whole and
 * its full decoded length reported, only its head kept. Nesting is bounded by
 * KJSON_MAX_DEPTH and the decompressed input by max_bytes.
 *
 * Every error is sticky: the first one sets kjson.error (a negative errno:
 * -EBADMSG for malformed or truncated JSON, -EFBIG over max_bytes, -EIO for
 * a read error) and kjson.message, a sentence that names the byte offset in
 * the (decompressed) JSON text where it happened; a truncated gzip stream
 * says so too. After an error every call fails at once.
 */
#ifndef ARGUS_AGENT_KINETO_JSON_H
#define ARGUS_AGENT_KINETO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KJSON_MAX_DEPTH 64
#define KJSON_READ_CHUNK (256u << 10)
#define KJSON_MAX_NUMBER 64 /* characters of one number */

struct kjson {
    void *gz;          /* gzFile, NULL for a memory buffer */
    const char *buf;   /* current window of the text */
    size_t len, pos;   /* window length and cursor */
    char *own;         /* the read buffer (files) */
    uint64_t base;     /* offset of buf[0] in the text */
    size_t max_bytes;  /* decompressed bytes allowed */
    int depth;         /* open objects and arrays */
    char *str;         /* last decoded string (NUL-terminated, head only) */
    size_t str_len;    /* its full decoded length */
    size_t str_cap;    /* bytes allocated for str */
    size_t max_string; /* bytes of a string kept */
    char num[KJSON_MAX_NUMBER + 1];
    int error;
    char message[256];
};

/* Start reading the len bytes at buf (the caller keeps buf). */
int kjson_open_memory(struct kjson *j, const char *buf, size_t len, size_t max_string);

/* Start reading the file at path (gzip'd or plain). Returns 0 or a negative
 * errno with j->message set (cannot open). */
int kjson_open_file(struct kjson *j, const char *path, size_t max_bytes, size_t max_string);

/* Release what j holds (closes the file). */
void kjson_close(struct kjson *j);

/* The next non-space byte, not consumed; -1 at the end of the text or after
 * an error (an end is not an error here). */
int kjson_peek(struct kjson *j);

/* Offset in the text of the next unread byte. */
uint64_t kjson_offset(const struct kjson *j);

/* Consume the byte c (after spaces) or fail naming what was expected. */
int kjson_expect(struct kjson *j, char c, const char *what);

/* Inside an object whose '{' was consumed: 1 when a member follows (its key
 * in j->str, the ':' consumed, the value next), 0 at the closing '}'
 * (consumed), < 0 on error. *first must be true before the first call. */
int kjson_object_next(struct kjson *j, bool *first);

/* Inside an array whose '[' was consumed: 1 when a value follows, 0 at the
 * closing ']' (consumed), < 0 on error. */
int kjson_array_next(struct kjson *j, bool *first);

/* Enter an object or array: consume '{' or '[' and count the depth. */
int kjson_enter(struct kjson *j, char open);

/* Read a string value into j->str / j->str_len. */
int kjson_string(struct kjson *j);

/* Read a number value into j->num (checked JSON number syntax). */
int kjson_number(struct kjson *j);

/* Skip one value of any type. */
int kjson_skip(struct kjson *j);

/* Record an error at the current offset (first one wins); returns code. */
int kjson_fail(struct kjson *j, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
