/*
 * Binds the runtime to the MPI library this process loaded.
 *
 * The runtime links no MPI (runtime/gen/binding.py says why): its PMPI functions and the
 * variables of mpi.h are pointers, filled here from the library that defines PMPI_Init. That
 * library is found in the global scope (a program linked with its MPI), else among every loaded
 * object (an MPI opened with dlopen and RTLD_LOCAL, as mpi4py does). Binding happens in the
 * constructor when the MPI is already there, else at the first MPI call the runtime forwards.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ml_pmpi.h"

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static int bound; /* read without the lock: __atomic */
static char library[4096];

/* The first loaded object (other than the main program) whose scope defines PMPI_Init. */
static int find_in_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    void **found = arg;
    if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h == NULL) return 0;
    *found = dlsym(h, "PMPI_Init");
    dlclose(h);
    return *found != NULL;
}

/* in_global: whether the MPI is in the global scope (linked by the program, or opened with
 * RTLD_GLOBAL) */
static void *find_mpi(int *in_global)
{
    void *init = dlsym(RTLD_DEFAULT, "PMPI_Init");
    *in_global = init != NULL;
    if (init == NULL) dl_iterate_phdr(find_in_object, &init);
    if (init == NULL) return NULL;
    Dl_info info;
    if (dladdr(init, &info) == 0 || info.dli_fname == NULL) return NULL;
    snprintf(library, sizeof library, "%s", info.dli_fname);
    /* the defining object itself: its own symbols first, then its dependencies' (Open MPI's
     * PMPI functions live in libmpi, some of its variables in what libmpi links) */
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    return h != NULL ? h : dlopen(NULL, RTLD_LAZY);
}

int ml_bind_mpi(void)
{
    if (__atomic_load_n(&bound, __ATOMIC_ACQUIRE)) return 0;
    pthread_mutex_lock(&bind_lock);
    if (!bound) {
        int in_global;
        void *h = find_mpi(&in_global);
        if (h != NULL) {
            for (int i = 0; i < ML_BIND_NVARS; i++) {
                /* a program that names a variable of its MPI (MPI_COMM_WORLD is Open MPI's
                 * ompi_mpi_comm_world) may hold the copy in use, which libmpi's own code uses too
                 * (a copy relocation): the global scope finds that one first */
                void *v = in_global ? dlsym(RTLD_DEFAULT, ml_bind_vars[i].name) : NULL;
                if (v == NULL) v = dlsym(h, ml_bind_vars[i].name);
                if (v != NULL) *ml_bind_vars[i].slot = v;
            }
            for (int i = 0; i < ML_BIND_NFUNCS; i++) {
                void *f = dlsym(h, ml_bind_funcs[i].name);
                *ml_bind_funcs[i].slot = f != NULL ? f : ml_bind_funcs[i].missing;
            }
            __atomic_store_n(&bound, 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&bind_lock);
    return bound ? 0 : -1;
}

const char *ml_bind_library(void)
{
    return __atomic_load_n(&bound, __ATOMIC_ACQUIRE) ? library : NULL;
}

int ml_bind_missing(const char *name)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
        if (__atomic_load_n(&bound, __ATOMIC_ACQUIRE))
            fprintf(stderr, "mpilens: %s is not in the MPI library this process loaded (%s); the call fails\n", name,
                    library);
        else
            fprintf(stderr, "mpilens: %s was called but this process has loaded no MPI library; the call fails\n",
                    name);
    }
#ifdef MPI_ERR_UNSUPPORTED_OPERATION
    return MPI_ERR_UNSUPPORTED_OPERATION;
#else
    return MPI_ERR_OTHER;
#endif
}
