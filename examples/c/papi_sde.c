/* papi_sde: reads the mpilens counters back through the ordinary PAPI API, as any PAPI-based tool
 * would, under `mpilens run --mode papi` (tests/test_papi.py, docs/papi.md).
 *
 * Usage: papi_sde [MESSAGES [BYTES [spc]]]   (defaults: 10 messages of 1000 bytes)
 * With "spc" (run with --mode papi,counters) it also reads two counters of the counters mode,
 * spc_bytes_sent_user and spc_bytes_received_user (MESSAGES * BYTES each).
 *
 * After MPI_Init each rank starts a PAPI event set of software-defined events of the library
 * "mpilens" (sde:::mpilens::NAME), sends MESSAGES messages of BYTES bytes to the next rank with
 * MPI_Send and receives as many from the previous one with MPI_Recv, then reads the events and
 * rank 0 prints one line per rank: "sde RANK NAME=VALUE ...". Expected per rank: MPI_Send_calls =
 * MPI_Recv_calls = MESSAGES, MPI_Send_bytes_sent = MPI_Recv_bytes_recv = MESSAGES * BYTES, and
 * the same numbers in the run's profile.json. Exits 2 when PAPI does not know the events. */
#include <mpi.h>
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
    "MPI_Send_calls", "MPI_Send_bytes_sent", "MPI_Recv_calls", "MPI_Recv_bytes_recv", "calls", "bytes_sent", "bytes_recv",
    "spc_bytes_sent_user", "spc_bytes_received_user",
};
#define NMAX (int)(sizeof names / sizeof names[0])

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int messages = argc > 1 ? atoi(argv[1]) : 10;
    const int bytes = argc > 2 ? atoi(argv[2]) : 1000;
    const int N = argc > 3 && strcmp(argv[3], "spc") == 0 ? NMAX : NMAX - 2;

    const int v = PAPI_library_init(PAPI_VER_CURRENT);
    if (v != PAPI_VER_CURRENT) {
        fprintf(stderr, "papi_sde: PAPI_library_init: %s\n", v < 0 ? PAPI_strerror(v) : "version mismatch");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int es = PAPI_NULL;
    PAPI_create_eventset(&es);
    char event[160];
    for (int i = 0; i < N; i++) {
        snprintf(event, sizeof event, "sde:::mpilens::%s", names[i]);
        const int rc = PAPI_add_named_event(es, event);
        if (rc != PAPI_OK) {
            fprintf(stderr, "papi_sde: rank %d: %s: %s\n", rank, event, PAPI_strerror(rc));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    PAPI_start(es);

    char *buf = calloc((size_t)bytes, 1), *rbuf = calloc((size_t)bytes, 1);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int m = 0; m < messages; m++) {
        if (rank % 2 == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, next, m, MPI_COMM_WORLD);
            MPI_Recv(rbuf, bytes, MPI_BYTE, prev, m, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, bytes, MPI_BYTE, prev, m, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, next, m, MPI_COMM_WORLD);
        }
    }

    long long values[NMAX];
    PAPI_stop(es, values);
    /* rank 0 prints every rank's line (the launchers may mix lines printed by several ranks);
     * MPI_Gather is not one of the functions read above */
    long long *all = rank == 0 ? malloc(sizeof values * (size_t)size) : NULL;
    MPI_Gather(values, N, MPI_LONG_LONG, all, N, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++) {
        printf("sde %d", r);
        for (int i = 0; i < N; i++) printf(" %s=%lld", names[i], all[r * N + i]);
        printf("\n");
    }
    free(all);
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
