/* quo.h: mpilens' implementation of the QUO API 1.4 (LANL libquo), for dynamic process affinity in
 * coupled MPI+threads codes. Programs written against libquo build against this header and library
 * with no source change: same header name, function names, types, constants and semantics.
 *
 * The preferred control flow of a phase that wants more threads than ranks:
 *
 * \code
 *   QUO_context q;
 *   QUO_create(&q, MPI_COMM_WORLD);                  // collective, after MPI_Init
 *   int selected = 0;
 *   QUO_auto_distrib(q, QUO_OBJ_SOCKET, 1, &selected); // at most 1 worker per socket
 *   // ... gather the phase's data to the selected ranks ...
 *   if (selected) {
 *       QUO_bind_push(q, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1); // widen to the enclosing socket
 *       threaded_phase();
 *       QUO_bind_pop(q);
 *   }
 *   QUO_barrier(q);              // the other ranks sleep here, leaving their cores to the threads
 *   // ... scatter the results back ...
 *   QUO_free(q);                 // before MPI_Finalize
 * \endcode
 *
 * Errors: every function returns an int status, QUO_SUCCESS (0) or one of the QUO_ERR_* codes below;
 * none aborts the program. Functions that take a context return QUO_ERR_CALL_BEFORE_INIT when it is
 * NULL, QUO_ERR_INVLD_ARG for a NULL output pointer, an unknown object type or an object index out of
 * range. System, MPI and topology failures (QUO_ERR_SYS, QUO_ERR_MPI, QUO_ERR_TOPO, QUO_ERR_OOR) also
 * print one line naming the cause on stderr; misuse and expected outcomes (QUO_ERR_INVLD_ARG,
 * QUO_ERR_CALL_BEFORE_INIT, QUO_ERR_POP, QUO_ERR_NOT_FOUND, QUO_ERR_NOT_SUPPORTED) print only when the
 * environment sets QUO_VERBOSE=1. Each function lists its other special returns.
 *
 * Under `mpilens run`, every QUO call below except the trivial queries appears as a region of
 * category "quo" named after the function (QUO_bind_push, QUO_barrier, ...).
 */
#ifndef QUO_H_INCLUDED
#define QUO_H_INCLUDED

/* For MPI_Comm. */
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Defined so that code can test for libquo. */
#define LIBQUO 1
/** Present since QUO API 1.4: QUO_API_VERSION can be tested. */
#define QUO_HAS_API_VERSIONING 1
/** The API level this header provides, (major << 16) + (minor << 8) + patch: 1.4.1. */
#define QUO_API_VERSION 0x00010401

/** Opaque context. */
struct QUO_t;
typedef struct QUO_t QUO_t;
/** The handle every call takes; NULL until QUO_create succeeds. */
typedef QUO_t *QUO_context;

/** Return codes. "Fatal" means the context should not be used further. */
enum {
    QUO_SUCCESS = 0,          /**< success */
    QUO_SUCCESS_ALREADY_DONE, /**< success; the work had already been done */
    QUO_ERR,                  /**< generic error, fatal */
    QUO_ERR_SYS,              /**< system call failed, fatal */
    QUO_ERR_OOR,              /**< out of resources (memory, bind stack), fatal */
    QUO_ERR_INVLD_ARG,        /**< invalid argument */
    QUO_ERR_CALL_BEFORE_INIT, /**< no context: QUO_create was not called or failed */
    QUO_ERR_TOPO,             /**< hardware topology error, fatal */
    QUO_ERR_MPI,              /**< an MPI call failed, fatal */
    QUO_ERR_NOT_SUPPORTED,    /**< not supported; not fatal */
    QUO_ERR_POP,              /**< pop of the initial binding; not fatal, a misuse */
    QUO_ERR_NOT_FOUND         /**< the object looked for does not exist; not fatal */
};

/** Hardware resource types (values shared with the Fortran module). */
typedef enum {
    QUO_OBJ_MACHINE = 0, /**< the whole machine (compute node) */
    QUO_OBJ_NUMANODE,    /**< NUMA node (memory domain) */
    QUO_OBJ_SOCKET,      /**< socket (hwloc package) */
    QUO_OBJ_CORE,        /**< core */
    QUO_OBJ_PU,          /**< processing unit (hardware thread) */
    QUO_OBJ_PACKAGE      /**< package: the same objects as QUO_OBJ_SOCKET (hwloc 2 name) */
} QUO_obj_type_t;

/** How QUO_bind_push chooses the new binding. */
typedef enum {
    QUO_BIND_PUSH_PROVIDED = 0, /**< bind to exactly type[obj_index] */
    QUO_BIND_PUSH_OBJ           /**< ignore obj_index: bind to the object of the type that encloses
                                     the current binding (the first one it overlaps) */
} QUO_bind_push_policy_t;

/** Flags of QUO_create_with_flags. */
typedef enum {
    QUO_CREATE_NO_FLAGS = 0x00000000, /**< as QUO_create */
    QUO_CREATE_NO_MT = 0x00000001     /**< hide SMT siblings: one PU per core in every query */
} QUO_create_flags_t;

/** \brief Report the API version (callable before QUO_create).
 *  \param[out] version major API version (1)
 *  \param[out] subversion minor API version (4)
 *  \return QUO_ERR_INVLD_ARG when a pointer is NULL */
int QUO_version(int *version, int *subversion);

/** \brief Create a context over comm: collective, after MPI_Init, "relatively expensive".
 *  Discovers the node's hardware, splits comm into node-local groups (qids are ranks there), and maps
 *  a node-local shared segment holding the quiescence barrier and every process' current binding.
 *  \param[out] q the new context (NULL on failure)
 *  \param[in] comm initializing communicator
 *  \return QUO_ERR_MPI when MPI is not initialized or an MPI call fails; QUO_ERR_SYS when the
 *  shared segment cannot be made; QUO_ERR_TOPO when hwloc fails */
