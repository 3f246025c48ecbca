/* Call sites: which line of the application makes each MPI call (MPILENS_CALLSITE_DEPTH).
 *
 * A call site is the return address of the first frame outside the MPI library and mpilens, or
 * with depth N > 1 the return addresses of the first N such frames outwards. Each thread counts
 * its calls per (site, MPI function) in a fixed open-addressing table (ml.h: ml_site_t); the
 * hot path at depth 1 is ml_site_find in ml.h (the wrapper's return address, hashed, one entry
 * compared). Everything here runs once per new site or on the paths that cannot use it: a call
 * whose return address lies inside the MPI library (a Fortran or C++ binding calling the C
 * function, a call from mpi4py) and every call at depth N > 1 walk the stack with libunwind
 * (dlopen'ed with RTLD_LOCAL, so its _Unwind_* symbols never replace the C++ runtime's),
 * or with glibc's backtrace() when libunwind is absent.
 *
 * Under Python (CPython's API found at MPI_Init) a call made while the thread runs Python code,
 * through mpi4py or a C extension, is named by the program's innermost Python frame; at depth
 * N > 1 the extension's native frames come first (python_path). Such calls take the slow path.
 *
 * Addresses are never symbolised here: a site's frames are written as (module, address in the
 * module's ELF file) into the payload (payload.c) and merged across ranks by that key
 * (merge.c); each rank also writes its memory map (ML_PATH_MAPS) at MPI_Finalize. `mpilens`
 * turns them into function, file and line (python/mpilens/callsites.py). */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ml.h"
#include "ml_files.h"
#include "ml_callsite.h"
#include "ml_stats.h"
#include "ml_output.h"

/* ------------------------------------------------------------------------------- process state */
#define ML_MAX_EXCLUDED 256
#define ML_MAX_MODULES 4096

/* addr: 0 ends a site's frames; module: index in the module table (the statistics file's) */
typedef ml_stats_frame_t ml_site_frame_t;

typedef struct module {
    const struct link_map *lm;
    uintptr_t bias;   /* load bias: address in the ELF file = address - bias */
    char *path;
    int python_library; /* a Python function of library code (python_library_file), set once */
} module_t;

static int depth;                     /* MPILENS_CALLSITE_DEPTH, 0 when off */
static uint32_t cap;                  /* entries per thread (power of two) */
static struct { uintptr_t lo, hi; } excluded[ML_MAX_EXCLUDED];
static int nexcluded;
static int (*unw_backtrace_fn)(void **, int);
static module_t modules[ML_MAX_MODULES];
static uint32_t nmodules;
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static char exe_path[4096];

/* CPython, resolved at run time (no build dependency): calls made under Python code (through
 * mpi4py or a C extension) are given the Python file:line that made them. */
static struct {
    int on;
    struct { uintptr_t lo, hi; } mpi4py[8];
    int nmpi4py;
    int (*is_initialized)(void);
    int (*gil_ensure)(void);
    void (*gil_release)(int);
    void *(*get_frame)(void);        /* PyEval_GetFrame: borrowed */
    int (*frame_line)(void *);
    void *(*frame_code)(void *);     /* new reference */
    void *(*frame_back)(void *);     /* new reference */
    void *(*getattr)(void *, const char *);
    const char *(*utf8)(void *);
    void (*decref)(void *);
    void *(*this_thread_state)(void); /* PyGILState_GetThisThreadState: NULL for a thread Python does not know */
    int (*finalizing)(void);          /* Py_IsFinalizing (3.13) or _Py_IsFinalizing; may be absent */
    /* the interpreter's code (libpython, or the python executable that contains it): in a mixed
     * stack, the native frames between the MPI call and Python end at its first frame */
    struct { uintptr_t lo, hi; } interp[8];
    int ninterp;
} py;

int ml_callsite_depth(void) { return depth; }
uint32_t ml_callsite_capacity(void) { return depth ? cap : 0; }

