/* The floor of an interposition tool on bench/paired.c's calls: a PMPI shim that does the least a
 * tool can do per call, to tell what any tool must pay from what mpilens' own accounting costs.
 *
 * Built five times (bench/paired.py --floor), by FLOOR_KIND:
 *   0 counted  each call counted (one add to a global), nothing else: the wrapper's call and frame,
 *              the cost of interposing at all;
 *   1 timed    each call counted and timed by two reads of the tick counter (the reads mpilens makes,
 *              ml_tick), its ticks summed: the floor of a tool that times every call;
 *   2 bytes    each call counted, and every byte exact, as mpilens counts them: a send's at its call,
 *              a receive's from its status when it completes. A nonblocking receive's handle goes
 *              into a small table at MPI_Irecv, and MPI_Waitall looks its handles up, asks the MPI
 *              for statuses when a receive is among them and the caller ignores them, and reads
 *              the sizes. The floor of a tool that counts exactly what moved, untimed.
 *   3 sites    what mpilens' profile keeps of each call, untimed, in the least code: every call and
 *              byte counted at its call site (return address and function), the functions' totals
 *              folded from their sites when written (nothing is added per function at a call),
 *              every completed transfer in its function's size histogram, every send in
 *              the matrix row of its destination; a receive's table entry holds its site. The
 *              floor of the profile's attribution when 1 call in 64 is timed (the 63 others pay
 *              this); it has no regions (paired.c opens none) and no state per thread.
 *   4 sites    as 3, each call also timed as the timed floor: its ticks at its site, the site's
 *     timed    shortest and longest (the functions' are folded from them), a blocking transfer's in
 *              its histogram bin. The floor of the profile timing every call.
 *   5 traced   as 4, and a record of every call and of every completion, what a timeline of the
 *              calls with their messages matched needs (struct record: times, bytes, peer, tag, call
 *              site, and the operation's number, which links a completion to the call that started
 *              it); an operation the MPI completed within its call gets one record for both, as trace
 *              mode's call_done event. Records of 24 bytes go into a buffer of 1 MiB that the calling
 *              thread writes to $MPILENS_OUTPUT/floor-trace.RANK with one write() when full and at
 *              MPI_Finalize. It carries less than trace mode's events (no communicator, which paired.c
 *              never varies; times cut to 32 bits of ticks), in fixed records (no encoding), written
 *              without a thread of its own: the floor of a tool that traces each call on top of the
 *              profile timing every call.
 * Kinds 0-2 keep nothing per function beyond that, per call site, region, size or peer. All keep
 * plain globals (no thread-local state, no test of a mode) and handle only what paired.c does (one
 * thread, MPI_COMM_WORLD, at most WINDOW outstanding receives, predefined datatypes).
 *
 * At MPI_Finalize each rank writes its counts into $MPILENS_OUTPUT/floor.RANK (a file: the lines of
 * two ranks on mpirun's output may interleave mid-line), which bench/paired.py compares with the
 * calls the program says it made through MPI_* (the shim must see all of them, and no PMPI_* one)
 * and, from kind 2 on, with the bytes they moved (kinds 3 and 4 write the functions' totals folded
 * from their sites):
 *
 *     floor_calls rank 1 MPI_Send 0 MPI_Recv 12345 MPI_Isend 0 MPI_Irecv 0 MPI_Waitall 0 ticks 98765 sent 0 recv 98760
 *
 * and, from kind 3 on, a line per call site, histogram bin and matrix row with anything in it:
 *
 *     floor_site rank 1 MPI_Recv calls 12345 sent 0 recv 98760 ticks 98765 shortest 312 longest 9021
 *     floor_hist rank 1 MPI_Recv bin 4 calls 12345 ticks 98765
 *     floor_matrix rank 1 peer 0 messages 12345 bytes 98760
 *
 * and, kind 5, the records it wrote (-1 when a write failed):
 *
 *     floor_trace rank 1 records 24690
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#if !defined(FLOOR_KIND) || FLOOR_KIND < 0 || FLOOR_KIND > 5
#error "build with -DFLOOR_KIND=0 (counted), 1 (timed), 2 (bytes), 3 (sites), 4 (sites timed) or 5 (traced)"
#endif
#define COUNTS_BYTES (FLOOR_KIND >= 2)
#define KEEPS_SITES (FLOOR_KIND >= 3)
#define TIMES_CALLS (FLOOR_KIND == 1 || FLOOR_KIND >= 4)
#define TRACES (FLOOR_KIND == 5)

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

#if COUNTS_BYTES
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
#endif

#if KEEPS_SITES
/* A call site: the return address into the program and the function, as mpilens keys its sites;
 * every count of a call and its bytes is kept here, and the functions' totals are folded from the
 * sites when written. */
