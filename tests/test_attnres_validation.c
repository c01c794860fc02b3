/* Argument validation of Block Attention Residuals (spec B.1 / B.2 and the
 * contract in attnops.h), forward (attnops_attn_res*) and backward
 * (attnops_attn_res_grad*).
 *
 * Every case starts from one valid small problem
 *   blocks: N = 3 bf16 [B=2, T=3, D=4], partial_block [2, 3, 4] (L = 4),
 *   proj_weight and rmsnorm_gamma bf16 [4], enable_rmsnorm 1, impl REFERENCE;
 *   forward outputs h [2, 3, 4], rms f32 [2, 3, 4, 1], alpha f32 [2, 3, 4];
 *   backward inputs grad_h [2, 3, 4], alpha, rms; outputs grad_blocks[3],
 *   grad_partial_block, grad_proj_weight, grad_rmsnorm_gamma
 * and breaks exactly one rule of src/attnres/ar_validate.c, in the order the
 * rules are checked.  A rule of the inputs both directions share is tried
 * through both.  For the workspace query and the run it checks
 *   - the exact status code,
 *   - attnops_last_error(): one sentence "AttnRes: ... ." (forward) or
 *     "AttnResGrad: ... ." (backward) naming the argument (and the value),
 *   - that no output byte was written (outputs are poisoned before the call),
 *     that every input is byte-for-byte unchanged and every canary intact.
 * The checker (tests/support/validation_check.h, shared with the other validation
 * tests) also runs on deliberately wrong expectations and must report a
 * problem each time (it can fail).
 *
 * Valid variants (no partial block, no RMSNorm, gamma given without RMSNorm,
 * f16, f32, impl AUTO / CPU / BENCHMARK, default threads, padded and strided
 * outputs, no caches requested, T = 0, N = 127 with a partial block, scale 0
 * and negative) must succeed: status 0, an empty last error, the same
 * workspace size twice, a run within exactly that workspace, every logical
 * output element written and nothing else, inputs unchanged; each forward
 * feeds its caches to the backward.
 *
 * Prints one line per failed check and "attnres_validation: N checks, M
 * failed"; exits 1 on any failure.  ATTNOPS_TEST_VERBOSE=1 prints every
 * sentence. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "validation_check.h"
#include "suite.h"

#define NUL ATTNOPS_ERR_NULLPTR
#define INV ATTNOPS_ERR_PARAM_INVALID
#define UNS ATTNOPS_ERR_UNSUPPORTED

enum { B0 = 2, T0 = 3, D0 = 4, N0 = 3, L0 = 4, MAX_N = 127 };

/* The tensors of one problem (both directions); the block lists are the
 * runs BLK.. and DB.., of up to MAX_N entries. */
enum { BLK = 0, PART = MAX_N, W, GAMMA, H, RMS, ALPHA, GH, DB, DPART = DB + MAX_N, DW, DGAMMA, NT };

typedef enum direction { FWD, BWD } direction;

typedef struct fixture {
    direction dir;
    int64_t n;                     /* blocks */
    tu_tensor t[NT];               /* absent tensors have block == NULL */
    unsigned char *snap[NT];       /* storage before the call (inputs) */
    const attnops_tensor *blocks[MAX_N], *grads[MAX_N];
    attnops_tensor alt;            /* a hand-made view a case may point one argument at */
    bool null_args;
    int kind;                      /* how the case calls (a vc_call_kind) */
    attnops_attn_res_fwd_args f;
    attnops_attn_res_bwd_args b;
    vc_outcome oc;                 /* of the last call_case */
    tu_rng rng;
} fixture;

/* The direction's outputs (poisoned, never written on failure). */
static bool is_output(direction dir, int i)
{
    return dir == FWD ? i == H || i == RMS || i == ALPHA : i >= DB && i <= DGAMMA;
}

static const char *tensor_name(const void *fx, int i, char *buf, size_t n)
{
    static const char *const NAMES[] = {"partial_block", "proj_weight", "rmsnorm_gamma", "h",     "rms",
                                        "alpha",         "grad_h"};
    static const char *const GRAD_NAMES[] = {"grad_partial_block", "grad_proj_weight", "grad_rmsnorm_gamma"};
    if (i < PART) snprintf(buf, n, "blocks[%d]", i);
    else if (i < DB) snprintf(buf, n, "%s", NAMES[i - PART]);
    else if (i < DPART) snprintf(buf, n, "grad_blocks[%d]", i - DB);
    else snprintf(buf, n, "%s", GRAD_NAMES[i - DPART]);
    return buf;
}

static vc_role role_of(const void *fx, int i)
{
    return is_output(((const fixture *)fx)->dir, i) ? VC_OUTPUT : VC_INPUT;
}

static vc_tensors tensors(fixture *fx) { return (vc_tensors){NT, fx->t, fx->snap, fx, role_of, NULL, tensor_name}; }