/* Whether a module belongs to the MPI library, its components and bindings, or mpilens. */
static int excluded_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    static const char *const prefixes[] = {"libmpi", "libpmpi", "libmpich", "libmpifort", "libmpicxx", "libopen-pal",
                                           "libopen-rte", "libompitrace", "libmpilens", "libpmix", "libfabric",
                                           "libucp", "libucs", "libuct", "libhcoll", "libpsm", "mca_", NULL};
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    /* mpi4py's extension module: its frames are the binding, not the user's code */
    return strstr(path, "/mpi4py/") != NULL || strstr(path, "/openmpi/lib/") != NULL;
}

static int collect_excluded(struct dl_phdr_info *info, size_t size, void *self)
{
    (void)size;
    const char *name = info->dlpi_name;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if ((uintptr_t)self >= lo && (uintptr_t)self < hi) mine = 1;
    }
    if (!mine && (name == NULL || name[0] == 0 || !excluded_name(name))) return 0;
    if (name && strstr(name, "/mpi4py/") != NULL)
        for (int i = 0; i < info->dlpi_phnum && py.nmpi4py < 8; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
            py.mpi4py[py.nmpi4py].lo = info->dlpi_addr + ph->p_vaddr;
            py.mpi4py[py.nmpi4py].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
            py.nmpi4py++;
        }
    for (int i = 0; i < info->dlpi_phnum && nexcluded < ML_MAX_EXCLUDED; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        excluded[nexcluded].lo = info->dlpi_addr + ph->p_vaddr;
        excluded[nexcluded].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        nexcluded++;
    }
    return 0;
}

/* The executable ranges of the module that holds the address `arg` (CPython's PyEval_GetFrame). */
static int collect_interpreter(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const uintptr_t a = (uintptr_t)arg;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && a >= info->dlpi_addr + ph->p_vaddr && a < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
            mine = 1;
    }
    for (int i = 0; mine && i < info->dlpi_phnum && py.ninterp < 8; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        py.interp[py.ninterp].lo = info->dlpi_addr + ph->p_vaddr;
        py.interp[py.ninterp].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        py.ninterp++;
    }
    return mine; /* found: stop */
}

static int in_interpreter(uintptr_t a)
{
    for (int i = 0; i < py.ninterp; i++)
        if (a >= py.interp[i].lo && a < py.interp[i].hi) return 1;
    return 0;
}

static int is_excluded(uintptr_t a)
{
    for (int i = 0; i < nexcluded; i++)
        if (a >= excluded[i].lo && a < excluded[i].hi) return 1;
    return 0;
}

