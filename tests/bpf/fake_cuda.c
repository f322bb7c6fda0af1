/* Stand-in for libcudart.so.13 (and the driver calls of libcuda.so.1): the
 * real symbol names and ABI. The synchronizations sleep $FAKE_SYNC_US
 * (default 20 ms) so the sync probe has a known host wait to measure, as a
 * host waiting for the GPU would; cudaStreamSynchronize
 * calls cuStreamSynchronize like the real runtime does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct CUstream_st *cudaStream_t;
typedef struct CUctx_st *CUcontext;
typedef int cudaError_t;
typedef int CUresult;
typedef uint64_t CUdeviceptr;

#define EXPORT __attribute__((visibility("default"), noinline, used))
static void fake_wait(void)
{
    const char *env = getenv("FAKE_SYNC_US");
    long us = env ? atol(env) : 20000;
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};

    while (nanosleep(&ts, &ts) != 0)
        ;
}

EXPORT CUresult cuStreamSynchronize(cudaStream_t s)
{
    fake_wait();
    return 0;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    fake_wait();
    return 0;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    return cuStreamSynchronize(s);
}

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    fake_wait();
    return 0;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
    void *m = malloc(size);

    *p = (CUdeviceptr)(uintptr_t)m;
    return m ? 0 : 2;
}

EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
    *p = malloc(size);
    return *p ? 0 : 2;
}