/* Points the argument of tensor i at its view (NULL when absent). */
static void fx_point(fixture *fx, int i)
{
    const attnops_tensor *v = fx->t[i].block ? &fx->t[i].view : NULL;
    attnops_attn_res_fwd_args *f = &fx->f;
    attnops_attn_res_bwd_args *b = &fx->b;
    if (i < PART) fx->blocks[i] = v;
    else if (i >= DB && i < DPART) fx->grads[i - DB] = v;
    switch (i) {
    case PART: f->partial_block = b->partial_block = v; break;
    case W: f->proj_weight = b->proj_weight = v; break;
    case GAMMA: f->rmsnorm_gamma = b->rmsnorm_gamma = v; break;
    case H: f->h = v; break;
    case RMS: f->rms = b->rms = v; break;
    case ALPHA: f->alpha = b->alpha = v; break;
    case GH: b->grad_h = v; break;
    case DPART: b->grad_partial_block = v; break;
    case DW: b->grad_proj_weight = v; break;
    case DGAMMA: b->grad_rmsnorm_gamma = v; break;
    default: break;
    }
}

static void fx_drop(fixture *fx, int i)
{
    if (fx->t[i].block) tu_tensor_free(&fx->t[i]);
    fx_point(fx, i);
}

/* (Re)allocates tensor i with `pad` elements of row padding: an output of
 * the direction gets the poison, an input random values (positive for the
 * backward's rms). */
static void fx_set_pad(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape, int64_t pad)
{
    if (fx->t[i].block) tu_tensor_free(&fx->t[i]);
    fx->t[i] = tu_tensor_new(dtype, rank, shape, pad);
    if (is_output(fx->dir, i)) {
        tu_tensor_poison(&fx->t[i], VC_POISON);
    } else {
        memset(vc_storage(&fx->t[i]), 0, fx->t[i].data_bytes);
        if (dtype == ATTNOPS_DTYPE_F32 || dtype == ATTNOPS_DTYPE_F16 || dtype == ATTNOPS_DTYPE_BF16) {
            tu_tensor_randn(&fx->t[i], &fx->rng, 1.0);
            if (i == RMS || i == ALPHA) { /* the backward reads them: plausible caches */
                const int64_t n = tu_numel(&fx->t[i].view);
                double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
                tu_tensor_to_f64(&fx->t[i], x);
                for (int64_t k = 0; k < n; k++) x[k] = i == RMS ? 1.0 + fabs(x[k]) : 1.0 / L0;
                tu_tensor_from_f64(&fx->t[i], x);
                free(x);
            }
        }
    }
    fx_point(fx, i);
}

static void fx_set(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape)
{
    fx_set_pad(fx, i, dtype, rank, shape, 0);
}

/* Every tensor of the activation dtype dt, [B, T, D] or [D], for both
 * directions (a forward fixture goes on to the backward); outputs with
 * `pad` elements of row padding. */
static void fx_activations(fixture *fx, attnops_dtype dt, int64_t T, int64_t pad)
{
    const int64_t act[3] = {B0, T, D0}, vec = D0;
    for (int64_t l = 0; l < fx->n; l++) fx_set(fx, BLK + (int)l, dt, 3, act);
    fx_set(fx, PART, dt, 3, act);
    fx_set(fx, W, dt, 1, &vec);
    fx_set(fx, GAMMA, dt, 1, &vec);
    fx_set_pad(fx, H, dt, 3, act, pad);
    fx_set(fx, GH, dt, 3, act);
    for (int64_t l = 0; l < fx->n; l++) fx_set_pad(fx, DB + (int)l, dt, 3, act, pad);
    fx_set_pad(fx, DPART, dt, 3, act, pad);
    fx_set_pad(fx, DW, dt, 1, &vec, pad);
    fx_set_pad(fx, DGAMMA, dt, 1, &vec, pad);
}

/* The caches for L rows (T tokens). */
static void fx_caches(fixture *fx, int64_t T, int64_t L)
{
    const int64_t rms[4] = {B0, T, L, 1};
    fx_set(fx, RMS, ATTNOPS_DTYPE_F32, 4, rms);
    fx_set(fx, ALPHA, ATTNOPS_DTYPE_F32, 3, rms);
}

static void fx_init(fixture *fx, direction dir, int64_t n, uint64_t seed)
{
    memset(fx, 0, sizeof *fx);
    fx->dir = dir, fx->n = n;
    fx->rng = tu_rng_make(seed);
    attnops_attn_res_fwd_args_init(&fx->f);
    attnops_attn_res_bwd_args_init(&fx->b);
    fx->f.blocks = fx->b.blocks = fx->blocks;
    fx->f.num_blocks = fx->b.num_blocks = n;
    fx->b.grad_blocks = fx->grads;
    fx->f.impl = fx->b.impl = ATTNOPS_IMPL_REFERENCE;
    fx->f.num_threads = fx->b.num_threads = 2;
    fx_activations(fx, ATTNOPS_DTYPE_BF16, T0, 0);
    fx_caches(fx, T0, n + 1);
}

static void fx_free(void *fx)
{
    const vc_tensors s = tensors(fx);
    vc_tensors_free(&s);
}

/* No RMSNorm: neither gamma, nor rms, nor its gradient. */
static void fx_no_rmsnorm(fixture *fx)
{
    fx->f.enable_rmsnorm = fx->b.enable_rmsnorm = 0;
    fx_drop(fx, GAMMA), fx_drop(fx, RMS), fx_drop(fx, DGAMMA);
}

/* No partial block: L = N, caches resized, no partial gradient. */
static void fx_no_partial(fixture *fx)
{
    fx_drop(fx, PART), fx_drop(fx, DPART);
    fx_caches(fx, T0, fx->n);
}

