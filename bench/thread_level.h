/* The thread level of a benchmark program (pingpong, msgrate, selfloop), from its optional last
 * argument: "multiple" asks for MPI_THREAD_MULTIPLE, under which the runtime keeps requests in its
 * process-wide table instead of each thread's own; one thread calls MPI either way. Without the
 * argument, plain MPI_Init. A level the MPI does not provide stops the program: a benchmark of
 * the wrong path would measure nothing it claims. */
#ifndef BENCH_THREAD_LEVEL_H
#define BENCH_THREAD_LEVEL_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bench_init(int *argc, char ***argv, const char *level)
{
    if (level == NULL) {
        MPI_Init(argc, argv);
        return;
    }
    if (strcmp(level, "multiple") != 0) {
        fprintf(stderr, "unknown thread level '%s' (only 'multiple')\n", level);
        exit(2);
    }
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE asked for, %d provided\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

#endif
