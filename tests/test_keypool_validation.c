/* Argument validation of KeyPool (spec A.2 and the contract in attnops.h).
 *
 * Every case starts from one valid small problem in one of the two layouts
 *   BSH: hidden_states [B=2, S=5, H=16]
 *   TH:  hidden_states [T=7, H=16], cu_seqlens i32 [0, 3, 7]
 * with D=4, cmp_ratio R=4, ape f32 [4, 4], state_cache f32 [7, 4, 8],
 * cache_block_table i32 [2, 3] = {1,2,3},{4,5,6}, start_pos i32 {3, 0},
 * bf16 activations and pooled_key of the CURRENT capacity shape, and breaks
 * exactly one rule of src/keypool/kp_validate.c (the cases are listed in the
 * order the rules are checked).  For the workspace query and the run it checks
 *   - the exact status code,
 *   - attnops_last_error(): one sentence "KeyPool: ... ." naming the argument,
 *   - that state_cache and every input are byte-for-byte unchanged, that no
 *     pooled_key byte was written (it is poisoned before the call) and that
 *     every canary is intact.
 * attnops_key_pool_output_shape and attnops_key_pool_valid_rows, which do
 * not look at pooled_key, must fail the same way for a broken input and
 * succeed when only pooled_key, the workspace or an output stride is wrong.
 *
 * The checker (tests/support/validation_check.h, shared with the other validation
 * tests) also runs in an inverted mode on deliberately wrong expectations
 * and must report a mismatch each time (the checker can fail).
 *
 * Valid variants (BSH and TH; CURRENT and FIXED capacity; LayerNorm; f16; a
 * non-contiguous state_cache and pooled_key; rotary_mode 0; impl REFERENCE,
 * AUTO and CPU) must succeed: status 0, the shape and valid rows n[b] =
 * floor((start+len)/R) - floor(start/R) the contract states, exactly the
 * rows the contract names written in pooled_key and in the cache.
 *
 * Prints one line per failed check and "keypool_validation: N checks, M
 * failed"; exits 1 on any failure.  ATTNOPS_TEST_VERBOSE=1 prints every
 * sentence.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "validation_check.h"

#define NUL ATTNOPS_ERR_NULLPTR
#define INV ATTNOPS_ERR_PARAM_INVALID
#define UNS ATTNOPS_ERR_UNSUPPORTED

/* ---- the base problem ---- */
enum { B0 = 2, S0 = 5, T0 = 7, H0 = 16, D0 = 4, R0 = 4, BLOCK_NUM0 = 7, BLOCK_SIZE0 = 4, L0 = 3 };
static const int64_t TABLE0[B0 * L0] = {1, 2, 3, 4, 5, 6};
static const int64_t START0[B0] = {3, 0};
static const int64_t CU0[B0 + 1] = {0, 3, 7};

/* The tensors of one call. */
enum { HID, WK, GATE, APE, CACHE, TABLE, START, NW, NB, COS, SIN, CU, SEQUSED, OUT, NT };
static const char *const TNAME[NT] = {"hidden_states", "wk", "gate_weight", "ape", "state_cache",
                                      "cache_block_table", "start_pos", "norm_weight", "norm_bias", "cos", "sin",
                                      "cu_seqlens", "seqused", "pooled_key"};

typedef struct fixture {
    bool th;                 /* layout TH (else BSH) */
    tu_tensor t[NT];         /* absent tensors have block == NULL */
    unsigned char *snap[NT]; /* storage bytes before the call (every tensor but pooled_key) */
    attnops_tensor alt;      /* a hand-made view a case may point one argument at */
    bool null_args;          /* pass args == NULL */
    int kind;                /* how the case calls (call_kind) */
    attnops_key_pool_args a;
    vc_outcome oc;           /* of the last call_case */
    tu_rng rng;
} fixture;

static bool is_float(attnops_dtype d)
{
    return d == ATTNOPS_DTYPE_F32 || d == ATTNOPS_DTYPE_F16 || d == ATTNOPS_DTYPE_BF16;
}

/* Points the argument of tensor i at its view (NULL when absent). */
static void fx_point(fixture *fx, int i)
{
    const attnops_tensor *v = fx->t[i].block ? &fx->t[i].view : NULL;
    attnops_key_pool_args *a = &fx->a;
    switch (i) {
    case HID: a->hidden_states = v; break;
    case WK: a->wk = v; break;
    case GATE: a->gate_weight = v; break;
    case APE: a->ape = v; break;
    case CACHE: a->state_cache = v; break;
    case TABLE: a->cache_block_table = v; break;
    case START: a->start_pos = v; break;
    case NW: a->norm_weight = v; break;
    case NB: a->norm_bias = v; break;
    case COS: a->cos = v; break;
    case SIN: a->sin = v; break;
    case CU: a->cu_seqlens = v; break;
    case SEQUSED: a->seqused = v; break;
    case OUT: a->pooled_key = v; break;
    }
}

static void fx_drop(fixture *fx, int i)
{
    if (fx->t[i].block) tu_tensor_free(&fx->t[i]);
    fx_point(fx, i);
}

/* (Re)allocates tensor i with `pad` elements of row padding: pooled_key gets
 * the poison, float inputs random values, integer ones zeros. */
static void fx_set_pad(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape, int64_t pad)
{
    if (fx->t[i].block) tu_tensor_free(&fx->t[i]);
    fx->t[i] = tu_tensor_new(dtype, rank, shape, pad);
    if (i == OUT)
        tu_tensor_poison(&fx->t[i], VC_POISON);
    else if (is_float(dtype))
        tu_tensor_randn(&fx->t[i], &fx->rng, i == WK || i == GATE ? 0.25 : 1.0);
    else
        memset(vc_storage(&fx->t[i]), 0, fx->t[i].data_bytes);
    fx_point(fx, i);
}

static void fx_set(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape)
{
    fx_set_pad(fx, i, dtype, rank, shape, 0);
}

