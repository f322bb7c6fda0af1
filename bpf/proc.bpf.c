/* Process exec and exit, feeding rank discovery (agent/discovery). */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/proc.h"
#include "bpf/ring.h"

#define PROC_RING_BYTES (256 * 1024)

char LICENSE[] SEC("license") = "GPL";

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, PROC_RING_BYTES);
} proc_events SEC(".maps");

/* Events lost because the ring was full; read by the agent. */
__u64 proc_dropped = 0;

static __always_inline void proc_emit(__u32 kind, struct task_struct *task, __s32 exit_code)
{
    struct argus_proc_event *e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);

    if (!e) {
        __sync_fetch_and_add(&proc_dropped, 1);
        return;
    }
    e->ts_ns = bpf_ktime_get_ns();
    e->kind = kind;
    e->pid = BPF_CORE_READ(task, tgid);
    e->ppid = BPF_CORE_READ(task, real_parent, tgid);
    e->exit_code = exit_code;
    bpf_get_current_comm(e->comm, sizeof(e->comm));
    bpf_ringbuf_submit(e, argus_ring_wakeup(&proc_events, PROC_RING_BYTES));
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
    proc_emit(ARGUS_PROC_EXEC, p, 0);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
    /* Only the group leader's exit ends the process. The raw status: the
     * agent decodes the signal, core dump and exit code (probe_proc.c). */
    if (BPF_CORE_READ(p, pid) != BPF_CORE_READ(p, tgid))
        return 0;
    proc_emit(ARGUS_PROC_EXIT, p, BPF_CORE_READ(p, exit_code));
    return 0;
}
