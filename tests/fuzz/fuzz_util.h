/* What the file-based fuzz targets share: one scratch directory per fuzzer
 * process (under /dev/shm when it exists, so an iteration costs no disk I/O)
 * and writing the input into a file there. Header-only: each target is one
 * translation unit linked with the fuzzer-instrumented libraries. */
#ifndef ARGUS_TESTS_FUZZ_UTIL_H
#define ARGUS_TESTS_FUZZ_UTIL_H

#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scratch directory of this process (created on first use; aborts when
 * it cannot be: a fuzzer that cannot write its input tests nothing). */
static inline const char *fuzz_dir(void)
{
    static char dir[PATH_MAX];

    if (!dir[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof(dir), "%s/argus-fuzz-XXXXXX", base);
        if (!mkdtemp(dir))
            abort();
    }
    return dir;
}

/* Write data to dir/name (replacing it); the full path goes to path. */
static inline void fuzz_write(const char *name, const uint8_t *data, size_t size, char *path,
                              size_t pathlen)
{
    int fd;

    snprintf(path, pathlen, "%s/%s", fuzz_dir(), name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        abort();
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    close(fd);
}

#endif
