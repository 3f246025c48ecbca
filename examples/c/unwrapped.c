/* unwrapped: MPI calls no PMPI tool can see, on any number of ranks: an extension function of the
 * MPI (MPIX_Query_cuda_support: Open MPI's mpi-ext.h, MPICH's mpi.h) and a direct call of the
 * profiling interface (PMPI_Barrier), beside one MPI_Barrier a tool does see. With the MPI-5
 * standard ABI, which has no extensions, PMPI_Barrier only.
 * Prints "unwrapped: called [MPIX_Query_cuda_support] PMPI_Barrier, then MPI_Barrier". */
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
#if defined(MPI_ABI_VERSION) && MPI_ABI_VERSION >= 1
    const char *past = "PMPI_Barrier";
#else
    const char *past = "MPIX_Query_cuda_support PMPI_Barrier";
    (void)MPIX_Query_cuda_support();
#endif
    PMPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("unwrapped: called %s, then MPI_Barrier\n", past);
    MPI_Finalize();
    return 0;
}