struct site {
    unsigned long long key; /* return address | function << 56; 0: none */
    unsigned long long calls, ticks, shortest_inv, longest; /* shortest as ~ticks: 0 before any */
    long long sent, recv;
};
#define NSITES 64 /* a power of two, more than the sites of paired.c (three per rank and kind) */
static struct site sites[NSITES];
static struct site no_site; /* key 0: the last site of a function not called yet, matching no call */
/* Each function's last site: one comparison finds it when a function is called from one place at a
 * time, as mpilens' site_last. */
static struct site *last_site[NCALLS] = {&no_site, &no_site, &no_site, &no_site, &no_site};
_Static_assert(NCALLS == 5, "last_site: one &no_site per function (a NULL would crash site_call)");

/* The site of key, entered when new (open addressing; paired.c never fills the table). */
__attribute__((noinline)) static struct site *site_find(unsigned long long key)
{
    unsigned i = (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 58);
    for (unsigned n = 0; n < NSITES; n++, i = (i + 1) & (NSITES - 1)) {
        if (sites[i].key == key) return &sites[i];
        if (sites[i].key == 0) {
            sites[i].key = key;
            return &sites[i];
        }
    }
    abort(); /* more call sites than paired.c has */
}

/* A call of function fn from return address ra, d ticks long (0 untimed): counted at its site. */
static inline struct site *site_call(int fn, const void *ra, unsigned long long d)
{
    const unsigned long long key = (unsigned long long)(__UINTPTR_TYPE__)ra | (unsigned long long)fn << 56;
    struct site *s = last_site[fn];
    if (__builtin_expect(s->key != key, 0)) s = last_site[fn] = site_find(key);
    s->calls++;
#if TIMES_CALLS
    s->ticks += d;
    if (~d > s->shortest_inv) s->shortest_inv = ~d;
    if (d > s->longest) s->longest = d;
#else
    (void)d;
#endif
    return s;
}

/* The size histogram: bin b holds the transfers of 2^(b-1) to 2^b - 1 bytes (0: none), and the time
 * of the blocking calls that made them (d: 0 for a nonblocking operation's completion). */
static struct {
    unsigned long long calls, ticks;
} hist[NCALLS][65];
static inline void hist_add(int fn, long long bytes, unsigned long long d)
{
    const int bin = bytes <= 0 ? 0 : 64 - __builtin_clzll((unsigned long long)bytes);
    hist[fn][bin].calls++;
#if TIMES_CALLS
    hist[fn][bin].ticks += d;
#else
    (void)d;
#endif
}

/* The matrix: messages and bytes sent to each destination (a rank of MPI_COMM_WORLD, paired.c's
 * only communicator). */
#define NPEERS 64
static struct {
    unsigned long long messages;
    long long bytes;
} matrix[NPEERS];
static inline void matrix_add(int dest, long long bytes)
{
    if ((unsigned)dest < NPEERS) {
        matrix[dest].messages++;
        matrix[dest].bytes += bytes;
    }
}

#if TIMES_CALLS
#define CALL_START() const unsigned long long t0 = tick()
#define CALL_TICKS() (tick() - t0)
#else
#define CALL_START() (void)0
#define CALL_TICKS() 0ull
#endif
#define RA() __builtin_return_address(0)
#endif