/* An integer tensor holding `vals` row-major. */
static void fx_ints(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape, const int64_t *vals)
{
    fx_set(fx, i, dtype, rank, shape);
    const int64_t n = tu_numel(&fx->t[i].view);
    for (int64_t k = 0; k < n; k++) {
        if (dtype == ATTNOPS_DTYPE_I64) ((int64_t *)vc_storage(&fx->t[i]))[k] = vals[k];
        else ((int32_t *)vc_storage(&fx->t[i]))[k] = (int32_t)vals[k];
    }
}

/* Element k (row-major) of a contiguous integer tensor. */
static int64_t ival(const tu_tensor *t, int64_t k)
{
    return t->view.dtype == ATTNOPS_DTYPE_I64 ? ((const int64_t *)t->view.data)[k]
                                              : ((const int32_t *)t->view.data)[k];
}

static void set_ival(tu_tensor *t, int64_t k, int64_t v) { ((int32_t *)vc_storage(t))[k] = (int32_t)v; }

/* ---- the contract, computed here independently of the library ---- */
typedef struct geom {
    int64_t B, S, T, D, R, L, block_num, block_size;
    int64_t start[8], len[8], n[8]; /* n: valid output rows */
} geom;

static geom geom_of(const fixture *fx)
{
    geom g;
    memset(&g, 0, sizeof g);
    const attnops_tensor *x = &fx->t[HID].view, *tab = &fx->t[TABLE].view, *c = &fx->t[CACHE].view;
    g.B = tab->shape[0], g.L = tab->shape[1], g.D = fx->t[WK].view.shape[0], g.R = fx->a.cmp_ratio;
    g.block_num = c->shape[0], g.block_size = c->shape[1];
    g.S = fx->th ? 0 : x->shape[1];
    g.T = fx->th ? x->shape[0] : g.B * g.S;
    for (int64_t b = 0; b < g.B && b < 8; b++) {
        g.start[b] = ival(&fx->t[START], b);
        g.len[b] = fx->th ? ival(&fx->t[CU], b + 1) - ival(&fx->t[CU], b) : g.S;
        g.n[b] = (g.start[b] + g.len[b]) / g.R - g.start[b] / g.R;
    }
    return g;
}

/* The shape pooled_key must have (attnops.h, attnops_key_pool_capacity). */
static int expected_shape(const fixture *fx, attnops_key_pool_capacity cap, int64_t *sh)
{
    const geom g = geom_of(fx);
    if (cap == ATTNOPS_KEY_POOL_CAPACITY_FIXED) {
        sh[0] = g.B, sh[1] = (g.L * g.block_size + g.R - 1) / g.R, sh[2] = g.D;
        return 3;
    }
    if (!fx->th) {
        sh[0] = g.B, sh[1] = (g.S + g.R - 1) / g.R, sh[2] = g.D;
        return 3;
    }
    const int64_t bound = g.T / g.R + g.B;
    sh[0] = g.T < bound ? g.T : bound, sh[1] = g.D;
    return 2;
}

/* pooled_key for the current capacity and activation dtype. */
static void fx_output(fixture *fx, int64_t pad)
{
    int64_t sh[3];
    int rank = expected_shape(fx, fx->a.capacity, sh);
    fx_set_pad(fx, OUT, fx->t[HID].view.dtype, rank, sh, pad);
}

/* Hidden states of the fixture's layout with last dimension h. */
static void fx_hidden(fixture *fx, attnops_dtype dt, int64_t h)
{
    int64_t sh[3] = {B0, S0, h}, th_sh[2] = {T0, h};
    fx_set(fx, HID, dt, fx->th ? 2 : 3, fx->th ? th_sh : sh);
}

/* Activations (hidden, wk, gate, pooled_key) in dt. */
static void fx_activations(fixture *fx, attnops_dtype dt)
{
    const int64_t w[2] = {D0, H0};
    fx_hidden(fx, dt, H0);
    fx_set(fx, WK, dt, 2, w);
    fx_set(fx, GATE, dt, 2, w);
    fx_output(fx, 0);
}

static void fx_norm(fixture *fx)
{
    const int64_t d = D0;
    fx_set(fx, NW, ATTNOPS_DTYPE_F32, 1, &d);
    fx_set(fx, NB, ATTNOPS_DTYPE_F32, 1, &d);
}

/* scope: 0 BSH, 1 TH (the suite's scopes) */
static void fx_init(void *vfx, int th, uint64_t seed)
{
    fixture *fx = vfx;
    memset(fx, 0, sizeof *fx);
    fx->th = th;
    fx->rng = tu_rng_make(seed);
    attnops_key_pool_args_init(&fx->a);
    fx->a.capacity = ATTNOPS_KEY_POOL_CAPACITY_CURRENT; /* the base; FIXED (the default) is a variant */
    fx->a.impl = ATTNOPS_IMPL_REFERENCE;
    fx->a.num_threads = 2;
    const attnops_dtype f32 = ATTNOPS_DTYPE_F32, i32 = ATTNOPS_DTYPE_I32;
    const int64_t ape[2] = {R0, D0}, cache[3] = {BLOCK_NUM0, BLOCK_SIZE0, 2 * D0}, tab[2] = {B0, L0}, b = B0,
                  b1 = B0 + 1;
    fx_set(fx, APE, f32, 2, ape);
    fx_set(fx, CACHE, f32, 3, cache);
    fx_ints(fx, TABLE, i32, 2, tab, TABLE0);
    fx_ints(fx, START, i32, 1, &b, START0);
    if (th) fx_ints(fx, CU, i32, 1, &b1, CU0);
    fx_activations(fx, ATTNOPS_DTYPE_BF16); /* last: pooled_key's shape depends on the rest */
}

/* pooled_key is the output; state_cache is read and updated. */
static vc_role role_of(const void *fx, int i) { return i == OUT ? VC_OUTPUT : i == CACHE ? VC_STATE : VC_INPUT; }
static vc_tensors tensors(fixture *fx) { return (vc_tensors){NT, fx->t, fx->snap, fx, role_of, TNAME, NULL}; }

static void fx_free(void *fx)
{
    const vc_tensors s = tensors(fx);
    vc_tensors_free(&s);
}

