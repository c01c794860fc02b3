#include "cpu/tile_gemm.h"

#if ATTNOPS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnops.h"
#include "cpu/isa.h"
#include "cpu/kernels.h"

static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static bool library_allowed;
static bool library_kind[TILE_GEMM_KIND_COUNT]; /* the GEMM library's kernels or the ISA's own serve the kind */
static bool xsmm_kind[TILE_GEMM_KIND_COUNT];    /* libxsmm serves the kind */
static bool own_gemm;                           /* the ISA has its own gemm.f32 for the fp32 kinds */
static char backend_text[TILE_GEMM_KIND_COUNT][48], widened_text[80];

#if ATTNOPS_HAVE_LIBXSMM
static void (*dispatch(tile_gemm_kind kind, int M, int N, int K, int lda, int ldb, int ldc, bool accumulate))(
    const void *, const void *, float *, ...)
{
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const libxsmm_blasint m = N, n = M, k = K, la = ldb, lb = lda, lc = ldc;
    int flags = 0;
    typedef void (*fn)(const void *, const void *, float *, ...);
    switch (kind) {
    case TILE_GEMM_F32_NN: return (fn)libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &alpha, &beta, &flags, NULL);
    case TILE_GEMM_F32_TN:
        flags = LIBXSMM_GEMM_FLAG_TRANS_B;
        return (fn)libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &alpha, &beta, &flags, NULL);
    case TILE_GEMM_BF16_NN_VNNI:
        flags = LIBXSMM_GEMM_FLAG_VNNI_A;
        return (fn)libxsmm_bsmmdispatch(m, n, k, &la, &lb, &lc, &alpha, &beta, &flags, NULL);
    case TILE_GEMM_KIND_COUNT: break;
    }
    return NULL;
}

/* libxsmm_init writes into the process environment: OMP_PROC_BIND=TRUE when
 * no affinity variable is set (and I_MPI_SHM_HEAP=1 under MPI; libxsmm's
 * src/libxsmm_main.c, "setup some viable affinity").  The OpenMP runtimes in
 * the process read their settings when they loaded, so the variable only
 * reaches child processes, where it pins every thread, the main one
 * included, to the first CPU: two ranks of a torch.multiprocessing job then
 * shared one core (docs/DISTRIBUTED.md).  A library does not change its
 * caller's environment, so what libxsmm added is taken out again.  It writes
 * only a variable that is unset (OMP_PROC_BIND also when empty), once, under
 * library_once. */
static void xsmm_init_keeping_environment(void)
{
    const char *bind = getenv("OMP_PROC_BIND");
    const bool bind_unset = bind == NULL, bind_empty = bind != NULL && *bind == '\0';
    const bool shm_heap_unset = getenv("I_MPI_SHM_HEAP") == NULL;
    libxsmm_init();
    if (bind_unset)
        unsetenv("OMP_PROC_BIND");
    else if (bind_empty)
        setenv("OMP_PROC_BIND", "", 1);
    if (shm_heap_unset)
        unsetenv("I_MPI_SHM_HEAP");
}
#endif

/* Whether the ISA in use has a GEMM kernel of its own (the kernel set's
 * gemm.f32 not inherited from the portable C loops). */
static bool isa_has_own_gemm(int isa)
{
    for (int e = 0; e < cpu_kernel_entry_count; e++)
        if (cpu_kernel_entries[e].offset == offsetof(cpu_kernel_set, gemm.f32))
            return cpu_kernel_provider(isa, &cpu_kernel_entries[e]) > 0;
    return false;
}

/* The ISA in use decides whether the library may run the GEMMs, and for
 * libxsmm for which target (a forced ATTNOPS_ISA=avx2 on an AVX-512 CPU gets
 * AVX2 code); libxsmm then decides per kind by returning a kernel or not.
 * The fp32 kinds it does not take run the kernel set's gemm.f32: an ISA's
 * own GEMM (NEON's) or the C loops. */
static void library_init(void)
{
    const int isa = cpu_isa_selected();
    const char *target = cpu_isa_gemm_target(isa);
    own_gemm = isa_has_own_gemm(isa);
    library_allowed = target != NULL;
#if ATTNOPS_HAVE_LIBXSMM
    if (library_allowed) {
        /* after libxsmm_init, which sets the target from CPUID (libxsmm 1.17
         * src/libxsmm_main.c) and so undid a target set before it: the
         * forced AVX2 path got AVX-512 ("cpx") GEMMs on an AVX-512 CPU */
        xsmm_init_keeping_environment();
        if (*target) libxsmm_set_target_arch(target);
    }
#endif
    for (int kind = 0; kind < TILE_GEMM_KIND_COUNT; kind++) {
        snprintf(backend_text[kind], sizeof backend_text[kind], "C loops");
#if ATTNOPS_HAVE_LIBXSMM
        xsmm_kind[kind] = library_allowed && dispatch((tile_gemm_kind)kind, 64, 64, 64, 64, 64, 64, false) != NULL;
        if (xsmm_kind[kind])
            snprintf(backend_text[kind], sizeof backend_text[kind], "libxsmm JIT (%s)", libxsmm_get_target_arch());
#endif
        library_kind[kind] = xsmm_kind[kind] || (kind != TILE_GEMM_BF16_NN_VNNI && own_gemm);
        if (!xsmm_kind[kind] && library_kind[kind])
            snprintf(backend_text[kind], sizeof backend_text[kind], "%s kernels", cpu_isa_name(isa));
    }
    snprintf(widened_text, sizeof widened_text, "fp32 %s on widened bf16", backend_text[TILE_GEMM_F32_NN]);
}

