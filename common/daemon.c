#include "common/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <stdio.h>
#include <unistd.h>

#include "common/config.h"
#include "common/config_man.h"
#include "common/log.h"

int daemon_signalfd(void)
{
    sigset_t mask;
    int fd;

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
        return -EINVAL;
    fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

enum daemon_signal daemon_read_signal(int fd)
{
    struct signalfd_siginfo si;

    if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
        return DAEMON_SIGNAL_NONE;
    if (si.ssi_signo == SIGHUP)
        return DAEMON_SIGNAL_RELOAD;
    return DAEMON_SIGNAL_STOP;
}

enum daemon_signal daemon_wait_signal(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    if (poll(&p, 1, timeout_ms) <= 0)
        return DAEMON_SIGNAL_NONE;
    return daemon_read_signal(fd);
}

/* Print each line of res->error, prefixed with the program's name. */
static void daemon_print_errors(const struct config_table *t, const struct config_result *res)
{
    const char *line = res->error;

    while (*line) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "%s: %.*s\n", t->program, len, line);
        line += len + (nl ? 1 : 0);
    }
    if (res->nerrors > 1)
        fprintf(stderr, "%s: %d errors in the configuration\n", t->program, res->nerrors);
}

int daemon_config(const struct config_table *t, void *cfg, int argc, char **argv,
                  const int *log_level, struct config_result *res)
{
    log_set_ident(t->program);
    if (config_load(t, cfg, argc, argv, res) < 0) {
        daemon_print_errors(t, res);
        goto fail;
    }
    if (res->help || res->print || res->check || res->man) {
        if (res->help)
            config_usage(t, stdout);
        else if (res->man)
            config_man(t, stdout);
        else if (res->print)
            config_print(t, cfg, stdout);
        else
            printf("ok: %s is valid\n", res->path ? res->path : "the built-in configuration");
        config_free(t, cfg);
        return 1;
    }
    if (log_level)
        log_set_level((enum log_level)(*log_level));
    return 0;
fail:
    config_free(t, cfg);
    return -EINVAL;
}

int daemon_mkdir_p(const char *path, unsigned mode)
{
    char buf[4096];
    size_t len = strlen(path);

    if (len == 0 || len >= sizeof(buf))
        return len ? -ENAMETOOLONG : -EINVAL;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

void daemon_notify(const char *state)
{
    sd_notify(0, state);
}

uint64_t daemon_watchdog_ns(void)
{
    uint64_t usec = 0;

    if (sd_watchdog_enabled(0, &usec) <= 0)
        return 0;
    return usec * 1000;
}

/* fsync fd, counted in the optional counters. Returns 0 or -errno. */
static int daemon_fsync(int fd, uint64_t *fsyncs, uint64_t *fsync_errors)
{
    int err = fsync(fd) ? -errno : 0;

    if (fsyncs)
        (*fsyncs)++;
    if (fsync_errors && err)
        (*fsync_errors)++;
    return err;
}

int daemon_replace_file_at(int dirfd, const char *name, const void *data, size_t len,
                           uint64_t *fsyncs, uint64_t *fsync_errors)
{
    char tmp[512];
    int fd = -1, err = 0;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
        err = -ENAMETOOLONG;
    else if ((fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
        err = -errno;
    for (size_t off = 0; !err && off < len;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            err = w < 0 ? -errno : -ENOSPC;
        else
            off += (size_t)w;
    }
    if (!err)
        err = daemon_fsync(fd, fsyncs, fsync_errors);
    if (fd >= 0 && close(fd) && !err)
        err = -errno;
    if (!err && renameat(dirfd, tmp, dirfd, name))
        err = -errno;
    if (!err)
        err = daemon_fsync(dirfd, fsyncs, fsync_errors);
    if (err && fd >= 0)
        unlinkat(dirfd, tmp, 0);
    return err;
}

int daemon_replace_file(const char *dir, const char *name, const void *data, size_t len)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

    if (dfd < 0)
        return -errno;
    err = daemon_replace_file_at(dfd, name, data, len, NULL, NULL);
    close(dfd);
    return err;
}
