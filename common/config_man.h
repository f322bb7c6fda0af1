/* The manual page of a program, in roff (man(7) macros), written from its
 * config table (common/config.h): name and summary, synopsis, the usage
 * text, its commands, the generic options (--config, --check-config,
 * --print-config, --man, --help), then every key of the table by section
 * with its type or allowed names, default, bounds, whether SIGHUP applies
 * it, and help; the default config file under FILES. Each binary prints
 * its own with --man; the Makefile writes build/man/ from them. */
#ifndef ARGUS_COMMON_CONFIG_MAN_H
#define ARGUS_COMMON_CONFIG_MAN_H

#include <stdio.h>

#include "common/config.h"

/* Write t's manual page to out (section t->man_section, else 1). */
void config_man(const struct config_table *t, FILE *out);

#endif
