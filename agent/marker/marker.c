/* libargus-marker.so: the marker ABI that training code calls and the agent
 * uprobes (agent/probes/probe_marker.c). The functions do nothing: the uprobe at
 * their entry is the whole mechanism, so they must exist as real, never
 * inlined, never merged functions. The empty asm with a memory clobber keeps
 * the compiler from proving them pure and dropping calls to them. Built
 * with -O0 (see the Makefile) so each starts with `push %rbp`, which the
 * kernel's x86 uprobe code emulates instead of single-stepping. */
#include <stdint.h>

#define ARGUS_MARKER_API __attribute__((visibility("default"), noinline, used))

/* Step n begins (the previous one, if any, ends). */
ARGUS_MARKER_API void argus_step(uint64_t n);
/* A phase named name begins inside the current step; name is read by the
 * agent at the call (up to 63 bytes), the caller keeps ownership. */
ARGUS_MARKER_API void argus_phase_begin(const char *name);
/* The innermost open phase ends. */
ARGUS_MARKER_API void argus_phase_end(void);

void argus_step(uint64_t n)
{
    __asm__ volatile("" : : "r"(n) : "memory");
}

void argus_phase_begin(const char *name)
{
    __asm__ volatile("" : : "r"(name) : "memory");
}

void argus_phase_end(void)
{
    __asm__ volatile("" : : : "memory");
}
