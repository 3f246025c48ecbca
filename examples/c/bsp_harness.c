/* bsp_harness: the bulk-synchronous measurement harness of the variability model (seeds/004,
 * Sec. 3.3.1) for controlled studies with `mpilens model variability`.
 *
 * After its setup the program calls MPI_Barrier once, then runs K intervals: each rank times one
 * execution of the workload (plus an optional 2-D halo exchange) and calls MPI_Barrier. The
 * barrier that ends interval k starts interval k+1, so every interval is barrier-fenced with one
 * barrier instead of the thesis' two. Each rank keeps its interval times in memory; at the end
 * one MPI_Reduce (MPI_MAX) gives rank 0 the per-interval maxima and one MPI_Gather the per-rank
 * times and host names, which rank 0 writes as a JSON log (-o FILE, schema "mpilens.bsp/1") and
 * summarizes on stdout. Nothing after the loop is a synchronizing collective, so under
 * `mpilens run --set MPILENS_INTERVALS=1` the recorded intervals are the setup (interval 0) and
 * the K work intervals: the same data from an ordinary run, for cross-checking the log.
 *
 * Workloads (-w):
 *   ftq    spin (or, with --sleep, nanosleep) for a Normal(mean, sd) time in microseconds,
 *          truncated at 0 (Fixed Time Quantum with normally distributed quanta)
 *   fwq    a Normal(mean, sd) number of thousands of integer additions (Fixed Work Quantum)
 *   dgemm  C += A B, N x N doubles (-n, default 128), -r multiplications per interval
 *   spmv   y = A x for the 5-point Laplacian on a sqrt(N) x sqrt(N) grid in CSR (-n rows,
 *          default 262144), -r products per interval
 * Options: -k intervals (100), --mean (10000), --sd (1000), --sleep, -n, -r (1),
 *          --halo BYTES (0: none; else a periodic 2-D halo exchange of BYTES with each of the 4
 *          neighbours of a MPI_Dims_create grid, MPI_Isend/MPI_Irecv/MPI_Waitall, inside the
 *          interval), --seed S (default: from the clock on rank 0, broadcast), -o FILE.
 * Usage: bsp_harness [-w ftq|fwq|dgemm|spmv] [-k K] [--mean M] [--sd S] [--sleep] [-n N] [-r R]
 *                    [--halo BYTES] [--seed S] [-o FILE] */
#define _GNU_SOURCE /* getopt_long, nanosleep, clock_gettime under -std=c11 */
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum workload { FTQ, FWQ, DGEMM, SPMV };
static const char *workload_names[] = {"ftq", "fwq", "dgemm", "spmv"};

