/* The runtime's cost on the shortest operations, measured against plain calls in the same pair of
 * processes: batches of MPI_* calls (which the preloaded runtime wraps) and of the MPI's own PMPI_*
 * functions (which nothing wraps, called through pointers into the MPI library) alternate, pair
 * after pair, in an order drawn from a seed both ranks share. Neighbouring batches run with the
 * same placement of the ranks on the host's cores and the same neighbours on the host, which
 * separate runs do not share on a VM whose speed changes from one second to the next.
 *
 * KIND hop:  ROUNDS 8-byte round trips (MPI_Send / MPI_Recv) per batch; the value is half a round
 *            trip.
 * KIND rate: WINDOWS windows of 64 MPI_Isend of 8 bytes against 64 MPI_Irecv, completed with
 *            MPI_Waitall and acknowledged (as bench/msgrate.c); the value is seconds per message.
 *
 * Rank 0 prints one line per pair, then what the wrapped batches called (the profile's counts of
 * them must be exactly these):
 *
 *     pair 17 plain 1.234e-07 wrapped 1.301e-07
 *     wrapped_calls MPI_Send 12345 MPI_Recv 12345 MPI_Isend 0 MPI_Irecv 0 MPI_Waitall 0
 *
 * Usage: paired hop|rate PAIRS SCALE SEED
 */
#define _GNU_SOURCE /* dladdr, dl_iterate_phdr; clock_gettime */
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WINDOW 64
#define BYTES 8

enum { SEND, RECV, ISEND, IRECV, WAITALL, NCALLS };
static const char *const call_names[NCALLS] = {"MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall"};
static long long wrapped_calls[NCALLS]; /* by this rank, in the wrapped batches and their warm-up */

/* The plain batches call the MPI library's own PMPI functions, found in it by name: the runtime
 * exports PMPI_ entries of its own (for tools loaded before it, runtime/gen/binding.py), one jump
 * that a plain call must not pay. The MPI library is the last loaded object that defines
 * PMPI_Init (the runtime, preloaded, comes before it). */
static struct {
    int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
    int (*recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
    int (*isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*irecv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*waitall)(int, MPI_Request *, MPI_Status *);
} lib;
#define LIB_Send (*lib.send)
#define LIB_Recv (*lib.recv)
#define LIB_Isend (*lib.isend)
#define LIB_Irecv (*lib.irecv)
#define LIB_Waitall (*lib.waitall)

static int last_mpi(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL) return 0;
    Dl_info d;
    void *init = dlsym(h, "PMPI_Init");
    if (init != NULL && dladdr(init, &d) != 0 && d.dli_fname != NULL && strcmp(d.dli_fname, info->dlpi_name) == 0)
        *(void **)arg = h; /* defined by this object itself, not a dependency */
    return 0;
}

static void find_library(void)
{
    void *h = NULL;
    dl_iterate_phdr(last_mpi, &h);
    if (h == NULL) {
        fprintf(stderr, "paired: no MPI library loaded\n");
        exit(2);
    }
    *(void **)&lib.send = dlsym(h, "PMPI_Send");
    *(void **)&lib.recv = dlsym(h, "PMPI_Recv");
    *(void **)&lib.isend = dlsym(h, "PMPI_Isend");
    *(void **)&lib.irecv = dlsym(h, "PMPI_Irecv");
    *(void **)&lib.waitall = dlsym(h, "PMPI_Waitall");
    if (!lib.send || !lib.recv || !lib.isend || !lib.irecv || !lib.waitall) {
        fprintf(stderr, "paired: the MPI library lacks a PMPI function\n");
        exit(2);
    }
}

/* The same loops twice: with the prefix MPI_ (wrapped when the runtime is preloaded) and LIB_ (the
 * MPI's own PMPI_ functions). */
