/* The CUPTI socket's peer against the process it claims to be: see
 * cupti_peer.h. */
#include "agent/sources/cupti_peer.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* The value after "key:" on its own line, or NULL. */
static const char *status_field(const char *text, const char *key)
{
    size_t n = strlen(key);

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == ':')
            return p + n + 1;
    return NULL;
}

int cupti_peer_parse_status(const char *text, struct cupti_peer_proc *out)
{
    const char *tgid = status_field(text, "Tgid"), *uid = status_field(text, "Uid");
    const char *nspid = status_field(text, "NSpid");
    unsigned long real, eff;
    char *end;

    memset(out, 0, sizeof(*out));
    if (!tgid || !uid || sscanf(uid, "%lu %lu", &real, &eff) != 2)
        return -EINVAL;
    out->tgid = (uint32_t)strtoul(tgid, NULL, 10);
    out->euid = (uint32_t)eff;
    for (const char *p = nspid; p && out->n_nspid < CUPTI_PEER_MAX_NS; p = end) {
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || (*end && *end != ' ' && *end != '\t' && *end != '\n'))
            break;
        out->nspid[out->n_nspid++] = (uint32_t)v;
        if (*end == '\n')
            break;
    }
    return 0;
}

/* Read proc_root/pid/status into *out. 0, -ESRCH or -EINVAL. */
static int peer_read(const char *proc_root, uint32_t pid, struct cupti_peer_proc *out)
{
    char path[256], text[4096];
    int fd;
    ssize_t n;

    snprintf(path, sizeof(path), "%s/%u/status", proc_root, pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -ESRCH;
    n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return -ESRCH;
    text[n] = '\0';
    return cupti_peer_parse_status(text, out);
}

/* claimed names the peer: itself, its leader, one of its threads, or its pid
 * in a nested namespace. */
static bool peer_is(const char *proc_root, uint32_t peer_pid, const struct cupti_peer_proc *p,
                    uint32_t claimed)
{
    char path[256];
    struct stat st;

    if (claimed == peer_pid || claimed == p->tgid)
        return true;
    for (uint32_t i = 0; i < p->n_nspid; i++)
        if (p->nspid[i] == claimed)
            return true;
    snprintf(path, sizeof(path), "%s/%u/task/%u", proc_root, peer_pid, claimed);
    return claimed != 0 && stat(path, &st) == 0;
}

int cupti_peer_check(const char *proc_root, uint32_t peer_pid, uint32_t peer_uid,
                     uint32_t claimed_pid, char *why, size_t whylen)
{
    struct cupti_peer_proc p;

    if (!peer_pid || peer_read(proc_root, peer_pid, &p) < 0) {
        snprintf(why, whylen, "peer pid %u is gone or unreadable", peer_pid);
        return -ESRCH;
    }
    if (!peer_is(proc_root, peer_pid, &p, claimed_pid)) {
        snprintf(why, whylen, "hello claims pid %u but the peer is pid %u", claimed_pid, peer_pid);
        return -EPERM;
    }
    if (p.euid != peer_uid) {
        snprintf(why, whylen, "peer uid %u is not the owner (uid %u) of pid %u", peer_uid, p.euid,
                 peer_pid);
        return -EPERM;
    }
    return 0;
}

int cupti_peer_group(const char *group, gid_t *gid, char *why, size_t whylen)
{
    struct group g, *found = NULL;
    char buf[4096], *end;

    if (!group || !*group) {
        *gid = getegid();
        return 0;
    }
    unsigned long v = strtoul(group, &end, 10);
    if (*end == '\0' && end != group) {
        *gid = (gid_t)v;
        return 0;
    }
    if (getgrnam_r(group, &g, buf, sizeof(buf), &found) != 0 || !found) {
        snprintf(why, whylen, "cupti.socket_group '%s': no such group", group);
        return -ENOENT;
    }
    *gid = found->gr_gid;
    return 0;
}