/* ---- calling ---- */
static attnops_status fwd_query(const void *a, size_t *bytes) { return attnops_attn_res_workspace_size(a, bytes); }
static attnops_status fwd_run(const void *a, void *ws, size_t bytes) { return attnops_attn_res(a, ws, bytes); }
static attnops_status bwd_query(const void *a, size_t *bytes)
{
    return attnops_attn_res_grad_workspace_size(a, bytes);
}
static attnops_status bwd_run(const void *a, void *ws, size_t bytes) { return attnops_attn_res_grad(a, ws, bytes); }
static const vc_op OP[2] = {{"AttnRes", fwd_query, fwd_run, NULL}, {"AttnResGrad", bwd_query, bwd_run, NULL}};

/* The argument struct of the fixture's direction. */
static const void *args_of(const fixture *fx)
{
    if (fx->null_args) return NULL;
    return fx->dir == FWD ? (const void *)&fx->f : (const void *)&fx->b;
}

/* Calls the direction's entry points as fx->kind says, expecting `want`;
 * the outcome goes to fx->oc. */
static void call_case(void *vfx, const vc_expect *e)
{
    fixture *fx = vfx;
    const attnops_status want = e->st;
    const vc_tensors s = tensors(fx);
    vc_snapshot(&s);
    vc_call(&fx->oc, &OP[fx->dir], args_of(fx), (vc_call_kind)fx->kind, want);
}

/* Checks the last call against e; returns the number of problems found. */
static int verify_failure(void *vfx, const vc_expect *e)
{
    fixture *fx = vfx;
    vc_begin();
    vc_check_outcome(&fx->oc, e, OP[fx->dir].name, NULL);
    const vc_tensors s = tensors(fx);
    vc_check_failed_call(&s);
    return vc_problems();
}

/* ---- the cases, in ar_validate.c's order ----
 * X(id, directions, status, substring, also, kind) (vc_case; the scope: BOTH, FWD_ONLY, BWD_ONLY). */
