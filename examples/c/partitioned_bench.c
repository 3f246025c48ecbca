/* partitioned_bench: effective bandwidth of partitioned sends (seeds/004, Sec. 4.4.1, Algorithm 2)
 * and the ping-pong table of the machine, for `mpilens model partitioned` and
 * `mpilens bench pingpong`. Two ranks: rank 0 sends, rank 1 receives.
 *
 * Per buffer size s and repetition, rank 0 runs N OpenMP threads; thread i sleeps for a
 * Normal(T, sigma) time (sigma = T v^2, the thesis' convention, or T v with --sigma-rule plain;
 * truncated at 0; the same draws for every mode, seeded by repetition and thread), records
 * t_i = MPI_Wtime() and makes its partition (s / N bytes) ready. t_last = max t_i (OpenMP max
 * reduction); after the completion call t_f = MPI_Wtime(); the effective bandwidth of the
 * repetition is s / (t_f - t_last). Modes (--mode, comma separated):
 *   partitioned  MPI-4: MPI_Psend_init / MPI_Precv_init once per size, MPI_Start, MPI_Pready by
 *                each thread, MPI_Wait. Needs an MPI-4 library (MPICH 4.0+); Open MPI 4.1 is
 *                MPI 3.1: the mode is compiled out (#if MPI_VERSION >= 4) and the program says so.
 *   pcl          the same on point-to-point, as MPIPCL (the library the thesis used) does it:
 *                one persistent MPI_Send_init per partition, MPI_Start by each thread when ready,
 *                MPI_Waitall; receiver: N persistent receives. Works with any MPI.
 *   single       the single-send baseline: the threads join, then one MPI_Send of s bytes.
 *   pingpong     an OSU-style table: latency = half the round trip of a blocking ping-pong,
 *                bandwidth = window of 64 MPI_Isend per acknowledgement (osu_bw), for sizes
 *                1 B .. --max-size; prints size_bytes,latency_us,bandwidth_MBps.
 * Before the measured repetitions, --warmup repetitions (default 5) run the same way.
 * Output (rank 0, stdout): '#' comment lines with the parameters, then CSV
 *   mode,threads,size_bytes,rep,elapsed_us,bw_MBps,spread_us   (spread: t_last - t_first)
 * and after each size a comment "# mean MODE threads=N size=S reps=R bw_MBps=B elapsed_us=E" with
 * the mean effective bandwidth over the repetitions.
 * Usage: partitioned_bench [--mode LIST] [-t THREADS] [--sizes LIST] [--compute-ms T]
 *          [--variability V] [--sigma-rule thesis|plain] [--reps R] [--warmup W] [--seed S]
 *          [--thread-level multiple|serialized] [--max-size BYTES] [--iters-scale F]
 * Sizes: comma separated bytes with optional suffix k/K (KiB) or m/M (MiB); a size is rounded
 * down to a multiple of the thread count. Exit status 2 when no requested mode can run. */
#define _GNU_SOURCE /* getopt_long, nanosleep under -std=c11 */
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG 77
#define MAX_SIZES 64

static int rank, nthreads = 0, reps = 5, warmup = 5, serialized = 0;
static double compute_ms = 10.0, variability = 0.25, sigma_us;
static unsigned long long seed = 12345;
static long sizes[MAX_SIZES];
static int nsizes = 0;

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Normal(T, sigma) microseconds for repetition rep and thread i (Box-Muller on two hashes) */
static double draw_us(int rep, int i)
{
    const uint64_t a = mix(seed ^ mix((uint64_t)(rep + 1000) * 1000003ULL + (uint64_t)i));
    const uint64_t b = mix(a);
    const double u = ((a >> 11) + 0.5) / 9007199254740992.0, v = ((b >> 11) + 0.5) / 9007199254740992.0;
    const double us = compute_ms * 1000.0 + sigma_us * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
    return us < 0 ? 0 : us;
}