/* ---- calling ---- */
static attnops_status kp_query(const void *a, size_t *bytes) { return attnops_key_pool_workspace_size(a, bytes); }
static attnops_status kp_run(const void *a, void *ws, size_t bytes) { return attnops_key_pool(a, ws, bytes); }
static const vc_op KEY_POOL = {"KeyPool", kp_query, kp_run, NULL};

/* How a case calls: the vc_call kinds (VC_NULL_BYTES, VC_WS_SHORT,
 * VC_WS_NULL) and KeyPool's own. */
enum call_kind {
    K_IN = VC_CALL_KINDS, /* an input rule: workspace query, run, output_shape and valid_rows all fail */
    K_OUT,                /* an output rule: query and run fail, output_shape and valid_rows succeed */
    K_NULL_QUERY          /* output_shape with rank == NULL, valid_rows with valid_rows == NULL */
};

/* Calls the entry points as fx->kind says, expecting `want`; the outcome
 * goes to fx->oc. */
static void call_case(void *vfx, const vc_expect *e)
{
    fixture *fx = vfx;
    const attnops_status want = e->st;
    const attnops_key_pool_args *a = fx->null_args ? NULL : &fx->a;
    vc_outcome *oc = &fx->oc;
    int32_t rank = 0;
    int64_t shape[3], rows[16];
    const vc_tensors s = tensors(fx);
    vc_snapshot(&s);
    switch (fx->kind) {
    case K_IN:
    case K_OUT: {
        const attnops_status shape_want = fx->kind == K_IN ? want : ATTNOPS_SUCCESS;
        vc_call(oc, &KEY_POOL, a, VC_CALL, want);
        vc_record(oc, "output_shape", attnops_key_pool_output_shape(a, &rank, shape), shape_want);
        vc_record(oc, "valid_rows", attnops_key_pool_valid_rows(a, rows), shape_want);
        break;
    }
    case K_NULL_QUERY:
        memset(oc, 0, sizeof *oc);
        vc_record(oc, "output_shape", attnops_key_pool_output_shape(a, NULL, shape), want);
        vc_record(oc, "valid_rows", attnops_key_pool_valid_rows(a, NULL), want);
        break;
    default: vc_call(oc, &KEY_POOL, a, (vc_call_kind)fx->kind, want); break;
    }
}

/* Checks the last call against e; returns the number of problems found. */
static int verify_failure(void *vfx, const vc_expect *e)
{
    fixture *fx = vfx;
    vc_begin();
    vc_check_outcome(&fx->oc, e, KEY_POOL.name, NULL);
    const vc_tensors s = tensors(fx);
    vc_check_failed_call(&s);
    return vc_problems();
}

/* ---- the cases, in kp_validate.c's order ----
 * X(id, layouts, status, substring, also, kind) (vc_case; the scope: ANY, BSH or TH). */
