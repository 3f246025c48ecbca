/* Unit tests of the runtime's safe files (runtime/src/core/files.c), with no MPI job: a run directory
 * whose files and folders an attacker replaced by symbolic links or hard links before the job
 * writes them. Every write lands in the run directory or fails; the files the links point to are
 * never touched. Built with files.c alone (and ml.h's types), against one MPI's library. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ml.h"
#include "ml_files.h"
#include "unit.h"

/* what files.c takes from the rest of the runtime (core.c, memory_interpose.c), here without MPI */
ml_global_t ml_g;
#undef malloc
#undef free
#undef mmap
#undef munmap
void *ml_sys_malloc(size_t n) { return malloc(n); }
void ml_sys_free(void *p) { free(p); }
void *ml_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}
int ml_sys_munmap(void *addr, size_t len) { return munmap(addr, len); }
int ml_rundir_path(char *path, size_t n, const char *format, ...)
{
    (void)path, (void)n, (void)format;
    return -1; /* the streams are not tested here */
}

static char base[PATH_MAX - 64], outside[PATH_MAX - 64];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int holds(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strcmp(buf, text) == 0;
}

static int entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d) closedir(d);
    return n;
}

static const char *in(const char *rel)
{
    static char p[4][PATH_MAX + 64];
    static int k;
    char *out = p[k++ % 4];
    snprintf(out, PATH_MAX + 64, "%s/%s", base, rel);
    return out;
}

