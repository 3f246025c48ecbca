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
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ml_pmpi.h"

/* this library's own dynamic section: tells its link map, and its PMPI entries, from the MPI's */
extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));

static int object_defines(const struct link_map *m, const char *name);

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static int bound; /* read without the lock: __atomic */
static char library[4096];

/* the link map of the object defining the symbol at address p, or NULL */
static const struct link_map *object_of(const void *p)
{
    Dl_info info;
    struct link_map *m = NULL;
    if (p == NULL || dladdr1(p, &info, (void **)&m, RTLD_DL_LINKMAP) == 0) return NULL;
    return m;
}

static int is_self(const struct link_map *m) { return m != NULL && m->l_ld == _DYNAMIC; }

/* The address range of the loaded object whose dynamic section is at `dynamic` (a link map's l_ld;
 * this library's is _DYNAMIC): from its lowest segment's start to its highest one's end. */
struct segments {
    const void *dynamic;
    uintptr_t lo, hi;
};

static int segments_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct segments *q = arg;
    int found = 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *const ph = &info->dlpi_phdr[i];
        const uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_DYNAMIC && (const void *)a == q->dynamic) found = 1;
        if (ph->p_type == PT_LOAD) {
            if (a < lo) lo = a;
            if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
        }
    }
    if (found) q->lo = lo, q->hi = hi;
    return found;
}

static struct segments object_segments(const void *dynamic)
{
    struct segments q = {dynamic, 0, 0};
    dl_iterate_phdr(segments_of, &q);
    return q;
}

/* Whether address p lies in this library: the common answer for an MPI_ name (no tool before the
 * runtime), found without dladdr, which searches an object's whole symbol table (some 10 us). */
static struct segments self;

static int in_self(const void *p)
{
    if (self.hi == 0) self = object_segments(_DYNAMIC);
    return (uintptr_t)p >= self.lo && (uintptr_t)p < self.hi;
}

static const struct link_map *mpi_object(void);

/* The MPI's own handle (its symbols first, then its dependencies': Open MPI's PMPI functions live
 * in libmpi, some of its variables in what libmpi links), or NULL when no MPI is loaded.
 * in_global: whether the MPI is in the global scope (linked by the program, or opened with
 * RTLD_GLOBAL), not only opened with RTLD_LOCAL (mpi4py). */
static void *find_mpi(int *in_global)
{
    const struct link_map *m = mpi_object();
    if (m == NULL) return NULL;
    void *g = dlsym(RTLD_DEFAULT, "PMPI_Init");
    if (g != NULL && in_self(g)) g = dlsym(RTLD_NEXT, "PMPI_Init"); /* our entry (binding.py) */
    *in_global = g != NULL;
    const int program = m->l_name == NULL || m->l_name[0] == '\0';
    if (program) {
        if (readlink("/proc/self/exe", library, sizeof library - 1) < 0) snprintf(library, sizeof library, "the program");
    } else {
        snprintf(library, sizeof library, "%s", m->l_name);
    }
    void *h = program ? NULL : dlopen(m->l_name, RTLD_LAZY | RTLD_NOLOAD);
    return h != NULL ? h : dlopen(NULL, RTLD_LAZY);
}

/* The MPI_ function of the first tool loaded after this library that defines it, or NULL: an
 * object defining the name that is not the MPI. Only for the functions the runtime wraps: the
 * others never pass through it. */
static void *next_tool_fn(const ml_bind_slot_t *s, const struct link_map *mpi)
{
    if (!s->entry) return NULL;
    char name[128];
    snprintf(name, sizeof name, "%s", s->name + 1); /* PMPI_Send -> MPI_Send */
    void *n = dlsym(RTLD_NEXT, name);
    if (n == NULL || n == *s->slot) return NULL;
    const struct link_map *m = object_of(n);
    if (m == NULL || is_self(m) || m == mpi) return NULL;
    return n;
}

/* Where the runtime's calls go once bound (binding.py): the wrapper's measured call to the next
 * tool's MPI_ function, else the MPI; the PMPI entry's call to whatever defines the PMPI_ name
 * after this library (a tool wrapping PMPI_ names, as Darshan does, else the MPI). */
