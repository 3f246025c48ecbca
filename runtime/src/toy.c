/* Toy mode: counts the threads of each rank that called MPI and writes the count, with the
 * greeting of MPILENS_TOY_GREETING, into its file of the run directory (runtime/spec/rundir.yaml). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ml.h"
#include "ml_toy.h"

static uint32_t threads;
static char path[4300];

int ml_toy_init(void)
{
    if (ml_rundir_path(path, sizeof path, ML_PATH_TOY, ml_g.rank) != 0) {
        ml_log(0, "cannot create the folder of %s (%s); toy mode is off", path, strerror(errno));
        return -1;
    }
    return 0;
}

void ml_toy_thread(ml_thread_t *t)
{
    (void)t;
    __atomic_fetch_add(&threads, 1, __ATOMIC_RELAXED);
}

/* async-signal-safe: open, write, close */
static void write_file(const char *end)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return;
    char num[24];
    const char *parts[] = {ml_g.config.toy_greeting, " from rank ", ml_utoa(num, ml_g.rank), ": ", NULL, " threads",
                           end, "\n"};
    char n[24];
    parts[4] = ml_utoa(n, __atomic_load_n(&threads, __ATOMIC_RELAXED));
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (write(fd, parts[i], strlen(parts[i])) < 0) break;
    close(fd);
}

void ml_toy_finish(void)
{
    write_file("");
    ml_log(1, "toy mode: %s written", path);
}

void ml_toy_emergency(int reason)
{
    (void)reason;
    write_file(" (ended before MPI_Finalize)");
}