enum { ANY, BSH, TH };
#define CASES(X)                                                                                                   \
    /* presence and view sanity of the required inputs */                                                         \
    X(NULL_ARGS, ANY, NUL, "argument struct", NULL, K_IN)                                                          \
    X(NULL_HIDDEN, ANY, NUL, "hidden_states", NULL, K_IN)                                                          \
    X(NULL_WK, ANY, NUL, "wk", NULL, K_IN)                                                                         \
    X(NULL_GATE, ANY, NUL, "gate_weight", NULL, K_IN)                                                              \
    X(NULL_APE, ANY, NUL, "ape", NULL, K_IN)                                                                       \
    X(NULL_CACHE, ANY, NUL, "state_cache", NULL, K_IN)                                                             \
    X(NULL_TABLE, ANY, NUL, "cache_block_table", NULL, K_IN)                                                       \
    X(NULL_START, ANY, NUL, "start_pos", NULL, K_IN)                                                               \
    X(NULL_DATA_HIDDEN, ANY, NUL, "hidden_states", "NULL data", K_IN)                                              \
    X(NEGATIVE_STRIDE_WK, ANY, INV, "wk", "negative stride", K_IN)                                                 \
    X(UNKNOWN_DTYPE_APE, ANY, INV, "ape", "unknown dtype", K_IN)                                                   \
    /* attributes (rules 1-3) and execution options */                                                            \
    X(CMP_RATIO_0, ANY, INV, "cmp_ratio", "cmp_ratio=0", K_IN)                                                     \
    X(CMP_RATIO_1, ANY, INV, "cmp_ratio", "cmp_ratio=1", K_IN)                                                     \
    X(CMP_RATIO_3, ANY, INV, "cmp_ratio", "cmp_ratio=3", K_IN)                                                     \
    X(CMP_RATIO_256, ANY, INV, "cmp_ratio", "cmp_ratio=256", K_IN)                                                 \
    X(NORM_EPS_0, ANY, INV, "norm_eps", NULL, K_IN)                                                                \
    X(NORM_EPS_NEGATIVE, ANY, INV, "norm_eps", NULL, K_IN)                                                         \
    X(NORM_EPS_NAN, ANY, INV, "norm_eps", NULL, K_IN)                                                              \
    X(ROTARY_MODE_2, ANY, INV, "rotary_mode", "2", K_IN)                                                           \
    X(CAPACITY_5, ANY, INV, "capacity", "5", K_IN)                                                                 \
    X(IMPL_BENCHMARK, ANY, INV, "impl", NULL, K_IN)                                                                \
    X(NUM_THREADS_NEGATIVE, ANY, INV, "num_threads", "-1", K_IN)                                                   \
    /* dtypes (rules 4-5) */                                                                                      \
    X(HIDDEN_F32, ANY, INV, "hidden_states", "f32", K_IN)                                                          \
    X(WK_DTYPE, ANY, INV, "wk", "f16", K_IN)                                                                       \
    X(GATE_DTYPE, ANY, INV, "gate_weight", "f16", K_IN)                                                            \
    X(APE_F16, ANY, INV, "ape", "f16", K_IN)                                                                       \
    X(CACHE_BF16, ANY, INV, "state_cache", "bf16", K_IN)                                                           \
    X(TABLE_I64, ANY, INV, "cache_block_table", "i64", K_IN)                                                       \
    X(START_I64, ANY, INV, "start_pos", "i64", K_IN)                                                               \
    /* ranks and shapes (rules 6-12) */                                                                           \
    X(HIDDEN_RANK_4, ANY, INV, "hidden_states", "rank", K_IN)                                                      \
    X(WK_RANK_3, ANY, INV, "wk", "[4, 16, 1]", K_IN)                                                               \
    X(GATE_SHAPE, ANY, INV, "gate_weight", "[3, 16]", K_IN)                                                        \
    X(D_ZERO, ANY, INV, "wk", "[0, 16]", K_IN)                                                                     \
    X(H_MISMATCH, ANY, INV, "hidden_states", "wk.shape[1]", K_IN)                                                  \
    X(APE_SHAPE, ANY, INV, "ape", "[4, 5]", K_IN)                                                                  \
    X(CACHE_LAST_DIM, ANY, INV, "state_cache", "2*D", K_IN)                                                        \
    X(CACHE_RANK_2, ANY, INV, "state_cache", "[7, 32]", K_IN)                                                      \
    X(TABLE_RANK_1, ANY, INV, "cache_block_table", "[6]", K_IN)                                                    \
    X(START_LENGTH, ANY, INV, "start_pos", "[3]", K_IN)                                                            \
    /* optional inputs (rules 14-16) */                                                                           \
    X(ONLY_NORM_WEIGHT, ANY, INV, "norm_weight", "only norm_weight", K_IN)                                         \
    X(ONLY_NORM_BIAS, ANY, INV, "norm_bias", "only norm_bias", K_IN)                                               \
    X(NORM_WEIGHT_F16, ANY, INV, "norm_weight", "f16", K_IN)                                                       \
    X(NORM_WEIGHT_SHAPE, ANY, INV, "norm_weight", "[5]", K_IN)                                                     \
    X(NORM_BIAS_SHAPE, ANY, INV, "norm_bias", "[4, 1]", K_IN)                                                      \
    X(ONLY_COS, ANY, INV, "cos", "only cos", K_IN)                                                                 \
    X(ONLY_SIN, ANY, INV, "sin", "only sin", K_IN)                                                                 \
    X(COS_AND_SIN, ANY, UNS, "RoPE is reserved but not implemented", "cos", K_IN)                                  \
    X(SEQUSED, ANY, INV, "seqused", NULL, K_IN)                                                                    \
    /* layout and lengths (rules 17-18) */                                                                        \
    X(BSH_WITH_CU_SEQLENS, BSH, INV, "cu_seqlens", "BSH", K_IN)                                                    \
    X(TABLE_BATCH, BSH, INV, "cache_block_table", "3 rows vs B = 2", K_IN)                                         \
    X(TH_WITHOUT_CU_SEQLENS, TH, NUL, "cu_seqlens", "TH", K_IN)                                                    \
    X(CU_SEQLENS_I64, TH, INV, "cu_seqlens", "i64", K_IN)                                                          \
    X(CU_SEQLENS_LENGTH, TH, INV, "cu_seqlens", "[B+1]", K_IN)                                                     \
    X(CU_SEQLENS_FIRST, TH, INV, "cu_seqlens[0]", "got 1", K_IN)                                                   \
    X(CU_SEQLENS_DECREASING, TH, INV, "cu_seqlens", "non-decreasing", K_IN)                                        \
    X(CU_SEQLENS_LAST, TH, INV, "cu_seqlens[-1]", "got 6", K_IN)                                                   \
    /* positions, table and cache capacity (rules 19-23) */                                                       \
    X(START_NEGATIVE, ANY, INV, "start_pos", "start_pos[1] = -1", K_IN)                                            \
    X(TABLE_NEGATIVE, ANY, INV, "cache_block_table", "[1, 2] = -1", K_IN)                                          \
    X(BLOCK_NUM_0, ANY, INV, "state_cache", "empty", K_IN)                                                         \
    X(BLOCK_SIZE_0, ANY, INV, "state_cache", "empty", K_IN)                                                        \
    X(TABLE_OUT_OF_RANGE_UNUSED, ANY, INV, "out-of-range", "[1, 2] = 7", K_IN)                                     \
    X(OVER_CAPACITY, ANY, INV, "capacity", "batch 0", K_IN)                                                        \
    X(BLOCK_0_USED, ANY, INV, "physical block 0", "cache_block_table[0, 1]", K_IN)                                 \
    /* pooled_key and state_cache as outputs (the shape queries ignore them) */                                   \
    X(NULL_POOLED_KEY, ANY, NUL, "pooled_key", NULL, K_OUT)                                                        \
    X(NULL_DATA_POOLED_KEY, ANY, NUL, "pooled_key", "NULL data", K_OUT)                                            \
    X(POOLED_KEY_DTYPE, ANY, INV, "pooled_key", "f16", K_OUT)                                                      \
    X(POOLED_KEY_SHAPE_CURRENT, ANY, INV, "pooled_key", "current-input capacity", K_OUT)                           \
    X(POOLED_KEY_SHAPE_FIXED, ANY, INV, "pooled_key", "fixed capacity", K_OUT)                                     \
    X(POOLED_KEY_ZERO_STRIDE, ANY, INV, "pooled_key", "overlap", K_OUT)                                            \
    X(POOLED_KEY_IN_STATE_CACHE, ANY, INV, "pooled_key", "state_cache", K_OUT)                                     \
    X(STATE_CACHE_ZERO_STRIDE, ANY, INV, "state_cache", "overlap", K_OUT)                                          \
    /* the entry points' own pointers and the workspace */                                                        \
    X(NULL_WORKSPACE_BYTES, ANY, NUL, "workspace_bytes", NULL, VC_NULL_BYTES)                                      \
    X(NULL_QUERY_OUTPUTS, ANY, NUL, "is NULL", NULL, K_NULL_QUERY)                                                 \
    X(WORKSPACE_SHORT, ANY, INV, "workspace", NULL, VC_WS_SHORT)                                                   \
    X(WORKSPACE_NULL, ANY, NUL, "workspace", NULL, VC_WS_NULL)