enum { BOTH, FWD_ONLY, BWD_ONLY };
#define CASES(X)                                                                                                   \
    /* the block list */                                                                                          \
    X(NULL_ARGS, BOTH, NUL, "argument struct", NULL, VC_CALL)                                                      \
    X(NUM_BLOCKS_0, BOTH, INV, "blocks must not be empty", "num_blocks = 0", VC_CALL)                              \
    X(NUM_BLOCKS_NEGATIVE, BOTH, INV, "N (num_blocks)", "got -1", VC_CALL)                                         \
    X(NUM_BLOCKS_128, BOTH, INV, "N (num_blocks) must be in [1, 127]", "got 128", VC_CALL)                         \
    X(NULL_BLOCKS_ARRAY, BOTH, NUL, "blocks is NULL", NULL, VC_CALL)                                               \
    X(NULL_BLOCK_1, BOTH, NUL, "'blocks[1]'", NULL, VC_CALL)                                                       \
    X(NEGATIVE_STRIDE_BLOCK_2, BOTH, INV, "'blocks[2]'", "negative stride", VC_CALL)                               \
    X(NULL_PROJ_WEIGHT, BOTH, NUL, "'proj_weight'", NULL, VC_CALL)                                                 \
    /* attributes and execution options */                                                                        \
    X(ENABLE_RMSNORM_2, BOTH, INV, "enable_rmsnorm", "got 2", VC_CALL)                                             \
    X(SCALE_NAN, BOTH, INV, "scale", "nan", VC_CALL)                                                               \
    X(SCALE_INF, BOTH, INV, "scale", "inf", VC_CALL)                                                               \
    X(SCALE_F32_OVERFLOW, BOTH, INV, "scale", "1e+39", VC_CALL)                                                    \
    X(IMPL_7, BOTH, INV, "impl", "7", VC_CALL)                                                                     \
    X(NUM_THREADS_NEGATIVE, BOTH, INV, "num_threads", "-1", VC_CALL)                                               \
    /* views of the other inputs */                                                                               \
    X(UNKNOWN_DTYPE_PROJ_WEIGHT, BOTH, INV, "'proj_weight'", "unknown dtype", VC_CALL)                             \
    X(NULL_DATA_PARTIAL, BOTH, NUL, "'partial_block'", "NULL data", VC_CALL)                                       \
    /* the activations */                                                                                         \
    X(BLOCKS_I32, BOTH, INV, "blocks[0]", "i32", VC_CALL)                                                          \
    X(BLOCKS_F8, BOTH, INV, "blocks[0]", "f8_e4m3fn", VC_CALL)                                                     \
    X(BLOCK_0_RANK_2, BOTH, INV, "blocks[0]", "[B, T, D]", VC_CALL)                                                \
    X(D_ZERO, BOTH, INV, "blocks[0]", "D must be at least 1", VC_CALL)                                             \
    X(D_HUGE, BOTH, UNS, "blocks[0]", "D = 2147483648", VC_CALL)                                                   \
    X(BLOCK_2_SHAPE, BOTH, INV, "'blocks[2]'", "[2, 3, 5]", VC_CALL)                                               \
    X(BLOCK_1_DTYPE, BOTH, INV, "'blocks[1]'", "f16", VC_CALL)                                                     \
    X(PARTIAL_SHAPE, BOTH, INV, "'partial_block'", "[2, 4, 4]", VC_CALL)                                           \
    X(PARTIAL_DTYPE, BOTH, INV, "'partial_block'", "f32", VC_CALL)                                                 \
    /* proj_weight and gamma */                                                                                   \
    X(PROJ_WEIGHT_2D, BOTH, INV, "'proj_weight'", "[1, 4]", VC_CALL)                                               \
    X(PROJ_WEIGHT_LENGTH, BOTH, INV, "'proj_weight'", "[D] = [4]", VC_CALL)                                        \
    X(PROJ_WEIGHT_DTYPE, BOTH, INV, "'proj_weight'", "f32", VC_CALL)                                               \
    X(NULL_GAMMA, BOTH, NUL, "rmsnorm_gamma", "enable_rmsnorm = 1", VC_CALL)                                       \
    X(GAMMA_SHAPE, BOTH, INV, "'rmsnorm_gamma'", "[3]", VC_CALL)                                                   \
    X(GAMMA_DTYPE, BOTH, INV, "'rmsnorm_gamma'", "f16", VC_CALL)                                                   \
    /* the forward's own */                                                                                       \
    X(EPS_0, FWD_ONLY, INV, "rmsnorm_eps", "got 0", VC_CALL)                                                       \
    X(EPS_NEGATIVE, FWD_ONLY, INV, "rmsnorm_eps", "got -1", VC_CALL)                                               \
    X(EPS_NAN, FWD_ONLY, INV, "rmsnorm_eps", "nan", VC_CALL)                                                       \
    X(EPS_F32_UNDERFLOW, FWD_ONLY, INV, "rmsnorm_eps", "1e-50", VC_CALL)                                           \
    X(NULL_H, FWD_ONLY, NUL, "'h'", NULL, VC_CALL)                                                                 \
    X(H_SHAPE, FWD_ONLY, INV, "'h'", "[2, 3, 5]", VC_CALL)                                                         \
    X(H_DTYPE, FWD_ONLY, INV, "'h'", "f16", VC_CALL)                                                               \
    X(RMS_WITHOUT_RMSNORM, FWD_ONLY, INV, "rms output", "enable_rmsnorm = 0", VC_CALL)                             \
    X(RMS_RANK_3, FWD_ONLY, INV, "'rms'", "[2, 3, 4, 1]", VC_CALL)                                                 \
    X(RMS_DTYPE, FWD_ONLY, INV, "'rms'", "bf16", VC_CALL)                                                          \
    X(RMS_L_WITHOUT_PARTIAL, FWD_ONLY, INV, "'rms'", "[2, 3, 3, 1]", VC_CALL)                                      \
    X(ALPHA_SHAPE, FWD_ONLY, INV, "'alpha'", "[2, 3, 4]", VC_CALL)                                                 \
    X(ALPHA_DTYPE, FWD_ONLY, INV, "'alpha'", "f16", VC_CALL)                                                       \
    X(ALPHA_IN_H, FWD_ONLY, INV, "'h' and 'alpha'", "overlap", VC_CALL)                                            \
    X(H_ZERO_STRIDE, FWD_ONLY, INV, "'h'", "overlap", VC_CALL)                                                     \
    /* the backward's own */                                                                                      \
    X(NULL_GRAD_H, BWD_ONLY, NUL, "'grad_h'", NULL, VC_CALL)                                                       \
    X(GRAD_H_SHAPE, BWD_ONLY, INV, "'grad_h'", "[2, 4, 4]", VC_CALL)                                               \
    X(GRAD_H_DTYPE, BWD_ONLY, INV, "'grad_h'", "f32", VC_CALL)                                                     \
    X(NULL_ALPHA, BWD_ONLY, NUL, "alpha", "never recomputes", VC_CALL)                                             \
    X(ALPHA_SHAPE_BWD, BWD_ONLY, INV, "'alpha'", "[2, 3, 5]", VC_CALL)                                             \
    X(ALPHA_DTYPE_BWD, BWD_ONLY, INV, "'alpha'", "bf16", VC_CALL)                                                  \
    X(NULL_RMS, BWD_ONLY, NUL, "rms", "enable_rmsnorm = 1", VC_CALL)                                               \
    X(RMS_SHAPE_BWD, BWD_ONLY, INV, "'rms'", "[2, 3, 4, 1]", VC_CALL)                                              \
    X(NULL_GRAD_BLOCKS_ARRAY, BWD_ONLY, NUL, "grad_blocks is NULL", NULL, VC_CALL)                                 \
    X(NULL_GRAD_BLOCK_2, BWD_ONLY, NUL, "'grad_blocks[2]'", NULL, VC_CALL)                                         \
    X(GRAD_BLOCK_0_SHAPE, BWD_ONLY, INV, "'grad_blocks[0]'", "[2, 3, 5]", VC_CALL)                                 \
    X(GRAD_BLOCK_1_DTYPE, BWD_ONLY, INV, "'grad_blocks[1]'", "f16", VC_CALL)                                       \
    X(NULL_GRAD_PARTIAL, BWD_ONLY, NUL, "grad_partial_block", "partial_block is given", VC_CALL)                   \
    X(GRAD_PARTIAL_WITHOUT_PARTIAL, BWD_ONLY, INV, "grad_partial_block", "partial_block is not", VC_CALL)          \
    X(GRAD_PARTIAL_SHAPE, BWD_ONLY, INV, "'grad_partial_block'", "[2, 3, 3]", VC_CALL)                             \
    X(NULL_GRAD_PROJ_WEIGHT, BWD_ONLY, NUL, "'grad_proj_weight'", NULL, VC_CALL)                                   \
    X(GRAD_PROJ_WEIGHT_SHAPE, BWD_ONLY, INV, "'grad_proj_weight'", "[D] = [4]", VC_CALL)                           \
    X(GRAD_PROJ_WEIGHT_DTYPE, BWD_ONLY, INV, "'grad_proj_weight'", "f32", VC_CALL)                                 \
    X(NULL_GRAD_GAMMA, BWD_ONLY, NUL, "grad_rmsnorm_gamma", "enable_rmsnorm = 1", VC_CALL)                         \
    X(GRAD_GAMMA_WITHOUT_RMSNORM, BWD_ONLY, INV, "grad_rmsnorm_gamma", "enable_rmsnorm = 0", VC_CALL)              \
    X(GRAD_GAMMA_SHAPE, BWD_ONLY, INV, "'grad_rmsnorm_gamma'", "[5]", VC_CALL)                                     \
    X(GRAD_BLOCKS_ALIASED, BWD_ONLY, INV, "'grad_blocks[0]' and 'grad_blocks[2]'", "overlap", VC_CALL)             \
    X(GRAD_PROJ_WEIGHT_IN_GRAD_PARTIAL, BWD_ONLY, INV, "'grad_partial_block' and 'grad_proj_weight'", "overlap",   \
      VC_CALL)                                                                                                     \
    X(GRAD_BLOCK_1_ZERO_STRIDE, BWD_ONLY, INV, "'grad_blocks[1]'", "overlap", VC_CALL)                             \
    /* the entry points' own pointers and the workspace */                                                        \
    X(NULL_WORKSPACE_BYTES, BOTH, NUL, "workspace_bytes", NULL, VC_NULL_BYTES)                                     \
    X(WORKSPACE_SHORT, BOTH, INV, "workspace", "needs", VC_WS_SHORT)                                               \
    X(WORKSPACE_NULL, BOTH, NUL, "workspace is NULL", NULL, VC_WS_NULL)