static void bind_next(int i, const struct link_map *mpi)
{
    const ml_bind_slot_t *const s = &ml_bind_funcs[i];
    void *n = next_tool_fn(s, mpi);
    *s->next = n != NULL ? n : *s->slot;
    if (s->entry) {
        void *p = dlsym(RTLD_NEXT, s->name);
        __atomic_store_n(&ml_bind_pnext[i], p != NULL ? p : *s->slot, __ATOMIC_RELEASE);
    }
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
            const struct link_map *const mpi = mpi_object();
            for (int i = 0; i < ML_BIND_NFUNCS; i++) {
                void *f = dlsym(h, ml_bind_funcs[i].name);
                *ml_bind_funcs[i].slot = f != NULL ? f : ml_bind_funcs[i].missing;
                bind_next(i, mpi);
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

/* The MPI library: of the loaded objects that define PMPI_Init (but this library, which exports a
 * PMPI entry for it), the last one. A tool may define PMPI_Init too (Darshan wraps the PMPI_ names,
 * to see what other tools call): it finds the real function after itself, so it is loaded before
 * the MPI. Not kept: an MPI opened later (mpi4py's dlopen) comes after any tool preloaded. */
static const struct link_map *mpi_object(void)
{
    const struct link_map *found = NULL;
    for (const struct link_map *m = _r_debug.r_map; m != NULL; m = m->l_next)
        if (m->l_ld != _DYNAMIC && object_defines(m, "PMPI_Init")) found = m;
    return found;
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

/* ---- tools loaded before this library
 *
 * The first object in the global scope that defines MPI_Send, when it is not this library nor an
 * MPI, is a tool loaded before the runtime (preloaded ahead of it, or linked into the program): the
 * program's MPI_Send reaches it, and its PMPI_Send reaches the runtime's entry, which then runs the
 * wrapper (binding.py). Found once, at the first PMPI entry called or when the run is described. */
static pthread_once_t shadows_once = PTHREAD_ONCE_INIT;

static const struct link_map *tool_before(const char *mpi_name, const struct link_map *mpi)
{
    const void *const g = dlsym(RTLD_DEFAULT, mpi_name);
    if (g == NULL || in_self(g)) return NULL; /* the common case, without dladdr */
    const struct link_map *m = object_of(g);
    return m != NULL && !is_self(m) && m != mpi ? m : NULL;
}

/* The body of the earlier tool's MPI_ function, per shadowed function: a PMPI_ call made from it
 * (or from a function it called) passes on a call of the program; one made from anywhere else is
 * the tool's own (Darshan writing its log at MPI_Finalize, mpiP gathering its report), which the
 * program never made. hi == 0: the body's size is not known (every call counts). */
static struct {
    uintptr_t lo, hi;         /* the function */
    uintptr_t obj_lo, obj_hi; /* the tool's loaded segments */
} tool_body[ML_BIND_NFUNCS];

/* the loaded segments of each tool loaded before the runtime */
#define MAX_TOOLS_BEFORE 8
static struct segments tools_before[MAX_TOOLS_BEFORE];
static int ntools_before;

/* the unwinder that tells a tool's calls apart: libunwind's unw_backtrace (tens of ns for a few
 * frames, callsite.c uses it too), else glibc's backtrace (some 2 us) */
static int (*walk_stack)(void **, int) = backtrace;

static void find_shadows(void)
{
    const struct link_map *const mpi = mpi_object();
    const struct link_map *tool = NULL;
    struct segments q = {0};
    for (int i = 0; i < ML_BIND_NFUNCS; i++) {
        const struct link_map *const m = ml_bind_funcs[i].entry ? tool_before(ml_bind_funcs[i].name + 1, mpi) : NULL;
        if (m == NULL) continue;
        const void *const g = dlsym(RTLD_DEFAULT, ml_bind_funcs[i].name + 1);
        Dl_info info;
        const ElfW(Sym) *sym = NULL;
        if (tool != m) {
            tool = m;
            q = object_segments(m->l_ld);
            int known = 0;
            for (int t = 0; t < ntools_before; t++) known |= tools_before[t].lo == q.lo;
            if (!known && q.hi != 0 && ntools_before < MAX_TOOLS_BEFORE)
                tools_before[ntools_before].lo = q.lo, tools_before[ntools_before++].hi = q.hi;
        }
        if (dladdr1(g, &info, (void **)&sym, RTLD_DL_SYMENT) != 0 && sym != NULL && sym->st_size > 0 && q.hi != 0) {
            tool_body[i].lo = (uintptr_t)g, tool_body[i].hi = (uintptr_t)g + sym->st_size;
            tool_body[i].obj_lo = q.lo, tool_body[i].obj_hi = q.hi;
        }
        ml_bind_shadow[i] = 1;
    }
    if (ntools_before > 0) { /* its own namespace: nothing of it replaces the process's unwinder */
        void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
        void *f = h != NULL ? dlsym(h, "unw_backtrace") : NULL;
        if (f != NULL) *(void **)&walk_stack = f;
    }
    __atomic_store_n(&ml_bind_shadow_known, 1, __ATOMIC_RELEASE);
}

static int in_body(int i, const void *p) { return (uintptr_t)p >= tool_body[i].lo && (uintptr_t)p < tool_body[i].hi; }

static int in_tool(int i, uintptr_t p) { return p >= tool_body[i].obj_lo && p < tool_body[i].obj_hi; }

/* Return addresses into the earlier tool from which its calls are its own (it never passes a call
 * of the program on from there): found once by a walk of the stack, kept. */
#define OWN_PLACES 1024
static uintptr_t own_places[OWN_PLACES];

static size_t place_slot(uintptr_t ra) { return (size_t)((ra >> 4) * 0x9E3779B97F4A7C15ull >> 54) % OWN_PLACES; }

int ml_bind_forwarded(int i, const void *ra)
{
    const uintptr_t key = (uintptr_t)ra;
    if (tool_body[i].hi == 0) return 1; /* the tool's function of unknown size: every call counts */
    /* from outside the tool: its wrapper's last act, a tail call (Darshan's MPI_Finalize jumps to
     * PMPI_Finalize), returns straight to its caller */
    if (!in_tool(i, key)) return 1;
    if (__atomic_load_n(&own_places[place_slot(key)], __ATOMIC_RELAXED) == key) return 0;
    /* The tool's MPI_ function on the stack (Darshan's wrapper calls PMPI_ itself, mpiP's through a
     * helper), called from outside the tool: a call of the program. Called from inside the tool, or
     * not on the stack at all: the tool's own (Darshan's log, written at MPI_Finalize through its own
     * MPI-IO wrappers; mpiP's report gathered with PMPI_ calls). */
    void *frames[10];
    const int n = walk_stack(frames, 10);
    for (int k = 1; k < n; k++)
        if (in_body(i, frames[k])) return k + 1 >= n || !in_tool(i, (uintptr_t)frames[k + 1]);
    __atomic_store_n(&own_places[place_slot(key)], key, __ATOMIC_RELAXED);
    return 0;
}

void ml_bind_shadows(void) { pthread_once(&shadows_once, find_shadows); }

int ml_bind_tool_before(void)
{
    ml_bind_shadows();
    return ntools_before > 0;
}

int ml_bind_in_tool_before(const void *p)
{
    for (int t = 0; t < ntools_before; t++)
        if ((uintptr_t)p >= tools_before[t].lo && (uintptr_t)p < tools_before[t].hi) return 1;
    return 0;
}

static const char *object_name(const struct link_map *m)
{
    return m->l_name != NULL && m->l_name[0] != '\0' ? m->l_name : "the program";
}

void ml_bind_tools(void (*f)(void *arg, const char *function, const char *object, int before), void *arg)
{
    ml_bind_shadows();
    const struct link_map *const mpi = mpi_object();
    for (int i = 0; i < ML_BIND_NFUNCS; i++) {
        const ml_bind_slot_t *const s = &ml_bind_funcs[i];
        if (!s->entry) continue;
        if (ml_bind_shadow[i]) {
            const struct link_map *m = tool_before(s->name + 1, mpi);
            if (m != NULL) f(arg, s->name + 1, object_name(m), 1);
        }
        if (__atomic_load_n(&bound, __ATOMIC_ACQUIRE) && *s->next != *s->slot) {
            const struct link_map *m = object_of(*s->next);
            if (m != NULL) f(arg, s->name + 1, object_name(m), 0);
        }
    }
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