enum { CASES(VC_CASE_ENUM) N_CASES };
static const vc_case CASE[N_CASES] = {CASES(VC_CASE_ROW)};

/* Breaks the one thing case c is about in a freshly built fixture (always possible). */
static bool apply_case(void *vfx, int c, vc_expect *e)
{
    (void)e; /* every row holds in every scope */
    fixture *fx = vfx;
    const attnops_dtype f32 = ATTNOPS_DTYPE_F32, f16 = ATTNOPS_DTYPE_F16, bf16 = ATTNOPS_DTYPE_BF16,
                        i32 = ATTNOPS_DTYPE_I32, i64 = ATTNOPS_DTYPE_I64;
    attnops_key_pool_args *a = &fx->a;
    const attnops_tensor *x = &fx->t[HID].view;
    fx->kind = CASE[c].kind;
    switch (c) {
    case C_NULL_ARGS: fx->null_args = true; break;
    case C_NULL_HIDDEN: a->hidden_states = NULL; break;
    case C_NULL_WK: a->wk = NULL; break;
    case C_NULL_GATE: a->gate_weight = NULL; break;
    case C_NULL_APE: a->ape = NULL; break;
    case C_NULL_CACHE: a->state_cache = NULL; break;
    case C_NULL_TABLE: a->cache_block_table = NULL; break;
    case C_NULL_START: a->start_pos = NULL; break;
    case C_NULL_DATA_HIDDEN: fx->alt = *x, fx->alt.data = NULL, a->hidden_states = &fx->alt; break;
    case C_NEGATIVE_STRIDE_WK: fx->alt = fx->t[WK].view, fx->alt.strides[1] = -1, a->wk = &fx->alt; break;
    case C_UNKNOWN_DTYPE_APE: fx->alt = fx->t[APE].view, fx->alt.dtype = (attnops_dtype)99, a->ape = &fx->alt; break;

    /* the ape shape [cmp_ratio, D] is checked later: only the attribute rule fires */
    case C_CMP_RATIO_0: a->cmp_ratio = 0; break;
    case C_CMP_RATIO_1: a->cmp_ratio = 1; break;
    case C_CMP_RATIO_3: a->cmp_ratio = 3; break;
    case C_CMP_RATIO_256: a->cmp_ratio = 256; break;
    case C_NORM_EPS_0: a->norm_eps = 0.0; break;
    case C_NORM_EPS_NEGATIVE: a->norm_eps = -1.0; break;
    case C_NORM_EPS_NAN: a->norm_eps = NAN; break;
    case C_ROTARY_MODE_2: a->rotary_mode = 2; break;
    case C_CAPACITY_5: a->capacity = (attnops_key_pool_capacity)5; break;
    case C_IMPL_BENCHMARK: a->impl = ATTNOPS_IMPL_BENCHMARK; break;
    case C_NUM_THREADS_NEGATIVE: a->num_threads = -1; break;

    /* hidden_states decides the activation dtype: wk, gate_weight and
     * pooled_key then disagree too, but hidden_states is checked first */
    case C_HIDDEN_F32: fx_hidden(fx, f32, H0); break;
    case C_WK_DTYPE: fx_set(fx, WK, f16, 2, (int64_t[]){D0, H0}); break;
    case C_GATE_DTYPE: fx_set(fx, GATE, f16, 2, (int64_t[]){D0, H0}); break;
    case C_APE_F16: fx_set(fx, APE, f16, 2, (int64_t[]){R0, D0}); break;
    case C_CACHE_BF16: fx_set(fx, CACHE, bf16, 3, (int64_t[]){BLOCK_NUM0, BLOCK_SIZE0, 2 * D0}); break;
    case C_TABLE_I64: fx_ints(fx, TABLE, i64, 2, (int64_t[]){B0, L0}, TABLE0); break;
    case C_START_I64: fx_ints(fx, START, i64, 1, (int64_t[]){B0}, START0); break;

    case C_HIDDEN_RANK_4: { /* leading ones: [1, 2, 5, 16] or [1, 1, 7, 16] */
        int64_t sh[4] = {1, 1, 1, 1};
        memcpy(sh + 4 - x->rank, x->shape, (size_t)x->rank * sizeof(int64_t));
        fx_set(fx, HID, bf16, 4, sh);
        break;
    }
    case C_WK_RANK_3: fx_set(fx, WK, bf16, 3, (int64_t[]){D0, H0, 1}); break;
    case C_GATE_SHAPE: fx_set(fx, GATE, bf16, 2, (int64_t[]){D0 - 1, H0}); break;
    case C_D_ZERO: /* both projections [0, H]: they agree, D = 0 is the only fault */
        fx_set(fx, WK, bf16, 2, (int64_t[]){0, H0});
        fx_set(fx, GATE, bf16, 2, (int64_t[]){0, H0});
        break;
    case C_H_MISMATCH: fx_hidden(fx, bf16, H0 / 2); break;
    case C_APE_SHAPE: fx_set(fx, APE, f32, 2, (int64_t[]){R0, D0 + 1}); break;
    case C_CACHE_LAST_DIM: fx_set(fx, CACHE, f32, 3, (int64_t[]){BLOCK_NUM0, BLOCK_SIZE0, 2 * D0 - 2}); break;
    case C_CACHE_RANK_2: fx_set(fx, CACHE, f32, 2, (int64_t[]){BLOCK_NUM0, BLOCK_SIZE0 * 2 * D0}); break;
    case C_TABLE_RANK_1: fx_ints(fx, TABLE, i32, 1, (int64_t[]){B0 * L0}, TABLE0); break;
    case C_START_LENGTH: fx_ints(fx, START, i32, 1, (int64_t[]){B0 + 1}, (int64_t[]){3, 0, 0}); break;

    case C_ONLY_NORM_WEIGHT: fx_norm(fx), fx_drop(fx, NB); break;
    case C_ONLY_NORM_BIAS: fx_norm(fx), fx_drop(fx, NW); break;
    case C_NORM_WEIGHT_F16: fx_norm(fx), fx_set(fx, NW, f16, 1, (int64_t[]){D0}); break;
    case C_NORM_WEIGHT_SHAPE: fx_norm(fx), fx_set(fx, NW, f32, 1, (int64_t[]){D0 + 1}); break;
    case C_NORM_BIAS_SHAPE: fx_norm(fx), fx_set(fx, NB, f32, 2, (int64_t[]){D0, 1}); break;
    case C_ONLY_COS: fx_set(fx, COS, bf16, 2, (int64_t[]){T0, D0}); break;
    case C_ONLY_SIN: fx_set(fx, SIN, bf16, 2, (int64_t[]){T0, D0}); break;
    case C_COS_AND_SIN: /* a well-formed pair: the request is valid, RoPE is not implemented */
        fx_set(fx, COS, bf16, 2, (int64_t[]){T0, D0});
        fx_set(fx, SIN, bf16, 2, (int64_t[]){T0, D0});
        break;
    case C_SEQUSED: fx_ints(fx, SEQUSED, i32, 1, (int64_t[]){B0}, (int64_t[]){S0, S0}); break;

    case C_BSH_WITH_CU_SEQLENS: fx_ints(fx, CU, i32, 1, (int64_t[]){B0 + 1}, (int64_t[]){0, S0, 2 * S0}); break;
    case C_TABLE_BATCH: /* 3 table rows and 3 start positions for B = 2 */
        fx_ints(fx, TABLE, i32, 2, (int64_t[]){B0 + 1, L0}, (int64_t[]){1, 2, 3, 4, 5, 6, 1, 2, 3});
        fx_ints(fx, START, i32, 1, (int64_t[]){B0 + 1}, (int64_t[]){3, 0, 0});
        break;
    case C_TH_WITHOUT_CU_SEQLENS: fx_drop(fx, CU); break;
    case C_CU_SEQLENS_I64: fx_ints(fx, CU, i64, 1, (int64_t[]){B0 + 1}, CU0); break;
    case C_CU_SEQLENS_LENGTH: fx_ints(fx, CU, i32, 1, (int64_t[]){B0 + 2}, (int64_t[]){0, 3, 5, 7}); break;
    case C_CU_SEQLENS_FIRST: set_ival(&fx->t[CU], 0, 1); break;
    case C_CU_SEQLENS_DECREASING: set_ival(&fx->t[CU], 1, T0 + 1); break; /* [0, 8, 7]: the end is right */
    case C_CU_SEQLENS_LAST: set_ival(&fx->t[CU], 2, T0 - 1); break;

    /* the table's third column is unused (every batch ends by position 8) */
    case C_START_NEGATIVE: set_ival(&fx->t[START], 1, -1); break;
    case C_TABLE_NEGATIVE: set_ival(&fx->t[TABLE], 1 * L0 + 2, -1); break;
    case C_BLOCK_NUM_0: fx_set(fx, CACHE, f32, 3, (int64_t[]){0, BLOCK_SIZE0, 2 * D0}); break;
    case C_BLOCK_SIZE_0: fx_set(fx, CACHE, f32, 3, (int64_t[]){BLOCK_NUM0, 0, 2 * D0}); break;
    case C_TABLE_OUT_OF_RANGE_UNUSED: set_ival(&fx->t[TABLE], 1 * L0 + 2, BLOCK_NUM0); break;
    case C_OVER_CAPACITY: set_ival(&fx->t[START], 0, 10); break; /* ends at 15 (BSH) or 13 (TH) > 12 */
    case C_BLOCK_0_USED: set_ival(&fx->t[TABLE], 0 * L0 + 1, 0); break; /* batch 0 ends at 8 (BSH) or 6 (TH) */

    case C_NULL_POOLED_KEY: a->pooled_key = NULL; break;
    case C_NULL_DATA_POOLED_KEY: fx->alt = fx->t[OUT].view, fx->alt.data = NULL, a->pooled_key = &fx->alt; break;
    case C_POOLED_KEY_DTYPE: {
        int64_t sh[3];
        int rank = expected_shape(fx, a->capacity, sh);
        fx_set(fx, OUT, f16, rank, sh);
        break;
    }
    case C_POOLED_KEY_SHAPE_CURRENT: { /* one row too many */
        int64_t sh[3];
        int rank = expected_shape(fx, a->capacity, sh);
        sh[rank - 2]++;
        fx_set(fx, OUT, bf16, rank, sh);
        break;
    }
    case C_POOLED_KEY_SHAPE_FIXED: a->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED; break; /* keeps CURRENT's shape */
    case C_POOLED_KEY_ZERO_STRIDE: fx->t[OUT].view.strides[fx->t[OUT].view.rank - 2] = 0; break;
    case C_POOLED_KEY_IN_STATE_CACHE: /* the right shape and dtype, inside the cache's bytes */
        fx->alt = fx->t[OUT].view, fx->alt.data = vc_storage(&fx->t[CACHE]) + 64, a->pooled_key = &fx->alt;
        break;
    case C_STATE_CACHE_ZERO_STRIDE: fx->t[CACHE].view.strides[1] = 0; break;
    }
    return true;
}

