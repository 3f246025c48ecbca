/* test-topo: the hardware side of QUO (quo-topo.c) on synthetic machines, against values derived
 * by hand from the machine descriptions below. No MPI, no binding: hwloc only.
 *
 *   TWO_BY_TWO  "pack:2 numa:2 core:4 pu:1"  PUs 0-15; package p = PUs 8p..8p+7;
 *                                            NUMA node n = PUs 4n..4n+3; core c = PU c
 *   FOUR_SOCKET "pack:4 core:2 pu:1"         PUs 0-7; package p = PUs 2p, 2p+1; one NUMA node
 *                                            covering the machine
 *   SMT         "pack:1 core:2 pu:2"         PUs 0-3; core c = PUs 2c, 2c+1
 *
 * Prints one line per failed check and "test-topo: N checks, M failed"; exit status 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quo-topo.h"

#define TWO_BY_TWO "pack:2 numa:2 core:4 pu:1"
#define FOUR_SOCKET "pack:4 core:2 pu:1"
#define SMT "pack:1 core:2 pu:2"

static int checks, failures;

static void check_int(int got, int want, const char *what, int line)
{
    checks++;
    if (got == want) return;
    failures++;
    fprintf(stderr, "test-topo.c:%d: %s: got %d, want %d\n", line, what, got, want);
}
#define CHECK(got, want) check_int((got), (want), #got, __LINE__)

static void check_set(hwloc_const_bitmap_t got, const char *want, const char *what, int line)
{
    checks++;
    char *s = NULL;
    hwloc_bitmap_asprintf(&s, got);
    if (strcmp(s, want) != 0) {
        failures++;
        fprintf(stderr, "test-topo.c:%d: %s: got %s, want %s\n", line, what, s, want);
    }
    free(s);
}
#define CHECK_SET(got, want) check_set((got), (want), #got, __LINE__)

static hwloc_topology_t synthetic(const char *description)
{
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) || hwloc_topology_set_synthetic(t, description) || hwloc_topology_load(t)) {
        fprintf(stderr, "test-topo: cannot load synthetic topology %s\n", description);
        exit(2);
    }
    return t;
}

static hwloc_bitmap_t set_of(const char *hex)
{
    hwloc_bitmap_t b = hwloc_bitmap_alloc();
    hwloc_bitmap_sscanf(b, hex);
    return b;
}

static int count(hwloc_topology_t t, QUO_obj_type_t type)
{
    int n = -1;
    return quo_topo_nobjs(t, type, &n) == QUO_SUCCESS ? n : -1;
}

static int inside(hwloc_topology_t t, QUO_obj_type_t in, int index, QUO_obj_type_t type)
{
    int n = -1;
    const int rc = quo_topo_nobjs_inside(t, in, index, type, &n);
    return rc == QUO_SUCCESS ? n : -100 - rc;
}

/* quo_topo_nobjs, quo_topo_nobjs_inside */
static void test_counts(void)
{
    hwloc_topology_t t = synthetic(TWO_BY_TWO);
    CHECK(count(t, QUO_OBJ_MACHINE), 1);
    CHECK(count(t, QUO_OBJ_SOCKET), 2);
    CHECK(count(t, QUO_OBJ_PACKAGE), 2);
    CHECK(count(t, QUO_OBJ_NUMANODE), 4);
    CHECK(count(t, QUO_OBJ_CORE), 16);
    CHECK(count(t, QUO_OBJ_PU), 16);
    CHECK(count(t, (QUO_obj_type_t)42), -1);
    CHECK(inside(t, QUO_OBJ_SOCKET, 0, QUO_OBJ_CORE), 8);
    CHECK(inside(t, QUO_OBJ_SOCKET, 1, QUO_OBJ_NUMANODE), 2);
    CHECK(inside(t, QUO_OBJ_NUMANODE, 3, QUO_OBJ_CORE), 4);
    CHECK(inside(t, QUO_OBJ_CORE, 5, QUO_OBJ_PU), 1);
    CHECK(inside(t, QUO_OBJ_MACHINE, 0, QUO_OBJ_SOCKET), 2);
    CHECK(inside(t, QUO_OBJ_CORE, 0, QUO_OBJ_NUMANODE), 0);
    CHECK(inside(t, QUO_OBJ_SOCKET, 2, QUO_OBJ_CORE), -100 - QUO_ERR_INVLD_ARG);
    CHECK(inside(t, QUO_OBJ_SOCKET, -1, QUO_OBJ_CORE), -100 - QUO_ERR_INVLD_ARG);
    hwloc_topology_destroy(t);

    t = synthetic(FOUR_SOCKET);
    CHECK(count(t, QUO_OBJ_SOCKET), 4);
    CHECK(count(t, QUO_OBJ_NUMANODE), 1);
    CHECK(count(t, QUO_OBJ_CORE), 8);
    CHECK(inside(t, QUO_OBJ_SOCKET, 3, QUO_OBJ_CORE), 2);
    /* the single NUMA node spans all sockets: it is in none of them */
    CHECK(inside(t, QUO_OBJ_SOCKET, 0, QUO_OBJ_NUMANODE), 0);
    CHECK(inside(t, QUO_OBJ_NUMANODE, 0, QUO_OBJ_SOCKET), 4);
    hwloc_topology_destroy(t);

    t = synthetic(SMT);
    CHECK(count(t, QUO_OBJ_CORE), 2);
    CHECK(count(t, QUO_OBJ_PU), 4);
    CHECK(inside(t, QUO_OBJ_CORE, 1, QUO_OBJ_PU), 2);
    hwloc_topology_destroy(t);
}

