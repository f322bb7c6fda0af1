/* source_cupti on its own: this test plays the injection library (hello with
 * a memfd ring, spans written by hand) so every path of the agent side is
 * checked exactly: names, kernels, NVTX projection, drop deltas, bad hellos,
 * sampling control, and the last spans of a process that went away. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cmocka.h>

#include "common/name_id.h"
#include "tests/cupti/harness.h"

struct fake {
    int sock;
    struct cupti_ring_header *ring;
    size_t bytes;
    uint64_t head;
};

static char sock_path[128];
static uint32_t hello_pid; /* the pid hellos claim: ours, else refused (cupti_peer.h) */

static int fake_connect_sealed(struct fake *f, uint32_t slots, uint32_t magic, bool seal)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct cupti_hello hello = {.magic = magic,
                                .version = CUPTI_RING_VERSION,
                                .pid = hello_pid,
                                .rank = 3,
                                .local_rank = 3,
                                .slots = slots,
                                .job = "job-1"};
    char cbuf[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {&hello, sizeof(hello)};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int fd = memfd_create("fake-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    memset(f, 0, sizeof(*f));
    f->bytes = cupti_ring_bytes(slots);
    if (fd < 0 || ftruncate(fd, (off_t)f->bytes) < 0)
        return -1;
    if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
        return -1;
    f->ring = mmap(NULL, f->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    f->ring->magic = CUPTI_RING_MAGIC;
    f->ring->version = CUPTI_RING_VERSION;
    f->ring->slots = slots;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
    f->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (connect(f->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -1;
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    if (sendmsg(f->sock, &msg, 0) < 0)
        return -1;
    close(fd);
    return 0;
}

static int fake_connect(struct fake *f, uint32_t slots, uint32_t magic)
{
    return fake_connect_sealed(f, slots, magic, true);
}

static void fake_put(struct fake *f, struct cupti_span s)
{
    cupti_ring_slots(f->ring)[f->head++ & (f->ring->slots - 1)] = s;
}

static uint64_t fake_name(struct fake *f, const char *name)
{
    uint32_t len = (uint32_t)strlen(name);
    uint64_t id = name_id(name);

    fake_put(f, (struct cupti_span){.kind = CUPTI_SPAN_NAME, .name_id = id, .aux = len});
    cupti_ring_put_bytes(f->ring, f->head, name, len);
    f->head += cupti_ring_name_slots(len) - 1;
    return id;
}

static void fake_publish(struct fake *f)
{
    atomic_store(&f->ring->head, f->head);
}

static void fake_close(struct fake *f)
{
    close(f->sock);
    munmap(f->ring, f->bytes);
}

static int setup(void **state)
{
    snprintf(sock_path, sizeof(sock_path), "/tmp/argus-cupti-src-%d.sock", (int)getpid());
    hello_pid = (uint32_t)getpid();
    return 0;
}

static void test_names_kernels_and_drops(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    void *src = h_source(h, sock_path);
    struct fake f;
    struct source_cupti_stats st;
    uint64_t id;

    assert_non_null(src);
    assert_int_equal(fake_connect(&f, 256, CUPTI_RING_MAGIC), 0);
    h_pump(src, 20000000);
    source_cupti_get_stats(src, &st);
    assert_int_equal(st.connected, 1);
    id = fake_name(&f, "void at::native::vectorized_elementwise_kernel<4>");
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_KERNEL,
                                     .start_ns = 1000,
                                     .dur_ns = 250,
                                     .name_id = id,
                                     .stream = 7,
                                     .correlation = 11});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_MEMCPY,
                                     .start_ns = 2000,
                                     .dur_ns = 30,
                                     .stream = 8,
                                     .correlation = 12});
    atomic_store(&f.ring->drops[CUPTI_DROP_RING_FULL], 5);
    fake_publish(&f);
    h_pump(src, 20000000);
    assert_int_equal(h->nk, 2);
    assert_string_equal(h_name(h, h->k[0].name_id),
                        "void at::native::vectorized_elementwise_kernel<4>");
    assert_int_equal(h->k[0].dur, 250);
    assert_int_equal(h->k[0].stream, 7);
    assert_int_equal(h->k[0].corr, 11);
    assert_int_equal(h->k[0].kind, AGENT_KERNEL_COMPUTE);
    assert_int_equal(h->pid0, getpid()); /* SO_PEERCRED */
    assert_int_equal(h->k[1].kind, AGENT_KERNEL_MEMCPY);
    assert_int_equal(h->drops[CUPTI_DROP_RING_FULL], 5);
    atomic_store(&f.ring->drops[CUPTI_DROP_RING_FULL], 8); /* cumulative: +3 */
    h_pump(src, 20000000);
    assert_int_equal(h->drops[CUPTI_DROP_RING_FULL], 8);
    assert_int_equal(atomic_load(&f.ring->tail), f.head); /* the reader freed the slots */

    /* the process goes: what it published last still arrives */
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_KERNEL,
                                     .start_ns = 3000,
                                     .dur_ns = 5,
                                     .name_id = id,
                                     .stream = 7,
                                     .correlation = 13});
    fake_publish(&f);
    fake_close(&f);
    h_pump(src, 20000000);
    source_cupti_get_stats(src, &st);
    assert_int_equal(h->nk, 3);
    assert_int_equal(st.connected, 0);
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