static bool applies(const vc_case *c, int scope) { return c->scope == ANY || c->scope == scope + 1; }

static fixture case_fixture;
static const vc_suite SUITE = {CASE, N_CASES, 2, (const char *const[]){"BSH", "TH"}, applies, &case_fixture,
                               fx_init, apply_case, call_case, verify_failure, fx_free, NULL};

/* ---- the checker must be able to fail ---- */
static void run_checker_self_test(void)
{
    fixture fx;

    /* a NULL hidden_states: 161001 naming it */
    fx_init(&fx, false, 11);
    apply_case(&fx, C_NULL_HIDDEN, NULL);
    vc_self_test(&(vc_subject){
        .suite = &SUITE, .ctx = &fx, .right = CASE[C_NULL_HIDDEN].e,
        .wrong_st = INV, .wrong_name = "gate_weight", .wrong_also = "cmp_ratio=3",
        .tamper = {{vc_storage(&fx.t[OUT]) + 5, 0xFF, "a written pooled_key byte", NULL},
                   {vc_storage(&fx.t[CACHE]) + 100, 0x01, "a changed state_cache byte", NULL},
                   {vc_canary_byte(&fx.t[WK], 3), 0xFF, "a broken canary",
                    "the canary complaint about 'wk' that follows is intended"}}});
    fx_free(&fx);

    /* an output rule checked as an input rule: the shape queries succeed */
    const vc_subject other = {.suite = &SUITE, .ctx = &fx};
    fx_init(&fx, true, 12);
    apply_case(&fx, C_POOLED_KEY_DTYPE, NULL);
    fx.kind = K_IN;
    vc_self_test_wrong(&other, &CASE[C_POOLED_KEY_DTYPE].e, "shape queries that (rightly) succeed");
    fx_free(&fx);

    /* a valid call expected to fail: wrong statuses, outputs written */
    fx_init(&fx, true, 13);
    fx.kind = K_IN;
    vc_self_test_wrong(&other, &(vc_expect){INV, "cmp_ratio", NULL}, "a valid call");
    fx_free(&fx);
    printf("checker self-test done\n");
}

