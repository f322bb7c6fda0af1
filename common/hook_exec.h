/* common/hook_exec: run one hook (an action, an alert sink). The program runs
 * without a shell, in its own process group, with the collector's
 * environment plus the caller's ARGUS_* variables, input on its stdin, and
 * its stdout and stderr (together) read back: the first
 * HOOK_EXEC_OUTPUT bytes kept, the rest read and dropped. At the timeout
 * the whole group is killed (SIGKILL). Thread-safe (no shared state).
 */
#ifndef ARGUS_COMMON_HOOK_EXEC_H
#define ARGUS_COMMON_HOOK_EXEC_H

#include <stddef.h>
#include <stdint.h>

#define HOOK_EXEC_OUTPUT 512 /* bytes of output kept */

struct hook_exec_result {
    int exit_status;                   /* 0..255; 128+N killed by signal N; -1 did not start */
    char output[HOOK_EXEC_OUTPUT + 1]; /* NUL-terminated excerpt */
};

/* Whether path is an absolute path to a file we may execute: 0, or -EINVAL
 * with a sentence quoting it in err (errlen bytes). */
int hook_exec_check(const char *path, char *err, size_t errlen);

/* Run path with env (NULL-terminated "K=V" strings added to ours; the
 * caller's) and input on stdin, at most timeout_ns (0: 30 s). Returns 0
 * when it exited 0; -EIO when it exited non-zero or was killed (timeout:
 * -ETIMEDOUT), -errno when it could not start; *out is filled in every
 * case (the output says why when it did not start or timed out). */
int hook_exec_run(const char *path, const char *const *env, const char *input, uint64_t timeout_ns,
                  struct hook_exec_result *out);

#endif