int ml_callsite_init(void)
{
    depth = (int)ml_g.config.callsite_depth;
    if (depth <= 0) {
        depth = 0;
        return 0;
    }
    if (depth > ML_CALLSITE_MAX_DEPTH) depth = ML_CALLSITE_MAX_DEPTH;
    cap = 64;
    while (cap < (uint32_t)ml_g.config.callsite_max) cap <<= 1;
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = 0;
    nexcluded = 0;
    dl_iterate_phdr(collect_excluded, (void *)&ml_callsite_init);
    /* CPython in this process: its API from the process's own symbols */
    py.is_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    py.gil_ensure = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    py.gil_release = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
    py.get_frame = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_GetFrame");
    py.frame_line = (int (*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetLineNumber");
    py.frame_code = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetCode");
    py.frame_back = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyFrame_GetBack");
    py.getattr = (void *(*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyObject_GetAttrString");
    py.utf8 = (const char *(*)(void *))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8");
    py.decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
    py.this_thread_state = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    py.finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
    if (py.finalizing == NULL) py.finalizing = (int (*)(void))dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
    /* mpi4py is not required: a C extension (h5py's HDF5, a user's own module) may make the MPI
     * calls, and may even have initialised MPI itself */
    py.on = py.this_thread_state && py.is_initialized && py.gil_ensure && py.gil_release && py.get_frame && py.frame_line && py.frame_code &&
            py.frame_back && py.getattr && py.utf8 && py.decref && py.is_initialized();
    py.ninterp = 0;
    if (py.on) dl_iterate_phdr(collect_interpreter, (void *)py.get_frame);
    /* libunwind: its own namespace, so that nothing of it replaces the process's unwinder */
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) unw_backtrace_fn = (int (*)(void **, int))dlsym(h, "unw_backtrace");
    ml_log(1, "call sites: depth %d, %u entries per thread, %d excluded code ranges, unwinder %s%s", depth, cap,
           nexcluded, unw_backtrace_fn ? "libunwind" : "glibc backtrace", py.on ? ", Python lines" : "");
    return 0;
}

/* ------------------------------------------------------------------------------- threads */
size_t ml_callsite_thread_bytes(void)
{
    if (depth == 0) return 0;
    return (size_t)cap * sizeof(ml_site_t) + (size_t)ML_NFUNC * sizeof(ml_site_t) +
           (size_t)cap * (size_t)depth * sizeof(ml_site_frame_t) + 64;
}

void ml_callsite_thread(ml_thread_t *t, char *mem)
{
    if (depth == 0) return;
    mem = (char *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    t->site_cap = cap;
    t->site_shift = (uint32_t)(64 - __builtin_ctz(cap));
    t->sites = (ml_site_t *)mem;
    mem += (size_t)cap * sizeof(ml_site_t);
    t->site_other = (ml_site_t *)mem;
    mem += (size_t)ML_NFUNC * sizeof(ml_site_t);
    t->site_frames = (ml_site_frame_t *)mem;
    t->site_used = 0;
    t->site_key_mask = ~(uint64_t)0;
    /* the memory is zeroed and left untouched until sites appear: an empty entry (key 0) never
     * matches the fast path, a return address is never 0 */
}

void ml_callsite_reset(ml_thread_t *t)
{
    if (t->sites == NULL) return;
    for (uint32_t i = 0; i < t->site_cap; i++) {
        ml_site_t *e = &t->sites[i];
        e->calls = e->ticks = e->timed = 0;
        e->sent = e->recv = 0;
    }
    for (int f = 0; f < ML_NFUNC; f++) {
        ml_site_t *e = &t->site_other[f];
        e->calls = e->ticks = e->timed = 0;
        e->sent = e->recv = 0;
    }
}

/* ------------------------------------------------------------------------------- modules */
static uint32_t module_of(uintptr_t a)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1((void *)a, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL) return UINT32_MAX;
    pthread_mutex_lock(&modules_lock);
    uint32_t i;
    for (i = 0; i < nmodules; i++)
        if (modules[i].lm == lm && modules[i].bias == (uintptr_t)lm->l_addr) break;
    if (i == nmodules && nmodules < ML_MAX_MODULES) {
        const char *name = lm->l_name && lm->l_name[0] ? lm->l_name : exe_path;
        char *copy = malloc(strlen(name) + 1);
        if (copy != NULL) {
            strcpy(copy, name);
            modules[i].lm = lm;
            modules[i].bias = (uintptr_t)lm->l_addr;
            modules[i].path = copy;
            ml_stats_name(ML_STATS_NAME_MODULE, i, 0, (uint64_t)modules[i].bias, copy);
            __atomic_store_n(&nmodules, nmodules + 1, __ATOMIC_RELEASE);
        } else {
            i = UINT32_MAX;
        }
    } else if (i == nmodules) {
        i = UINT32_MAX;
    }
    pthread_mutex_unlock(&modules_lock);
    return i;
}

/* ------------------------------------------------------------------------------- the slow path */
static ml_site_t *site_lookup(ml_thread_t *t, int fn);
/* The return addresses of the first `want` frames outside the MPI library and mpilens. */
static int walk(uintptr_t *out, int want)
{
    void *buf[64];
    const int n = unw_backtrace_fn ? unw_backtrace_fn(buf, 64) : backtrace(buf, 64);
    int k = 0, i = 0;
    while (i < n && is_excluded((uintptr_t)buf[i])) i++;
    for (; i < n && k < want; i++) out[k++] = (uintptr_t)buf[i];
    return k;
}

/* The native frames of a mixed stack: the first `want` return addresses outside the MPI library
 * and mpilens, up to the interpreter's first frame (a C extension, the libraries it calls). */
static int walk_native(uintptr_t *out, int want)
{
    void *buf[64];
    const int n = unw_backtrace_fn ? unw_backtrace_fn(buf, 64) : backtrace(buf, 64);
    int k = 0, i = 0;
    while (i < n && is_excluded((uintptr_t)buf[i])) i++;
    for (; i < n && k < want && !in_interpreter((uintptr_t)buf[i]); i++) out[k++] = (uintptr_t)buf[i];
    return k;
}

static uint64_t hash_frames(const uintptr_t *f, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)f[i]) * 0x100000001b3ull;
    return h | ML_SITE_KEY_SLOW; /* never a key of the fast path, never 0 */
}

static int same_frames(const ml_site_frame_t *a, const uintptr_t *f, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].addr != f[i]) return 0;
    return n == depth || a[n].addr == 0;
}

