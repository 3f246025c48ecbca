/* mpit_calls: the application's own MPI_T calls, for checking that mpilens times and counts them
 * (and none of its own). Per rank: MPI_T_init_thread before MPI_Init (not measured: nothing is
 * before MPI_Init), then after MPI_Init: MPI_T_cvar_get_num once, MPI_T_pvar_get_num twice,
 * MPI_T_category_get_num once, MPI_T_finalize once. Rank 0 prints "mpit_calls: ok <nprocs>
 * cvars <n> pvars <n>" (the numbers the MPI reported). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int provided, rank, nprocs, ncvar = -1, npvar = -1, npvar2 = -1, ncat = -1;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_T_cvar_get_num(&ncvar);
    MPI_T_pvar_get_num(&npvar);
    MPI_T_pvar_get_num(&npvar2);
    MPI_T_category_get_num(&ncat);
    MPI_T_finalize();
    const int ok = ncvar >= 0 && npvar >= 0 && npvar == npvar2 && ncat >= 0;
    if (rank == 0) printf("mpit_calls: %s %d cvars %d pvars %d\n", ok ? "ok" : "wrong", nprocs, ncvar, npvar);
    MPI_Finalize();
    return 0;
}