static void sleep_us(double us)
{
    struct timespec ts = {(time_t)(us / 1e6), (long)(fmod(us, 1e6) * 1e3)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static double acc_bw, acc_elapsed;
static int acc_n;

static void row(const char *mode, long size, int rep, double elapsed, double spread)
{
    if (rep < 0) return;
    printf("%s,%d,%ld,%d,%.3f,%.3f,%.3f\n", mode, nthreads, size, rep, elapsed * 1e6, size / elapsed / 1e6,
           spread * 1e6);
    acc_bw += size / elapsed / 1e6;
    acc_elapsed += elapsed * 1e6;
    acc_n++;
}

/* after the repetitions of one size: a comment line with the mean over them (the thesis' average) */
static void mean_row(const char *mode, long size)
{
    if (rank == 0 && acc_n > 0)
        printf("# mean %s threads=%d size=%ld reps=%d bw_MBps=%.1f elapsed_us=%.3f\n", mode, nthreads, size, acc_n,
               acc_bw / acc_n, acc_elapsed / acc_n);
    acc_bw = acc_elapsed = 0;
    acc_n = 0;
}

/* threads compute; each calls ready(i) after its sleep; returns t_last, sets *t_first */
#define COMPUTE_AND_READY(rep, READY)                                                                              \
    do {                                                                                                           \
        double tl = 0, tfirst = 1e300;                                                                             \
        _Pragma("omp parallel num_threads(nthreads) reduction(max : tl) reduction(min : tfirst)")                  \
        {                                                                                                          \
            const int i = omp_get_thread_num();                                                                    \
            sleep_us(draw_us(rep, i));                                                                             \
            const double ti = MPI_Wtime();                                                                         \
            if (serialized) {                                                                                      \
                _Pragma("omp critical") { READY; }                                                                 \
            } else {                                                                                               \
                READY;                                                                                             \
            }                                                                                                      \
            tl = ti;                                                                                               \
            tfirst = ti;                                                                                           \
        }                                                                                                          \
        t_last = tl;                                                                                               \
        t_first = tfirst;                                                                                          \
    } while (0)

#if MPI_VERSION >= 4
static void run_partitioned(char *buf)
{
    for (int s = 0; s < nsizes; s++) {
        const long count = sizes[s] / nthreads, size = count * nthreads;
        MPI_Request req;
        if (rank == 0)
            MPI_Psend_init(buf, nthreads, count, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        else
            MPI_Precv_init(buf, nthreads, count, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int rep = -warmup; rep < reps; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Start(&req);
            if (rank == 0) {
                double t_last, t_first;
                COMPUTE_AND_READY(rep, MPI_Pready(i, req));
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                const double t_f = MPI_Wtime();
                row("partitioned", size, rep, t_f - t_last, t_last - t_first);
            } else {
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
        mean_row("partitioned", size);
        MPI_Request_free(&req);
    }
}
#endif

static void run_pcl(char *buf)
{
    MPI_Request *req = malloc(sizeof(MPI_Request) * nthreads);
    for (int s = 0; s < nsizes; s++) {
        const long count = sizes[s] / nthreads, size = count * nthreads;
        for (int i = 0; i < nthreads; i++) {
            if (rank == 0)
                MPI_Send_init(buf + i * count, (int)count, MPI_BYTE, 1, TAG + 1 + i, MPI_COMM_WORLD, &req[i]);
            else
                MPI_Recv_init(buf + i * count, (int)count, MPI_BYTE, 0, TAG + 1 + i, MPI_COMM_WORLD, &req[i]);
        }
        for (int rep = -warmup; rep < reps; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t_last, t_first;
                COMPUTE_AND_READY(rep, MPI_Start(&req[i]));
                MPI_Waitall(nthreads, req, MPI_STATUSES_IGNORE);
                const double t_f = MPI_Wtime();
                row("pcl", size, rep, t_f - t_last, t_last - t_first);
            } else {
                MPI_Startall(nthreads, req);
                MPI_Waitall(nthreads, req, MPI_STATUSES_IGNORE);
            }
        }
        mean_row("pcl", size);
        for (int i = 0; i < nthreads; i++) MPI_Request_free(&req[i]);
    }
    free(req);
}

static void run_single(char *buf)
{
    for (int s = 0; s < nsizes; s++) {
        const long size = sizes[s] / nthreads * nthreads;
        for (int rep = -warmup; rep < reps; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                double t_last, t_first;
                COMPUTE_AND_READY(rep, (void)0);
                MPI_Send(buf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                const double t_f = MPI_Wtime();
                row("single", size, rep, t_f - t_last, t_last - t_first);
            } else {
                MPI_Recv(buf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        mean_row("single", size);
    }
}

static void run_pingpong(long max_size, double iters_scale)
{
    enum { WINDOW = 64 };
    char *sbuf = calloc(1, max_size), *rbuf = calloc(WINDOW, max_size), ack = 0;
    MPI_Request req[WINDOW];
    if (rank == 0) printf("size_bytes,latency_us,bandwidth_MBps\n");
    for (long size = 1; size <= max_size; size *= 2) {
        int iters = (int)((size <= 8192 ? 1000 : size <= 262144 ? 200 : 50) * iters_scale);
        int bw_iters = (int)((size <= 8192 ? 100 : size <= 262144 ? 20 : 5) * iters_scale);
        if (iters < 2) iters = 2;
        if (bw_iters < 2) bw_iters = 2;
        double t0 = 0;
        for (int it = -iters / 10 - 1; it < iters; it++) {
            if (it == 0) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
            }
            if (rank == 0) {
                MPI_Send(sbuf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
            }
        }
        const double latency = (MPI_Wtime() - t0) / (2.0 * iters);
        for (int it = -2; it < bw_iters; it++) {
            if (it == 0) {
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
            }
            if (rank == 0) {
                for (int w = 0; w < WINDOW; w++) MPI_Isend(sbuf, (int)size, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                MPI_Recv(&ack, 1, MPI_BYTE, 1, TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (int w = 0; w < WINDOW; w++)
                    MPI_Irecv(rbuf + (size_t)w * size, (int)size, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &req[w]);
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
                MPI_Send(&ack, 1, MPI_BYTE, 0, TAG + 1, MPI_COMM_WORLD);
            }
        }
        const double bw = (double)size * WINDOW * bw_iters / (MPI_Wtime() - t0);
        if (rank == 0) printf("%ld,%.6g,%.6g\n", size, latency * 1e6, bw / 1e6);
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
}

static long parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'k' || *end == 'K') v *= 1024;
    else if (*end == 'm' || *end == 'M') v *= 1048576;
    else if (*end == 'g' || *end == 'G') v *= 1073741824.0;
    return (long)v;
}

int main(int argc, char **argv)
{
    const char *modes = "partitioned,single", *sigma_rule = "thesis";
    char sizes_arg[4096] = "65536,262144,1048576,4194304,16777216";
    long max_size = 4 << 20;
    double iters_scale = 1.0;
    static const struct option opts[] = {
        {"mode", required_argument, 0, 'm'},         {"threads", required_argument, 0, 't'},
        {"sizes", required_argument, 0, 's'},        {"compute-ms", required_argument, 0, 'c'},
        {"variability", required_argument, 0, 'v'},  {"sigma-rule", required_argument, 0, 'R'},
        {"reps", required_argument, 0, 'r'},         {"warmup", required_argument, 0, 'w'},
        {"seed", required_argument, 0, 'S'},         {"thread-level", required_argument, 0, 'L'},
        {"max-size", required_argument, 0, 'X'},     {"iters-scale", required_argument, 0, 'I'},
        {"help", no_argument, 0, 'h'},               {0, 0, 0, 0}};
    int c, bad = 0;
    while ((c = getopt_long(argc, argv, "m:t:s:r:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': modes = optarg; break;
        case 't': nthreads = atoi(optarg); break;
        case 's': snprintf(sizes_arg, sizeof sizes_arg, "%s", optarg); break;
        case 'c': compute_ms = atof(optarg); break;
        case 'v': variability = atof(optarg); break;
        case 'R': sigma_rule = optarg; break;
        case 'r': reps = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'S': seed = strtoull(optarg, NULL, 10); break;
        case 'L': serialized = strcmp(optarg, "serialized") == 0; break;
        case 'X': max_size = parse_size(optarg); break;
        case 'I': iters_scale = atof(optarg); break;
        default: bad = 1;
        }
    }
    const int required = serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    int provided;
    MPI_Init_thread(&argc, &argv, required, &provided);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (bad || size != 2 || reps < 1 || warmup < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 partitioned_bench [--mode partitioned,pcl,single,pingpong] [-t THREADS] "
                            "[--sizes LIST] [--compute-ms T] [--variability V] [--sigma-rule thesis|plain] [--reps R] "
                            "[--warmup W] [--seed S] [--thread-level multiple|serialized] [--max-size BYTES] "
                            "[--iters-scale F]%s\n", size != 2 ? " (exactly 2 ranks)" : "");
        MPI_Finalize();
        return 2;
    }
    if (nthreads <= 0) nthreads = omp_get_max_threads();
    sigma_us = compute_ms * 1000.0 * (strcmp(sigma_rule, "plain") == 0 ? variability : variability * variability);
    for (char *tok = strtok(sizes_arg, ","); tok && nsizes < MAX_SIZES; tok = strtok(NULL, ",")) {
        const long v = parse_size(tok);
        if (v >= nthreads) sizes[nsizes++] = v;
    }
    long biggest = 0;
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > biggest) biggest = sizes[s];

    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
    int len, ran = 0, version, subversion;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&version, &subversion);
    for (char *p = lib; *p; p++)
        if (*p == '\n') *p = ' ';
    if (provided < required && strcmp(modes, "pingpong") != 0) {
        if (rank == 0)
            fprintf(stderr, "partitioned_bench: the MPI provides thread level %d, below the %s level needed\n", provided,
                    serialized ? "MPI_THREAD_SERIALIZED" : "MPI_THREAD_MULTIPLE");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0) {
        printf("# partitioned_bench: MPI %d.%d, %.120s\n", version, subversion, lib);
        if (strstr(modes, "pingpong") == NULL)
            printf("# threads=%d compute_ms=%g variability=%g sigma_rule=%s sigma_us=%g reps=%d warmup=%d seed=%llu "
                   "thread_level=%s\nmode,threads,size_bytes,rep,elapsed_us,bw_MBps,spread_us\n",
                   nthreads, compute_ms, variability, sigma_rule, sigma_us, reps, warmup, seed,
                   serialized ? "serialized" : "multiple");
        fflush(stdout);
    }
    char *buf = calloc(1, biggest > 0 ? biggest : 1);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", modes);
    for (char *save = NULL, *m = strtok_r(copy, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        if (strcmp(m, "partitioned") == 0) {
#if MPI_VERSION >= 4
            run_partitioned(buf);
            ran++;
#else
            if (rank == 0)
                fprintf(stderr, "partitioned_bench: mode partitioned needs MPI-4 partitioned communication "
                                "(MPI_Psend_init, MPI_Pready); this MPI implements MPI %d.%d, so it was compiled out. "
                                "Use MPICH 4.0+ (or the pcl mode, which emulates it on point-to-point).\n",
                        version, subversion);
#endif
        } else if (strcmp(m, "pcl") == 0) {
            run_pcl(buf);
            ran++;
        } else if (strcmp(m, "single") == 0) {
            run_single(buf);
            ran++;
        } else if (strcmp(m, "pingpong") == 0) {
            run_pingpong(max_size, iters_scale);
            ran++;
        } else if (rank == 0) {
            fprintf(stderr, "partitioned_bench: unknown mode %s\n", m);
        }
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return ran ? 0 : 2;
}