static int in_mpi4py(uintptr_t a)
{
    for (int i = 0; i < py.nmpi4py; i++)
        if (a >= py.mpi4py[i].lo && a < py.mpi4py[i].hi) return 1;
    return 0;
}

/* Whether a Python file is library code, not the program's: an installed package (h5py's Python
 * layer, mpi4py.futures) or the import machinery (MPI_Init from `from mpi4py import MPI`). */
static int python_library_file(const char *file)
{
    return strncmp(file, "<frozen ", 8) == 0 || strstr(file, "/site-packages/") != NULL ||
           strstr(file, "/dist-packages/") != NULL;
}

/* The module-table entry of a Python function (its code object): "python\t<function>\t<file>";
 * its frames' addresses are (entry << 32) | line, and its bias entry << 32, so that the address
 * in the "module" is the line. Called with the GIL held. */
static uint32_t python_module(void *code)
{
    pthread_mutex_lock(&modules_lock);
    for (uint32_t i = 0; i < nmodules; i++)
        if (modules[i].lm == (const struct link_map *)code && modules[i].bias == (uintptr_t)i << 32) {
            pthread_mutex_unlock(&modules_lock);
            return i;
        }
    pthread_mutex_unlock(&modules_lock);
    void *fo = py.getattr(code, "co_filename"), *no = py.getattr(code, "co_name");
    const char *file = fo ? py.utf8(fo) : NULL, *name = no ? py.utf8(no) : NULL;
    uint32_t i = UINT32_MAX;
    if (file && name) {
        const size_t n = strlen(file) + strlen(name) + 16;
        char *path = malloc(n);
        if (path != NULL) {
            snprintf(path, n, "python\t%s\t%s", name, file);
            pthread_mutex_lock(&modules_lock);
            if (nmodules < ML_MAX_MODULES) {
                i = nmodules;
                modules[i].lm = (const struct link_map *)code;
                modules[i].bias = (uintptr_t)i << 32;
                modules[i].path = path;
                modules[i].python_library = python_library_file(file);
                ml_stats_name(ML_STATS_NAME_MODULE, i, 0, (uint64_t)modules[i].bias, path);
                __atomic_store_n(&nmodules, nmodules + 1, __ATOMIC_RELEASE);
            } else {
                free(path);
            }
            pthread_mutex_unlock(&modules_lock);
        }
    }
    if (fo) py.decref(fo);
    if (no) py.decref(no);
    return i;
}


