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
#include <elf.h>
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

/* ---- the running MPI's exports, read by the wrappers' ifunc resolvers
 *
 * The wrapper of a function the build's header lacks is exported as an ifunc (runtime/gen/declare.py
 * says for which runtimes): the dynamic linker asks its resolver for its address when a program or
 * library refers to it, and the resolver answers "none" when the MPI in the process lacks the
 * function. A program that probes for a function with a weak
 * reference or dlsym (mpi4py does, for everything newer than MPI-3.1) then sees what its MPI has,
 * and a wrapper is never called for a function the MPI cannot do.
 * Resolvers run while the dynamic linker relocates objects: this code calls no function (not even
 * strcmp, whose own address may not be resolved yet) and reads the loaded objects' link maps and
 * symbol tables directly. */

static int same(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) a++, b++;
    return *a == *b;
}

/* d_ptr of a dynamic entry: glibc rewrites them to addresses where the section is writable */
static ElfW(Addr) dyn_addr(const struct link_map *m, ElfW(Addr) p)
{
    return p < m->l_addr ? p + m->l_addr : p;
}

/* whether object m defines `name` (a function or object, not an undefined reference) */
static int object_defines(const struct link_map *m, const char *name)
{
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL, *sysv = NULL;
    if (m->l_ld == NULL) return 0;
    for (const ElfW(Dyn) *d = m->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(m, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dyn_addr(m, d->d_un.d_ptr); break;
        case DT_GNU_HASH: gnu = (const uint32_t *)dyn_addr(m, d->d_un.d_ptr); break;
        case DT_HASH: sysv = (const uint32_t *)dyn_addr(m, d->d_un.d_ptr); break;
        default: break;
        }
    }
    if (symtab == NULL || strtab == NULL) return 0;
    const ElfW(Sym) *s = NULL;
    if (gnu != NULL) {
        uint32_t h = 5381;
        for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = h * 33 + *c;
        const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2], shift = gnu[3];
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)&gnu[4];
        const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
        const uint32_t *chain = &buckets[nbuckets];
        const unsigned bits = sizeof(ElfW(Addr)) * 8;
        const ElfW(Addr) word = bloom[(h / bits) % bloom_size];
        const ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
        if ((word & mask) != mask || nbuckets == 0) return 0;
        for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; i++) {
            const uint32_t h2 = chain[i - symoffset];
            if ((h | 1) == (h2 | 1) && same(name, strtab + symtab[i].st_name)) { s = &symtab[i]; break; }
            if (h2 & 1) break;
        }
    } else if (sysv != NULL) {
        uint32_t h = 0;
        for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
            h = (h << 4) + *c;
            const uint32_t g = h & 0xf0000000u;
            if (g) h ^= g >> 24;
            h &= ~g;
        }
        const uint32_t nbucket = sysv[0];
        const uint32_t *bucket = &sysv[2], *chain = &sysv[2 + nbucket];
        for (uint32_t i = nbucket ? bucket[h % nbucket] : 0; i != STN_UNDEF; i = chain[i])
            if (same(name, strtab + symtab[i].st_name)) { s = &symtab[i]; break; }
    }
    return s != NULL && s->st_shndx != SHN_UNDEF && s->st_value != 0;
}

/* the loaded object that defines PMPI_Init, or NULL; found once (a later dlopen of an MPI is seen
 * by the next resolver that runs) */
static const struct link_map *mpi_object(void)
{
    static const struct link_map *found;
    const struct link_map *m = __atomic_load_n(&found, __ATOMIC_ACQUIRE);
    if (m != NULL) return m;
    for (m = _r_debug.r_map; m != NULL; m = m->l_next)
        if (object_defines(m, "PMPI_Init")) {
            __atomic_store_n(&found, m, __ATOMIC_RELEASE);
            return m;
        }
    return NULL;
}

/* Before this library is relocated (another object relocated first binds to one of its ifuncs),
 * its GOT cannot be read, so _r_debug cannot be reached: an address stored in data (a relocation
 * fixes it) differs from the one computed from the program counter until then. */
static void relocated_mark(void) {}
static void (*volatile const relocated_check)(void) = relocated_mark;

int ml_bind_mpi_lacks(const char *name)
{
    if (relocated_check != relocated_mark) return 0; /* not relocated yet: wrap, as before ifuncs */
    const struct link_map *m = mpi_object();
    return m != NULL && !object_defines(m, name);
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