enum { CASES(VC_CASE_ENUM) N_CASES };
static const vc_case CASE[N_CASES] = {CASES(VC_CASE_ROW)};

/* Breaks the one thing case c is about in a freshly built fixture (always possible). */
static bool apply_case(void *vfx, int c, vc_expect *e)
{
    (void)e; /* every row holds in every scope */
    fixture *fx = vfx;
    const attnops_dtype f32 = ATTNOPS_DTYPE_F32, f16 = ATTNOPS_DTYPE_F16, bf16 = ATTNOPS_DTYPE_BF16;
    attnops_attn_res_fwd_args *f = &fx->f;
    attnops_attn_res_bwd_args *b = &fx->b;
    fx->kind = CASE[c].kind;
    switch (c) {
    case C_NULL_ARGS: fx->null_args = true; break;
    case C_NUM_BLOCKS_0: f->num_blocks = b->num_blocks = 0; break;
    case C_NUM_BLOCKS_NEGATIVE: f->num_blocks = b->num_blocks = -1; break;
    case C_NUM_BLOCKS_128: f->num_blocks = b->num_blocks = 128; break;
    case C_NULL_BLOCKS_ARRAY: f->blocks = b->blocks = NULL; break;
    case C_NULL_BLOCK_1: fx->blocks[1] = NULL; break;
    case C_NEGATIVE_STRIDE_BLOCK_2: fx->alt = fx->t[BLK + 2].view, fx->alt.strides[2] = -1, fx->blocks[2] = &fx->alt;
        break;
    case C_NULL_PROJ_WEIGHT: f->proj_weight = b->proj_weight = NULL; break;

    case C_ENABLE_RMSNORM_2: f->enable_rmsnorm = b->enable_rmsnorm = 2; break;
    case C_SCALE_NAN: f->scale = b->scale = NAN; break;
    case C_SCALE_INF: f->scale = b->scale = INFINITY; break;
    case C_SCALE_F32_OVERFLOW: f->scale = b->scale = 1e39; break;
    case C_IMPL_7: f->impl = b->impl = (attnops_impl)7; break;
    case C_NUM_THREADS_NEGATIVE: f->num_threads = b->num_threads = -1; break;

    case C_UNKNOWN_DTYPE_PROJ_WEIGHT:
        fx->alt = fx->t[W].view, fx->alt.dtype = (attnops_dtype)99;
        f->proj_weight = b->proj_weight = &fx->alt;
        break;
    case C_NULL_DATA_PARTIAL:
        fx->alt = fx->t[PART].view, fx->alt.data = NULL;
        f->partial_block = b->partial_block = &fx->alt;
        break;

    /* blocks[0] decides dtype and shape: the other activations then
     * disagree too, but blocks[0] is checked first */
    case C_BLOCKS_I32: fx_set(fx, BLK, ATTNOPS_DTYPE_I32, 3, (int64_t[]){B0, T0, D0}); break;
    case C_BLOCKS_F8: fx_set(fx, BLK, ATTNOPS_DTYPE_F8_E4M3FN, 3, (int64_t[]){B0, T0, D0}); break;
    case C_BLOCK_0_RANK_2: fx_set(fx, BLK, bf16, 2, (int64_t[]){B0 * T0, D0}); break;
    case C_D_ZERO: fx_set(fx, BLK, bf16, 3, (int64_t[]){B0, T0, 0}); break;
    case C_D_HUGE: /* a view only: validation never reads it */
        fx->alt = fx->t[BLK].view, fx->alt.shape[2] = INT64_C(2147483648), fx->blocks[0] = &fx->alt;
        break;
    case C_BLOCK_2_SHAPE: fx_set(fx, BLK + 2, bf16, 3, (int64_t[]){B0, T0, D0 + 1}); break;
    case C_BLOCK_1_DTYPE: fx_set(fx, BLK + 1, f16, 3, (int64_t[]){B0, T0, D0}); break;
    case C_PARTIAL_SHAPE: fx_set(fx, PART, bf16, 3, (int64_t[]){B0, T0 + 1, D0}); break;
    case C_PARTIAL_DTYPE: fx_set(fx, PART, f32, 3, (int64_t[]){B0, T0, D0}); break;

    case C_PROJ_WEIGHT_2D: fx_set(fx, W, bf16, 2, (int64_t[]){1, D0}); break;
    case C_PROJ_WEIGHT_LENGTH: fx_set(fx, W, bf16, 1, (int64_t[]){D0 + 1}); break;
    case C_PROJ_WEIGHT_DTYPE: fx_set(fx, W, f32, 1, (int64_t[]){D0}); break;
    case C_NULL_GAMMA: fx_drop(fx, GAMMA); break;
    case C_GAMMA_SHAPE: fx_set(fx, GAMMA, bf16, 1, (int64_t[]){D0 - 1}); break;
    case C_GAMMA_DTYPE: fx_set(fx, GAMMA, f16, 1, (int64_t[]){D0}); break;

    case C_EPS_0: f->rmsnorm_eps = 0.0; break;
    case C_EPS_NEGATIVE: f->rmsnorm_eps = -1.0; break;
    case C_EPS_NAN: f->rmsnorm_eps = NAN; break;
    case C_EPS_F32_UNDERFLOW: f->rmsnorm_eps = 1e-50; break;
    case C_NULL_H: fx_drop(fx, H); break;
    case C_H_SHAPE: fx_set(fx, H, bf16, 3, (int64_t[]){B0, T0, D0 + 1}); break;
    case C_H_DTYPE: fx_set(fx, H, f16, 3, (int64_t[]){B0, T0, D0}); break;
    case C_RMS_WITHOUT_RMSNORM: f->enable_rmsnorm = 0; break; /* gamma is then ignored, rms still requested */
    case C_RMS_RANK_3: fx_set(fx, RMS, f32, 3, (int64_t[]){B0, T0, L0}); break;
    case C_RMS_DTYPE: fx_set(fx, RMS, bf16, 4, (int64_t[]){B0, T0, L0, 1}); break;
    case C_RMS_L_WITHOUT_PARTIAL: fx_drop(fx, PART); break; /* L = 3 now, the caches still have 4 rows */
    case C_ALPHA_SHAPE: fx_set(fx, ALPHA, f32, 3, (int64_t[]){B0, T0, L0 + 1}); break;
    case C_ALPHA_DTYPE: fx_set(fx, ALPHA, f16, 3, (int64_t[]){B0, T0, L0}); break;
    case C_ALPHA_IN_H: /* the right shape and dtype, over h's bytes */
        fx->alt = fx->t[ALPHA].view, fx->alt.data = fx->t[H].view.data, f->alpha = &fx->alt;
        break;
    case C_H_ZERO_STRIDE: fx->t[H].view.strides[1] = 0; break;

    case C_NULL_GRAD_H: fx_drop(fx, GH); break;
    case C_GRAD_H_SHAPE: fx_set(fx, GH, bf16, 3, (int64_t[]){B0, T0 + 1, D0}); break;
    case C_GRAD_H_DTYPE: fx_set(fx, GH, f32, 3, (int64_t[]){B0, T0, D0}); break;
    case C_NULL_ALPHA: fx_drop(fx, ALPHA); break;
    case C_ALPHA_SHAPE_BWD: fx_set(fx, ALPHA, f32, 3, (int64_t[]){B0, T0, L0 + 1}); break;
    case C_ALPHA_DTYPE_BWD: fx_set(fx, ALPHA, bf16, 3, (int64_t[]){B0, T0, L0}); break;
    case C_NULL_RMS: fx_drop(fx, RMS); break;
    case C_RMS_SHAPE_BWD: fx_set(fx, RMS, f32, 3, (int64_t[]){B0, T0, L0}); break;
    case C_NULL_GRAD_BLOCKS_ARRAY: b->grad_blocks = NULL; break;
    case C_NULL_GRAD_BLOCK_2: fx->grads[2] = NULL; break;
    case C_GRAD_BLOCK_0_SHAPE: fx_set(fx, DB, bf16, 3, (int64_t[]){B0, T0, D0 + 1}); break;
    case C_GRAD_BLOCK_1_DTYPE: fx_set(fx, DB + 1, f16, 3, (int64_t[]){B0, T0, D0}); break;
    case C_NULL_GRAD_PARTIAL: fx_drop(fx, DPART); break;
    case C_GRAD_PARTIAL_WITHOUT_PARTIAL: /* no partial block, caches of L = 3: only grad_partial_block is wrong */
        fx_drop(fx, PART), fx_caches(fx, T0, N0);
        break;
    case C_GRAD_PARTIAL_SHAPE: fx_set(fx, DPART, bf16, 3, (int64_t[]){B0, T0, D0 - 1}); break;
    case C_NULL_GRAD_PROJ_WEIGHT: fx_drop(fx, DW); break;
    case C_GRAD_PROJ_WEIGHT_SHAPE: fx_set(fx, DW, bf16, 2, (int64_t[]){D0, 1}); break;
    case C_GRAD_PROJ_WEIGHT_DTYPE: fx_set(fx, DW, f32, 1, (int64_t[]){D0}); break;
    case C_NULL_GRAD_GAMMA: fx_drop(fx, DGAMMA); break;
    case C_GRAD_GAMMA_WITHOUT_RMSNORM: /* gamma and rms are not read without RMSNorm */
        b->enable_rmsnorm = 0, fx_drop(fx, GAMMA), fx_drop(fx, RMS);
        break;
    case C_GRAD_GAMMA_SHAPE: fx_set(fx, DGAMMA, bf16, 1, (int64_t[]){D0 + 1}); break;
    case C_GRAD_BLOCKS_ALIASED: fx->grads[2] = fx->grads[0]; break;
    case C_GRAD_PROJ_WEIGHT_IN_GRAD_PARTIAL:
        fx->alt = fx->t[DW].view, fx->alt.data = fx->t[DPART].view.data, b->grad_proj_weight = &fx->alt;
        break;
    case C_GRAD_BLOCK_1_ZERO_STRIDE: fx->t[DB + 1].view.strides[0] = 0; break;
    }
    return true;
}

