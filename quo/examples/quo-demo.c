/* quo-demo: a caller-driven coupled program written only against the public libquo API (quo.h),
 * in the style of libquo's demos. It must build unchanged against LANL's libquo and against this
 * one; tests/test_quo.py compiles it with `pkg-config --cflags --libs libquo` alone.
 *
 * p0 is the MPI-everywhere driver; p1 stands for a threaded library that wants one process per
 * socket, widened to the whole socket. The other processes wait in QUO_barrier meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mpi.h"
#include "quo.h"

typedef struct {
    QUO_context quo;
    int rank, nranks, qid, nqids;
} context_t;

static int fail(const char *what, int rc)
{
    fprintf(stderr, "quo-demo: %s failed (rc %d)\n", what, rc);
    return rc;
}

static int emit_node_basics(context_t *c)
{
    int v = 0, sv = 0, nsockets = 0, nnuma = 0, ncores = 0, npus = 0, nnodes = 0, bound = 0, rc;
    char *cbind = NULL;
    if (QUO_SUCCESS != (rc = QUO_version(&v, &sv))) return fail("QUO_version", rc);
    if (QUO_SUCCESS != (rc = QUO_nsockets(c->quo, &nsockets))) return fail("QUO_nsockets", rc);
    if (QUO_SUCCESS != (rc = QUO_nnumanodes(c->quo, &nnuma))) return fail("QUO_nnumanodes", rc);
    if (QUO_SUCCESS != (rc = QUO_ncores(c->quo, &ncores))) return fail("QUO_ncores", rc);
    if (QUO_SUCCESS != (rc = QUO_npus(c->quo, &npus))) return fail("QUO_npus", rc);
    if (QUO_SUCCESS != (rc = QUO_nnodes(c->quo, &nnodes))) return fail("QUO_nnodes", rc);
    if (QUO_SUCCESS != (rc = QUO_bound(c->quo, &bound))) return fail("QUO_bound", rc);
    if (QUO_SUCCESS != (rc = QUO_stringify_cbind(c->quo, &cbind))) return fail("QUO_stringify_cbind", rc);
    if (0 == c->rank) {
        printf("### quo version %d.%d: %d node(s), %d socket(s), %d NUMA node(s), %d core(s), %d PU(s)\n",
               v, sv, nnodes, nsockets, nnuma, ncores, npus);
    }
    printf("### rank %d (qid %d of %d) bound=%d cbind=%s\n", c->rank, c->qid, c->nqids, bound, cbind);
    free(cbind);
    return QUO_SUCCESS;
}

/* the "threaded library": what it computes does not matter here */
static double p1_threaded_kernel(int n)
{
    double sum = 0.0;
    for (int i = 1; i <= n; i++) sum += 1.0 / ((double)i * i);
    return sum;
}

static int p1(context_t *c, double *result)
{
    int rc, selected = 0, ncores_in_socket0 = 0, in_socket0 = 0, nqids_s0 = 0, *qids_s0 = NULL;
    if (QUO_SUCCESS != (rc = QUO_auto_distrib(c->quo, QUO_OBJ_SOCKET, 1, &selected)))
        return fail("QUO_auto_distrib", rc);
    if (QUO_SUCCESS != (rc = QUO_nobjs_in_type_by_type(c->quo, QUO_OBJ_SOCKET, 0, QUO_OBJ_CORE, &ncores_in_socket0)))
        return fail("QUO_nobjs_in_type_by_type", rc);
    if (selected) {
        if (QUO_SUCCESS != (rc = QUO_bind_push(c->quo, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1)))
            return fail("QUO_bind_push", rc);
        if (QUO_SUCCESS != (rc = QUO_cpuset_in_type(c->quo, QUO_OBJ_SOCKET, 0, &in_socket0)))
            return fail("QUO_cpuset_in_type", rc);
        if (QUO_SUCCESS != (rc = QUO_qids_in_type(c->quo, QUO_OBJ_SOCKET, 0, &nqids_s0, &qids_s0)))
            return fail("QUO_qids_in_type", rc);
        free(qids_s0);
        *result = p1_threaded_kernel(1000000);
        printf("### rank %d: p1 worker (socket 0: %d cores, %d process(es) inside, me %s)\n", c->rank,
               ncores_in_socket0, nqids_s0, in_socket0 ? "too" : "not");
        if (QUO_SUCCESS != (rc = QUO_bind_pop(c->quo))) return fail("QUO_bind_pop", rc);
    }
    /* everyone meets here: the non-selected processes sleep until the workers are done */
    if (QUO_SUCCESS != (rc = QUO_barrier(c->quo))) return fail("QUO_barrier", rc);
    return QUO_SUCCESS;
}

int main(int argc, char **argv)
{
    context_t c;
    MPI_Comm node_comm;
    double result = 0.0, total = 0.0;
    int node_size = 0;

    if (MPI_SUCCESS != MPI_Init(&argc, &argv)) return EXIT_FAILURE;
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.nranks);
    if (QUO_SUCCESS != QUO_create(&c.quo, MPI_COMM_WORLD)) {
        MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    }
    QUO_id(c.quo, &c.qid);
    QUO_nqids(c.quo, &c.nqids);
    if (QUO_SUCCESS != emit_node_basics(&c)) MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    if (QUO_SUCCESS != QUO_get_mpi_comm_by_type(c.quo, QUO_OBJ_MACHINE, &node_comm)) {
        MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    }
    MPI_Comm_size(node_comm, &node_size);
    MPI_Comm_free(&node_comm);
    /* p0: MPI everywhere */
    MPI_Barrier(MPI_COMM_WORLD);
    if (QUO_SUCCESS != p1(&c, &result)) MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    /* back in p0: share p1's result */
    MPI_Allreduce(&result, &total, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (0 == c.rank) printf("### quo-demo: node size %d, p1 result %.6f, done\n", node_size, total);
    if (QUO_SUCCESS != QUO_free(c.quo)) MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
    MPI_Finalize();
    return EXIT_SUCCESS;
}