/* The Python frames of this thread (the code that called mpi4py or a C extension), from the
 * innermost outwards, starting at the first frame of the program's own code: the frames of
 * installed packages and of the import machinery inside it are library code, skipped like the
 * MPI library's native frames (all frames are kept when the program has none of its own, as when
 * it is an installed package itself). Taken with the GIL (mpi4py and careful extensions release
 * it around MPI calls; the call is over when this runs; an extension that kept it holds it
 * already). Only for a thread Python knows (python_path checks). */
#define ML_PY_LOOK 64 /* Python frames looked at for the program's own code */
static int python_frames(uintptr_t *out, uint32_t *mods, int want)
{
    const int g = py.gil_ensure();
    uintptr_t all[ML_PY_LOOK];
    uint32_t allmods[ML_PY_LOOK];
    int k = 0, first = -1;
    void *f = py.get_frame(); /* borrowed */
    if (f != NULL) {
        void *cur = f;
        int owned = 0;
        while (cur != NULL && k < ML_PY_LOOK && (first < 0 || k - first < want)) {
            void *code = py.frame_code(cur);
            const int line = py.frame_line(cur);
            const uint32_t m = code ? python_module(code) : UINT32_MAX;
            if (code) py.decref(code);
            if (m != UINT32_MAX) {
                if (first < 0 && !modules[m].python_library) first = k;
                all[k] = ((uintptr_t)m << 32) | (uint32_t)line;
                allmods[k] = m;
                k++;
            }
            void *back = py.frame_back(cur);
            if (owned) py.decref(cur);
            cur = back;
            owned = 1;
        }
        if (owned && cur) py.decref(cur);
    }
    py.gil_release(g);
    if (first < 0) first = 0;
    int n = 0;
    for (int i = first; i < k && n < want; i++, n++) {
        out[n] = all[i];
        mods[n] = allmods[i];
    }
    return n;
}

ml_site_t *ml_site_slow(ml_thread_t *t, int fn)
{
    /* a nonblocking call looks its site up twice (its request entry, then its leave): the
     * second time, the site the first one walked to */
    ml_site_t *pending = t->site_pending;
    if (pending != NULL) {
        t->site_pending = NULL;
        if (t->site_pending_ra == t->ra && t->site_pending_fn == fn) return pending;
    }
    ml_site_t *e = site_lookup(t, fn);
    return e;
}

ml_site_t *ml_site_early_slow(ml_thread_t *t, int fn)
{
    ml_site_t *e = ml_site_slow(t, fn);
    if (e->fn & ML_SITE_SLOW) { /* found by a walk: the leave will not find it on the fast path */
        t->site_pending = e;
        t->site_pending_ra = t->ra;
        t->site_pending_fn = fn;
    }
    return e;
}

/* A call made while this thread runs Python code: its Python frames from the innermost outwards,
 * preceded at depth N > 1 by the native frames between the MPI call and the interpreter (at most
 * N - 1 of them, so that the Python line is always there). A call from mpi4py has no native
 * frame (mpi4py is the binding, like the MPI library); a call from a C extension (a module of the
 * user's, h5py and the HDF5 library under it) has the extension's. Native frames get module
 * UINT32_MAX in mods (module_of finds it). 0: no Python code runs on this thread. */
static int python_path(uintptr_t ra, uintptr_t *out, uint32_t *mods)
{
    /* never make Python create a thread state, nor touch an interpreter that is shutting down
     * (mpi4py finalizes MPI from an atexit hook): such calls get the native call site */
    if (!py.is_initialized() || (py.finalizing && py.finalizing()) || py.this_thread_state() == NULL) return 0;
    int nat = 0;
    if (depth > 1 && !in_mpi4py(ra)) nat = walk_native(out, depth - 1);
    for (int k = 0; k < nat; k++) mods[k] = UINT32_MAX;
    const int k = python_frames(out + nat, mods + nat, depth - nat);
    return k > 0 ? nat + k : 0;
}

/* The function's "other sites" entry, marked as found by the slow path (set here, when first used:
 * the table is not touched before), so that ml_site_early hands it to the call's leave instead of a
 * second walk. */
