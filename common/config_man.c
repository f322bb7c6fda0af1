/* A program's manual page from its config table: see config_man.h. */
#include "common/config_man.h"

#include <ctype.h>
#include <string.h>

#include "common/config_value.h"

/* text with roff's specials escaped: '\' as \e, '-' as \-, and a '.' or '''
 * that would start a line as a request guarded by \&. */
static void man_text(FILE *out, const char *text)
{
    for (const char *p = text; p && *p; p++) {
        if ((*p == '.' || *p == '\'') && (p == text || p[-1] == '\n'))
            fputs("\\&", out);
        if (*p == '\\')
            fputs("\\e", out);
        else if (*p == '-')
            fputs("\\-", out);
        else
            fputc(*p, out);
    }
}

static void man_header(const struct config_table *t, FILE *out)
{
    const char *section = t->man_section ? t->man_section : "1";

    fputs(".TH \"", out);
    for (const char *p = t->program; *p; p++)
        fputc(toupper((unsigned char)*p), out);
    fprintf(out, "\" \"%s\" \"\" \"argus\" \"argus manual\"\n.SH NAME\n", section);
    man_text(out, t->program);
    fputs(" \\- ", out);
    man_text(out, t->summary);
    fputs("\n.SH SYNOPSIS\n.B ", out);
    man_text(out, t->program);
    fprintf(out,
            "\n[\\fB\\-\\-config\\fR \\fIFILE\\fR] [\\fB\\-\\-\\fIsection.key\\fR "
            "\\fIVALUE\\fR]...%s\n",
            t->ncommands ? " \\fICOMMAND\\fR [\\fIARG\\fR]" : "");
    fputs(".SH DESCRIPTION\n", out);
    man_text(out, t->summary);
    fputs(".\nEvery setting is a key of the configuration file (INI: \\fB[section]\\fR, then "
          "\\fBkey = value\\fR) and a flag \\fB\\-\\-section.key\\fR that overrides it.\n",
          out);
    if (t->usage) {
        fputs(".PP\n.nf\n", out);
        man_text(out, t->usage);
        fputs("\n.fi\n", out);
    }
}

static void man_commands(const struct config_table *t, FILE *out)
{
    if (!t->ncommands)
        return;
    fputs(".SH COMMANDS\n", out);
    for (size_t i = 0; i < t->ncommands; i++) {
        fputs(".TP\n\\fB", out);
        man_text(out, t->commands[i].name);
        fputs("\\fR", out);
        if (t->commands[i].args) {
            fputc(' ', out);
            man_text(out, t->commands[i].args);
        }
        fputc('\n', out);
        man_text(out, t->commands[i].help);
        fputc('\n', out);
    }
}

static void man_generic_options(const struct config_table *t, FILE *out)
{
    static const char *const generic[][2] = {
        {"config FILE", "Read FILE instead of the default configuration file."},
        {"check-config", "Load the configuration file and flags, run every check a start "
                         "runs, print ok or every error (file:line or flag, and why); exit 0 "
                         "or 2. Starts nothing."},
        {"print-config", "Print the effective configuration as a file, with each key's help."},
        {"man", "Write this manual page (roff)."},
        {"help", "Print the options and exit."},
    };

    fputs(".SH OPTIONS\n", out);
    for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++) {
        fputs(".TP\n\\fB\\-\\-", out);
        man_text(out, generic[i][0]);
        fputs("\\fR\n", out);
        man_text(out, generic[i][1]);
        fputc('\n', out);
    }
    if (t->default_path) {
        fputs("The default configuration file is \\fI", out);
        man_text(out, t->default_path);
        fputs("\\fR (read when it exists and no \\fB\\-\\-config\\fR is given).\n", out);
    }
}

/* The kind of value an option takes: a type name or its allowed names. */
static void man_kind(const struct config_option *o, FILE *out)
{
    static const char *const kind[] = {
        [CONFIG_BOOL] = "true|false", [CONFIG_INT] = "INTEGER", [CONFIG_UINT] = "COUNT",
        [CONFIG_DOUBLE] = "NUMBER",   [CONFIG_STRING] = "TEXT", [CONFIG_DURATION] = "DURATION",
        [CONFIG_SIZE] = "SIZE",       [CONFIG_ENUM] = "NAME",
    };
    char names[256];

    if (o->type == CONFIG_ENUM) {
        config_names_join(o->names, "|", "|", names, sizeof(names));
        man_text(out, names);
    } else {
        man_text(out, kind[o->type]);
    }
}

static void man_option(const struct config_option *o, FILE *out)
{
    fputs(".TP\n\\fB\\-\\-", out);
    man_text(out, o->key);
    fputs("\\fR \\fI", out);
    man_kind(o, out);
    fputs("\\fR\n", out);
    man_text(out, o->help);
    fputs(". Default: ", out);
    man_text(out, o->default_value && *o->default_value ? o->default_value : "empty");
    if (o->min != o->max && o->type != CONFIG_ENUM && o->type != CONFIG_BOOL)
        fprintf(out, "; from %g to %g%s", o->min, o->max,
                o->type == CONFIG_DURATION ? " seconds"
                : o->type == CONFIG_SIZE   ? " bytes"
                                           : "");
    fputs(o->live ? ". A reload (SIGHUP) applies it.\n" : ".\n", out);
}

static void man_keys(const struct config_table *t, FILE *out)
{
    const char *prev = NULL;
    size_t prevlen = 0;

    if (!t->count)
        return;
    fputs(".SH CONFIGURATION\nDurations take a unit (250ms, 5s, 10m, 2h, 7d); sizes may "
          "(4096, 64KiB, 4MiB, 1GiB).\n",
          out);
    for (size_t i = 0; i < t->count; i++) {
        const struct config_option *o = &t->options[i];
        const char *dot = strchr(o->key, '.');
        size_t slen = dot ? (size_t)(dot - o->key) : 0;
        if (slen && (!prev || slen != prevlen || strncmp(prev, o->key, slen) != 0)) {
            fprintf(out, ".SS [%.*s]\n", (int)slen, o->key);
            prev = o->key;
            prevlen = slen;
        }
        man_option(o, out);
    }
}

void config_man(const struct config_table *t, FILE *out)
{
    man_header(t, out);
    man_commands(t, out);
    man_generic_options(t, out);
    man_keys(t, out);
    if (t->default_path) {
        fputs(".SH FILES\n.TP\n\\fI", out);
        man_text(out, t->default_path);
        fputs("\\fR\nThe configuration file.\n", out);
    }
    fputs(".SH SEE ALSO\n\\fBargus\\-agent\\fR(8), \\fBargus\\-collector\\fR(8), "
          "\\fBargusctl\\fR(1), \\fBargus\\-sim\\fR(1); /usr/share/doc/argus/README.md\n",
          out);
}
