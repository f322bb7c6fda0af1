#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config_value.h"
#include "common/log.h"

#define CONFIG_LINE_MAX 4096

static const struct config_option *config_find(const struct config_table *t, const char *key)
{
    for (size_t i = 0; i < t->count; i++)
        if (strcmp(t->options[i].key, key) == 0)
            return &t->options[i];
    return NULL;
}

static void *config_field(const struct config_option *o, void *cfg)
{
    return (char *)cfg + o->offset;
}

const struct config_name config_log_levels[] = {
    {"error", LOG_LEVEL_ERROR},
    {"warn", LOG_LEVEL_WARN},
    {"info", LOG_LEVEL_INFO},
    {"debug", LOG_LEVEL_DEBUG},
    {NULL, 0},
};

const char *config_enum_name(const struct config_table *t, const char *key, int value)
{
    const struct config_option *o = config_find(t, key);
    const struct config_name *n =
        o && o->type == CONFIG_ENUM ? config_name_of(o->names, value) : NULL;

    return n ? n->name : "?";
}

int config_set(const struct config_table *t, void *cfg, const char *key, const char *value,
               char *err, size_t errlen)
{
    const struct config_option *o = config_find(t, key);
    int r;

    if (!o) {
        snprintf(err, errlen, "unknown key '%s'", key);
        return -ENOENT;
    }
    r = config_value_parse(o, value, config_field(o, cfg), err, errlen);
    if (r == 0 && o->check)
        r = o->check(o, config_field(o, cfg), err, errlen);
    return r;
}

/* Note that o was set at line (-1: by a flag). */
static void config_note_origin(const struct config_table *t, struct config_result *res,
                               const struct config_option *o, int line)
{
    size_t i = (size_t)(o - t->options);

    if (i < CONFIG_MAX_OPTIONS)
        res->origin[i] = line;
}

const char *config_where(const struct config_table *t, const struct config_result *res,
                         const char *key, char *buf, size_t len)
{
    const struct config_option *o = config_find(t, key);
    size_t i = o ? (size_t)(o - t->options) : CONFIG_MAX_OPTIONS;
    int line = i < CONFIG_MAX_OPTIONS ? res->origin[i] : 0;

    if (line > 0 && res->path)
        snprintf(buf, len, "%s:%d", res->path, line);
    else if (line < 0)
        snprintf(buf, len, "--%s", key);
    else
        snprintf(buf, len, "default");
    return buf;
}

void config_error(struct config_result *res, const char *fmt, ...)
{
    size_t off = strlen(res->error);
    va_list ap;

    if (off && off + 1 < sizeof(res->error))
        res->error[off++] = '\n';
    if (off + 1 < sizeof(res->error)) {
        va_start(ap, fmt);
        vsnprintf(res->error + off, sizeof(res->error) - off, fmt, ap);
        va_end(ap);
    }
    res->nerrors++;
}

static char *config_trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

/* Parse one "key = value" line of section into key (fullkey, keylen bytes)
 * and value (in place). Returns 0 or -EINVAL with err set. */
static int config_split_line(char *line, const char *section, char *fullkey, size_t keylen,
                             char **value, char *err, size_t errlen)
{
    char *eq = strchr(line, '=');
    char *key, *v;

    if (!eq) {
        snprintf(err, errlen, "expected 'key = value' or '[section]', got '%s'", line);
        return -EINVAL;
    }
    *eq = '\0';
    key = config_trim(line);
    v = config_trim(eq + 1);
    if (!*key) {
        snprintf(err, errlen, "missing key before '='");
        return -EINVAL;
    }
    size_t vlen = strlen(v);
    if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
        v[vlen - 1] = '\0';
        v++;
    }
    if (snprintf(fullkey, keylen, "%s%s%s", section, *section ? "." : "", key) >= (int)keylen) {
        snprintf(err, errlen, "key too long");
        return -EINVAL;
    }
    *value = v;
    return 0;
}