#if TRACES
/* One record of the trace floor, little-endian as this machine writes it. */
struct record {
    uint32_t dt;    /* start minus the previous record's start, in ticks, cut to 32 bits */
    uint32_t dur;   /* ticks, cut to 32 bits; 0 for a completion */
    uint32_t bytes; /* sent or received; 0 for a call that receives later (MPI_Irecv), for MPI_Waitall
                       and for a send's completion (its call has them) */
    int32_t tag;    /* the call's tag, a receive's from its status; 0 for MPI_Waitall and a send's
                       completion */
    uint32_t op;    /* the operation's number (1, 2, ... in the order of the calls that started them),
                       on the call and on its completion; 0 for a blocking call and MPI_Waitall */
    uint16_t peer;  /* world rank of the destination or source (paired.c's only communicator);
                       0xffff for MPI_Waitall and a send's completion */
    uint8_t site;   /* the call site's slot in sites[] */
    uint8_t fn;     /* the function (its number here), | RECORD_DONE for a completion, | RECORD_BOTH
                       for a call whose operation completed within it */
};
_Static_assert(sizeof(struct record) == 24, "24-byte records");
#define RECORD_DONE 0x80
#define RECORD_BOTH 0x40
#define RECORDS ((1u << 20) / sizeof(struct record)) /* 1 MiB */
static struct record records[RECORDS];
static unsigned nrecords, last_op;
static long long written; /* records written to the file; -1 after a failed write */
static int trace_fd = -1;
static unsigned long long last_t0;

/* Write the buffer's records (the caller's thread pays for it, as it would for a writer thread
 * sharing its core). */
__attribute__((noinline)) static void records_flush(void)
{
    if (trace_fd < 0 && written >= 0) {
        int rank;
        char path[4096];
        const char *dir = getenv("MPILENS_OUTPUT");
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (dir != NULL && snprintf(path, sizeof path, "%s/floor-trace.%d", dir, rank) < (int)sizeof path) {
            mkdir(dir, 0777);
            trace_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        }
        if (trace_fd < 0) written = -1;
    }
    const size_t n = (size_t)nrecords * sizeof(struct record);
    if (written >= 0 && write(trace_fd, records, n) != (ssize_t)n) written = -1;
    if (written >= 0) written += nrecords;
    nrecords = 0;
}

static inline void record(int fn, unsigned long long t0, unsigned long long d, long long bytes, int tag,
                          unsigned op, int peer, const struct site *s)
{
    if (__builtin_expect(nrecords == RECORDS, 0)) records_flush();
    struct record *r = &records[nrecords++];
    r->dt = (uint32_t)(t0 - last_t0);
    r->dur = (uint32_t)d;
    r->bytes = (uint32_t)bytes;
    r->tag = tag;
    r->op = op;
    r->peer = (uint16_t)peer;
    r->site = (uint8_t)(s - sites);
    r->fn = (uint8_t)fn;
    last_t0 = t0;
}
#define RECORD(fn, t0, d, bytes, tag, op, peer, s) record(fn, t0, d, bytes, tag, op, peer, s)

/* A handle shared by operations the MPI completed within their call (mpilens' ml_req_shared_handle):
 * they are never waited for, so they get no entry and their call's record stands for both. */
#if defined(OPEN_MPI)
extern char ompi_request_empty[];
static inline int shared_handle(MPI_Request r) { return (void *)r == (void *)ompi_request_empty; }
#elif defined(MPICH)
static inline int shared_handle(MPI_Request r) { return ((unsigned)r >> 30) == 1u; }
#else
static inline int shared_handle(MPI_Request r) { return r == MPI_REQUEST_NULL; }
#endif
#else
#define RECORD(fn, t0, d, bytes, tag, op, peer, s) ((void)0)
#endif

#if COUNTS_BYTES
/* The outstanding nonblocking receives: open addressing on the handle, deletion by shifting back
 * (no tombstones). A handle's bits as the key: 0 is never one of a started receive here. Kinds 3
 * and 4 keep each receive's site with it, where its bytes are counted when it completes; kind 5
 * also its operation's number, and holds the sends the MPI did not complete within their call. */
