/* unwrapped: MPI calls no PMPI tool can see, on any number of ranks: an extension function of the
 * MPI (MPIX_Query_cuda_support: Open MPI's mpi-ext.h, MPICH's mpi.h) and a direct call of the
 * profiling interface (PMPI_Barrier), beside one MPI_Barrier a tool does see.
 * Prints "unwrapped: called MPIX_Query_cuda_support PMPI_Barrier MPI_Barrier". */
#include <mpi.h>
#include <stdio.h>
#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int cuda = MPIX_Query_cuda_support();
    PMPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("unwrapped: called MPIX_Query_cuda_support PMPI_Barrier MPI_Barrier (cuda %d)\n", cuda);
    MPI_Finalize();
    return 0;
}
