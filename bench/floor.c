/* The floor of an interposition tool on bench/paired.c's calls: a PMPI shim that does the least a
 * tool can do per call, to tell what any tool must pay from what mpilens' own accounting costs.
 *
 * Built three times (bench/paired.py --floor), by FLOOR_KIND:
 *   0 counted  each call counted (one add to a global), nothing else: the wrapper's call and frame,
 *              the cost of interposing at all;
 *   1 timed    each call counted and timed by two reads of the tick counter (the reads mpilens makes,
 *              ml_tick), its ticks summed: the floor of a tool that times every call;
 *   2 bytes    each call counted, and every byte exact, as mpilens counts them: a send's at its call,
 *              a receive's from its status when it completes. A nonblocking receive's handle goes
 *              into a small table at MPI_Irecv, and MPI_Waitall looks its handles up, asks the MPI
 *              for statuses when a receive is among them and the caller ignores them, and reads
 *              the sizes. The floor of a tool that counts exactly what moved, untimed.
 * None keeps anything per function beyond that, per call site, region, size or peer; the counters
 * are plain globals (no thread-local state, no test of a mode), and the bytes floor handles only
 * what paired.c does (one thread, at most WINDOW outstanding receives, predefined datatypes).
 *
 * At MPI_Finalize each rank writes its counts into $MPILENS_OUTPUT/floor.RANK (a file: the lines of
 * two ranks on mpirun's output may interleave mid-line), which bench/paired.py compares with the
 * calls the program says it made through MPI_* (the shim must see all of them, and no PMPI_* one)
 * and, for the bytes floor, with the bytes they moved:
 *
 *     floor_calls rank 1 MPI_Send 0 MPI_Recv 12345 MPI_Isend 0 MPI_Irecv 0 MPI_Waitall 0 ticks 98765 sent 0 recv 98760
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#if !defined(FLOOR_KIND) || FLOOR_KIND < 0 || FLOOR_KIND > 2
#error "build with -DFLOOR_KIND=0 (counted), 1 (timed) or 2 (bytes)"
#endif

enum { SEND, RECV, ISEND, IRECV, WAITALL, NCALLS };
static const char *const names[NCALLS] = {"MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall"};
static unsigned long long calls[NCALLS], ticks; /* ticks: of all timed calls (the timed floor) */
static long long sent, recv; /* bytes (the bytes floor) */

static inline unsigned long long tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    unsigned long long v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
#error "no tick counter on this architecture"
#endif
}

#if FLOOR_KIND == 1
#define FLOOR_CALL(k, call)                                                                                 \
    do {                                                                                                    \
        const unsigned long long t0 = tick();                                                               \
        const int rc = call;                                                                                \
        ticks += tick() - t0;                                                                               \
        calls[k]++;                                                                                         \
        return rc;                                                                                          \
    } while (0)
#else
#define FLOOR_CALL(k, call)                                                                                 \
    do {                                                                                                    \
        calls[k]++;                                                                                         \
        return call;                                                                                        \
    } while (0)
#endif

#if FLOOR_KIND == 2
/* A datatype's size, the last one asked kept (paired.c sends one type per call site). */
static MPI_Datatype last_type = MPI_DATATYPE_NULL;
static int last_size;
static inline long long type_bytes(MPI_Datatype dt, int count)
{
    if (dt != last_type) {
        PMPI_Type_size(dt, &last_size);
        last_type = dt;
    }
    return (long long)count * last_size;
}
/* A receive's bytes, read from its status as mpilens reads them (ml_status_bytes): the field where
 * the MPI keeps them, where it is known. */
static inline long long status_bytes(const MPI_Status *st)
{
#if defined(OPEN_MPI)
    return (long long)st->_ucount;
#elif defined(MPICH)
    return (long long)(unsigned)st->count_lo + ((long long)((unsigned)st->count_hi_and_cancelled >> 1) << 32);
#else
    int n;
    PMPI_Get_count(st, MPI_BYTE, &n);
    return n;
#endif
}

/* The outstanding nonblocking receives: open addressing on the handle, deletion by shifting back
 * (no tombstones). A handle's bits as the key: 0 is never one of a started receive here. */
