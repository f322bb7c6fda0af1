/* Test helper: run a program the way a container runtime does, in its own
 * mount namespace with ROOT pivoted to "/", so that /proc shows the agent
 * the container's own paths in maps and exe.
 *
 *   jail ROOT PROGRAM [ARG...]     (root only; the environment is kept) */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fail(const char *what)
{
    fprintf(stderr, "jail: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: jail ROOT PROGRAM [ARG...]\n");
        return 2;
    }
    if (unshare(CLONE_NEWNS) < 0)
        return fail("unshare(CLONE_NEWNS)");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fail("make / private");
    if (mount(argv[1], argv[1], NULL, MS_BIND | MS_REC, NULL) < 0)
        return fail("bind ROOT");
    if (chdir(argv[1]) < 0 || (mkdir("old", 0700) < 0 && errno != EEXIST))
        return fail("chdir/mkdir old");
    if (syscall(SYS_pivot_root, ".", "old") < 0)
        return fail("pivot_root");
    if (chdir("/") < 0 || umount2("/old", MNT_DETACH) < 0)
        return fail("detach old root");
    rmdir("/old");
    execv(argv[2], argv + 2);
    return fail(argv[2]);
}
