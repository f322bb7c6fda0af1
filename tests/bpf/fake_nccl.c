/* Stand-in for libnccl.so.2: the real NCCL entry point names and ABI (as in
 * nccl.h), bodies that do nothing but return ncclSuccess. The collectives
 * probe finds it by name in the workload's /proc/PID/maps like the real one. */
#include <stddef.h>

typedef struct ncclComm *ncclComm_t;
typedef struct CUstream_st *cudaStream_t;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;

#define EXPORT __attribute__((visibility("default"), noinline, used))
#define BODY __asm__ volatile("" ::: "memory")

EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
    BODY;
    return 0;
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t t,
                                  ncclComm_t comm, cudaStream_t st)
{
    BODY;
    return 0;
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t t,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
    BODY;
    return 0;
}

EXPORT ncclResult_t ncclAllToAll(const void *s, void *r, size_t count, ncclDataType_t t,
                                 ncclComm_t comm, cudaStream_t st)
{
    BODY;
    return 0;
}

EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t st)
{
    BODY;
    return 0;
}

EXPORT ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer,
                             ncclComm_t comm, cudaStream_t st)
{
    BODY;
    return 0;
}

EXPORT ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                             cudaStream_t st)
{
    BODY;
    return 0;
}

/* count 0 and s a function: calls it, which may leave by longjmp (a library
 * unwound by an exception: the uretprobe never fires). */
EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t t, int root,
                                  ncclComm_t comm, cudaStream_t st)
{
    BODY;
    if (!count && s)
        ((void (*)(void))s)();
    return 0;
}

EXPORT ncclResult_t ncclGroupStart(void)
{
    BODY;
    return 0;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
    BODY;
    return 0;
}

/* 128 bytes passed by value (on the stack); the communicator is 0xc0ffee. */
typedef struct {
    char internal[128];
} ncclUniqueId;

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    BODY;
    *comm = (ncclComm_t)0xc0ffee;
    return 0;
}
