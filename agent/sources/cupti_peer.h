/* Who says hello on the CUPTI socket (agent/sources/source_cupti.h): the
 * socket is the agent's, mode 0660 with a configured group, and the kernel's
 * word for the peer (SO_PEERCRED: pid and uid at connect) is checked against
 * the process the hello claims to be. The pid the hello names must be the
 * peer's pid, its thread group leader, one of its threads, or its pid in a
 * nested pid namespace (NSpid: a containerised rank names itself by the pid it
 * sees); the peer's uid must be the effective uid of that process. So a local
 * user outside the group cannot connect, and one inside it cannot pass off a
 * ring as another process's.
 *
 * Pure parsing is separate from /proc reads, so tests run both without
 * privileges. */
#ifndef ARGUS_AGENT_CUPTI_PEER_H
#define ARGUS_AGENT_CUPTI_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CUPTI_PEER_MAX_NS 8 /* pid namespace levels kept */

/* What /proc/PID/status says of a process. */
struct cupti_peer_proc {
    uint32_t tgid;
    uint32_t euid;                     /* the second Uid: field */
    uint32_t nspid[CUPTI_PEER_MAX_NS]; /* NSpid: outermost first */
    uint32_t n_nspid;
};

/* Parse the text of /proc/PID/status. Returns 0, or -EINVAL when Tgid or Uid
 * is missing. */
int cupti_peer_parse_status(const char *text, struct cupti_peer_proc *out);

/* Check a hello claiming claimed_pid from the peer peer_pid/peer_uid
 * (SO_PEERCRED), reading proc_root ("/proc"; tests may pass another tree).
 * Returns 0, or -EPERM (a pid or uid that does not match) / -ESRCH (the
 * peer is gone) with a sentence in why. */
int cupti_peer_check(const char *proc_root, uint32_t peer_pid, uint32_t peer_uid,
                     uint32_t claimed_pid, char *why, size_t whylen);

/* The gid of group (a name or a number; "" = the agent's own gid). Returns 0,
 * or -ENOENT with a sentence in why. */
int cupti_peer_group(const char *group, gid_t *gid, char *why, size_t whylen);

#endif
