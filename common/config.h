/* The declarative configuration table shared by every argus program.
 *
 * A program describes its settings once, as an array of struct config_option
 * (key, type, where in its config struct, default, bounds, help). From that
 * one table come: defaults, the config file parser (INI: "[section]" then
 * "key = value"; the full key is "section.key"), command-line overrides
 * ("--section.key=value" or "--section.key value"), --help, --print-config
 * (a valid config file with every key and its help) and the one-line-per-
 * section summary the daemons log at start. How one value is parsed and
 * printed: common/config_value.h.
 *
 * An enum option (CONFIG_ENUM) stores an int: its table lists the allowed
 * names and the value of each; --help shows the names, --print-config and the
 * start-up summary print the name.
 *
 * Unknown keys, repeated keys, bad values (an enum's message lists the names),
 * out-of-bounds values and values an option's check refuses (a malformed
 * address, an unknown name in a list) are errors that name the file and line
 * (or the flag); the table's check then refuses combinations of keys the
 * program could not honour as given (it would clamp, replace or ignore one).
 * Loading goes on after an error so that every error is reported, one per
 * line of config_result.error. Nothing is half-applied: on error the
 * caller's struct holds whatever was parsed and must be discarded with
 * config_free (SIGHUP reload loads into a fresh struct, then swaps). Start,
 * --check-config, --print-config and SIGHUP all load through config_load, so
 * they refuse the same things.
 */
#ifndef ARGUS_COMMON_CONFIG_H
#define ARGUS_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum config_type {
    CONFIG_BOOL,     /* bool: true/false, yes/no, on/off, 1/0 */
    CONFIG_INT,      /* int64_t */
    CONFIG_UINT,     /* uint64_t */
    CONFIG_DOUBLE,   /* double */
    CONFIG_STRING,   /* char *, owned by the struct, freed by config_free */
    CONFIG_DURATION, /* uint64_t ns: "250ms", "5s", "10m", "2h", "7d", "0" */
    CONFIG_SIZE,     /* uint64_t bytes: "4096", "64KiB", "4MiB", "1GiB", "1G" */
    CONFIG_ENUM,     /* int: the value of one of the option's names (exact match) */
};

/* One allowed name of a CONFIG_ENUM option and the int stored for it. A
 * list of them ends with {NULL, 0}. */
struct config_name {
    const char *name;
    int value;
};

struct config_option;

/* An option's own check of a value that parsed and is within bounds: field
 * points at it in the program's struct. Returns 0, or -EINVAL with a message
 * in err (errlen bytes) that starts with the key and says what is wrong. */
typedef int (*config_check_fn)(const struct config_option *o, const void *field, char *err,
                               size_t errlen);

struct config_option {
    const char *key; /* "section.name" */
    enum config_type type;
    size_t offset;                   /* offsetof(struct program_config, field) */
    const char *default_value;       /* text, parsed like a file value; NULL = "" */
    double min, max;                 /* inclusive bounds for numeric types; min == max: none */
    const char *help;                /* one line */
    const struct config_name *names; /* CONFIG_ENUM only: the allowed names */
    config_check_fn check;           /* optional, see above */
    bool live;                       /* a SIGHUP reload applies it without a restart */
};

/* A table entry of struct st's member f (designated, so that what is not
 * given is none: no names, no check, not live). */
#define CONFIG_OPTION(st, k, ty, f, def, lo, hi, h, nm, chk, lv)                                   \
    {                                                                                              \
        .key = (k), .type = (ty), .offset = offsetof(st, f), .default_value = (def), .min = (lo),  \
        .max = (hi), .help = (h), .names = (nm), .check = (chk), .live = (lv)                      \
    }

struct config_result;

/* One command of a program that takes a command word (argusctl), for
 * --help and --man. */
struct config_command {
    const char *name; /* "stragglers" */
    const char *args; /* "--job J [--all] [--follow]"; may be NULL */
    const char *help; /* one line */
};

