/* libargus-cupti.so: the CUPTI injection library loaded into every CUDA
 * process through CUDA_INJECTION64_PATH. This file holds the entry point;
 * the activity pipeline (buffer pool, worker, shared-memory ring) is issue 7.
 *
 * The library never links libcupti: it dlopens it (ARGUS_CUPTI_LIB first), so
 * a process on a node without CUDA is unaffected. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define ARGUS_EXPORT __attribute__((visibility("default")))

static const char *const cupti_names[] = {"libcupti.so.13", "libcupti.so",
                                          "/usr/local/cuda/lib64/libcupti.so.13"};

/* True when the process is a training rank (launchers and compile workers
 * have no RANK/LOCAL_RANK). */
static int inject_is_rank(void)
{
    return getenv("RANK") != NULL || getenv("LOCAL_RANK") != NULL;
}

static void *inject_open_cupti(void)
{
    const char *path = getenv("ARGUS_CUPTI_LIB");
    void *h;

    if (path)
        return dlopen(path, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < sizeof(cupti_names) / sizeof(cupti_names[0]); i++)
        if ((h = dlopen(cupti_names[i], RTLD_NOW | RTLD_LOCAL)))
            return h;
    return NULL;
}

/* Called by the CUDA driver at cuInit. Returns 1 (the driver ignores the
 * value); never fails the application. */
ARGUS_EXPORT int InitializeInjection(void);
ARGUS_EXPORT int InitializeInjection(void)
{
    if (!inject_is_rank())
        return 1;
    if (!inject_open_cupti())
        fprintf(stderr, "argus-cupti: CUPTI not found, GPU tracing off (%s)\n", dlerror());
    return 1;
}