/* One line of a config file: a section header (into section) or a key. */
static int config_file_line(const struct config_table *t, void *cfg, char *s, char *section,
                            size_t seclen, bool *seen, const struct config_option **set, char *msg,
                            size_t msglen)
{
    char key[256], *value;
    int r;

    if (*s == '[') {
        char *close = strchr(s, ']');
        if (!close || close[1] || close - s - 1 >= (long)seclen || close == s + 1) {
            snprintf(msg, msglen, "bad section header '%s'", s);
            snprintf(section, seclen, "%s", "\x01"); /* no key matches until the next one */
            return -EINVAL;
        }
        *close = '\0';
        snprintf(section, seclen, "%s", config_trim(s + 1));
        return 0;
    }
    r = config_split_line(s, section, key, sizeof(key), &value, msg, msglen);
    if (r < 0 || section[0] == '\x01')
        return r < 0 ? r : 0; /* under a bad header: reported once */
    const struct config_option *o = config_find(t, key);
    if (o && seen[o - t->options]) {
        snprintf(msg, msglen, "key '%s' given twice", key);
        return -EINVAL;
    }
    r = config_set(t, cfg, key, value, msg, msglen);
    if (o)
        seen[o - t->options] = true;
    *set = r == 0 ? o : NULL;
    return r;
}

int config_read_file(const struct config_table *t, void *cfg, const char *path,
                     struct config_result *res)
{
    char line[CONFIG_LINE_MAX], section[128] = "", msg[400];
    bool *seen = calloc(t->count ? t->count : 1, sizeof(*seen));
    FILE *f = fopen(path, "re");
    int lineno = 0, r = 0;

    if (!f || !seen) {
        r = -errno;
        config_error(res, "%s: %s", path, strerror(errno));
        goto out;
    }
    while (fgets(line, sizeof(line), f)) {
        char *s = config_trim(line);
        lineno++;
        if (!*s || *s == '#' || *s == ';')
            continue;
        const struct config_option *set = NULL;
        if (config_file_line(t, cfg, s, section, sizeof(section), seen, &set, msg, sizeof(msg)) <
            0) {
            config_error(res, "%s:%d: %s", path, lineno, msg);
            r = -EINVAL;
        } else if (set) {
            config_note_origin(t, res, set, lineno);
        }
    }
out:
    if (f)
        fclose(f);
    free(seen);
    return r;
}

static int config_set_defaults(const struct config_table *t, void *cfg, struct config_result *res)
{
    char msg[400];

    for (size_t i = 0; i < t->count; i++) {
        const struct config_option *o = &t->options[i];
        if (config_set(t, cfg, o->key, o->default_value ? o->default_value : "", msg, sizeof(msg)) <
                0 &&
            o->default_value) {
            config_error(res, "built-in default: %s", msg);
            return -EINVAL;
        }
    }
    return 0;
}

/* Find --config in argv and note --help / --print-config. */
static int config_scan_meta(const struct config_table *t, int argc, char **argv,
                            struct config_result *res)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            res->help = true;
        else if (strcmp(argv[i], "--print-config") == 0)
            res->print = true;
        else if (strcmp(argv[i], "--check-config") == 0)
            res->check = true;
        else if (strcmp(argv[i], "--man") == 0)
            res->man = true;
        else if (strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                config_error(res, "--config needs a file path");
                return -EINVAL;
            }
            res->path = argv[++i];
        } else if (strncmp(argv[i], "--config=", 9) == 0)
            res->path = argv[i] + 9;
    }
    return 0;
}

static bool config_meta_flag(const char *arg)
{
    static const char *const meta[] = {"--help", "-h", "--print-config", "--check-config", "--man"};

    for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
        if (strcmp(arg, meta[i]) == 0)
            return true;
    return strncmp(arg, "--config=", 9) == 0;
}

/* Apply the flag at argv[*i] ("--key=value", "--key value", a bare boolean),
 * advancing *i past its value. Returns 0, -EINVAL for a bad value (go on),
 * or -E2BIG when the flags after it can no longer be told apart (stop). */
static int config_apply_flag(const struct config_table *t, void *cfg, int argc, char **argv, int *i,
                             struct config_result *res)
{
    const char *arg = argv[*i], *value, *eq = strchr(arg + 2, '=');
    size_t klen = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    char msg[400], key[256];