#define SLOTS 256 /* a power of two, at least 2 * the receives outstanding at once */
static unsigned long long slot_key[SLOTS];
static inline unsigned long long key_of(MPI_Request r)
{
    unsigned long long k = 0;
    __builtin_memcpy(&k, &r, sizeof r);
    return k;
}
static inline unsigned home(unsigned long long k) { return (unsigned)((k * 0x9E3779B97F4A7C15ull) >> 56) & (SLOTS - 1); }
static inline void slot_add(unsigned long long k)
{
    unsigned i = home(k);
    while (slot_key[i] != 0) i = (i + 1) & (SLOTS - 1);
    slot_key[i] = k;
}
/* Take k out; whether it was there. */
static inline int slot_take(unsigned long long k)
{
    unsigned i = home(k);
    while (slot_key[i] != k) {
        if (slot_key[i] == 0) return 0;
        i = (i + 1) & (SLOTS - 1);
    }
    /* shift the entries after i back over the hole, each to the first free slot on its way home */
    for (unsigned j = (i + 1) & (SLOTS - 1); slot_key[j] != 0; j = (j + 1) & (SLOTS - 1)) {
        const unsigned h = home(slot_key[j]);
        if (((j - h) & (SLOTS - 1)) >= ((j - i) & (SLOTS - 1))) {
            slot_key[i] = slot_key[j];
            i = j;
        }
    }
    slot_key[i] = 0;
    return 1;
}
#endif

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
#if FLOOR_KIND == 2
    sent += type_bytes(dt, count);
#endif
    FLOOR_CALL(SEND, PMPI_Send(buf, count, dt, dest, tag, comm));
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
#if FLOOR_KIND == 2
    MPI_Status own;
    const int rc = PMPI_Recv(buf, count, dt, source, tag, comm, status == MPI_STATUS_IGNORE ? &own : status);
    recv += status_bytes(status == MPI_STATUS_IGNORE ? &own : status);
    calls[RECV]++;
    return rc;
#else
    FLOOR_CALL(RECV, PMPI_Recv(buf, count, dt, source, tag, comm, status));
#endif
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
#if FLOOR_KIND == 2
    sent += type_bytes(dt, count); /* accounted at its start: paired.c cancels nothing */
#endif
    FLOOR_CALL(ISEND, PMPI_Isend(buf, count, dt, dest, tag, comm, req));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
#if FLOOR_KIND == 2
    const int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    slot_add(key_of(*req));
    calls[IRECV]++;
    return rc;
#else
    FLOOR_CALL(IRECV, PMPI_Irecv(buf, count, dt, source, tag, comm, req));
#endif
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
#if FLOOR_KIND == 2
    enum { MAX = 256 };
    unsigned char is_recv[MAX];
    MPI_Status own[MAX];
    int any = 0;
    if (n > MAX) abort(); /* more than paired.c's windows */
    for (int i = 0; i < n; i++) any |= is_recv[i] = (unsigned char)slot_take(key_of(reqs[i]));
    MPI_Status *st = statuses != MPI_STATUSES_IGNORE ? statuses : any ? own : MPI_STATUSES_IGNORE;
    const int rc = PMPI_Waitall(n, reqs, st);
    if (any)
        for (int i = 0; i < n; i++)
            if (is_recv[i]) recv += status_bytes(&st[i]);
    calls[WAITALL]++;
    return rc;
#else
    FLOOR_CALL(WAITALL, PMPI_Waitall(n, reqs, statuses));
#endif
}

int MPI_Finalize(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = getenv("MPILENS_OUTPUT");
    char path[4096];
    if (dir != NULL && snprintf(path, sizeof path, "%s/floor.%d", dir, rank) < (int)sizeof path) {
        mkdir(dir, 0777); /* rank 0 or 1 first: whichever comes, the other finds it */
        FILE *f = fopen(path, "w");
        if (f != NULL) {
            fprintf(f, "floor_calls rank %d", rank);
            for (int k = 0; k < NCALLS; k++) fprintf(f, " %s %llu", names[k], calls[k]);
            fprintf(f, " ticks %llu sent %lld recv %lld\n", ticks, sent, recv);
            fclose(f);
        }
    }
    return PMPI_Finalize();
}