/* quo_topo_push_target: PROVIDED binds to the object named, OBJ widens to the first object of the
 * type overlapping the current binding */
static void test_push_target(void)
{
    hwloc_topology_t t = synthetic(TWO_BY_TWO);
    hwloc_bitmap_t out = hwloc_bitmap_alloc();
    hwloc_bitmap_t all = set_of("0x0000ffff"), core5 = set_of("0x00000020"), pu13 = set_of("0x00002000"),
                   cores3and4 = set_of("0x00000018");

    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_CORE, 5, all, out), QUO_SUCCESS);
    CHECK_SET(out, "0x00000020");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_NUMANODE, 2, all, out), QUO_SUCCESS);
    CHECK_SET(out, "0x00000f00");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_SOCKET, 1, core5, out), QUO_SUCCESS);
    CHECK_SET(out, "0x0000ff00");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_PROVIDED, QUO_OBJ_SOCKET, 2, all, out), QUO_ERR_INVLD_ARG);
    CHECK(quo_topo_push_target(t, (QUO_bind_push_policy_t)9, QUO_OBJ_SOCKET, 0, all, out), QUO_ERR_INVLD_ARG);

    /* widening from core 5: its NUMA node (PUs 4-7), its socket (0-7), the machine */
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_NUMANODE, -1, core5, out), QUO_SUCCESS);
    CHECK_SET(out, "0x000000f0");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, 99, core5, out), QUO_SUCCESS);
    CHECK_SET(out, "0x000000ff");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_MACHINE, -1, core5, out), QUO_SUCCESS);
    CHECK_SET(out, "0x0000ffff");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1, pu13, out), QUO_SUCCESS);
    CHECK_SET(out, "0x0000ff00");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_CORE, -1, pu13, out), QUO_SUCCESS);
    CHECK_SET(out, "0x00002000");
    /* wider than one object: the first one it overlaps (libquo's rule) */
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_NUMANODE, -1, cores3and4, out), QUO_SUCCESS);
    CHECK_SET(out, "0x0000000f");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1, all, out), QUO_SUCCESS);
    CHECK_SET(out, "0x000000ff");
    hwloc_bitmap_t outside = set_of("0x00010000");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_SOCKET, -1, outside, out), QUO_ERR_NOT_FOUND);
    hwloc_bitmap_free(outside);
    hwloc_topology_destroy(t);

    t = synthetic(SMT);
    hwloc_bitmap_t pu3 = set_of("0x00000008");
    CHECK(quo_topo_push_target(t, QUO_BIND_PUSH_OBJ, QUO_OBJ_CORE, -1, pu3, out), QUO_SUCCESS);
    CHECK_SET(out, "0x0000000c");
    hwloc_bitmap_free(pu3);
    hwloc_topology_destroy(t);

    hwloc_bitmap_free(all), hwloc_bitmap_free(core5), hwloc_bitmap_free(pu13), hwloc_bitmap_free(cores3and4);
    hwloc_bitmap_free(out);
}

