/* libFuzzer target: the agent's side of the CUPTI hand-over
 * (agent/sources/source_cupti.c), which reads what a training process — any
 * local user's — writes: the hello on the unix socket and the shared span
 * ring. One source listens for the whole run (state carries across inputs);
 * each input is one connection. Input: a selector byte, then head and tail
 * (8 bytes each), then the ring's slot bytes. Selector bit 0 set: the hello
 * itself is taken from the input too (almost always refused, as it must be);
 * else a valid hello for a ring of 1 << (bits 1..3) slots. The connection
 * rings the doorbell and hangs up; dispatch must read every span within the
 * ring, never outside it, and free the connection. */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "agent/sources/source_cupti.h"
#include "fuzz_util.h"

static void on_event(void *ctx, const struct agent_event *ev)
{
}

static void on_name(void *ctx, uint64_t id, const char *name)
{
    if (!name || !memchr(name, 0, CUPTI_RING_NAME_MAX + 1))
        abort();
}

static void *source(char *path, size_t pathlen)
{
    static void *st;
    static char sock[512];
    static const struct event_sink sink = {.event = on_event, .name = on_name};
    char why[256];

    if (!st) {
        struct source_cupti_config c = {0};
        snprintf(sock, sizeof(sock), "%s/cupti.sock", fuzz_dir());
        c.socket_path = sock;
        if (!(st = source_cupti_ops.create(&c, why, sizeof(why))) ||
            source_cupti_ops.start(st, &sink, why, sizeof(why)) < 0)
            abort();
    }
    snprintf(path, pathlen, "%s", sock);
    return st;
}

static int ring_fd(const uint8_t *data, size_t size, uint32_t slots)
{
    size_t bytes = cupti_ring_bytes(slots);
    int fd = memfd_create("fuzz-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    struct cupti_ring_header *h;
    uint64_t head = 0, tail = 0;

    if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0)
        abort();
    h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        abort();
    h->magic = CUPTI_RING_MAGIC;
    h->version = CUPTI_RING_VERSION;
    h->slots = slots;
    h->pid = (uint32_t)getpid();
    if (size >= 16) {
        memcpy(&head, data, 8);
        memcpy(&tail, data + 8, 8);
        data += 16, size -= 16;
    }
    atomic_store(&h->head, head);
    atomic_store(&h->tail, tail);
    memcpy(cupti_ring_slots(h), data, size < bytes - sizeof(*h) ? size : bytes - sizeof(*h));
    munmap(h, bytes);
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
        abort();
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct cupti_hello hello = {.magic = CUPTI_RING_MAGIC,
                                .version = CUPTI_RING_VERSION,
                                .rank = 0,
                                .local_rank = 0,
                                .job = "fuzz",
                                .comm = "fuzz"};
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {.iov_base = &hello, .iov_len = sizeof(hello)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    void *st;
    uint8_t sel;
    int fd, rfd;

    if (size < 1)
        return 0;
    sel = data[0];
    data++, size--;
    hello.slots = 1u << ((sel >> 1) & 7);
    hello.pid = (uint32_t)getpid();
    if ((sel & 1) && size >= sizeof(hello)) {
        memcpy(&hello, data, sizeof(hello));
        data += sizeof(hello), size -= sizeof(hello);
    }
    st = source(sa.sun_path, sizeof(sa.sun_path));
    rfd = ring_fd(data, size, 1u << ((sel >> 1) & 7));
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        abort();
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &rfd, sizeof(int));
    (void)sendmsg(fd, &msg, MSG_NOSIGNAL);
    close(rfd);
    (void)source_cupti_ops.dispatch(st);
    (void)send(fd, "d", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)source_cupti_ops.dispatch(st);
    close(fd);
    for (int i = 0; i < 4; i++)
        (void)source_cupti_ops.dispatch(st);
    return 0;
}