static ml_site_t *other_site(ml_thread_t *t, int fn)
{
    ml_site_t *o = &t->site_other[fn];
    o->fn = (uint32_t)fn | ML_SITE_SLOW;
    return o;
}

static ml_site_t *site_lookup(ml_thread_t *t, int fn)
{
    uintptr_t frames[ML_CALLSITE_MAX_DEPTH];
    uint32_t mods[ML_CALLSITE_MAX_DEPTH];
    int n = 0;
    uint64_t key = 0;
    int fast = 0, python = 0;
    /* under Python the site is the Python line, whether mpi4py or a C extension made the call;
     * such a site is never found on the fast path (the same return address serves many lines) */
    if (py.on && (n = python_path(t->ra, frames, mods)) > 0) {
        key = hash_frames(frames, n);
        python = 1;
    } else if (depth == 1 && !is_excluded(t->ra) && t->ra < (uintptr_t)1 << 48) {
        frames[0] = t->ra;
        mods[0] = UINT32_MAX;
        n = 1;
        key = ml_site_key(t->ra, fn);
        fast = 1;
    } else {
        n = walk(frames, depth);
        for (int k = 0; k < n; k++) mods[k] = UINT32_MAX;
        key = n == 0 ? 0 : depth == 1 ? frames[0] | ML_SITE_KEY_SLOW : hash_frames(frames, n);
    }
    if (n == 0) return other_site(t, fn); /* no frame outside MPI (should not happen) */
    const uint32_t mask = t->site_cap - 1;
    const uint32_t want = (uint32_t)fn | (fast ? 0 : ML_SITE_SLOW);
    uint32_t i = (uint32_t)(ml_site_slot(t, key) - t->sites);
    for (uint32_t probe = 0; probe < t->site_cap; probe++, i = (i + 1) & mask) {
        ml_site_t *e = &t->sites[i];
        if (e->id == 0) break; /* empty */
        if (e->key == key && (e->fn & ~ML_SITE_SLOW) == (uint32_t)fn &&
            ((depth == 1 && !python) || same_frames(&t->site_frames[(size_t)i * depth], frames, n)))
            return e;
    }
    if (t->site_used >= t->site_cap - t->site_cap / 4) return other_site(t, fn);
    /* a new site: i is the first empty slot of the probe sequence */
    ml_site_t *e = &t->sites[i];
    ml_site_frame_t *fr = &t->site_frames[(size_t)i * depth];
    for (int k = 0; k < n; k++) {
        fr[k].addr = frames[k];
        fr[k].module = mods[k] != UINT32_MAX ? mods[k] : module_of(frames[k]);
    }
    if (n < depth) fr[n].addr = 0;
    e->key = key;
    e->fn = want;
    e->id = ++t->site_used;
    return e;
}

/* ------------------------------------------------------------------------------- output */
static void put_u32(ml_sink_t *s, uint32_t v) { ml_sink_put(s, &v, 4); }
static void put_str(ml_sink_t *s, const char *str)
{
    size_t n = strlen(str);
    if (n > 65535) n = 65535;
    const uint16_t l = (uint16_t)n;
    ml_sink_put(s, &l, 2);
    ml_sink_put(s, str, n);
}
#define put_record(s, r) ml_sink_put((s), &(r), sizeof(r))

static int site_used(const ml_site_t *e) { return e->calls > 0 || e->sent != 0 || e->recv != 0; }

static uint64_t site_ns(const ml_site_t *e)
{
    /* MPILENS_TIME_SAMPLE > 1: the time of the untimed calls estimated from the timed ones */
    uint64_t ticks = e->ticks;
    if (e->timed > 0 && e->timed < e->calls) ticks = (uint64_t)((double)ticks * (double)e->calls / (double)e->timed);
    return ml_ticks_to_ns(ticks);
}

/* The payload's call-site tables (runtime/spec/rundir.yaml): modules, sites, frames. Reads only
 * (no allocation, no lock): it also runs in signal handlers. */