/* ---- valid calls ---- */
#define VARIANTS(X)                                                                                                \
    X(BASE, ANY)                    /* CURRENT capacity, bf16, impl REFERENCE */                                    \
    X(FIXED, ANY)                   /* legacy fixed capacity [B, ceil(L*block_size/R), D] */                        \
    X(NORM, ANY)                    /* norm_weight and norm_bias */                                                 \
    X(NORM_FIXED, ANY)                                                                                             \
    X(F16, ANY)                     /* f16 activations */                                                           \
    X(F16_FIXED, ANY)                                                                                              \
    X(CACHE_STRIDED, ANY)           /* state_cache stride[0] = (block_size+1)*2D */                                 \
    X(POOLED_KEY_STRIDED, ANY)      /* padded pooled_key rows */                                                    \
    X(ROTARY_MODE_0, ANY)                                                                                          \
    X(IMPL_AUTO, ANY)                                                                                              \
    X(IMPL_CPU, ANY)                                                                                               \
    X(THREADS_DEFAULT, ANY)         /* num_threads 0 */                                                             \
    X(BLOCK_0_UNUSED, ANY)          /* physical block 0 in a column no batch uses */                                \
    X(CMP_RATIO_2, ANY)             /* another R: ape [2, D], more groups */                                        \
    X(TH_EMPTY_BATCH, TH)           /* cu_seqlens [0, 0, 7] */

#define AS_VENUM(id, lay) V_##id,
enum { VARIANTS(AS_VENUM) N_VARIANTS };
#define AS_VROW(id, lay) {#id, lay},
static const struct {
    const char *name;
    int layouts;
} VARIANT[N_VARIANTS] = {VARIANTS(AS_VROW)};

static void apply_variant(fixture *fx, int v)
{
    attnops_key_pool_args *a = &fx->a;
    switch (v) {
    case V_BASE: break;
    case V_FIXED: a->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED, fx_output(fx, 0); break;
    case V_NORM: fx_norm(fx); break;
    case V_NORM_FIXED: fx_norm(fx), a->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED, fx_output(fx, 0); break;
    case V_F16: fx_activations(fx, ATTNOPS_DTYPE_F16); break;
    case V_F16_FIXED:
        a->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED;
        fx_activations(fx, ATTNOPS_DTYPE_F16);
        break;
    case V_CACHE_STRIDED: /* storage [block_num, block_size + 1, 2D], view [.., block_size, ..] */
        fx_set(fx, CACHE, ATTNOPS_DTYPE_F32, 3, (int64_t[]){BLOCK_NUM0, BLOCK_SIZE0 + 1, 2 * D0});
        fx->t[CACHE].view.shape[1] = BLOCK_SIZE0;
        break;
    case V_POOLED_KEY_STRIDED: fx_output(fx, 3); break;
    case V_ROTARY_MODE_0: a->rotary_mode = 0; break;
    case V_IMPL_AUTO: a->impl = ATTNOPS_IMPL_AUTO; break;
    case V_IMPL_CPU: a->impl = ATTNOPS_IMPL_CPU; break;
    case V_THREADS_DEFAULT: a->num_threads = 0; break;
    case V_BLOCK_0_UNUSED: set_ival(&fx->t[TABLE], 0 * L0 + 2, 0); break;
    case V_CMP_RATIO_2:
        a->cmp_ratio = 2;
        fx_set(fx, APE, ATTNOPS_DTYPE_F32, 2, (int64_t[]){2, D0});
        fx_output(fx, 0);
        break;
    case V_TH_EMPTY_BATCH: set_ival(&fx->t[CU], 1, 0), fx_output(fx, 0); break;
    }
}

/* pooled_key after a successful run: CURRENT writes exactly the valid rows
 * (batch b's first n[b] rows; TH packs all batches' rows from row 0) and
 * leaves every other byte as it was; FIXED writes every row, zeros past
 * the valid ones.  Padding bytes are never written. */
static void check_pooled_key(const fixture *fx, const geom *g)
{
    const tu_tensor *t = &fx->t[OUT];
    const attnops_tensor *v = &t->view;
    const bool fixed = fx->a.capacity == ATTNOPS_KEY_POOL_CAPACITY_FIXED, packed = v->rank == 2;
    const size_t es = attnops_dtype_size(v->dtype);
    int64_t total = 0;
    for (int64_t b = 0; b < g->B; b++) total += g->n[b];
    int64_t bad_unwritten = 0, bad_written = 0, bad_nonzero = 0;
    const int64_t nb = packed ? 1 : v->shape[0], rows = v->shape[v->rank - 2];
    for (int64_t b = 0; b < nb; b++)
        for (int64_t r = 0; r < rows; r++) {
            const bool valid = packed ? r < total : r < g->n[b];
            for (int64_t d = 0; d < g->D; d++) {
                const int64_t off = packed ? r * v->strides[0] + d * v->strides[1]
                                           : b * v->strides[0] + r * v->strides[1] + d * v->strides[2];
                const unsigned char *e = (const unsigned char *)v->data + off * (int64_t)es;
                const bool written = !vc_poisoned(e, es);
                const uint16_t bits = (uint16_t)(e[0] | e[1] << 8);
                const float val = v->dtype == ATTNOPS_DTYPE_F16 ? attnops_f16_to_f32(bits) : attnops_bf16_to_f32(bits);
                if ((valid || fixed) && !written) bad_unwritten++;
                if (!valid && !fixed && written) bad_written++;
                if (!valid && fixed && val != 0.0f) bad_nonzero++;
            }
        }
    const int64_t bad_pad = vc_padding_changed(t, NULL);
    VC_EXPECT(bad_unwritten == 0, "pooled_key: %lld elements that must be written were not", (long long)bad_unwritten);
    VC_EXPECT(bad_written == 0, "pooled_key: %lld elements past the valid rows were written (CURRENT)",
              (long long)bad_written);
    VC_EXPECT(bad_nonzero == 0, "pooled_key: %lld elements past the valid rows are not zero (FIXED)",
              (long long)bad_nonzero);
    VC_EXPECT(bad_pad == 0, "pooled_key: %lld padding bytes written", (long long)bad_pad);
}