static void test_phase_projection(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    void *src = h_source(h, sock_path);
    struct fake f;
    uint64_t fwd, step, k;

    assert_non_null(src);
    assert_int_equal(fake_connect(&f, 1024, CUPTI_RING_MAGIC), 0);
    step = fake_name(&f, "ProfilerStep#7");
    fwd = fake_name(&f, "forward");
    k = fake_name(&f, "gemm");
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_STEP,
                                     .start_ns = 90,
                                     .stream = 5,
                                     .aux = 7,
                                     .flags = CUPTI_SPAN_STEP_NUMBERED | CUPTI_SPAN_SAMPLED});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_MARKER,
                                     .start_ns = 90,
                                     .name_id = step,
                                     .stream = 5,
                                     .aux = 1,
                                     .flags = CUPTI_SPAN_PHASE});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_MARKER,
                                     .start_ns = 100,
                                     .name_id = fwd,
                                     .stream = 5,
                                     .aux = 2,
                                     .flags = CUPTI_SPAN_PHASE});
    /* launches: 1 and 3 on the range's thread, 2 on another thread */
    fake_put(&f, (struct cupti_span){
                     .kind = CUPTI_SPAN_API, .start_ns = 110, .correlation = 1, .stream = 5});
    fake_put(&f, (struct cupti_span){
                     .kind = CUPTI_SPAN_API, .start_ns = 120, .correlation = 2, .stream = 6});
    fake_put(&f, (struct cupti_span){
                     .kind = CUPTI_SPAN_API, .start_ns = 130, .correlation = 3, .stream = 5});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_RANGE_END, .start_ns = 200, .aux = 2});
    fake_put(&f, (struct cupti_span){
                     .kind = CUPTI_SPAN_API, .start_ns = 210, .correlation = 4, .stream = 5});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_RANGE_END, .start_ns = 250, .aux = 1});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_KERNEL,
                                     .start_ns = 300,
                                     .dur_ns = 100,
                                     .name_id = k,
                                     .stream = 7,
                                     .correlation = 1});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_KERNEL,
                                     .start_ns = 400,
                                     .dur_ns = 500,
                                     .name_id = k,
                                     .stream = 7,
                                     .correlation = 2});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_KERNEL,
                                     .start_ns = 500,
                                     .dur_ns = 100,
                                     .name_id = k,
                                     .stream = 7,
                                     .correlation = 3});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_KERNEL,
                                     .start_ns = 350,
                                     .dur_ns = 10,
                                     .name_id = k,
                                     .stream = 9,
                                     .correlation = 3});
    fake_put(&f, (struct cupti_span){.kind = CUPTI_SPAN_KERNEL,
                                     .start_ns = 700,
                                     .dur_ns = 1000,
                                     .name_id = k,
                                     .stream = 7,
                                     .correlation = 4});
    fake_publish(&f);
    h_pump(src, 20000000);
    assert_int_equal(h->steps, 1);
    assert_int_equal(h->sampled_steps, 1);
    /* forward: kernels 1 and 3 on stream 7 (2 was launched by another thread) */
    assert_int_equal(h->np, 1);
    assert_int_equal(h->p[0].name_id, fwd);
    assert_int_equal(h->p[0].ts, 300);
    assert_int_equal(h->p[0].dur, 300);
    assert_int_equal(h->p[0].stream, 7);
    fake_close(&f); /* the step range settles when the process goes */
    h_pump(src, 20000000);
    assert_int_equal(h->np, 2);
    assert_int_equal(h->p[1].name_id, step);
    assert_int_equal(h->p[1].ts, 300);
    assert_int_equal(h->p[1].dur, 1400); /* 300 .. 1700 on stream 7 */
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

