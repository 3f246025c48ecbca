/* mpit_client: a small MPI_T client, as a tool like TAU would be. It lists the performance variables
 * whose name starts with "mpilens_" (the counters mpilens exposes in its counters mode, next to the
 * MPI's own pvars) and reads each of them, after rank 0 sent 500 doubles (4000 bytes) to rank 1.
 *
 * Output, one line per variable:  rank R pvar NAME class C value V
 * and one summary line:           rank R total pvars N (mpilens_*: M)
 * Variables are found by name through MPI_T_pvar_get_info and read through a handle of a session. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double buf[500] = {0};
    if (rank == 0 && size > 1) MPI_Send(buf, 500, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
    if (rank == 1) MPI_Recv(buf, 500, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session session;
    MPI_T_pvar_session_create(&session);
    int num = 0, ours = 0;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[512];
        int nlen = sizeof name, dlen = sizeof desc, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro, &cont, &atomic) !=
                MPI_SUCCESS ||
            strncmp(name, "mpilens_", 8) != 0)
            continue;
        ours++;
        int idx = -1;
        if (MPI_T_pvar_get_index(name, cls, &idx) != MPI_SUCCESS || idx != i) {
            printf("rank %d lookup of %s by name and class failed\n", rank, name);
            continue;
        }
        MPI_T_pvar_handle h;
        int count = 0;
        if (MPI_T_pvar_handle_alloc(session, idx, NULL, &h, &count) != MPI_SUCCESS || count != 1) continue;
        long long value = 0;
        if (dt == MPI_UNSIGNED_LONG_LONG) {
            unsigned long long v = 0;
            MPI_T_pvar_read(session, h, &v);
            value = (long long)v;
        } else if (dt == MPI_COUNT) {
            MPI_Count v = 0;
            MPI_T_pvar_read(session, h, &v);
            value = (long long)v;
        }
        printf("rank %d pvar %s class %d value %lld\n", rank, name, cls, value);
        MPI_T_pvar_handle_free(session, &h);
    }
    printf("rank %d total pvars %d (mpilens_*: %d)\n", rank, num, ours);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