int QUO_create(QUO_context *q, MPI_Comm comm);

/** \brief QUO_create with flags (QUO_CREATE_NO_MT).
 *  \return as QUO_create; QUO_ERR_INVLD_ARG for unknown flags */
int QUO_create_with_flags(QUO_context *q, MPI_Comm comm, QUO_create_flags_t flags);

/** \brief Free a context: collective over its communicator, before MPI_Finalize. NULL is accepted.
 *  The binding in force (top of the stack) stays in force. */
int QUO_free(QUO_context q);

/** \brief Number of objects of target_type on the caller's node.
 *  \param[out] out_nobjs the count */
int QUO_nobjs_by_type(QUO_context q, QUO_obj_type_t target_type, int *out_nobjs);

/** \brief Number of objects of type inside in_type[in_type_index] (e.g. cores in socket 0): the
 *  objects whose CPU set lies inside the container's.
 *  \return QUO_ERR_INVLD_ARG when in_type_index is out of range */
int QUO_nobjs_in_type_by_type(QUO_context q, QUO_obj_type_t in_type, int in_type_index,
                              QUO_obj_type_t type, int *out_result);

/** \brief Whether the caller's current binding lies inside type[in_type_index].
 *  \param[out] out_result 1 if it does, 0 if not
 *  \return QUO_ERR_INVLD_ARG when in_type_index is out of range */
int QUO_cpuset_in_type(QUO_context q, QUO_obj_type_t type, int in_type_index, int *out_result);

/** \brief The qids (node-local ids) of the processes whose current binding lies inside
 *  type[in_type_index], in increasing order.
 *  \param[out] out_nqids how many
 *  \param[out] out_qids malloc'd array the caller frees with free(3) (NULL when none)
 *  \return QUO_ERR_INVLD_ARG when in_type_index is out of range */
int QUO_qids_in_type(QUO_context q, QUO_obj_type_t type, int in_type_index, int *out_nqids,
                     int **out_qids);

/** \brief Number of NUMA nodes on the caller's node. */
int QUO_nnumanodes(QUO_context q, int *out_nnumanodes);
/** \brief Number of sockets on the caller's node. */
int QUO_nsockets(QUO_context q, int *out_nsockets);
/** \brief Number of cores on the caller's node. */
int QUO_ncores(QUO_context q, int *out_ncores);
/** \brief Number of processing units on the caller's node (one per core with QUO_CREATE_NO_MT). */
int QUO_npus(QUO_context q, int *out_npus);
/** \brief Number of compute nodes spanned by the context's communicator. */
int QUO_nnodes(QUO_context q, int *out_nodes);
/** \brief Number of the context's processes on the caller's node, caller included. */
int QUO_nqids(QUO_context q, int *out_nqids);
/** \brief The caller's node-local id, 0 .. nqids - 1. */
int QUO_id(QUO_context q, int *out_qid);

/** \brief Whether the caller is bound: its current binding differs from the widest CPU set
 *  available to it.
 *  \param[out] bound 1 or 0 */
int QUO_bound(QUO_context q, int *bound);

/** \brief The caller's current binding as a hexadecimal CPU set string (e.g. "0x0000000f").
 *  \param[out] cbind_str malloc'd string the caller frees with free(3) */
int QUO_stringify_cbind(QUO_context q, char **cbind_str);

/** \brief Change the binding of the whole calling process and push it on the context's stack.
 *  \param[in] policy QUO_BIND_PUSH_PROVIDED: bind to type[obj_index]; QUO_BIND_PUSH_OBJ: obj_index is
 *  ignored, bind to the first object of type that overlaps the current binding (for a process bound
 *  inside one such object, the object that encloses it)
 *  \return QUO_ERR_OOR when the stack (128 entries) is full; QUO_ERR_NOT_FOUND when no object of
 *  type overlaps the current binding; QUO_ERR_SYS when the operating system refuses the binding */
int QUO_bind_push(QUO_context q, QUO_bind_push_policy_t policy, QUO_obj_type_t type, int obj_index);

/** \brief Pop the stack and re-apply the binding now on top.
 *  \return QUO_ERR_POP when only the initial binding is left */
int QUO_bind_pop(QUO_context q);

/** \brief Node-local barrier: every process of the context on the node must call it. Waiting
 *  processes sleep in the kernel (a process-shared pthread barrier), they do not poll MPI, so their
 *  cores are free for the threads of the working processes. */
int QUO_barrier(QUO_context q);

/** \brief Node-collective: choose at most max_qids_per_res_type processes per object of type
 *  distrib_over_this, preferring processes bound inside one object (the QUO paper's Algorithm 1).
 *  Does not change any binding.
 *  \param[out] out_selected 1 if the caller was chosen, 0 if not
 *  \return QUO_ERR_INVLD_ARG when max_qids_per_res_type < 0 */
int QUO_auto_distrib(QUO_context q, QUO_obj_type_t distrib_over_this, int max_qids_per_res_type,
                     int *out_selected);

/** \brief Duplicate of the communicator of the processes sharing target_type with the caller;
 *  free it with MPI_Comm_free.
 *  \return QUO_ERR_NOT_SUPPORTED for any type but QUO_OBJ_MACHINE (as libquo) */
int QUO_get_mpi_comm_by_type(QUO_context q, QUO_obj_type_t target_type, MPI_Comm *out_comm);

/** \brief Free memory returned by the library (used by the Fortran module). */
int QUO_ptr_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