void ml_callsite_payload(ml_sink_t *s, ml_thread_t *threads)
{
    const ml_payload_callsites_t head = {(uint32_t)depth};
    put_record(s, head);
    const uint32_t nmod = depth ? __atomic_load_n(&nmodules, __ATOMIC_ACQUIRE) : 0;
    put_u32(s, nmod);
    for (uint32_t m = 0; m < nmod; m++) {
        const ml_payload_module_t r = {m, (uint64_t)modules[m].bias};
        put_record(s, r);
        put_str(s, modules[m].path);
    }
    uint32_t nsites = 0, nframes = 0;
    for (ml_thread_t *t = depth ? threads : NULL; t; t = t->next) {
        if (t->sites == NULL) continue;
        for (uint32_t i = 0; i < t->site_cap; i++) {
            if (t->sites[i].id == 0 || !site_used(&t->sites[i])) continue;
            nsites++;
            const ml_site_frame_t *fr = &t->site_frames[(size_t)i * depth];
            for (int k = 0; k < depth && fr[k].addr; k++) nframes++;
        }
        for (int f = 0; f < ML_NFUNC; f++) nsites += site_used(&t->site_other[f]);
    }
    put_u32(s, nsites);
    uint32_t id = 0;
    for (ml_thread_t *t = depth ? threads : NULL; t; t = t->next) {
        if (t->sites == NULL) continue;
        for (uint32_t i = 0; i < t->site_cap; i++) {
            const ml_site_t *e = &t->sites[i];
            if (e->id == 0 || !site_used(e)) continue;
            const ml_site_frame_t *fr = &t->site_frames[(size_t)i * depth];
            uint16_t k = 0;
            while (k < depth && fr[k].addr) k++;
            const ml_payload_site_t r = {id++, (uint16_t)(e->fn & ~ML_SITE_SLOW), k, e->calls, site_ns(e), e->sent, e->recv};
            put_record(s, r);
        }
        for (int f = 0; f < ML_NFUNC; f++) {
            const ml_site_t *e = &t->site_other[f];
            if (!site_used(e)) continue;
            const ml_payload_site_t r = {id++, (uint16_t)f, 0, e->calls, site_ns(e), e->sent, e->recv};
            put_record(s, r);
        }
    }
    put_u32(s, nframes);
    id = 0;
    for (ml_thread_t *t = depth ? threads : NULL; t; t = t->next) {
        if (t->sites == NULL) continue;
        for (uint32_t i = 0; i < t->site_cap; i++) {
            const ml_site_t *e = &t->sites[i];
            if (e->id == 0 || !site_used(e)) continue;
            const ml_site_frame_t *fr = &t->site_frames[(size_t)i * depth];
            for (int k = 0; k < depth && fr[k].addr; k++) {
                const uint32_t m = fr[k].module;
                const uint64_t vaddr = m < nmod ? (uint64_t)(fr[k].addr - modules[m].bias) : (uint64_t)fr[k].addr;
                const ml_payload_frame_t r = {id, (uint16_t)k, m < nmod ? m : UINT32_MAX, vaddr};
                put_record(s, r);
            }
            id++;
        }
        for (int f = 0; f < ML_NFUNC; f++) id += site_used(&t->site_other[f]);
    }
}

/* ------------------------------------------------------------------------------- trace trailer */