struct config_table {
    const char *program;      /* "argus-agent" */
    const char *summary;      /* one line for --help */
    const char *usage;        /* extra usage text for --help (may be NULL) */
    const char *default_path; /* read when present and no --config is given; may be NULL */
    const struct config_option *options;
    size_t count;
    bool positional; /* accept positional arguments (argusctl) */
    /* Optional: rules between keys, run once defaults, file and flags are in.
     * Reports each broken rule with config_error (naming the keys, their
     * values and why) and returns how many it reported. */
    int (*check)(const void *cfg, struct config_result *res);
    const char *man_section;               /* "8" for daemons; NULL: "1" */
    const struct config_command *commands; /* for --help and --man; may be NULL */
    size_t ncommands;
};

#define CONFIG_MAX_POSITIONAL 16
#define CONFIG_MAX_OPTIONS 256 /* options whose origin config_where can tell */

struct config_result {
    char error[2048]; /* set when config_load fails: one error per line */
    int nerrors;      /* lines in error (some may not have fit) */
    bool help;        /* --help was given */
    bool print;       /* --print-config was given */
    bool check;       /* --check-config was given */
    bool man;         /* --man was given */
    const char *path; /* config file read, or NULL */
    int npositional;
    char *positional[CONFIG_MAX_POSITIONAL]; /* pointers into argv */
    int origin[CONFIG_MAX_OPTIONS]; /* per option: 0 default, -1 flag, else the file's line */
};

/* Fill cfg (zeroed by the caller) with defaults, then the config file
 * (--config PATH, else table->default_path when it exists), then the
 * command-line flags, then run the table's check. Returns 0, or -EINVAL
 * with res->error set to every error found, one per line
 * ("FILE:LINE: unknown key 'x'"). argv is not modified; res->positional
 * points into it. */
int config_load(const struct config_table *t, void *cfg, int argc, char **argv,
                struct config_result *res);

/* Read the config file at path into cfg (defaults already set), stopping
 * at nothing: every bad line is reported in res (zeroed by the caller, or
 * from an earlier load). Returns 0 or -EINVAL/-errno. For a second file
 * format that shares a table (argusctl.conf). */
int config_read_file(const struct config_table *t, void *cfg, const char *path,
                     struct config_result *res);

/* Where the value of key came from, for a table check's message: "FILE:LINE",
 * "--key" or "default". Returns buf (len bytes). */
const char *config_where(const struct config_table *t, const struct config_result *res,
                         const char *key, char *buf, size_t len);

/* Add one line to res->error (printf format) and count it. */
void config_error(struct config_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* res->error on one line ("; " between the errors, in place), for a log. */
const char *config_errors_oneline(struct config_result *res);

/* Log, at info, each key whose value differs between running and fresh
 * ("key: old -> new (applied live)" or "(needs a restart)"), and copy the
 * fresh value of each live key into running, so the next reload compares
 * with what runs. Returns how many changed keys need a restart. */
int config_apply_changes(const struct config_table *t, void *running, void *fresh);

/* Set one key from text. Returns 0, -ENOENT for an unknown key, or -EINVAL
 * with a message in err (errlen bytes). */
int config_set(const struct config_table *t, void *cfg, const char *key, const char *value,
               char *err, size_t errlen);

/* Write every key as a config file (with help as comments) to out. */
void config_print(const struct config_table *t, const void *cfg, FILE *out);

/* Write --help text: usage, commands, then every option. */
void config_usage(const struct config_table *t, FILE *out);

/* Log the effective configuration, one info line per section. */
void config_log(const struct config_table *t, const void *cfg);

/* The name of value among the names of the CONFIG_ENUM option key, or "?"
 * (unknown key, not an enum, or no such value). Static storage. */
const char *config_enum_name(const struct config_table *t, const char *key, int value);

/* The names of every daemon's log.level (the levels of common/log.h). */
extern const struct config_name config_log_levels[];

/* Free the strings owned by cfg. cfg itself belongs to the caller. */
void config_free(const struct config_table *t, void *cfg);

#endif
