/* What the collectives probe (probe_collectives.h) learns about a call
 * beyond its arguments, from the other calls it sees:
 *
 * - The communicator's id shared by all its members. A call's communicator
 *   argument is a process-local handle (an ncclComm_t, a c10d process group
 *   object), useless to match the same call across ranks. Every member sees
 *   the same identity when the communicator is made: for c10d, torch names
 *   each group ("0", "1"...: a counter every rank advances for every group,
 *   member or not, or the name the job gave) and makes a c10d::PrefixStore
 *   with that name just before the group object, on the same thread; for
 *   NCCL, every member passes the same ncclUniqueId (random bytes and the
 *   root's address) to ncclCommInitRank. The id is an FNV-1a hash of that
 *   identity and the group size, bound to the handle when the group is made;
 *   0 when the probe did not see it made (attached later).
 * - The host end of a gloo collective. c10d's gloo calls only enqueue: a
 *   worker thread runs the collective and calls
 *   ProcessGroupGloo::AsyncWork::finishWorkGloo(work) when it is done, the
 *   same instant on every member (the last member's arrival lets them all
 *   finish). The work object is made (AsyncWork::AsyncWork) inside the c10d
 *   call, on its thread; finishWorkGloo names it again.
 *
 * Pure bookkeeping: no I/O, apart from coll_ident_read and
 * coll_ident_read_prefix, which read the traced process's memory. Bounded tables;
 * the oldest entry is overwritten. Single-threaded. */
#ifndef ARGUS_AGENT_PROBES_COLL_IDENT_H
#define ARGUS_AGENT_PROBES_COLL_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COLL_IDENT_NAME_MAX 128 /* longest group name kept */

struct coll_ident;

/* NULL when out of memory. Free with coll_ident_free (NULL is fine). */
struct coll_ident *coll_ident_new(void);
void coll_ident_free(struct coll_ident *ci);

/* The id of a communicator: FNV-1a of identity[0..len) and size, never 0. */
uint64_t coll_ident_hash(const void *identity, size_t len, uint32_t size);

/* A c10d::PrefixStore(prefix) was made on thread tid of pid at ns. */
void coll_ident_store(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t ns,
                      const char *prefix);

/* A c10d process group object `handle` of size was made on thread tid at
 * ns: binds it to the prefix of the last store made on that thread (and
 * consumes it). Returns the id, or 0 when no store was seen. */
uint64_t coll_ident_group(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t ns,
                          uint64_t handle, uint32_t size);

/* Bind handle of pid to id (NCCL: coll_ident_hash of the unique id). */
void coll_ident_bind(struct coll_ident *ci, uint32_t pid, uint64_t handle, uint64_t id);

/* The shared id of pid's handle, 0 when unknown. */
uint64_t coll_ident_lookup(const struct coll_ident *ci, uint32_t pid, uint64_t handle);

/* A gloo work object was made on thread tid at ns (inside a c10d call). */
void coll_ident_work(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t ns, uint64_t work);

/* The c10d call [enter_ns, exit_ns] on tid returned: the work made inside
 * it, if any, now stands for (comm, seq). Returns the work's end when it
 * finished already (its finish came first), else 0. */
uint64_t coll_ident_call(struct coll_ident *ci, uint32_t pid, uint32_t tid, uint64_t enter_ns,
                         uint64_t exit_ns, uint64_t comm, int64_t seq);

/* The work finished at done_ns. Returns true and the (comm, seq) of its
 * call when the call came first; else keeps the end for the call. */
bool coll_ident_done(struct coll_ident *ci, uint32_t pid, uint64_t work, uint64_t done_ns,
                     uint64_t *comm, int64_t *seq);

/* Forget everything about pid (it exited or is no longer tracked). */
void coll_ident_forget(struct coll_ident *ci, uint32_t pid);

/* Parse a libstdc++ std::string (pointer, length, 16-byte inline buffer)
 * read from address addr of a process: a short string lives in its own
 * inline buffer (pointer == addr + 16), which proves the layout. Copies it
 * into out (NUL-terminated) and returns its length, or -EINVAL when raw is
 * not a short std::string of printable characters. Pure. */
int coll_ident_parse_string(const uint8_t raw[32], uint64_t addr, char *out, size_t outlen);

/* Read len bytes at addr of pid (process_vm_readv: needs CAP_SYS_PTRACE or
 * the same user). Returns 0 or -errno (-EFAULT for a short read). */
int coll_ident_read(uint32_t pid, uint64_t addr, void *buf, size_t len);

/* Read the prefix of the c10d::PrefixStore object at addr in pid (its
 * std::string prefix_ follows the vtable pointer, two reference counts and
 * the store's timeout) into out. Returns its length or -errno (-EINVAL: not
 * a short printable string there; -ESRCH/-EPERM/-EFAULT from the read). */
int coll_ident_read_prefix(uint32_t pid, uint64_t addr, char *out, size_t outlen);

/* The name of the c10d group whose store is the PrefixStore at addr in
 * pid: its prefix, then those of the PrefixStores under it (up to 4, joined
 * by '/': "0/default_pg"), into out. Returns its length, or -errno when the
 * store's own prefix cannot be read (see coll_ident_read_prefix). */
int coll_ident_read_name(uint32_t pid, uint64_t addr, char *out, size_t outlen);

#endif
