/* weak_probe: what a program sees that probes for MPI functions with weak references, as mpi4py's
 * wheels do for every function newer than MPI-3.1 (and as a program built against one MPI and run
 * with another may). Built with any MPI's header, whatever it declares: the functions are named by
 * their symbols, not by the header's declarations.
 *
 * Usage: weak_probe (2 ranks)
 *   prints "weak_probe: rank R MPI_Isendrecv=0|1 MPI_Send_c=0|1 MPI_Status_get_source=0|1"
 *   (1: the symbol resolved), then calls each function that resolved once:
 *   MPI_Isendrecv  each rank sends 100*(rank+1) bytes to the other and receives what it sends
 *   MPI_Send_c     rank 0 sends 24 bytes to rank 1 (MPI_Recv receives them)
 *   MPI_Status_get_source on the MPI_Recv's status; prints "weak_probe: source S" */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

extern int probe_isendrecv(const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int, int,
                           MPI_Comm, MPI_Request *) __asm__("MPI_Isendrecv") __attribute__((weak));
extern int probe_send_c(const void *, MPI_Count, MPI_Datatype, int, int, MPI_Comm) __asm__("MPI_Send_c")
    __attribute__((weak));
extern int probe_status_get_source(MPI_Status *, int *) __asm__("MPI_Status_get_source") __attribute__((weak));

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("weak_probe: rank %d MPI_Isendrecv=%d MPI_Send_c=%d MPI_Status_get_source=%d\n", rank,
           probe_isendrecv != NULL, probe_send_c != NULL, probe_status_get_source != NULL);
    fflush(stdout);
    const int other = 1 - rank;
    char out[256], in[256];
    memset(out, rank, sizeof out);
    if (probe_isendrecv != NULL) {
        MPI_Request r;
        probe_isendrecv(out, 100 * (rank + 1), MPI_BYTE, other, 7, in, (int)sizeof in, MPI_BYTE, other, 7,
                        MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Status st;
    if (rank == 0) {
        if (probe_send_c != NULL) probe_send_c(out, 24, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
        else MPI_Send(out, 24, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
    } else {
        MPI_Recv(in, (int)sizeof in, MPI_BYTE, 0, 8, MPI_COMM_WORLD, &st);
        int source = st.MPI_SOURCE;
        if (probe_status_get_source != NULL) probe_status_get_source(&st, &source);
        printf("weak_probe: source %d\n", source);
    }
    MPI_Finalize();
    return 0;
}
