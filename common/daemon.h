/* Process plumbing shared by the daemons: signals as a file descriptor. */
#ifndef ARGUS_COMMON_DAEMON_H
#define ARGUS_COMMON_DAEMON_H

#include <stddef.h>
#include <stdint.h>

enum daemon_signal {
    DAEMON_SIGNAL_NONE = 0,
    DAEMON_SIGNAL_STOP,   /* SIGTERM or SIGINT: flush and exit 0 */
    DAEMON_SIGNAL_RELOAD, /* SIGHUP: reload and validate the config */
};

/* Block SIGTERM, SIGINT and SIGHUP in the calling thread (call it before any
 * thread starts, so every thread inherits the mask), ignore SIGPIPE, and
 * return a non-blocking signalfd for them, or -errno. */
int daemon_signalfd(void);

/* Read one pending signal from fd. Returns a daemon_signal, or
 * DAEMON_SIGNAL_NONE when none is pending. */
enum daemon_signal daemon_read_signal(int fd);

/* Wait up to timeout_ms (-1 forever) for a signal on fd. */
enum daemon_signal daemon_wait_signal(int fd, int timeout_ms);

struct config_table;
struct config_result;

/* The start of every daemon's main(): load the config (defaults, file, flags),
 * handle --help, --man, --print-config and --check-config (prints "ok: ..."
 * to stdout; a load error is printed the same way with or without it: one
 * line per error on stderr), set the log level from *log_level (a
 * field of cfg holding an enum log_level, e.g. the CONFIG_ENUM log.level;
 * NULL: leave the level alone). Returns 0 to run on, 1 when the program
 * should exit 0 (help, manual, config or "ok" printed), or -EINVAL after printing the
 * error to stderr (exit 2). On 1 and on error cfg has been freed. */
int daemon_config(const struct config_table *t, void *cfg, int argc, char **argv,
                  const int *log_level, struct config_result *res);

/* mkdir -p with mode for the directories it creates. Returns 0 or -errno
 * (-EINVAL for "", -ENAMETOOLONG for a path of PATH_MAX or more). */
int daemon_mkdir_p(const char *path, unsigned mode);

/* Replace dir/name with len bytes of data durably: write name.tmp, fsync,
 * rename over name, fsync dir. Returns 0 or -errno (name is untouched). */
int daemon_replace_file(const char *dir, const char *name, const void *data, size_t len);

/* daemon_replace_file in the directory open as dirfd (left open). Each fsync
 * it makes (of name.tmp, then of the directory) adds 1 to *fsyncs, and each
 * failed one 1 to *fsync_errors, when they are not NULL. */
int daemon_replace_file_at(int dirfd, const char *name, const void *data, size_t len,
                           uint64_t *fsyncs, uint64_t *fsync_errors);

/* Tell systemd (when NOTIFY_SOCKET is set) a state such as "READY=1",
 * "WATCHDOG=1", "STOPPING=1", "RELOADING=1". Harmless without systemd. */
void daemon_notify(const char *state);

/* The watchdog interval systemd asks for (WATCHDOG_USEC), or 0. */
uint64_t daemon_watchdog_ns(void);

#endif