#define SLOTS 256 /* a power of two, at least 2 * the receives outstanding at once */
static unsigned long long slot_key[SLOTS];
#if TRACES
/* the operation's number, its site's slot and whether it sends, in one nonzero value */
typedef unsigned long long slot_value;
static slot_value slot_op[SLOTS];
#define SLOT_SET(i, v) (slot_op[i] = (v))
#define SLOT_MOVE(to, from) (slot_op[to] = slot_op[from])
#define SLOT_GET(i) slot_op[i]
static inline slot_value pending(const struct site *s, unsigned op, int sends)
{
    return 1ull << 63 | (unsigned long long)sends << 62 | (unsigned long long)(s - sites) << 32 | op;
}
static inline struct site *pending_site(slot_value v) { return &sites[(v >> 32) & (NSITES - 1)]; }
static inline int pending_sends(slot_value v) { return (int)(v >> 62) & 1; }
static inline unsigned pending_op(slot_value v) { return (unsigned)v; }
#elif KEEPS_SITES
typedef struct site *slot_value;
static slot_value slot_site[SLOTS];
#define SLOT_SET(i, v) (slot_site[i] = (v))
#define SLOT_MOVE(to, from) (slot_site[to] = slot_site[from])
#define SLOT_GET(i) slot_site[i]
static inline slot_value pending(struct site *s, unsigned op, int sends) { return (void)op, (void)sends, s; }
static inline struct site *pending_site(slot_value v) { return v; }
static inline int pending_sends(slot_value v) { return (void)v, 0; }
#else
typedef int slot_value; /* the bytes floor keeps no more than the handle: 1 is "there" */
#define SLOT_SET(i, v) ((void)(v))
#define SLOT_MOVE(to, from) ((void)0)
#define SLOT_GET(i) 1
#endif
static inline unsigned long long key_of(MPI_Request r)
{
    unsigned long long k = 0;
    __builtin_memcpy(&k, &r, sizeof r);
    return k;
}
static inline unsigned home(unsigned long long k) { return (unsigned)((k * 0x9E3779B97F4A7C15ull) >> 56) & (SLOTS - 1); }
static inline void slot_add(unsigned long long k, slot_value v)
{
    unsigned i = home(k);
    while (slot_key[i] != 0) i = (i + 1) & (SLOTS - 1);
    slot_key[i] = k;
    SLOT_SET(i, v);
}
/* Take k out: its value, 0 when it was not there. */
static inline slot_value slot_take(unsigned long long k)
{
    unsigned i = home(k);
    while (slot_key[i] != k) {
        if (slot_key[i] == 0) return 0;
        i = (i + 1) & (SLOTS - 1);
    }
    const slot_value v = SLOT_GET(i);
    /* shift the entries after i back over the hole, each to the first free slot on its way home */
    for (unsigned j = (i + 1) & (SLOTS - 1); slot_key[j] != 0; j = (j + 1) & (SLOTS - 1)) {
        const unsigned h = home(slot_key[j]);
        if (((j - h) & (SLOTS - 1)) >= ((j - i) & (SLOTS - 1))) {
            slot_key[i] = slot_key[j];
            SLOT_MOVE(i, j);
            i = j;
        }
    }
    slot_key[i] = 0;
    return v;
}
#endif

#if KEEPS_SITES
/* Kinds 3 and 4: every count at the call site (bytes sent at the call: paired.c cancels nothing,
 * and its calls never fail, errors being fatal). */
int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    CALL_START();
    const int rc = PMPI_Send(buf, count, dt, dest, tag, comm);
    const unsigned long long d = CALL_TICKS();
    struct site *const s = site_call(SEND, RA(), d);
    const long long bytes = type_bytes(dt, count);
    s->sent += bytes;
    hist_add(SEND, bytes, d);
    matrix_add(dest, bytes);
    RECORD(SEND, t0, d, bytes, tag, 0, dest, s);
    return rc;
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Status own;
    MPI_Status *const st = status == MPI_STATUS_IGNORE ? &own : status;
    CALL_START();
    const int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
    const unsigned long long d = CALL_TICKS();
    struct site *const s = site_call(RECV, RA(), d);
    const long long bytes = status_bytes(st);
    s->recv += bytes;
    hist_add(RECV, bytes, d);
    RECORD(RECV, t0, d, bytes, st->MPI_TAG, 0, st->MPI_SOURCE, s);
    return rc;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    CALL_START();
    const int rc = PMPI_Isend(buf, count, dt, dest, tag, comm, req);
    const unsigned long long d = CALL_TICKS();
    struct site *const s = site_call(ISEND, RA(), d);
    const long long bytes = type_bytes(dt, count);
    s->sent += bytes;
    hist_add(ISEND, bytes, 0);
    matrix_add(dest, bytes);
#if TRACES
    /* the completion gets its own record, unless the MPI completed the send within the call */
    const unsigned op = ++last_op;
    const int both = shared_handle(*req);
    if (!both) slot_add(key_of(*req), pending(s, op, 1));
    RECORD(both ? ISEND | RECORD_BOTH : ISEND, t0, d, bytes, tag, op, dest, s);
#endif
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
    CALL_START();
    const int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    const unsigned long long d = CALL_TICKS();
    struct site *const s = site_call(IRECV, RA(), d);