static bool applies(const vc_case *c, int dir) { return c->scope != (dir == FWD ? BWD_ONLY : FWD_ONLY); }
static void fx_init_case(void *fx, int dir, uint64_t seed) { fx_init(fx, (direction)dir, N0, seed); }

static fixture case_fixture;
static const vc_suite SUITE = {CASE, N_CASES, 2, (const char *const[]){"forward", "backward"}, applies, &case_fixture,
                               fx_init_case, apply_case, call_case, verify_failure, fx_free, NULL};

/* ---- the checker must be able to fail ---- */
static void run_checker_self_test(void)
{
    fixture fx;

    /* a NULL proj_weight in the backward: 161001 naming it */
    fx_init(&fx, BWD, N0, 11);
    apply_case(&fx, C_NULL_PROJ_WEIGHT, NULL);
    vc_self_test(&(vc_subject){
        .suite = &SUITE, .ctx = &fx, .right = CASE[C_NULL_PROJ_WEIGHT].e,
        .wrong_st = INV, .wrong_name = "rmsnorm_gamma", .wrong_also = "got 128",
        .tamper = {{vc_storage(&fx.t[DB + 1]) + 3, 0xFF, "a written output byte (grad_blocks[1])", NULL},
                   {vc_storage(&fx.t[ALPHA]) + 5, 0x01, "a changed input byte (alpha)", NULL},
                   {vc_canary_byte(&fx.t[W], 3), 0xFF, "a broken canary",
                    "the canary complaint about 'proj_weight' that follows is intended"}}});
    fx_free(&fx);

    /* a valid call expected to fail: wrong statuses, outputs written */
    fx_init(&fx, FWD, N0, 13);
    fx.kind = VC_CALL;
    vc_self_test_wrong(&(vc_subject){.suite = &SUITE, .ctx = &fx},
                       &(vc_expect){INV, "scale", NULL}, "a valid call");
    fx_free(&fx);
    printf("checker self-test done\n");
}