    if (klen >= sizeof(key))
        klen = sizeof(key) - 1;
    memcpy(key, arg + 2, klen);
    key[klen] = '\0';
    const struct config_option *o = config_find(t, key);
    if (!o) {
        config_error(res, "unknown option '--%s' (see --help)", key);
        return -E2BIG;
    }
    if (eq)
        value = eq + 1;
    else if (o->type == CONFIG_BOOL && (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0 ||
                                        config_parse_bool(argv[*i + 1], &(bool){0}) < 0))
        value = "true"; /* a bare boolean flag */
    else if (*i + 1 < argc)
        value = argv[++*i];
    else {
        config_error(res, "--%s needs a value", key);
        return -E2BIG;
    }
    if (config_set(t, cfg, key, value, msg, sizeof(msg)) < 0) {
        config_error(res, "--%s", msg);
        return -EINVAL;
    }
    config_note_origin(t, res, o, -1);
    return 0;
}

static int config_apply_flags(const struct config_table *t, void *cfg, int argc, char **argv,
                              struct config_result *res)
{
    int r = 0;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0)
            break;
        if (config_meta_flag(arg))
            continue;
        if (strcmp(arg, "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0) {
            if (!t->positional || res->npositional >= CONFIG_MAX_POSITIONAL) {
                config_error(res, "unexpected argument '%s'", arg);
                return -EINVAL;
            }
            res->positional[res->npositional++] = argv[i];
            continue;
        }
        int one = config_apply_flag(t, cfg, argc, argv, &i, res);
        if (one == -E2BIG)
            return -EINVAL;
        if (one < 0)
            r = one;
    }
    return r;
}

int config_load(const struct config_table *t, void *cfg, int argc, char **argv,
                struct config_result *res)
{
    int r;

    memset(res, 0, sizeof(*res));
    r = config_set_defaults(t, cfg, res);
    if (r < 0)
        return r;
    r = config_scan_meta(t, argc, argv, res);
    if (r < 0 || res->help || res->man)
        return r;
    if (!res->path && t->default_path && access(t->default_path, F_OK) == 0)
        res->path = t->default_path;
    if (res->path) {
        r = config_read_file(t, cfg, res->path, res);
        if (r < 0 && r != -EINVAL)
            return -EINVAL; /* no file to read: nothing more worth saying */
    }
    config_apply_flags(t, cfg, argc, argv, res);
    if (t->check)
        t->check(cfg, res);
    return res->nerrors ? -EINVAL : 0;
}

static size_t config_section_len(const char *key)
{
    const char *dot = strchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

void config_print(const struct config_table *t, const void *cfg, FILE *out)
{
    char value[512];
    const char *prev = NULL;
    size_t prevlen = 0;

    fprintf(out, "# %s configuration. Generated by %s --print-config.\n", t->program, t->program);
    for (size_t i = 0; i < t->count; i++) {
        const struct config_option *o = &t->options[i];
        size_t slen = config_section_len(o->key);
        if (!prev || slen != prevlen || strncmp(prev, o->key, slen) != 0) {
            fprintf(out, "\n[%.*s]\n", (int)slen, o->key);
            prev = o->key;
            prevlen = slen;
        }
        config_format_value(o, cfg, value, sizeof(value));
        fprintf(out, "# %s\n%s = %s%s%s\n", o->help, o->key + slen + (slen ? 1 : 0),
                o->type == CONFIG_STRING ? "\"" : "", value, o->type == CONFIG_STRING ? "\"" : "");
    }
}

void config_usage(const struct config_table *t, FILE *out)
{
    static const char *const type_name[] = {"BOOL", "INT",      "UINT", "NUM",
                                            "TEXT", "DURATION", "SIZE"};

    fprintf(out, "%s: %s\n\n", t->program, t->summary);
    if (t->usage)
        fprintf(out, "%s\n", t->usage);
    if (t->ncommands)
        fprintf(out, "Commands:\n");
    for (size_t i = 0; i < t->ncommands; i++) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "%s %s", t->commands[i].name,
                 t->commands[i].args ? t->commands[i].args : "");
        fprintf(out, "  %-38s %s\n", cmd, t->commands[i].help);
    }
    fprintf(out,
            "%sOptions (config file key = flag without '--'):\n"
            "  %-38s read FILE (default %s)\n"
            "  %-38s validate the config (file and flags) like a start would, print ok or\n"
            "  %-38s every error, exit 0 or 2; starts nothing\n"
            "  %-38s print the effective config as a file and exit\n"
            "  %-38s write the manual page (roff) and exit\n"
            "  %-38s this text\n",
            t->ncommands ? "\n" : "", "--config FILE", t->default_path ? t->default_path : "none",
            "--check-config", "", "--print-config", "--man", "--help");
    for (size_t i = 0; i < t->count; i++) {
        const struct config_option *o = &t->options[i];
        char flag[300], names[256];
        if (o->type == CONFIG_ENUM)
            config_names_join(o->names, "|", "|", names, sizeof(names));
        snprintf(flag, sizeof(flag), "--%s %s", o->key,
                 o->type == CONFIG_ENUM ? names : type_name[o->type]);
        fprintf(out, "  %-38s %s (default: %s)\n", flag, o->help,
                o->default_value && *o->default_value ? o->default_value : "none");
    }
}

