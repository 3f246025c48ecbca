/* mpit_readback: prints, on rank 0, the value of MPI_T control variables as the application sees
 * them, right after MPI_Init and again after it names a duplicate of MPI_COMM_WORLD "solver"
 * (MPI_Comm_set_name): the test that cvars set by mpilens reach the MPI library.
 *
 * Usage: mpit_readback CVAR...
 * Prints "init NAME=VALUE" and "named NAME=VALUE" lines ("absent" for a name MPI_T lacks). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void show(const char *when, const char *name, MPI_Comm comm)
{
    int index = -1;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) {
        printf("%s %s=absent\n", when, name);
        return;
    }
    char nm[256], desc[16];
    int nlen = sizeof nm, dlen = sizeof desc, verb, bind, scope, count = 0;
    MPI_Datatype type;
    MPI_T_enum et;
    MPI_T_cvar_get_info(index, nm, &nlen, &verb, &type, &et, desc, &dlen, &bind, &scope);
    MPI_T_cvar_handle h;
    MPI_T_cvar_handle_alloc(index, bind == MPI_T_BIND_MPI_COMM ? (void *)&comm : NULL, &h, &count);
    char buf[4096] = {0};
    MPI_T_cvar_read(h, buf);
    MPI_T_cvar_handle_free(&h);
    if (type == MPI_INT)
        printf("%s %s=%d\n", when, name, *(int *)buf);
    else if (type == MPI_UNSIGNED)
        printf("%s %s=%u\n", when, name, *(unsigned *)buf);
    else if (type == MPI_UNSIGNED_LONG)
        printf("%s %s=%lu\n", when, name, *(unsigned long *)buf);
    else if (type == MPI_UNSIGNED_LONG_LONG)
        printf("%s %s=%llu\n", when, name, *(unsigned long long *)buf);
    else if (type == MPI_CHAR)
        printf("%s %s=%s\n", when, name, buf);
    else
        printf("%s %s=(datatype not shown)\n", when, name);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int provided, rank;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm solver;
    MPI_Comm_dup(MPI_COMM_WORLD, &solver);
    if (rank == 0)
        for (int i = 1; i < argc; i++) show("init", argv[i], solver);
    MPI_Comm_set_name(solver, "solver");
    if (rank == 0)
        for (int i = 1; i < argc; i++) show("named", argv[i], solver);
    MPI_Barrier(solver);
    MPI_Comm_free(&solver);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
