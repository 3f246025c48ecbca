/* sleeper: a job that can be stopped before MPI_Finalize, for the tests of killed and aborted runs.
 * Each step does one MPI_Allreduce of an int and one MPI_Sendrecv of 256 bytes around a ring, then
 * sleeps. Rank 0 prints "step I" after each step (flushed), so a test can wait for progress.
 * Usage: sleeper [-n STEPS] [-s MS] [-S MS] [-m MARKER] [-a RANK:STEP] [-k RANK:STEP] [-o RANK:STEP]
 *                [-f RANK:STEP] [-w FILE] [-p DIR] [-c DIR] [-x CODE] [-r TAG]
 *   -n STEPS      number of steps (default 10)
 *   -s MS         sleep after each step, milliseconds (default 0)
 *   -S MS         instead, steps on a schedule: step I starts I * MS milliseconds after rank 0's
 *                 MPI_Init returned (its CLOCK_MONOTONIC reading, broadcast: the ranks of one host),
 *                 so that however long a step takes on a busy machine, the steps do not drift
 *   -m MARKER     every process appends its pid to MARKER before MPI_Init (proof that it started)
 *   -a RANK:STEP  RANK calls MPI_Abort(MPI_COMM_WORLD, 3) when it reaches step STEP (after STEP steps)
 *   -k RANK:STEP  RANK kills itself with SIGKILL when it reaches step STEP (after STEP steps and
 *                 their sleeps; the others are then waiting in the MPI_Allreduce of step STEP)
 *   -o RANK:STEP  RANK allocates memory without end when it reaches step STEP (touching every page),
 *                 until the OOM killer of its cgroup ends it
 *   -f RANK:STEP  RANK writes through a null pointer when it reaches step STEP (SIGSEGV)
 *   -w FILE       every rank opens FILE with MPI_File_open and, in each step after the MPI_Sendrecv,
 *                 writes its 256 bytes at offset (step * size + rank) * 256 (MPI_File_write_at)
 *   -p DIR        each rank keeps the number of steps it finished in DIR/rank-R (rewritten after
 *                 each step: what a test killing the job takes as the program's own account)
 *   -c DIR        each rank writes to DIR/calls-R, before MPI_Finalize, the CLOCK_MONOTONIC
 *                 readings (ns) just before and just after its MPI_Init, then a line per step:
 *                 those just before its MPI_Allreduce and its MPI_Sendrecv (when the program made
 *                 its calls, for a test of where a time window lies and what it keeps)
 *   -x CODE       exit status after MPI_Finalize (default 0)
 *   -r TAG        first of all, MPI_Irecv of 4 bytes from the left neighbour with tag TAG, which no
 *                 rank sends: pending through the steps (and at a kill or an abort), cancelled
 *                 and waited for before MPI_Finalize
 * Known traffic per completed step and rank: 1 MPI_Allreduce of 4 bytes, 1 MPI_Sendrecv of 256 bytes
 * each way. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int steps = 10, ms = 0, every_ms = 0, abort_rank = -1, abort_step = -1, kill_rank = -1, kill_step = -1, code = 0, pending_tag = -1;
    int oom_rank = -1, oom_step = -1, fault_rank = -1, fault_step = -1;
    const char *marker = NULL, *progress = NULL, *written = NULL, *calls = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0) steps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-s") == 0) ms = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-S") == 0) every_ms = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-m") == 0) marker = argv[i + 1];
        else if (strcmp(argv[i], "-a") == 0) sscanf(argv[i + 1], "%d:%d", &abort_rank, &abort_step);
        else if (strcmp(argv[i], "-k") == 0) sscanf(argv[i + 1], "%d:%d", &kill_rank, &kill_step);
        else if (strcmp(argv[i], "-o") == 0) sscanf(argv[i + 1], "%d:%d", &oom_rank, &oom_step);
        else if (strcmp(argv[i], "-f") == 0) sscanf(argv[i + 1], "%d:%d", &fault_rank, &fault_step);
        else if (strcmp(argv[i], "-p") == 0) progress = argv[i + 1];
        else if (strcmp(argv[i], "-c") == 0) calls = argv[i + 1];
        else if (strcmp(argv[i], "-w") == 0) written = argv[i + 1];
        else if (strcmp(argv[i], "-x") == 0) code = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-r") == 0) pending_tag = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "sleeper: unknown option %s\n", argv[i]);
            return 64;
        }
    }
    if (marker != NULL) {
        FILE *f = fopen(marker, "a");
        if (f != NULL) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }

    const long long init_before = monotonic_ns();
    MPI_Init(&argc, &argv);
    const long long init_after = monotonic_ns();
    struct timespec origin;
    clock_gettime(CLOCK_MONOTONIC, &origin);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (every_ms > 0) { /* rank 0's moment for every rank */
        long long ns = (long long)origin.tv_sec * 1000000000LL + origin.tv_nsec;
        MPI_Bcast(&ns, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        origin.tv_sec = (time_t)(ns / 1000000000LL);
        origin.tv_nsec = (long)(ns % 1000000000LL);
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char out[256], in[256];
    memset(out, rank, sizeof out);
    const struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000L};
    int never[1];
    MPI_Request pending = MPI_REQUEST_NULL;
    if (pending_tag >= 0) MPI_Irecv(never, 4, MPI_BYTE, left, pending_tag, MPI_COMM_WORLD, &pending);
    MPI_File fh = MPI_FILE_NULL;
    if (written != NULL)
        MPI_File_open(MPI_COMM_WORLD, written, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    int progress_fd = -1;
    if (progress != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d", progress, rank);
        progress_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }

    long long *calls_at = calls != NULL ? calloc(2 * (size_t)(steps > 0 ? steps : 1), sizeof *calls_at) : NULL;
    for (int i = 0; i < steps; i++) {
        if (rank == abort_rank && i == abort_step) {
            printf("sleeper: rank %d aborts at step %d\n", rank, i);
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (rank == kill_rank && i == kill_step) {
            printf("sleeper: rank %d kills itself at step %d\n", rank, i);
            fflush(stdout);
            raise(SIGKILL);
        }
        if (rank == oom_rank && i == oom_step) {
            printf("sleeper: rank %d allocates without end at step %d\n", rank, i);
            fflush(stdout);
            for (;;) {
                char *block = malloc(16 << 20);
                if (block == NULL) continue;
                for (size_t b = 0; b < (16u << 20); b += 4096) block[b] = 1;
            }
        }
        if (rank == fault_rank && i == fault_step) {
            printf("sleeper: rank %d writes through a null pointer at step %d\n", rank, i);
            fflush(stdout);
            int *volatile nowhere = NULL; /* volatile: the compiler cannot know it is null */
            *nowhere = 0;
        }
        int one = 1, total = 0;
        if (calls_at != NULL) calls_at[2 * i] = monotonic_ns();
        MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (calls_at != NULL) calls_at[2 * i + 1] = monotonic_ns();
        MPI_Sendrecv(out, (int)sizeof out, MPI_BYTE, right, i, in, (int)sizeof in, MPI_BYTE, left, i, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (fh != MPI_FILE_NULL)
            MPI_File_write_at(fh, ((MPI_Offset)i * size + rank) * (MPI_Offset)sizeof out, out, (int)sizeof out, MPI_BYTE,
                              MPI_STATUS_IGNORE);
        if (progress_fd >= 0) {
            char line[32];
            const int n = snprintf(line, sizeof line, "%12d\n", i + 1); /* fixed width: one value */
            if (pwrite(progress_fd, line, (size_t)n, 0) != n) return 70;
        }
        if (rank == 0) {
            printf("step %d\n", i);
            fflush(stdout);
        }
        if (ms > 0) nanosleep(&pause, NULL);
        if (every_ms > 0) {
            const long long at = ((long long)origin.tv_sec * 1000000000LL + origin.tv_nsec) + (long long)(i + 1) * every_ms * 1000000LL;
            const struct timespec next = {(time_t)(at / 1000000000LL), (long)(at % 1000000000LL)};
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0) {
            }
        }
    }
    if (fh != MPI_FILE_NULL) MPI_File_close(&fh);
    if (pending != MPI_REQUEST_NULL) {
        MPI_Cancel(&pending);
        MPI_Wait(&pending, MPI_STATUS_IGNORE);
    }
    if (calls_at != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/calls-%d", calls, rank);
        FILE *f = fopen(path, "w");
        if (f == NULL) return 73;
        fprintf(f, "%lld %lld\n", init_before, init_after);
        for (int i = 0; i < steps; i++) fprintf(f, "%lld %lld\n", calls_at[2 * i], calls_at[2 * i + 1]);
        if (fclose(f) != 0) return 74;
        free(calls_at);
    }
    if (rank == 0) printf("sleeper: %d steps on %d ranks\n", steps, size);
    MPI_Finalize();
    return code;
}