bool tile_gemm_library_available(tile_gemm_kind kind)
{
    pthread_once(&library_once, library_init);
    return library_kind[kind];
}

const char *tile_gemm_backend(tile_gemm_kind kind)
{
    pthread_once(&library_once, library_init);
    return backend_text[kind];
}

#if ATTNOPS_HAVE_LIBXSMM
/* Each thread's recent dispatches, direct-mapped by shape.  A libxsmm
 * dispatch builds and hashes a descriptor (~100 ns), and the drivers ask
 * for their GEMMs on every call: five a backward, half a microsecond of a
 * tiny one.  A kernel libxsmm returned stays valid for the life of the
 * process (nothing here finalises libxsmm, and the target is set once, in
 * library_init), so a slot never goes stale, and being per thread it needs
 * no lock.  A slot whose kind is 0 is empty (kinds are stored plus one). */
enum { JIT_SLOTS = 64 };
typedef struct jit_slot {
    int key[8]; /* kind + 1, M, N, K, lda, ldb, ldc, accumulate */
    void (*jit)(const void *, const void *, float *, ...);
} jit_slot;
static _Thread_local jit_slot jit_slots[JIT_SLOTS];

static void (*cached_dispatch(tile_gemm_kind kind, int M, int N, int K, int lda, int ldb, int ldc,
                              bool accumulate))(const void *, const void *, float *, ...)
{
    const int key[8] = {(int)kind + 1, M, N, K, lda, ldb, ldc, accumulate};
    uint32_t h = 2166136261u;
    for (int i = 0; i < 8; i++) h = (h ^ (uint32_t)key[i]) * 16777619u;
    jit_slot *slot = &jit_slots[(h ^ h >> 16) % JIT_SLOTS];
    if (memcmp(slot->key, key, sizeof key) != 0) {
        slot->jit = dispatch(kind, M, N, K, lda, ldb, ldc, accumulate);
        memcpy(slot->key, key, sizeof key);
    }
    return slot->jit;
}
#endif

tile_gemm tile_gemm_make(tile_gemm_kind kind, int M, int N, int K, int lda, int ldb, int ldc, bool accumulate)
{
    tile_gemm g = {kind, M, N, K, lda, ldb, ldc, accumulate, false, NULL};
    pthread_once(&library_once, library_init);
#if ATTNOPS_HAVE_LIBXSMM
    /* libxsmm 1.17's bf16 kernels read our A (their B) in k pairs and get
     * every row after the first wrong when lda is odd (tests/test_tile_gemm.c,
     * AVX-512 BF16); the drivers' lda is even, other callers get the loops */
    if (xsmm_kind[kind] && !(kind == TILE_GEMM_BF16_NN_VNNI && lda % 2))
        g.jit = cached_dispatch(kind, M, N, K, lda, ldb, ldc, accumulate);
#endif
    /* a shape libxsmm cannot do falls back to the ISA's GEMM or the loops */
    g.library = g.jit != NULL || (kind != TILE_GEMM_BF16_NN_VNNI && own_gemm);
    return g;
}

/* The bf16 kind's C loops (the fp32 kinds' are the portable gemm.f32). */
static void bf16_loops(const tile_gemm *g, const void *A, const void *B, float *C)
{
    for (int i = 0; i < g->M; i++) {
        float *c = C + (size_t)i * g->ldc;
        if (!g->accumulate) memset(c, 0, (size_t)g->N * sizeof *c);
        for (int k = 0; k < g->K; k++) {
            const float a = attnops_bf16_to_f32(((const uint16_t *)A)[(size_t)i * g->lda + k]);
            const uint16_t *b = (const uint16_t *)B + (size_t)(k / 2) * g->ldb * 2 + (k & 1);
            for (int j = 0; j < g->N; j++) c[j] += a * attnops_bf16_to_f32(b[2 * j]);
        }
    }
}

void tile_gemm_run(const tile_gemm *g, const void *A, const void *B, float *C)
{
#if ATTNOPS_HAVE_LIBXSMM
    if (g->jit) {
        g->jit(B, A, C);
        return;
    }
#endif
    if (g->kind == TILE_GEMM_BF16_NN_VNNI) {
        bf16_loops(g, A, B, C);
        return;
    }
    /* the ISA's own GEMM, or the portable set's C loops where it has none */
    cpu_kernels()->gemm.f32(g->kind == TILE_GEMM_F32_TN, g->M, g->N, g->K, (const float *)A, g->lda,
                            (const float *)B, g->ldb, C, g->ldc, g->accumulate);
}

const char *attnops_gemm_backend(attnops_dtype dtype)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F32:
    case ATTNOPS_DTYPE_F16: return tile_gemm_backend(TILE_GEMM_F32_NN);
    case ATTNOPS_DTYPE_BF16:
        return tile_gemm_library_available(TILE_GEMM_BF16_NN_VNNI) ? tile_gemm_backend(TILE_GEMM_BF16_NN_VNNI)
                                                                : widened_text;
    default: return NULL;
    }
}