static int is_link(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

int main(void)
{
    char tmpl[] = "/tmp/mpilens-files-XXXXXX";
    char *root = mkdtemp(tmpl);
    CHECK(root != NULL, "mkdtemp");
    snprintf(base, sizeof base, "%s/run", root);
    snprintf(outside, sizeof outside, "%s/victim", root);
    mkdir(base, 0777);
    mkdir(outside, 0777);
    char victim[PATH_MAX];
    snprintf(victim, sizeof victim, "%s/secret.txt", outside);
    put(victim, "precious\n");
    CHECK(ml_base_open(ML_BASE_RUN, base) == 0, "%s", strerror(errno));

    /* a new file and its folders */
    int fd = ml_file_create(in("trace/rank-000000.bin"), O_WRONLY, 0666);
    CHECK(fd >= 0, "%s", strerror(errno));
    if (fd >= 0) close(fd);
    struct stat st;
    CHECK(stat(in("trace/rank-000000.bin"), &st) == 0 && S_ISREG(st.st_mode), "not created");
    /* never twice: a file that exists is not taken over */
    CHECK(ml_file_create(in("trace/rank-000000.bin"), O_WRONLY, 0666) < 0 && errno == EEXIST, "%s", strerror(errno));

    /* a link at a file's name: refused, its target untouched */
    symlink(victim, in("meta.json.tmp"));
    CHECK(ml_file_create(in("meta.json.tmp"), O_WRONLY, 0666) < 0 && errno == EEXIST, "%s", strerror(errno));
    CHECK(ml_file_fopen(in("meta.json.tmp")) == NULL, "fopen through a link");
    /* a link at a folder's name: refused, nothing created where it points */
    symlink(outside, in("counters"));
    CHECK(ml_file_create(in("counters/rank-000000.bin"), O_WRONLY, 0666) < 0, "created through a folder link");
    CHECK(ml_file_folder(in("counters/live/x")) < 0, "folder made through a link");
    symlink(outside, in("deep"));
    CHECK(ml_file_create(in("deep/a/b/c.bin"), O_WRONLY, 0666) < 0, "created through a folder link");
    CHECK(entries(outside) == 1, "the link's folder was written into");

    /* shared files (containers, live slots): not a link, not someone else's hard link */
    symlink(victim, in("group-000000.mlc"));
    CHECK(ml_file_shared(in("group-000000.mlc"), O_WRONLY | O_CREAT | O_APPEND, 0666) < 0, "opened a link");
    CHECK(link(victim, in("group-000000.mlx")) == 0, "%s", strerror(errno));
    CHECK(ml_file_shared(in("group-000000.mlx"), O_WRONLY | O_CREAT | O_APPEND, 0666) < 0 && errno == EPERM,
          "opened a hard link: %s", strerror(errno));
    fd = ml_file_shared(in("group-000001.mlc"), O_WRONLY | O_CREAT | O_APPEND, 0666);
    CHECK(fd >= 0, "%s", strerror(errno));
    if (fd >= 0) {
        CHECK(write(fd, "x", 1) == 1, "write");
        close(fd);
    }
    fd = ml_file_shared(in("group-000001.mlc"), O_WRONLY | O_APPEND, 0);
    CHECK(fd >= 0, "the same rank's container reopened: %s", strerror(errno));
    if (fd >= 0) close(fd);

    /* a temporary file renamed over a link replaces the link, not its target */
    symlink(victim, in("profile.json"));
    char tmp[PATH_MAX + 32], tmp2[PATH_MAX + 32];
    CHECK(ml_file_temp_name(tmp, sizeof tmp, in("profile.json")) == 0, "temp name");
    CHECK(ml_file_temp_name(tmp2, sizeof tmp2, in("profile.json")) == 0 && strcmp(tmp, tmp2) != 0, "guessable: %s", tmp);
    CHECK(strlen(tmp) == strlen(in("profile.json")) + 21 && strstr(tmp, ".tmp-") != NULL, "%s", tmp);
    FILE *f = ml_file_fopen(tmp);
    CHECK(f != NULL, "%s", strerror(errno));
    if (f) {
        fputs("{}\n", f);
        fclose(f);
    }
    CHECK(ml_file_rename(tmp, in("profile.json")) == 0, "%s", strerror(errno));
    CHECK(!is_link(in("profile.json")) && holds(in("profile.json"), "{}\n"), "profile.json");
    CHECK(ml_file_unlink(in("trace/rank-000000.bin")) == 0 && access(in("trace/rank-000000.bin"), F_OK) != 0, "unlink");

    /* paths the layer refuses */
    CHECK(ml_file_create("/tmp/elsewhere.json", O_WRONLY, 0666) < 0 && errno == EXDEV, "outside the base");
    CHECK(ml_file_create(in("../escape.json"), O_WRONLY, 0666) < 0 && errno == EINVAL, "..");
    char escape[PATH_MAX];
    snprintf(escape, sizeof escape, "%s/escape.json", root);
    CHECK(access(escape, F_OK) != 0, "escaped the base");
    CHECK(ml_file_create(in("a//b.json"), O_WRONLY, 0666) < 0 && errno == EINVAL, "empty component");

    /* the application closes the base's descriptor, or reuses its number: found again by its path */
    for (int i = 3; i < 1024; i++) {
        char link_path[64], target[PATH_MAX] = "";
        snprintf(link_path, sizeof link_path, "/proc/self/fd/%d", i);
        if (readlink(link_path, target, sizeof target - 1) > 0 && strcmp(target, base) == 0) {
            CHECK(i >= 512, "the base's descriptor %d is among the low ones applications reuse", i);
            close(i);
            CHECK(open("/dev/null", O_RDONLY) >= 0, "reuse"); /* the lowest free number: maybe i */
            dup2(open("/dev/null", O_RDONLY), i);             /* certainly i */
        }
    }
    fd = ml_file_create(in("after-close.json"), O_WRONLY, 0666);
    CHECK(fd >= 0, "after the base's descriptor was reused: %s", strerror(errno));
    if (fd >= 0) close(fd);
    /* the run directory replaced by another (a link planted at its path): refused */
    char moved[PATH_MAX];
    snprintf(moved, sizeof moved, "%s/moved", root);
    rename(base, moved);
    symlink(outside, base);
    for (int i = 3; i < 1024; i++) { /* the descriptor lost too */
        char link_path[64], target[PATH_MAX] = "";
        snprintf(link_path, sizeof link_path, "/proc/self/fd/%d", i);
        if (readlink(link_path, target, sizeof target - 1) > 0 && strcmp(target, moved) == 0)
            dup2(open("/dev/null", O_RDONLY), i);
    }
    CHECK(ml_file_create(in("replaced.json"), O_WRONLY, 0666) < 0 && errno == ESTALE, "%s", strerror(errno));
    CHECK(entries(outside) == 1 && holds(victim, "precious\n"), "the victim's folder was written into");

    CHECK(holds(victim, "precious\n"), "the link's target changed");
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return UNIT_END();
}