void config_log(const struct config_table *t, const void *cfg)
{
    size_t i = 0;

    while (i < t->count) {
        char line[1024], value[256];
        size_t slen = config_section_len(t->options[i].key), off = 0;
        const char *section = t->options[i].key;
        for (; i < t->count && config_section_len(t->options[i].key) == slen &&
               strncmp(t->options[i].key, section, slen) == 0;
             i++) {
            const struct config_option *o = &t->options[i];
            config_format_value(o, cfg, value, sizeof(value));
            int n =
                snprintf(line + off, sizeof(line) - off, " %s=%s", o->key + slen + !!slen, value);
            if (n > 0 && off + (size_t)n < sizeof(line))
                off += (size_t)n;
        }
        line[off] = '\0';
        log_info("config", "%.*s:%s", (int)(slen ? slen : 4), slen ? section : "main", line);
    }
}

const char *config_errors_oneline(struct config_result *res)
{
    char joined[sizeof(res->error)];
    size_t off = 0;

    for (const char *p = res->error; *p && off + 2 < sizeof(joined); p++) {
        if (*p == '\n') {
            joined[off++] = ';';
            joined[off++] = ' ';
        } else {
            joined[off++] = *p;
        }
    }
    joined[off] = '\0';
    memcpy(res->error, joined, off + 1);
    return res->error;
}

/* Swap the values of o in a and b (strings: the pointers). */
static void config_swap_value(const struct config_option *o, void *a, void *b)
{
    static const size_t size[] = {
        [CONFIG_BOOL] = sizeof(bool),     [CONFIG_INT] = sizeof(int64_t),
        [CONFIG_UINT] = sizeof(uint64_t), [CONFIG_DOUBLE] = sizeof(double),
        [CONFIG_STRING] = sizeof(char *), [CONFIG_DURATION] = sizeof(uint64_t),
        [CONFIG_SIZE] = sizeof(uint64_t), [CONFIG_ENUM] = sizeof(int),
    };
    char tmp[sizeof(uint64_t)];
    size_t n = size[o->type];

    memcpy(tmp, config_field(o, a), n);
    memcpy(config_field(o, a), config_field(o, b), n);
    memcpy(config_field(o, b), tmp, n);
}

int config_apply_changes(const struct config_table *t, void *running, void *fresh)
{
    char was[256], now[256];
    int restart = 0, changed = 0;

    for (size_t i = 0; i < t->count; i++) {
        const struct config_option *o = &t->options[i];
        config_format_value(o, running, was, sizeof(was));
        config_format_value(o, fresh, now, sizeof(now));
        if (strcmp(was, now) == 0)
            continue;
        changed++;
        log_info("config", "%s: '%s' -> '%s' (%s)", o->key, was, now,
                 o->live ? "applied live" : "needs a restart");
        if (o->live)
            config_swap_value(o, running, fresh);
        else
            restart++;
    }
    if (changed == 0)
        log_info("config", "reloaded: no key changed");
    else if (restart == 0)
        log_info("config", "reloaded: every change applied");
    else
        log_info("config", "reloaded: %d change%s apply at the next restart", restart,
                 restart == 1 ? "" : "s");
    return restart;
}

void config_free(const struct config_table *t, void *cfg)
{
    for (size_t i = 0; i < t->count; i++) {
        if (t->options[i].type == CONFIG_STRING) {
            char **s = config_field(&t->options[i], cfg);
            free(*s);
            *s = NULL;
        }
    }
}
