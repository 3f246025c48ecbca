/* The hardware side of QUO: object counts, containment, push targets and the distribution
 * algorithm, on hwloc 2 alone. Objects are addressed by logical index, as hwloc_get_obj_by_type does. */
#include "quo-topo.h"

#include <stdlib.h>

int quo_topo_hwloc_type(QUO_obj_type_t type, hwloc_obj_type_t *out)
{
    switch (type) {
    case QUO_OBJ_MACHINE: *out = HWLOC_OBJ_MACHINE; return QUO_SUCCESS;
    case QUO_OBJ_NUMANODE: *out = HWLOC_OBJ_NUMANODE; return QUO_SUCCESS;
    case QUO_OBJ_SOCKET:
    case QUO_OBJ_PACKAGE: *out = HWLOC_OBJ_PACKAGE; return QUO_SUCCESS;
    case QUO_OBJ_CORE: *out = HWLOC_OBJ_CORE; return QUO_SUCCESS;
    case QUO_OBJ_PU: *out = HWLOC_OBJ_PU; return QUO_SUCCESS;
    }
    return QUO_ERR_INVLD_ARG;
}

int quo_topo_nobjs(hwloc_topology_t topo, QUO_obj_type_t type, int *out)
{
    hwloc_obj_type_t t;
    int rc = quo_topo_hwloc_type(type, &t);
    if (rc != QUO_SUCCESS) return rc;
    const int n = hwloc_get_nbobjs_by_type(topo, t);
    /* -1 means the type sits at several depths, which hwloc 2 never does for these types */
    if (n < 0) return QUO_ERR_TOPO;
    *out = n;
    return QUO_SUCCESS;
}

hwloc_obj_t quo_topo_obj(hwloc_topology_t topo, QUO_obj_type_t type, int index)
{
    hwloc_obj_type_t t;
    if (index < 0 || quo_topo_hwloc_type(type, &t) != QUO_SUCCESS) return NULL;
    return hwloc_get_obj_by_type(topo, t, (unsigned)index);
}

int quo_topo_nobjs_inside(hwloc_topology_t topo, QUO_obj_type_t in_type, int in_index, QUO_obj_type_t type,
                          int *out)
{
    hwloc_obj_type_t t;
    int rc = quo_topo_hwloc_type(type, &t);
    if (rc != QUO_SUCCESS) return rc;
    hwloc_obj_t container = quo_topo_obj(topo, in_type, in_index);
    if (container == NULL) return QUO_ERR_INVLD_ARG;
    /* By CPU set rather than by tree descent: NUMA nodes are memory children in hwloc 2, not below
     * the package in the CPU tree, yet "NUMA nodes in socket 0" must count them. */
    int n = 0;
    for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, t, NULL); o; o = hwloc_get_next_obj_by_type(topo, t, o))
        if (!hwloc_bitmap_iszero(o->cpuset) && hwloc_bitmap_isincluded(o->cpuset, container->cpuset)) n++;
    *out = n;
    return QUO_SUCCESS;
}

int quo_topo_push_target(hwloc_topology_t topo, QUO_bind_push_policy_t policy, QUO_obj_type_t type, int index,
                         hwloc_const_cpuset_t cur, hwloc_cpuset_t out)
{
    hwloc_obj_type_t t;
    int rc = quo_topo_hwloc_type(type, &t);
    if (rc != QUO_SUCCESS) return rc;
    hwloc_obj_t target = NULL;
    if (policy == QUO_BIND_PUSH_PROVIDED) {
        target = quo_topo_obj(topo, type, index);
        if (target == NULL) return QUO_ERR_INVLD_ARG;
    } else if (policy == QUO_BIND_PUSH_OBJ) {
        /* libquo's rule: the first object of the type that overlaps the current binding. For a
         * process bound inside one object that is the enclosing object, which keeps its data local. */
        for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, t, NULL); o && !target;
             o = hwloc_get_next_obj_by_type(topo, t, o))
            if (hwloc_bitmap_intersects(o->cpuset, cur)) target = o;
        if (target == NULL) return QUO_ERR_NOT_FOUND;
    } else {
        return QUO_ERR_INVLD_ARG;
    }
    if (hwloc_bitmap_copy(out, target->cpuset) != 0) return QUO_ERR_OOR;
    return QUO_SUCCESS;
}

int quo_distrib_select(int nres, const hwloc_const_cpuset_t *res, int ntasks, const hwloc_const_cpuset_t *task,
                       int me, int max, int *selected)
{
    if (nres < 0 || ntasks <= 0 || me < 0 || me >= ntasks || max < 0) return QUO_ERR_INVLD_ARG;
    *selected = 0;
    if (nres == 0 || max == 0) return QUO_SUCCESS;

    /* covers_all[t]: task t has affinity to every resource (the intersection I of the paper) */
    char *covers_all = calloc((size_t)ntasks, 1);
    if (covers_all == NULL) return QUO_ERR_OOR;
    int ncovers_all = 0;
    for (int t = 0; t < ntasks; t++) {
        int all = 1;
        for (int r = 0; r < nres && all; r++) all = hwloc_bitmap_intersects(task[t], res[r]);
        covers_all[t] = (char)all;
        ncovers_all += all;
    }

    if (ncovers_all == ntasks) {
        /* every affinity overlaps every other: any task is as good as any other, take the first
         * max slots per resource */
        *selected = (long)me < (long)max * nres;
    } else if (!covers_all[me]) {
        /* the resources' own tasks, in qid order; the first max of them on any resource are chosen */
        for (int r = 0; r < nres && !*selected; r++) {
            int position = 0;
            for (int t = 0; t < ntasks && position < max; t++) {
                if (covers_all[t] || !hwloc_bitmap_intersects(task[t], res[r])) continue;
                if (t == me) *selected = 1;
                position++;
            }
        }
    }
    /* else: an unbound task among bound ones is never chosen, even when a resource is left short */
    free(covers_all);
    return QUO_SUCCESS;
}