#define LOOPS(P)                                                                                            \
    static void hop_##P(int rank, char *buf, int rounds)                                                    \
    {                                                                                                       \
        for (int i = 0; i < rounds; i++) {                                                                  \
            if (rank == 0) {                                                                                \
                P##Send(buf, BYTES, MPI_BYTE, 1, 1, MPI_COMM_WORLD);                                        \
                P##Recv(buf, BYTES, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);                     \
            } else {                                                                                        \
                P##Recv(buf, BYTES, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);                     \
                P##Send(buf, BYTES, MPI_BYTE, 0, 1, MPI_COMM_WORLD);                                        \
            }                                                                                               \
        }                                                                                                   \
    }                                                                                                       \
    static void rate_##P(int rank, char (*bufs)[BYTES], MPI_Request *reqs, int windows)                     \
    {                                                                                                       \
        int ack = 0;                                                                                        \
        for (int w = 0; w < windows; w++) {                                                                 \
            if (rank == 0) {                                                                                \
                for (int i = 0; i < WINDOW; i++)                                                            \
                    P##Isend(bufs[i], BYTES, MPI_BYTE, 1, 100, MPI_COMM_WORLD, &reqs[i]);                   \
                P##Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);                                              \
                P##Recv(&ack, 1, MPI_INT, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);                       \
            } else {                                                                                        \
                for (int i = 0; i < WINDOW; i++)                                                            \
                    P##Irecv(bufs[i], BYTES, MPI_BYTE, 0, 100, MPI_COMM_WORLD, &reqs[i]);                   \
                P##Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);                                              \
                P##Send(&ack, 1, MPI_INT, 0, 101, MPI_COMM_WORLD);                                          \
            }                                                                                               \
        }                                                                                                   \
    }
LOOPS(MPI_)
LOOPS(LIB_)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One batch; returns its seconds per unit (half round trip, or message). */
static double batch(int hop, int wrapped, int rank, int n, char (*bufs)[BYTES], MPI_Request *reqs)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    if (hop) {
        if (wrapped) {
            hop_MPI_(rank, bufs[0], n);
            wrapped_calls[SEND] += n;
            wrapped_calls[RECV] += n;
        } else {
            hop_LIB_(rank, bufs[0], n);
        }
    } else {
        if (wrapped) {
            rate_MPI_(rank, bufs, reqs, n);
            wrapped_calls[rank == 0 ? ISEND : IRECV] += (long long)n * WINDOW;
            wrapped_calls[WAITALL] += n;
            wrapped_calls[rank == 0 ? RECV : SEND] += n;
        } else {
            rate_LIB_(rank, bufs, reqs, n);
        }
    }
    const double t = now() - t0;
    return hop ? t / (2.0 * n) : t / ((double)n * WINDOW);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    find_library();
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5 || (strcmp(argv[1], "hop") != 0 && strcmp(argv[1], "rate") != 0) || size != 2) {
        if (rank == 0) fprintf(stderr, "usage: paired hop|rate PAIRS SCALE SEED (2 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int hop = strcmp(argv[1], "hop") == 0;
    const int pairs = atoi(argv[2]);
    const double scale = atof(argv[3]);
    unsigned long long seed = strtoull(argv[4], NULL, 10) * 2862933555777941757ull + 3037000493ull;
    /* ~2-5 ms per batch on shared memory: short enough that neighbours share the machine's state */
    int n = (int)((hop ? 5000 : 60) * scale);
    if (n < 1) n = 1;

    static char bufs[WINDOW][BYTES];
    MPI_Request reqs[WINDOW];
    memset(bufs, 1, sizeof bufs);
    batch(hop, 1, rank, n, bufs, reqs); /* warm-up, both ways */
    batch(hop, 0, rank, n, bufs, reqs);
    for (int p = 0; p < pairs; p++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull; /* the same on both ranks */
        double plain, wrapped;
        if (seed >> 63) {
            wrapped = batch(hop, 1, rank, n, bufs, reqs);
            plain = batch(hop, 0, rank, n, bufs, reqs);
        } else {
            plain = batch(hop, 0, rank, n, bufs, reqs);
            wrapped = batch(hop, 1, rank, n, bufs, reqs);
        }
        if (rank == 0) printf("pair %d plain %.6e wrapped %.6e\n", p, plain, wrapped);
    }
    long long all[2][NCALLS];
    PMPI_Gather(wrapped_calls, NCALLS, MPI_LONG_LONG, all, NCALLS, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < 2; r++) {
            printf("wrapped_calls rank %d", r);
            for (int c = 0; c < NCALLS; c++) printf(" %s %lld", call_names[c], all[r][c]);
            printf("\n");
        }
    MPI_Finalize();
    return 0;
}