/* ---- valid calls ---- */
#define VARIANTS(X)                                                                                                \
    X(BASE)                /* bf16, RMSNorm, partial block, impl REFERENCE */                                        \
    X(NO_PARTIAL)          /* L = N */                                                                               \
    X(NO_RMSNORM)          /* no gamma, rms or grad_rmsnorm_gamma */                                                 \
    X(GAMMA_IGNORED)       /* gamma given without RMSNorm: not read */                                               \
    X(F16)                                                                                                           \
    X(F32)                                                                                                           \
    X(IMPL_AUTO)                                                                                                     \
    X(IMPL_CPU)                                                                                                      \
    X(IMPL_BENCHMARK)                                                                                                \
    X(THREADS_DEFAULT)     /* num_threads 0 */                                                                       \
    X(PADDED_OUTPUTS)      /* output rows padded by 3 elements */                                                    \
    X(NO_CACHES)           /* forward without rms and alpha (no backward then) */                                    \
    X(T_ZERO)              /* no tokens: dw and dgamma are 0 */                                                      \
    X(N_127)               /* N = 127 with a partial block: L = 128 */                                               \
    X(SCALE_0)                                                                                                       \
    X(SCALE_NEGATIVE)

#define AS_VENUM(id) V_##id,
enum { VARIANTS(AS_VENUM) N_VARIANTS };
#define AS_VNAME(id) #id,
static const char *const VARIANT[N_VARIANTS] = {VARIANTS(AS_VNAME)};

