/* Trivial (memnesia's baseline workload): MPI_Init immediately followed by MPI_Finalize. What
 * memory mode shows for it is the least memory MPI needs to bring up a job of this size. */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