static uint64_t rng_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform01(void) { return ((splitmix64() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

static double normal(double mean, double sd)
{
    const double u = uniform01(), v = uniform01();
    return mean + sd * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(void)
{
    fprintf(stderr, "usage: bsp_harness [-w ftq|fwq|dgemm|spmv] [-k K] [--mean M] [--sd S] [--sleep] [-n N] "
                    "[-r R] [--halo BYTES] [--seed S] [-o FILE]\n");
}

/* ---------------------------------------------------------------- workloads */
static double *A, *B, *C;               /* dgemm */
static int *row_ptr, *col_idx;          /* spmv */
static double *val, *xv, *yv;
static volatile uint64_t sink;

static void setup(enum workload w, long n)
{
    if (w == DGEMM) {
        A = malloc(sizeof(double) * n * n);
        B = malloc(sizeof(double) * n * n);
        C = calloc((size_t)n * n, sizeof(double));
        for (long i = 0; i < n * n; i++) {
            A[i] = uniform01();
            B[i] = uniform01();
        }
    } else if (w == SPMV) {
        long side = (long)sqrt((double)n);
        if (side < 2) side = 2;
        n = side * side;
        row_ptr = malloc(sizeof(int) * (n + 1));
        col_idx = malloc(sizeof(int) * 5 * n);
        val = malloc(sizeof(double) * 5 * n);
        xv = malloc(sizeof(double) * n);
        yv = malloc(sizeof(double) * n);
        long nz = 0;
        for (long i = 0; i < n; i++) {
            const long r = i / side, c = i % side;
            row_ptr[i] = (int)nz;
            const long nb[5] = {r > 0 ? i - side : -1, c > 0 ? i - 1 : -1, i, c < side - 1 ? i + 1 : -1,
                                r < side - 1 ? i + side : -1};
            for (int j = 0; j < 5; j++) {
                if (nb[j] < 0) continue;
                col_idx[nz] = (int)nb[j];
                val[nz] = nb[j] == i ? 4.0 : -1.0;
                nz++;
            }
            xv[i] = uniform01();
        }
        row_ptr[n] = (int)nz;
    }
}

static long spmv_rows;

static void work(enum workload w, double mean, double sd, int do_sleep, long n, int reps)
{
    if (w == FTQ) {
        double us = normal(mean, sd);
        if (us < 0) us = 0;
        if (do_sleep) {
            struct timespec ts = {(time_t)(us / 1e6), (long)(fmod(us, 1e6) * 1e3)};
            while (nanosleep(&ts, &ts) != 0) {
            }
        } else {
            const double end = now() + us * 1e-6;
            while (now() < end) {
            }
        }
    } else if (w == FWQ) {
        double k = normal(mean, sd);
        const uint64_t count = k < 0 ? 0 : (uint64_t)(k * 1000.0);
        uint64_t acc = 0;
        for (uint64_t i = 0; i < count; i++) acc += i ^ (acc >> 3);
        sink = acc;
    } else if (w == DGEMM) {
        for (int r = 0; r < reps; r++)
            for (long i = 0; i < n; i++)
                for (long k = 0; k < n; k++) {
                    const double a = A[i * n + k];
                    for (long j = 0; j < n; j++) C[i * n + j] += a * B[k * n + j];
                }
    } else {
        for (int r = 0; r < reps; r++) {
            for (long i = 0; i < spmv_rows; i++) {
                double s = 0;
                for (int j = row_ptr[i]; j < row_ptr[i + 1]; j++) s += val[j] * xv[col_idx[j]];
                yv[i] = s;
            }
            double *t = xv;
            xv = yv;
            yv = t;
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    enum workload w = FTQ;
    int K = 100, do_sleep = 0, reps = 1, have_seed = 0;
    double mean = 10000, sd = 1000;
    long n = -1, halo = 0;
    unsigned long long seed = 0;
    const char *out = NULL;
    static const struct option opts[] = {
        {"workload", required_argument, 0, 'w'}, {"intervals", required_argument, 0, 'k'},
        {"mean", required_argument, 0, 'M'},     {"sd", required_argument, 0, 'S'},
        {"sleep", no_argument, 0, 'z'},          {"size", required_argument, 0, 'n'},
        {"reps", required_argument, 0, 'r'},     {"halo", required_argument, 0, 'H'},
        {"seed", required_argument, 0, 's'},     {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "w:k:n:r:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'w':
            for (w = FTQ; w <= SPMV && strcmp(optarg, workload_names[w]) != 0; w++) {
            }
            if (w > SPMV) {
                if (rank == 0) fprintf(stderr, "bsp_harness: unknown workload %s\n", optarg);
                MPI_Finalize();
                return 2;
            }
            break;
        case 'k': K = atoi(optarg); break;
        case 'M': mean = atof(optarg); break;
        case 'S': sd = atof(optarg); break;
        case 'z': do_sleep = 1; break;
        case 'n': n = atol(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'H': halo = atol(optarg); break;
        case 's': seed = strtoull(optarg, NULL, 10); have_seed = 1; break;
        case 'o': out = optarg; break;
        default:
            if (rank == 0) usage();
            MPI_Finalize();
            return c == 'h' ? 0 : 2;
        }
    }
    if (K < 1 || reps < 1 || halo < 0 || sd < 0) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    if (n < 0) n = w == DGEMM ? 128 : 262144;
    if (!have_seed && rank == 0) seed = (unsigned long long)time(NULL) * 1000003ULL ^ (unsigned long long)getpid();
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    rng_state = seed * 0x2545f4914f6cdd1dULL + (uint64_t)rank * 0x9e3779b97f4a7c15ULL;
    setup(w, n);
    if (w == SPMV) {
        long side = (long)sqrt((double)n);
        spmv_rows = (side < 2 ? 2 : side) * (side < 2 ? 2 : side);
    }

    /* optional 2-D periodic halo exchange */
    MPI_Comm cart = MPI_COMM_NULL;
    int nbr[4] = {MPI_PROC_NULL, MPI_PROC_NULL, MPI_PROC_NULL, MPI_PROC_NULL};
    char *sendbuf = NULL, *recvbuf = NULL;
    if (halo > 0) {
        int dims[2] = {0, 0}, periods[2] = {1, 1};
        MPI_Dims_create(size, 2, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
        MPI_Cart_shift(cart, 0, 1, &nbr[0], &nbr[1]);
        MPI_Cart_shift(cart, 1, 1, &nbr[2], &nbr[3]);
        sendbuf = calloc(4, (size_t)halo);
        recvbuf = calloc(4, (size_t)halo);
    }

    double *t = malloc(sizeof(double) * K);
    double barrier_time = 0;
    MPI_Barrier(MPI_COMM_WORLD); /* end of setup */
    for (int k = 0; k < K; k++) {
        const double t0 = MPI_Wtime();
        work(w, mean, sd, do_sleep, n, reps);
        if (halo > 0) {
            MPI_Request req[8];
            for (int d = 0; d < 4; d++) {
                MPI_Irecv(recvbuf + d * halo, (int)halo, MPI_BYTE, nbr[d], d ^ 1, cart, &req[d]);
                MPI_Isend(sendbuf + d * halo, (int)halo, MPI_BYTE, nbr[d], d, cart, &req[4 + d]);
            }
            MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
        }
        const double t1 = MPI_Wtime();
        t[k] = t1 - t0;
        MPI_Barrier(MPI_COMM_WORLD);
        barrier_time += MPI_Wtime() - t1;
    }

    /* logs: nothing below is a synchronizing collective */
    double *tmax = rank == 0 ? malloc(sizeof(double) * K) : NULL;
    double *all = rank == 0 ? malloc(sizeof(double) * K * size) : NULL;
    char host[MPI_MAX_PROCESSOR_NAME] = {0}, *hosts = rank == 0 ? calloc(size, MPI_MAX_PROCESSOR_NAME) : NULL;
    int len;
    MPI_Get_processor_name(host, &len);
    double bsum = 0;
    MPI_Reduce(t, tmax, K, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&barrier_time, &bsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(t, K, MPI_DOUBLE, all, K, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double runtime = 0, mx = 0;
        for (int k = 0; k < K; k++) {
            runtime += tmax[k];
            if (tmax[k] > mx) mx = tmax[k];
        }
        const double barrier_mean = bsum / ((double)size * K);
        printf("bsp_harness: %s, %d ranks, %d intervals, runtime %.6f s (sum of per-interval maxima), "
               "mean interval maximum %.6f s, largest %.6f s, mean barrier %.3g s, seed %llu\n",
               workload_names[w], size, K, runtime, runtime / K, mx, barrier_mean, seed);
        if (out) {
            FILE *f = fopen(out, "w");
            if (f == NULL) {
                perror(out);
            } else {
                fprintf(f, "{\"schema\": \"mpilens.bsp/1\", \"workload\": \"%s\", \"nranks\": %d, \"intervals\": %d, "
                           "\"mean\": %.17g, \"sd\": %.17g, \"sleep\": %s, \"size\": %ld, \"reps\": %d, "
                           "\"halo_bytes\": %ld, \"seed\": %llu, \"runtime_s\": %.17g, \"barrier_mean_s\": %.17g,\n",
                        workload_names[w], size, K, mean, sd, do_sleep ? "true" : "false", n, reps, halo, seed,
                        runtime, barrier_mean);
                fprintf(f, "\"hosts\": [");
                for (int r = 0; r < size; r++) {
                    fprintf(f, "%s\"", r ? ", " : "");
                    for (const char *p = hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME; *p; p++)
                        if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) fputc(*p, f);
                    fputc('"', f);
                }
                fprintf(f, "],\n\"maxima_s\": [");
                for (int k = 0; k < K; k++) fprintf(f, "%s%.9e", k ? ", " : "", tmax[k]);
                fprintf(f, "],\n\"times_s\": [");
                for (int r = 0; r < size; r++) {
                    fprintf(f, "%s\n[", r ? "," : "");
                    for (int k = 0; k < K; k++) fprintf(f, "%s%.9e", k ? ", " : "", all[(size_t)r * K + k]);
                    fprintf(f, "]");
                }
                fprintf(f, "]}\n");
                if (fclose(f) != 0) perror(out);
            }
        }
    }
    if (cart != MPI_COMM_NULL) MPI_Comm_free(&cart);
    free(t);
    free(tmax);
    free(all);
    free(hosts);
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return 0;
}