#if TRACES
    const unsigned op = ++last_op;
    slot_add(key_of(*req), pending(s, op, 0));
    RECORD(IRECV, t0, d, 0, tag, op, source, s);
#else
    slot_add(key_of(*req), pending(s, 0, 0));
#endif
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    enum { MAX = 256 };
    slot_value posted[MAX]; /* what started each operation among reqs, that its completion needs; 0: none */
    MPI_Status own[MAX];
    int any = 0; /* a receive among them: the statuses are needed */
    if (n > MAX) abort(); /* more than paired.c's windows */
    for (int i = 0; i < n; i++)
        if ((posted[i] = slot_take(key_of(reqs[i]))) && !pending_sends(posted[i])) any = 1;
    MPI_Status *st = statuses != MPI_STATUSES_IGNORE ? statuses : any ? own : MPI_STATUSES_IGNORE;
    CALL_START();
    const int rc = PMPI_Waitall(n, reqs, st);
    const unsigned long long d = CALL_TICKS();
    struct site *const s = site_call(WAITALL, RA(), d);
    RECORD(WAITALL, t0, d, 0, 0, 0, 0xffff, s);
    (void)s;
    for (int i = 0; i < n; i++) {
        if (!posted[i]) continue;
        if (pending_sends(posted[i])) { /* kind 5: its completion */
            RECORD(ISEND | RECORD_DONE, t0 + d, 0, 0, 0, pending_op(posted[i]), 0xffff, pending_site(posted[i]));
            continue;
        }
        const long long bytes = status_bytes(&st[i]);
        pending_site(posted[i])->recv += bytes;
        hist_add(IRECV, bytes, 0);
        RECORD(IRECV | RECORD_DONE, t0 + d, 0, bytes, st[i].MPI_TAG, pending_op(posted[i]), st[i].MPI_SOURCE,
               pending_site(posted[i]));
    }
    return rc;
}
#else
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
    slot_add(key_of(*req), 1);
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
#endif

int MPI_Finalize(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
#if KEEPS_SITES
    /* the functions' totals, folded from their sites */
    for (int i = 0; i < NSITES; i++)
        if (sites[i].key != 0) {
            calls[sites[i].key >> 56] += sites[i].calls;
            ticks += sites[i].ticks;
            sent += sites[i].sent;
            recv += sites[i].recv;
        }
#endif
#if TRACES
    records_flush();
    if (trace_fd >= 0 && close(trace_fd) != 0) written = -1;
#endif
    const char *dir = getenv("MPILENS_OUTPUT");
    char path[4096];
    if (dir != NULL && snprintf(path, sizeof path, "%s/floor.%d", dir, rank) < (int)sizeof path) {
        mkdir(dir, 0777); /* rank 0 or 1 first: whichever comes, the other finds it */
        FILE *f = fopen(path, "w");
        if (f != NULL) {
            fprintf(f, "floor_calls rank %d", rank);
            for (int k = 0; k < NCALLS; k++) fprintf(f, " %s %llu", names[k], calls[k]);
            fprintf(f, " ticks %llu sent %lld recv %lld\n", ticks, sent, recv);
#if KEEPS_SITES
            for (int i = 0; i < NSITES; i++) {
                const struct site *s = &sites[i];
                if (s->key != 0)
                    fprintf(f, "floor_site rank %d %s calls %llu sent %lld recv %lld ticks %llu shortest %llu longest %llu\n",
                            rank, names[s->key >> 56], s->calls, s->sent, s->recv, s->ticks,
                            s->shortest_inv ? ~s->shortest_inv : 0, s->longest);
            }
            for (int k = 0; k < NCALLS; k++)
                for (int b = 0; b < 65; b++)
                    if (hist[k][b].calls)
                        fprintf(f, "floor_hist rank %d %s bin %d calls %llu ticks %llu\n", rank, names[k], b,
                                hist[k][b].calls, hist[k][b].ticks);
            for (int p = 0; p < NPEERS; p++)
                if (matrix[p].messages)
                    fprintf(f, "floor_matrix rank %d peer %d messages %llu bytes %lld\n", rank, p, matrix[p].messages,
                            matrix[p].bytes);
#endif
#if TRACES
            fprintf(f, "floor_trace rank %d records %lld\n", rank, written);
#endif
            fclose(f);
        }
    }
    return PMPI_Finalize();
}
