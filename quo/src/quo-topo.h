/* Private: the hardware side of QUO, on hwloc only (no MPI), so that it can be tested on synthetic
 * topologies by small programs. Never installed. */
#ifndef QUO_TOPO_H
#define QUO_TOPO_H

#include <hwloc.h>

#include "quo.h"

/** \brief hwloc type of a QUO object type.
 *  \return QUO_ERR_INVLD_ARG for an unknown type */
int quo_topo_hwloc_type(QUO_obj_type_t type, hwloc_obj_type_t *out);

/** \brief Number of objects of type in the topology. */
int quo_topo_nobjs(hwloc_topology_t topo, QUO_obj_type_t type, int *out);

/** \brief Object type[index] (logical index), or NULL when out of range or the type is unknown. */
hwloc_obj_t quo_topo_obj(hwloc_topology_t topo, QUO_obj_type_t type, int index);

/** \brief Number of objects of type whose (non-empty) CPU set lies inside in_type[in_index]'s.
 *  \return QUO_ERR_INVLD_ARG when in_index is out of range */
int quo_topo_nobjs_inside(hwloc_topology_t topo, QUO_obj_type_t in_type, int in_index, QUO_obj_type_t type,
                          int *out);

/** \brief The CPU set QUO_bind_push should bind to, from the current binding cur.
 *  \param[out] out receives the new binding
 *  \return QUO_ERR_INVLD_ARG for a bad policy, type or index; QUO_ERR_NOT_FOUND when the OBJ policy
 *  finds no object of type overlapping cur */
int quo_topo_push_target(hwloc_topology_t topo, QUO_bind_push_policy_t policy, QUO_obj_type_t type, int index,
                         hwloc_const_cpuset_t cur, hwloc_cpuset_t out);

/** \brief Algorithm 1 of the QUO paper (automatic SPMD distribution), as a pure function.
 *  Task t has affinity to resource r when their CPU sets overlap. If every task has affinity to every
 *  resource (all unbound, say), the first max * nres tasks are chosen. Otherwise the tasks with
 *  affinity to every resource are never chosen (bound processes are preferred, to keep data local), and
 *  each resource takes the first max of the other tasks with affinity to it, in task order.
 *  \param[in] res CPU sets of the nres resources
 *  \param[in] task CPU sets of the ntasks tasks (current bindings, by qid)
 *  \param[in] me the caller's task index
 *  \param[in] max at most this many tasks per resource
 *  \param[out] selected 1 if task me is chosen
 *  \return QUO_ERR_INVLD_ARG for bad sizes or indices; QUO_ERR_OOR */
int quo_distrib_select(int nres, const hwloc_const_cpuset_t *res, int ntasks, const hwloc_const_cpuset_t *task,
                       int me, int max, int *selected);

#endif