static void apply_variant(fixture *fx, int v)
{
    attnops_attn_res_fwd_args *f = &fx->f;
    attnops_attn_res_bwd_args *b = &fx->b;
    switch (v) {
    case V_BASE: break;
    case V_NO_PARTIAL: fx_no_partial(fx); break;
    case V_NO_RMSNORM: fx_no_rmsnorm(fx); break;
    case V_GAMMA_IGNORED: fx_no_rmsnorm(fx), fx_set(fx, GAMMA, ATTNOPS_DTYPE_BF16, 1, (int64_t[]){D0}); break;
    case V_F16: fx_activations(fx, ATTNOPS_DTYPE_F16, T0, 0); break;
    case V_F32: fx_activations(fx, ATTNOPS_DTYPE_F32, T0, 0); break;
    case V_IMPL_AUTO: f->impl = b->impl = ATTNOPS_IMPL_AUTO; break;
    case V_IMPL_CPU: f->impl = b->impl = ATTNOPS_IMPL_CPU; break;
    case V_IMPL_BENCHMARK: f->impl = b->impl = ATTNOPS_IMPL_BENCHMARK; break;
    case V_THREADS_DEFAULT: f->num_threads = b->num_threads = 0; break;
    case V_PADDED_OUTPUTS: fx_activations(fx, ATTNOPS_DTYPE_BF16, T0, 3); break;
    case V_NO_CACHES: fx_drop(fx, RMS), fx_drop(fx, ALPHA); break;
    case V_T_ZERO: fx_activations(fx, ATTNOPS_DTYPE_BF16, 0, 0), fx_caches(fx, 0, L0); break;
    case V_N_127:
        fx->n = f->num_blocks = b->num_blocks = MAX_N;
        fx_activations(fx, ATTNOPS_DTYPE_BF16, T0, 0), fx_caches(fx, T0, MAX_N + 1);
        break;
    case V_SCALE_0: f->scale = b->scale = 0.0; break;
    case V_SCALE_NEGATIVE: f->scale = b->scale = -2.5; break;
    }
}

static double value_at(const unsigned char *e, attnops_dtype dt)
{
    uint16_t h;
    float f;
    memcpy(&h, e, 2);
    memcpy(&f, e, dt == ATTNOPS_DTYPE_F32 ? 4 : 0);
    return dt == ATTNOPS_DTYPE_F32 ? f : dt == ATTNOPS_DTYPE_F16 ? attnops_f16_to_f32(h) : attnops_bf16_to_f32(h);
}

/* Every logical element of output t written (not the poison pattern, and
 * finite), every padding byte left poisoned. */
static void check_written(const tu_tensor *t, const char *name)
{
    const attnops_tensor *v = &t->view;
    const int64_t es = (int64_t)attnops_dtype_size(v->dtype), n = tu_numel(v);
    int64_t unwritten = 0, nonfinite = 0, idx[ATTNOPS_MAX_RANK] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < v->rank; d++) off += idx[d] * v->strides[d];
        const unsigned char *e = vc_storage(t) + off * es;
        unwritten += vc_poisoned(e, (size_t)es);
        nonfinite += !isfinite(value_at(e, v->dtype));
        for (int d = v->rank - 1; d >= 0 && ++idx[d] == v->shape[d]; d--) idx[d] = 0;
    }
    const int64_t pad = vc_padding_changed(t, NULL);
    VC_EXPECT(unwritten == 0, "%s: %lld elements not written", name, (long long)unwritten);
    VC_EXPECT(nonfinite == 0, "%s: %lld elements not finite", name, (long long)nonfinite);
    VC_EXPECT(pad == 0, "%s: %lld padding bytes written", name, (long long)pad);
}

/* One direction of a valid variant (vc_check_valid_run), then every output
 * written. */
static void run_valid(fixture *fx)
{
    const vc_tensors s = tensors(fx);
    if (vc_check_valid_run(&OP[fx->dir], args_of(fx), &s) != ATTNOPS_SUCCESS) return;
    char name[32];
    for (int i = 0; i < NT; i++)
        if (fx->t[i].block && is_output(fx->dir, i)) check_written(&fx->t[i], tensor_name(fx, i, name, sizeof name));
}

static int run_success_cases(void)
{
    int passed = 0;
    for (int v = 0; v < N_VARIANTS; v++) {
        const int before = tu_failures;
        fixture fx;
        fx_init(&fx, FWD, N0, tu_suite_seed() + 1000 + (uint64_t)v);
        apply_variant(&fx, v);
        vc_label("forward success %s", VARIANT[v]);
        run_valid(&fx);
        if (v != V_NO_CACHES) { /* the backward on the forward's caches */
            fx.dir = BWD;
            for (int i = DB; i <= DGAMMA; i++)
                if (fx.t[i].block) tu_tensor_poison(&fx.t[i], VC_POISON);
            vc_label("backward success %s", VARIANT[v]);
            run_valid(&fx);
        }
        passed += tu_failures == before;
        fx_free(&fx);
    }
    printf("valid variants: %d of %d succeed as the contract states\n", passed, N_VARIANTS);
    return passed;
}

int main(void)
{
    /* the failure cases run with vc_call's workspace: it must suffice for the base problems */
    for (int dir = FWD; dir <= BWD; dir++) {
        fixture fx;
        fx_init(&fx, (direction)dir, N0, 1);
        vc_label("%s base problem", dir == FWD ? "forward" : "backward");
        vc_check_workspace_fits(&OP[dir], args_of(&fx));
        fx_free(&fx);
    }
    const int passed = vc_run_failure_cases(&SUITE) + run_success_cases();
    run_checker_self_test();
    vc_summary("attnres_validation");
    return tu_finish("attnres_validation", passed);
}