/* state_cache after a successful run: exactly the cache rows of the trailing
 * incomplete group's current tokens changed (positions max(st, end - end % R)
 * .. end - 1 of each batch); every other row, physical block 0 and the
 * padding between blocks are byte-for-byte as before. */
static void check_cache(const fixture *fx, const geom *g)
{
    const tu_tensor *t = &fx->t[CACHE];
    const attnops_tensor *v = &t->view;
    bool *row_written = calloc((size_t)(g->block_num * g->block_size), 1);
    for (int64_t b = 0; b < g->B; b++) {
        const int64_t st = g->start[b], end = st + g->len[b], tail = end % g->R;
        for (int64_t pos = end - tail > st ? end - tail : st; tail && pos < end; pos++) {
            const int64_t block = ival(&fx->t[TABLE], b * g->L + pos / g->block_size);
            row_written[block * g->block_size + pos % g->block_size] = true;
        }
    }
    int64_t bad_kept = 0, bad_changed = 0;
    for (int64_t blk = 0; blk < g->block_num; blk++)
        for (int64_t s = 0; s < g->block_size; s++) {
            bool changed = false;
            for (int64_t c = 0; c < 2 * g->D; c++) {
                const int64_t off = (blk * v->strides[0] + s * v->strides[1] + c * v->strides[2]) * 4;
                changed |= memcmp(vc_storage(t) + off, fx->snap[CACHE] + off, 4) != 0;
            }
            if (row_written[blk * g->block_size + s] && !changed) bad_kept++;
            if (!row_written[blk * g->block_size + s] && changed) bad_changed++;
        }
    free(row_written);
    const int64_t bad_pad = vc_padding_changed(t, fx->snap[CACHE]);
    VC_EXPECT(bad_kept == 0, "state_cache: %lld tail rows not written", (long long)bad_kept);
    VC_EXPECT(bad_changed == 0, "state_cache: %lld rows changed that are no trailing group's", (long long)bad_changed);
    VC_EXPECT(bad_pad == 0, "state_cache: %lld padding bytes changed", (long long)bad_pad);
}

static int run_success_cases(void)
{
    int passed = 0, ran = 0;
    for (int layout = BSH; layout <= TH; layout++) {
        for (int v = 0; v < N_VARIANTS; v++) {
            if (VARIANT[v].layouts != ANY && VARIANT[v].layouts != layout) continue;
            const int before = tu_failures;
            fixture fx;
            fx_init(&fx, layout == TH, tu_suite_seed() + 1000 + (uint64_t)v);
            apply_variant(&fx, v);
            vc_label("%s success %s", layout == TH ? "TH" : "BSH", VARIANT[v].name);
            ran++;
            const geom g = geom_of(&fx);

            int32_t rank = 0;
            int64_t shape[3] = {0, 0, 0}, want[3] = {0, 0, 0}, rows[8];
            const int want_rank = expected_shape(&fx, fx.a.capacity, want);
            attnops_status st = attnops_key_pool_output_shape(&fx.a, &rank, shape);
            VC_EXPECT(st == 0, "output_shape: %d %s", (int)st, attnops_last_error());
            bool same = rank == want_rank;
            for (int i = 0; same && i < rank; i++) same = shape[i] == want[i];
            VC_EXPECT(same, "output_shape: rank %d [%lld, %lld, %lld], expected rank %d [%lld, %lld, %lld]", (int)rank,
                      (long long)shape[0], (long long)shape[1], (long long)shape[2], want_rank, (long long)want[0],
                      (long long)want[1], (long long)want[2]);
            st = attnops_key_pool_valid_rows(&fx.a, rows);
            VC_EXPECT(st == 0, "valid_rows: %d %s", (int)st, attnops_last_error());
            for (int64_t b = 0; st == 0 && b < g.B; b++)
                VC_EXPECT(rows[b] == g.n[b], "valid_rows[%lld] = %lld, expected floor((%lld+%lld)/%lld) - "
                          "floor(%lld/%lld) = %lld", (long long)b, (long long)rows[b], (long long)g.start[b],
                          (long long)g.len[b], (long long)g.R, (long long)g.start[b], (long long)g.R,
                          (long long)g.n[b]);

            const vc_tensors s = tensors(&fx);
            if (vc_check_valid_run(&KEY_POOL, &fx.a, &s) == ATTNOPS_SUCCESS) {
                check_pooled_key(&fx, &g);
                check_cache(&fx, &g);
            }
            fx_free(&fx);
            if (tu_failures == before) passed++;
        }
    }
    printf("success cases: %d of %d as expected\n", passed, ran);
    return passed;
}

int main(void)
{
    /* the failure cases run with vc_call's workspace: it must suffice for the base problems */
    for (int th = 0; th < 2; th++) {
        fixture fx;
        fx_init(&fx, th, 1);
        vc_label("%s base problem", th ? "TH" : "BSH");
        vc_check_workspace_fits(&KEY_POOL, &fx.a);
        fx_free(&fx);
    }
    vc_run_failure_cases(&SUITE);
    run_checker_self_test();
    run_success_cases();
    return vc_summary("keypool_validation");
}
