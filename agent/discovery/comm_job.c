/* The job of a rank known from its communicator (see comm_job.h). */
#include "agent/discovery/comm_job.h"

#include <stdio.h>
#include <string.h>

#include "agent/discovery/procfs.h"

/* Copy the job of from (an ancestor's environment) into ri. */
static void comm_job_take(struct rank_info *ri, const struct rank_info *from)
{
    memcpy(ri->job, from->job, sizeof(ri->job));
    memcpy(ri->job_source, from->job_source, sizeof(ri->job_source));
}

void comm_job_pick(const char *proc_root, const struct environ_config *c, const char *store_job,
                   char *envbuf, size_t envcap, struct rank_info *ri)
{
    char path[PROCFS_ROOT_MAX + 32];
    struct proc_stat st;
    struct rank_info up, addr = {0}; /* addr: the nearest ancestor's MASTER_ADDR job */
    uint32_t pid = ri->ppid;

    if (environ_job_from_variable(ri))
        return;
    for (int k = 0; k < COMM_JOB_DEPTH_MAX && pid > 1; k++) {
        snprintf(path, sizeof(path), "%s/%u/environ", proc_root, pid);
        ssize_t n = procfs_read_file(path, envbuf, envcap);
        if (n >= 0 && environ_parse_comm(envbuf, (size_t)n, c, 0, 1, &up) == ENVIRON_RANK) {
            if (environ_job_from_variable(&up)) {
                comm_job_take(ri, &up);
                return;
            }
            if (!addr.job[0] && strcmp(up.job_source, "MASTER_ADDR") == 0)
                comm_job_take(&addr, &up);
        }
        if (procfs_read_stat(proc_root, pid, &st) < 0)
            break;
        pid = st.ppid;
    }
    if (store_job) {
        snprintf(ri->job, sizeof(ri->job), "%s", store_job);
        snprintf(ri->job_source, sizeof(ri->job_source), "TCPStore");
    } else if (strcmp(ri->job_source, "MASTER_ADDR") != 0 && addr.job[0]) {
        comm_job_take(ri, &addr);
    } else if (strcmp(ri->job_source, "MASTER_ADDR") != 0) {
        snprintf(ri->job, sizeof(ri->job), "job-%u@%.*s", ri->ppid, DISCOVERY_JOB_MAX - 20,
                 c->node);
        snprintf(ri->job_source, sizeof(ri->job_source), "parent");
    }
}