void ml_callsite_trace_json(ml_sink_t *s)
{
    if (depth == 0) return;
    const uint32_t nmod = __atomic_load_n(&nmodules, __ATOMIC_ACQUIRE);
    ml_sink_text(s, ", \"sites\": [");
    int first = 1;
    for (ml_thread_t *t = __atomic_load_n(&ml_g.threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (t->sites == NULL) continue;
        for (uint32_t i = 0; i < t->site_cap; i++) {
            const ml_site_t *e = &t->sites[i];
            if (e->id == 0) continue;
            ml_sink_text(s, first ? "[" : ", [");
            first = 0;
            ml_sink_uint(s, t->trace.index);
            ml_sink_text(s, ", ");
            ml_sink_uint(s, e->id);
            ml_sink_text(s, ", ");
            ml_sink_uint(s, e->fn & ~ML_SITE_SLOW);
            ml_sink_text(s, ", [");
            const ml_site_frame_t *fr = &t->site_frames[(size_t)i * depth];
            for (int k = 0; k < depth && fr[k].addr; k++) {
                const uint32_t m = fr[k].module;
                ml_sink_text(s, k ? ", [" : "[");
                if (m < nmod) ml_sink_uint(s, m);
                else ml_sink_text(s, "null");
                ml_sink_text(s, ", ");
                ml_sink_uint(s, m < nmod ? (unsigned long long)(fr[k].addr - modules[m].bias) : (unsigned long long)fr[k].addr);
                ml_sink_text(s, "]");
            }
            ml_sink_text(s, "]]");
        }
    }
    ml_sink_text(s, "], \"site_modules\": [");
    for (uint32_t m = 0; m < nmod; m++) {
        if (m) ml_sink_text(s, ", ");
        ml_sink_json_string(s, modules[m].path);
    }
    ml_sink_text(s, "]");
}

/* ------------------------------------------------------------------------------- memory map */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void build_id_of(const struct dl_phdr_info *info, char *out, size_t n)
{
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh;
            const unsigned char *desc = (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                size_t k = 0;
                for (uint32_t j = 0; j < nh->n_descsz && k + 3 < n; j++) k += (size_t)snprintf(out + k, n - k, "%02x", desc[j]);
                return;
            }
            p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
}

static int write_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    FILE *f = arg;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : exe_path;
    if (name[0] == 0) return 0; /* the vDSO */
    char bid[130];
    build_id_of(info, bid, sizeof bid);
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        if (info->dlpi_addr + ph->p_vaddr < lo) lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi) hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    fputs(ftell(f) > 2 ? ",\n  {\"path\": " : "\n  {\"path\": ", f);
    json_str(f, name);
    fprintf(f, ", \"build_id\": \"%s\", \"bias\": %llu, \"start\": %llu, \"end\": %llu, \"mpi\": %s}", bid,
            (unsigned long long)info->dlpi_addr, (unsigned long long)lo, (unsigned long long)hi,
            excluded_name(name) ? "true" : "false");
    return 0;
}

/* This rank's memory map: every module loaded now (the executable, shared libraries, what
 * dlopen brought in) with its build id, load bias and address range, and the modules of the
 * sites (some may have been unloaded since). */
void ml_callsite_finish(void)
{
    if (depth == 0) return;
    ml_whole_t out;
    FILE *f = ml_whole_open(&out, ML_STREAM_MAPS, 0);
    if (f == NULL) {
        ml_log(0, "cannot write %s (%s)", ml_whole_where(&out), strerror(errno));
        return;
    }
    fprintf(f, "{\"schema\": \"" ML_SCHEMA_MAPS "\", \"rank\": %d, \"depth\": %d, \"modules\": [", ml_g.rank, depth);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len); /* the first module is told apart by its position */
    if (m != NULL) {
        dl_iterate_phdr(write_module, m);
        fclose(m);
        fwrite(buf, 1, len, f);
        ml_sys_free(buf);
    }
    fputs("\n],\n\"site_modules\": [", f);
    const uint32_t nmod = __atomic_load_n(&nmodules, __ATOMIC_ACQUIRE);
    for (uint32_t m = 0; m < nmod; m++) {
        fputs(m ? ",\n  {\"path\": " : "\n  {\"path\": ", f);
        json_str(f, modules[m].path);
        fprintf(f, ", \"bias\": %llu}", (unsigned long long)modules[m].bias);
    }
    fputs("\n]}\n", f);
    if (ml_whole_close(&out) != 0) ml_log(0, "cannot write %s (%s)", ml_whole_where(&out), strerror(errno));
}