/* Selections of quo_distrib_select for every task, as a string of 0/1 by task ("1100"), over the
 * objects of type in t; binds[i] is task i's binding in hex. */
static const char *select_all(hwloc_topology_t t, QUO_obj_type_t type, int max, int ntasks, const char **binds)
{
    static char out[64];
    int nres = 0;
    quo_topo_nobjs(t, type, &nres);
    hwloc_const_cpuset_t res[64];
    hwloc_bitmap_t task[64];
    for (int r = 0; r < nres; r++) res[r] = quo_topo_obj(t, type, r)->cpuset;
    for (int i = 0; i < ntasks; i++) task[i] = set_of(binds[i]);
    for (int i = 0; i < ntasks; i++) {
        int s = -1;
        if (quo_distrib_select(nres, res, ntasks, (const hwloc_const_cpuset_t *)task, i, max, &s) != QUO_SUCCESS)
            s = 9;
        out[i] = (char)('0' + s);
    }
    out[ntasks] = 0;
    for (int i = 0; i < ntasks; i++) hwloc_bitmap_free(task[i]);
    return out;
}

static void check_str(const char *got, const char *want, const char *what, int line)
{
    checks++;
    if (strcmp(got, want) == 0) return;
    failures++;
    fprintf(stderr, "test-topo.c:%d: %s: got %s, want %s\n", line, what, got, want);
}
#define CHECK_STR(got, want) check_str((got), (want), #got, __LINE__)

/* quo_distrib_select (Algorithm 1) */
static void test_distrib(void)
{
    hwloc_topology_t t = synthetic(TWO_BY_TWO);
    const char *unbound[] = {"0xffff", "0xffff", "0xffff", "0xffff", "0xffff", "0xffff"};
    /* all overlap: the first max * nres tasks */
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 1, 4, unbound), "1100");
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 2, 4, unbound), "1111");
    CHECK_STR(select_all(t, QUO_OBJ_NUMANODE, 1, 6, unbound), "111100");
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 0, 4, unbound), "0000");

    /* bound to cores 0, 2, 4, 6: all in socket 0; NUMA node 0 holds tasks 0, 1, node 1 tasks 2, 3 */
    const char *socket0[] = {"0x1", "0x4", "0x10", "0x40"};
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 1, 4, socket0), "1000");
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 3, 4, socket0), "1110");
    CHECK_STR(select_all(t, QUO_OBJ_NUMANODE, 1, 4, socket0), "1010");

    /* task 0 unbound, tasks 1-3 on cores 8, 9, 12 (socket 1; NUMA nodes 2, 2, 3): the unbound task
     * is never chosen, even though socket 0 then has no worker */
    const char *mixed[] = {"0xffff", "0x100", "0x200", "0x1000"};
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 1, 4, mixed), "0100");
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 2, 4, mixed), "0110");
    CHECK_STR(select_all(t, QUO_OBJ_NUMANODE, 1, 4, mixed), "0101");

    /* bound to whole sockets, alternating: each socket's first task */
    const char *sockets[] = {"0x00ff", "0xff00", "0x00ff", "0xff00"};
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 1, 4, sockets), "1100");
    CHECK_STR(select_all(t, QUO_OBJ_NUMANODE, 1, 4, sockets), "1100");

    hwloc_const_cpuset_t one[1] = {hwloc_topology_get_topology_cpuset(t)};
    int s = 0;
    CHECK(quo_distrib_select(1, one, 1, one, 1, 1, &s), QUO_ERR_INVLD_ARG);
    CHECK(quo_distrib_select(1, one, 1, one, 0, -1, &s), QUO_ERR_INVLD_ARG);
    hwloc_topology_destroy(t);

    t = synthetic(FOUR_SOCKET);
    /* one task per socket, the fifth shares socket 3 with the fourth */
    const char *per_socket[] = {"0x1", "0x4", "0x10", "0x40", "0x80"};
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 1, 5, per_socket), "11110");
    CHECK_STR(select_all(t, QUO_OBJ_SOCKET, 2, 5, per_socket), "11111");
    hwloc_topology_destroy(t);
}

int main(void)
{
    test_counts();
    test_push_target();
    test_distrib();
    printf("test-topo: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
