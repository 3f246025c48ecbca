/* die_at_profile: preloaded after the runtime (for tests/test_killed.py), it kills the process with
 * SIGKILL when it renames a file to profile.json: rank 0 dies inside MPI_Finalize's merge, with the
 * merged profile written but not yet in place, while the other ranks wait for it in MPI_Finalize. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    static int (*real)(int, const char *, int, const char *);
    if (real == NULL) real = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
    const char *base = strrchr(newpath, '/');
    if (strcmp(base ? base + 1 : newpath, "profile.json") == 0) raise(SIGKILL);
    return real(olddirfd, oldpath, newdirfd, newpath);
}