static void test_bad_hello_and_sampling_control(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    void *src = h_source(h, sock_path);
    struct source_cupti_stats st;
    struct cupti_control ctl = {0};
    struct fake bad, good, unsealed;

    assert_non_null(src);
    assert_int_equal(fake_connect(&bad, 256, 0xdeadbeef), 0);
    assert_int_equal(fake_connect(&good, 100, CUPTI_RING_MAGIC), 0); /* not a power of two */
    assert_int_equal(fake_connect_sealed(&unsealed, 256, CUPTI_RING_MAGIC, false), 0);
    h_pump(src, 20000000);
    source_cupti_get_stats(src, &st);
    assert_int_equal(st.bad_hellos, 3);
    assert_int_equal(st.connected, 0);
    fake_close(&bad);
    fake_close(&good);
    fake_close(&unsealed);

    assert_int_equal(fake_connect(&good, 256, CUPTI_RING_MAGIC), 0);
    h_pump(src, 20000000);
    assert_int_equal(source_cupti_set_sampling(src, CUPTI_SAMPLE_TIME, 100, 1000), 0);
    assert_int_equal(source_cupti_set_sampling(src, 9, 1, 2), -EINVAL);
    assert_int_equal(recv(good.sock, &ctl, sizeof(ctl), 0), (ssize_t)sizeof(ctl));
    assert_int_equal(ctl.magic, CUPTI_RING_MAGIC);
    assert_int_equal(ctl.mode, CUPTI_SAMPLE_TIME);
    assert_int_equal(ctl.k, 100);
    assert_int_equal(ctl.n, 1000);
    fake_close(&good);
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

/* The socket is the agent's and its group's only, and a hello that claims
 * to be another process (pid 1) is refused and counted. */
static void test_socket_mode_and_peer(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    void *src = h_source(h, sock_path);
    struct source_cupti_stats st;
    struct stat sb;
    struct fake liar, good;
    char buf[1024];

    assert_non_null(src);
    assert_int_equal(stat(sock_path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0660);
    assert_int_equal(sb.st_gid, getegid());
    hello_pid = 1;
    assert_int_equal(fake_connect(&liar, 256, CUPTI_RING_MAGIC), 0);
    h_pump(src, 20000000);
    source_cupti_get_stats(src, &st);
    assert_int_equal(st.bad_peers, 1);
    assert_int_equal(st.bad_hellos, 1);
    assert_int_equal(st.connected, 0);
    hello_pid = (uint32_t)getpid();
    assert_int_equal(fake_connect(&good, 256, CUPTI_RING_MAGIC), 0);
    h_pump(src, 20000000);
    source_cupti_get_stats(src, &st);
    assert_int_equal(st.connected, 1);
    size_t n = source_cupti_ops.metrics(src, buf, sizeof(buf) - 1);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "argus_cupti_rejected_peers_total 1"));
    fake_close(&liar);
    fake_close(&good);
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

static void test_metrics(void **state)
{
    struct h_sink *h = calloc(1, sizeof(*h));
    void *src = h_source(h, sock_path);
    char buf[1024];
    size_t n;

    assert_non_null(src);
    n = source_cupti_ops.metrics(src, buf, sizeof(buf));
    assert_true(n > 0 && n < sizeof(buf));
    buf[n] = '\0';
    assert_non_null(strstr(buf, "argus_cupti_drops_total{reason=\"cupti_ring_full\"} 0"));
    assert_int_equal(source_cupti_ops.metrics(src, buf, 10), 10);
    source_cupti_ops.destroy(src);
    h_sink_free(h);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_names_kernels_and_drops, setup),
        cmocka_unit_test_setup(test_phase_projection, setup),
        cmocka_unit_test_setup(test_bad_hello_and_sampling_control, setup),
        cmocka_unit_test_setup(test_socket_mode_and_peer, setup),
        cmocka_unit_test_setup(test_metrics, setup),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
