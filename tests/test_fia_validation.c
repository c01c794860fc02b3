/* Argument validation of FusedInferAttentionScore (docs/FIA.md
 * "Validation" and the contract in attnops.h): one failure case per refusal
 * site of the library, so that deleting any rule fails this test.
 *
 * Every case starts from one of three small valid problems (B=2, N1=4, N2=2,
 * D=16, f32, impl AUTO, softmax_lse with softmax_lse_flag):
 *   DEC  a decode step (S1=1, BSH) over a paged cache [7 blocks, 4, N2*D]
 *        with block_table {1,2,3},{4,5,6} and actual_seq_lengths_kv {9, 5},
 *   PRM  a prompt (S1=5, BSH) over a contiguous cache (S2=7, Dv=8),
 *   TND  a prompt in TND: query [7, 4, 16], key [11, 2, 16], value
 *        [11, 2, 8], cumulative lengths {3, 7} and {5, 11},
 * and breaks one rule: CASES is the table, one row per refusal site in
 * src/fia/fia_validate.c, src/fia/fia_antiquant.c and src/api/fia_api.c in
 * source order (the comment above a group names the function), each with the
 * edits of the valid call, the exact status and words of the sentence that
 * only that site writes.  Rows tagged ALSO are more forms of the site above
 * them (another argument of the same loop, another sentence of a shared
 * check).  For the workspace query and the run it checks (the shared checker,
 * tests/support/validation_check.h)
 *   - the exact status code,
 *   - attnops_last_error(): one sentence "FusedInferAttentionScore: ... ."
 *     holding the row's words,
 *   - that no output byte was written (outputs are poisoned before the
 *     call), no input byte changed and every canary is intact.
 * The valid variants (VARIANTS: paged rank 4 and NZ caches, int8 in the
 * separate and combined forms, MLA rope, masks, pse_shift, ALiBi, a sink,
 * lengths, BNSD_BSND, the tiled route) must succeed with status 0
 * and every element of attention_out and softmax_lse written.
 *
 * Site coverage: the test counts the refusal sites (`ao_fail(` and
 * `ao_check_<what>(` calls) in those three files (argv[1]: the source root)
 * and fails unless each file has exactly as many rows tagged with it: a new
 * rule without a row fails here.  The checker also runs in an inverted mode
 * on deliberately wrong expectations and must report a mismatch each time.
 * ATTNOPS_TEST_VERBOSE=1 prints every sentence.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "validation_check.h"

#define OP_NAME "FusedInferAttentionScore"
#define NUL ATTNOPS_ERR_NULLPTR
#define INV ATTNOPS_ERR_PARAM_INVALID
#define UNS ATTNOPS_ERR_UNSUPPORTED

/* ---- the fixture ---- */
enum {
    Q, K, V, OUT, LSE, PSE, MASK, SEQ_Q, SEQ_KV, TABLE, QROPE, KROPE, KAS, KAO, VAS, VAO, AS, AO, SLOPES, SINK,
    SPARE, /* bound by POINT to one of the arguments attnops leaves out */
    NT
};
static const char *const TNAME[NT] = {
    "query", "key", "value", "attention_out", "softmax_lse", "pse_shift", "atten_mask", "actual_seq_lengths",
    "actual_seq_lengths_kv", "block_table", "query_rope", "key_rope", "key_antiquant_scale", "key_antiquant_offset",
    "value_antiquant_scale", "value_antiquant_offset", "antiquant_scale", "antiquant_offset", "alibi_slopes",
    "learnable_sink", "spare"};
#define AT(field) offsetof(attnops_fia_args, field)
static const size_t SLOT[NT] = {
    AT(query), AT(key), AT(value), AT(attention_out), AT(softmax_lse), AT(pse_shift), AT(atten_mask),
    AT(actual_seq_lengths), AT(actual_seq_lengths_kv), AT(block_table), AT(query_rope), AT(key_rope),
    AT(key_antiquant_scale), AT(key_antiquant_offset), AT(value_antiquant_scale), AT(value_antiquant_offset),
    AT(antiquant_scale), AT(antiquant_offset), AT(alibi_slopes), AT(learnable_sink), 0 /* SPARE: none */};

enum { DEC, PRM, TND, N_BASES }; /* the base problems: a case's scope */
static const char *const BASE_NAME[N_BASES] = {"DEC", "PRM", "TND"};

typedef struct fixture {
    tu_tensor t[NT];
    unsigned char *snap[NT];
    /* what an edit of a view (data, strides, shape, rank, dtype) changes: a
     * copy the argument points at, so that the checker's t[i] stays whole */
    attnops_tensor edited[NT];
    attnops_fia_args a;
    vc_outcome oc;
    int kind; /* how call_case calls: a vc_call_kind or K_NULL_ARGS */
    tu_rng rng;
} fixture;

enum { K_NULL_ARGS = VC_CALL_KINDS }; /* both phases with args == NULL */

static const attnops_tensor **slot(fixture *fx, int i)
{
    return (const attnops_tensor **)((unsigned char *)&fx->a + SLOT[i]);
}

static bool is_output(int i) { return i == OUT || i == LSE; }
static bool is_float(attnops_dtype d)
{
    return d == ATTNOPS_DTYPE_F32 || d == ATTNOPS_DTYPE_F16 || d == ATTNOPS_DTYPE_BF16;
}

/* (Re)allocates tensor i and points its argument at it: outputs poisoned,
 * float inputs random, the others zero (no mask, block 0, length 0). */
static void fx_set(fixture *fx, int i, attnops_dtype dt, int rank, const int64_t *shape)
{
    if (fx->t[i].block) tu_tensor_free(&fx->t[i]);
    fx->t[i] = tu_tensor_new(dt, rank, shape, 0);
    if (is_output(i)) tu_tensor_poison(&fx->t[i], VC_POISON);
    else if (is_float(dt)) tu_tensor_randn(&fx->t[i], &fx->rng, 1.0);
    else memset(vc_storage(&fx->t[i]), 0, fx->t[i].data_bytes);
    if (i != SPARE) *slot(fx, i) = &fx->t[i].view;
}

/* Element k of an integer tensor (flat, contiguous). */
static void set_int(tu_tensor *t, int64_t k, int64_t v)
{
    if (t->view.dtype == ATTNOPS_DTYPE_I64) ((int64_t *)t->view.data)[k] = v;
    else if (t->view.dtype == ATTNOPS_DTYPE_I32) ((int32_t *)t->view.data)[k] = (int32_t)v;
    else if (t->view.dtype == ATTNOPS_DTYPE_F32) ((float *)t->view.data)[k] = (float)v;
}

static void fx_list(fixture *fx, int i, attnops_dtype dt, int64_t n, const int64_t *vals)
{
    fx_set(fx, i, dt, 1, &n);
    for (int64_t k = 0; k < n; k++) set_int(&fx->t[i], k, vals[k]);
}

#define FLOAT32 ATTNOPS_DTYPE_F32
#define SHAPE(...) (const int64_t[]){__VA_ARGS__}
#define RANK_OF(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define FX_SET(fx, i, dt, ...) fx_set(fx, i, dt, RANK_OF(__VA_ARGS__), SHAPE(__VA_ARGS__))

static void fx_init(void *p, int base, uint64_t seed)
{
    fixture *fx = p;
    memset(fx, 0, sizeof *fx);
    fx->rng = tu_rng_make(seed);
    attnops_fia_args *a = &fx->a;
    attnops_fia_args_init(a);
    a->num_heads = 4, a->num_key_value_heads = 2, a->scale_value = 0.25, a->softmax_lse_flag = true;
    a->impl = ATTNOPS_IMPL_AUTO, a->num_threads = 2;
    switch (base) {
    case DEC:
        a->input_layout = ATTNOPS_LAYOUT_BSH, a->block_size = 4;
        FX_SET(fx, Q, FLOAT32, 2, 1, 64), FX_SET(fx, K, FLOAT32, 7, 4, 32), FX_SET(fx, V, FLOAT32, 7, 4, 32);
        FX_SET(fx, OUT, FLOAT32, 2, 1, 64), FX_SET(fx, LSE, FLOAT32, 2, 4, 1, 1);
        FX_SET(fx, TABLE, ATTNOPS_DTYPE_I32, 2, 3);
        for (int k = 0; k < 6; k++) set_int(&fx->t[TABLE], k, k + 1);
        fx_list(fx, SEQ_KV, ATTNOPS_DTYPE_I64, 2, SHAPE(9, 5));
        break;
    case PRM:
        a->input_layout = ATTNOPS_LAYOUT_BSH;
        FX_SET(fx, Q, FLOAT32, 2, 5, 64), FX_SET(fx, K, FLOAT32, 2, 7, 32), FX_SET(fx, V, FLOAT32, 2, 7, 16);
        FX_SET(fx, OUT, FLOAT32, 2, 5, 32), FX_SET(fx, LSE, FLOAT32, 2, 4, 5, 1);
        break;
    default:
        a->input_layout = ATTNOPS_LAYOUT_TND;
        FX_SET(fx, Q, FLOAT32, 7, 4, 16), FX_SET(fx, K, FLOAT32, 11, 2, 16), FX_SET(fx, V, FLOAT32, 11, 2, 8);
        FX_SET(fx, OUT, FLOAT32, 7, 4, 8), FX_SET(fx, LSE, FLOAT32, 7, 4, 1);
        fx_list(fx, SEQ_Q, ATTNOPS_DTYPE_I64, 2, SHAPE(3, 7));
        fx_list(fx, SEQ_KV, ATTNOPS_DTYPE_I64, 2, SHAPE(5, 11));
        break;
    }
}

static vc_role role_of(const void *ctx, int i)
{
    (void)ctx;
    return is_output(i) ? VC_OUTPUT : VC_INPUT;
}
static vc_tensors tensors(fixture *fx) { return (vc_tensors){NT, fx->t, fx->snap, fx, role_of, TNAME, NULL}; }
static void fx_free(void *p)
{
    const vc_tensors s = tensors(p);
    vc_tensors_free(&s);
}

/* ---- how a case breaks the valid call: rows of edits ---- */
typedef enum edit_kind {
    E_END,       /* ends a list */
    E_UNBIND,    /* t's argument becomes NULL */
    E_NULL_DATA, /* t's data pointer becomes NULL */
    E_TENSOR,    /* t becomes a tensor of dtype dt and shape v[0..n) (fx_set) */
    E_LIST,      /* t becomes a 1-D list of dtype dt holding v[0..n) */
    E_SET,       /* element v[0] of integer tensor t becomes v[1] */
    E_STRIDE,    /* t's stride of dimension v[0] becomes v[1] */
    E_EXTENT,    /* t's extent of dimension v[0] becomes v[1] */
    E_RANK,      /* t's rank becomes v[0] */
    E_DTYPE,     /* t's dtype code becomes v[0] (the view only) */
    E_ALIAS,     /* t's data points v[0] bytes into tensor `into` */
    E_POINT,     /* the argument at offset `off` points at t */
    E_PARAM      /* the attribute at offset `off` (size `size`) becomes f */
} edit_kind;

typedef struct edit {
    edit_kind kind;
    int t, into, n;
    attnops_dtype dt;
    int64_t v[6];
    size_t off, size;
    bool real; /* E_PARAM: the attribute is a double */
    double f;
} edit;

#define DT(d) ATTNOPS_DTYPE_##d
#define UNBIND(i) {.kind = E_UNBIND, .t = (i)}
#define NULL_DATA(i) {.kind = E_NULL_DATA, .t = (i)}
#define TENSOR(i, d, ...) {.kind = E_TENSOR, .t = (i), .dt = DT(d), .n = RANK_OF(__VA_ARGS__), .v = {__VA_ARGS__}}
#define LIST(i, d, ...) {.kind = E_LIST, .t = (i), .dt = DT(d), .n = RANK_OF(__VA_ARGS__), .v = {__VA_ARGS__}}
#define SET(i, k, x) {.kind = E_SET, .t = (i), .v = {(k), (x)}}
#define STRIDE(i, dim, x) {.kind = E_STRIDE, .t = (i), .v = {(dim), (x)}}
#define EXTENT(i, dim, x) {.kind = E_EXTENT, .t = (i), .v = {(dim), (x)}}
#define RANK(i, r) {.kind = E_RANK, .t = (i), .v = {(r)}}
#define DTYPE_CODE(i, c) {.kind = E_DTYPE, .t = (i), .v = {(c)}}
#define ALIAS(i, into_, bytes) {.kind = E_ALIAS, .t = (i), .into = (into_), .v = {(bytes)}}
#define POINT(field, i) {.kind = E_POINT, .t = (i), .off = AT(field)}
#define PARAM(field, x)                                                                                            \
    {.kind = E_PARAM, .off = AT(field), .size = sizeof(((attnops_fia_args *)0)->field),                          \
     .real = _Generic(((attnops_fia_args *)0)->field, double: true, default: false), .f = (x)}
#define NONE {.kind = E_END}
#define EDITS(...) ((const edit[]){__VA_ARGS__, {.kind = E_END}})

/* Bundles of edits the rows share. */
#define LEFT_OUT(field) TENSOR(SPARE, F32, 1), POINT(field, SPARE)
#define ROPE_DEC TENSOR(QROPE, F32, 2, 1, 32), TENSOR(KROPE, F32, 7, 4, 16) /* Dr = 8 */
#define ROPE_PRM TENSOR(QROPE, F32, 2, 5, 32), TENSOR(KROPE, F32, 2, 7, 16)
#define INT8_BARE TENSOR(K, I8, 7, 4, 32), TENSOR(V, I8, 7, 4, 32) /* DEC's cache in int8 */
#define INT8_SEPARATE INT8_BARE, TENSOR(KAS, F32, 32), TENSOR(VAS, F32, 32) /* mode 0, [N2 * D] */
#define INT8_COMBINED INT8_BARE, TENSOR(AS, F32, 2, 32)                      /* mode 0, [2, N2 * D] */
#define COMPRESSED_MASK TENSOR(MASK, U8, 2048, 2048)
/* PRM with S1 = 40: S1 * G = 80 rows, more than a block of the split-KV
 * kernel, so impl AUTO plans it onto the tiled kernel (attn/attn_plan.c),
 * whose workspace also holds the statistics. */
#define ROUTE TENSOR(Q, F32, 2, 40, 64), TENSOR(OUT, F32, 2, 40, 32), TENSOR(LSE, F32, 2, 4, 40, 1)

_Static_assert(sizeof(attnops_layout) == sizeof(int) && sizeof(attnops_impl) == sizeof(int),
               "PARAM writes the enum attributes as ints");

static void set_param(fixture *fx, const edit *e)
{
    unsigned char *at = (unsigned char *)&fx->a + e->off;
    if (e->real) {
        memcpy(at, &e->f, sizeof e->f);
        return;
    }
    const int64_t wide = (int64_t)e->f;
    const int32_t narrow = (int32_t)wide;
    const bool flag = wide != 0;
    memcpy(at, e->size == 8 ? (const void *)&wide : e->size == 4 ? (const void *)&narrow : (const void *)&flag,
           e->size);
}

/* Tensor i's view as its argument sees it, from now on a copy to edit. */
static attnops_tensor *edited_view(fixture *fx, int i)
{
    if (*slot(fx, i) != &fx->edited[i]) fx->edited[i] = fx->t[i].view, *slot(fx, i) = &fx->edited[i];
    return &fx->edited[i];
}

static void apply_edits(fixture *fx, const edit *e)
{
    for (; e->kind != E_END; e++) {
        const bool of_view = e->kind == E_NULL_DATA || (e->kind >= E_STRIDE && e->kind <= E_ALIAS);
        attnops_tensor *view = of_view ? edited_view(fx, e->t) : &fx->t[e->t].view;
        switch (e->kind) {
        case E_END: break;
        case E_UNBIND: *slot(fx, e->t) = NULL; break;
        case E_NULL_DATA: view->data = NULL; break;
        case E_TENSOR: fx_set(fx, e->t, e->dt, e->n, e->v); break;
        case E_LIST: fx_list(fx, e->t, e->dt, e->n, e->v); break;
        case E_SET: set_int(&fx->t[e->t], e->v[0], e->v[1]); break;
        case E_STRIDE: view->strides[e->v[0]] = e->v[1]; break;
        case E_EXTENT: view->shape[e->v[0]] = e->v[1]; break;
        case E_RANK: view->rank = (int32_t)e->v[0]; break;
        case E_DTYPE: view->dtype = (attnops_dtype)e->v[0]; break;
        case E_ALIAS: view->data = vc_storage(&fx->t[e->into]) + e->v[0]; break;
        case E_POINT: *(const attnops_tensor **)((unsigned char *)&fx->a + e->off) = view; break;
        case E_PARAM: set_param(fx, e); break;
        }
    }
}

/* ---- the cases ---- */
/* X(id, base, file, status, name, also, call, edits...): the base problem
 * it breaks, the file of its refusal site (VALIDATE, ANTIQUANT, API; ALSO:
 * another form of the site of the row above), the status, the argument and
 * the words the sentence must hold, how it is called and the edits. */
enum { VALIDATE, ANTIQUANT, API, ALSO };
static const char *const SITE_FILE[3] = {"src/fia/fia_validate.c", "src/fia/fia_antiquant.c", "src/api/fia_api.c"};
#define CALL VC_CALL
#define CASES(X)                                                                                                  \
    /* fia_validate.c, check_left_out */                                                                          \
    X(LEFT_OUT_DEQUANT_SCALE1, PRM, VALIDATE, UNS, "dequant_scale1", "is given; attnops does not support quantised " \
      "query or output", CALL, LEFT_OUT(dequant_scale1))                                                          \
    X(LEFT_OUT_KV_PADDING_SIZE, PRM, ALSO, UNS, "kv_padding_size", "does not support left padding", CALL,         \
      LEFT_OUT(kv_padding_size))                                                                                  \
    X(LEFT_OUT_SHARED_PREFIX_LEN, PRM, ALSO, UNS, "actual_shared_prefix_len", "does not support a shared prefix", \
      CALL, LEFT_OUT(actual_shared_prefix_len))                                                                   \
    /* check_attributes */                                                                                        \
    X(IMPL_BENCHMARK, PRM, VALIDATE, INV, "impl", "impl is 3; it must be AUTO, REFERENCE or CPU", CALL,           \
      PARAM(impl, ATTNOPS_IMPL_BENCHMARK))                                                                        \
    X(NUM_THREADS_NEGATIVE, PRM, VALIDATE, INV, "num_threads", "num_threads is -1; it must be >= 0", CALL,        \
      PARAM(num_threads, -1))                                                                                     \
    X(LAYOUT_SBH, PRM, VALIDATE, INV, "input_layout", "input_layout is 4 (SBH); it must be BSH", CALL,            \
      PARAM(input_layout, ATTNOPS_LAYOUT_SBH))                                                                    \
    X(OUTPUT_LAYOUT_BNSD, PRM, VALIDATE, INV, "output_layout", "output_layout is BNSD with input_layout BSH",     \
      CALL, PARAM(output_layout, ATTNOPS_LAYOUT_BNSD))                                                            \
    X(NUM_HEADS_ZERO, PRM, VALIDATE, INV, "num_heads", "num_heads is 0; it must be >= 1", CALL,                   \
      PARAM(num_heads, 0))                                                                                        \
    X(NUM_KV_HEADS_NEGATIVE, PRM, VALIDATE, INV, "num_key_value_heads", "num_key_value_heads is -1; it must be "  \
      ">= 0", CALL, PARAM(num_key_value_heads, -1))                                                               \
    X(SCALE_NAN, PRM, VALIDATE, INV, "scale_value", "scale_value is nan; it must be finite", CALL,                \
      PARAM(scale_value, NAN))                                                                                    \
    X(SPARSE_MODE_5, PRM, VALIDATE, INV, "sparse_mode", "sparse_mode is 5; FusedInferAttentionScore takes 0..4",  \
      CALL, PARAM(sparse_mode, 5))                                                                                \
    X(INNER_PRECISE_4, PRM, VALIDATE, INV, "inner_precise", "inner_precise is 4; it must be 0..3", CALL,          \
      PARAM(inner_precise, 4))                                                                                    \
    X(BLOCK_SIZE_NEGATIVE, PRM, VALIDATE, INV, "block_size", "block_size is -1; it must be >= 0", CALL,           \
      PARAM(block_size, -1))                                                                                      \
    X(SOFTCAP_NEGATIVE, PRM, VALIDATE, INV, "softcap", "softcap is -1; it must be 0 (off) or positive", CALL,     \
      PARAM(softcap, -1))                                                                                         \
    /* view_of */                                                                                                 \
    X(QUERY_RANK_4_IN_BSH, PRM, VALIDATE, INV, "query", "query has shape [2, 5, 4, 16]; layout BSH takes rank 3", \
      CALL, TENSOR(Q, F32, 2, 5, 4, 16))                                                                          \
    X(VALUE_HIDDEN_NOT_MULTIPLE, PRM, VALIDATE, INV, "value", "value has hidden size 31, not a multiple of the "  \
      "head dim 16", CALL, TENSOR(V, F32, 2, 7, 31))                                                              \
    /* paged_view_of */                                                                                           \
    X(PAGED_KEY_RANK3, DEC, VALIDATE, INV, "key", "paged key has shape [7, 4, 30]; it must be [block_num, "       \
      "block_size = 4, N2 * 16]", CALL, TENSOR(K, F32, 7, 4, 30))                                                 \
    X(PAGED_KEY_RANK4, DEC, VALIDATE, INV, "key", "paged key has shape [7, 2, 4, 8]; it must be [block_num, N2, " \
      "block_size = 4, 16]", CALL, TENSOR(K, F32, 7, 2, 4, 8))                                                    \
    X(PAGED_KEY_NZ, DEC, VALIDATE, INV, "key", "the NZ cache of f32 is [block_num, N2, D / 8 = 2, block_size = "  \
      "4, 8]", CALL, TENSOR(K, F32, 7, 2, 2, 4, 4))                                                               \
    X(PAGED_KEY_RANK2, DEC, VALIDATE, INV, "key", "paged key has shape [7, 128]; the cache is", CALL,             \
      TENSOR(K, F32, 7, 128))                                                                                     \
    /* lengths_of */                                                                                              \
    X(KV_LENGTHS_F32, DEC, VALIDATE, INV, "actual_seq_lengths_kv", "must be int64 or int32; got f32", CALL,       \
      TENSOR(SEQ_KV, F32, 2))                                                                                     \
    X(KV_LENGTHS_EMPTY, DEC, VALIDATE, INV, "actual_seq_lengths_kv", "has shape [0]; it takes one value (for "    \
      "every batch) or a list of at least B = 2", CALL, TENSOR(SEQ_KV, I64, 0))                                   \
    X(KV_LENGTHS_RANK_2, DEC, ALSO, INV, "actual_seq_lengths_kv", "has shape [2, 1]; it takes one value", CALL,   \
      TENSOR(SEQ_KV, I64, 2, 1))                                                                                  \
    /* check_cumulative */                                                                                        \
    X(TND_Q_LENGTHS_DECREASING, TND, VALIDATE, INV, "actual_seq_lengths", "actual_seq_lengths[1] = 7 is below "   \
      "the value before it (8)", CALL, LIST(SEQ_Q, I64, 8, 7))                                                    \
    X(TND_Q_LENGTHS_END, TND, VALIDATE, INV, "actual_seq_lengths", "ends at 6 but the tensor has 7 tokens",       \
      CALL, LIST(SEQ_Q, I64, 3, 6))                                                                               \
    X(TND_KV_LENGTHS_END, TND, ALSO, INV, "actual_seq_lengths_kv", "ends at 10 but the tensor has 11 tokens",     \
      CALL, LIST(SEQ_KV, I64, 5, 10))                                                                             \
    /* check_per_batch */                                                                                         \
    X(KV_LENGTH_BEYOND_TABLE, DEC, VALIDATE, INV, "actual_seq_lengths_kv", "actual_seq_lengths_kv[0] = 13; it "   \
      "must lie in [0, 12] (the block table's capacity)", CALL, SET(SEQ_KV, 0, 13))                               \
    X(Q_LENGTH_BEYOND_S1, PRM, ALSO, INV, "actual_seq_lengths", "actual_seq_lengths[1] = 6; it must lie in "      \
      "[0, 5] (query's S)", CALL, LIST(SEQ_Q, I64, 5, 6))                                                         \
    X(KV_LENGTH_NEGATIVE, PRM, ALSO, INV, "actual_seq_lengths_kv", "actual_seq_lengths_kv[0] = -1; it must lie "  \
      "in [0, 7] (key's S)", CALL, LIST(SEQ_KV, I32, -1, 7))                                                      \
    /* check_tensors */                                                                                           \
    X(QUERY_I32, PRM, VALIDATE, INV, "query", "query must be f16, bf16 or f32; got i", CALL,                      \
      TENSOR(Q, I32, 2, 5, 64))                                                                                   \
    X(KEY_F16, PRM, VALIDATE, INV, "'key'", "has dtype f16 but must be f32 (key takes query's dtype", CALL,       \
      TENSOR(K, F16, 2, 7, 32))                                                                                   \
    X(VALUE_F16, PRM, VALIDATE, INV, "'value'", "has dtype f16 but must be f32 (value takes key's dtype)", CALL,  \
      TENSOR(V, F16, 2, 7, 16))                                                                                   \
    X(HIDDEN_NOT_MULTIPLE_OF_HEADS, PRM, VALIDATE, INV, "num_heads", "query's hidden size 64 is not a multiple "  \
      "of num_heads = 3", CALL, PARAM(num_heads, 3))                                                              \
    X(NUM_HEADS_NOT_QUERY_HEADS, TND, VALIDATE, INV, "num_heads", "num_heads is 2 but query has 4 heads", CALL,   \
      PARAM(num_heads, 2))                                                                                        \
    X(QUERY_HEAD_DIM_0, TND, VALIDATE, INV, "query", "query's head dim is 0; it must be >= 1", CALL,              \
      TENSOR(Q, F32, 7, 4, 0))                                                                                    \
    /* check_kv */                                                                                                \
    X(PAGED_VALUE_BLOCKS, DEC, VALIDATE, INV, "value", "paged value has shape [6, 4, 32]; it must be key's but "  \
      "for the head dim", CALL, TENSOR(V, F32, 6, 4, 32))                                                         \
    X(KEY_HEAD_DIM, TND, VALIDATE, INV, "key", "key's head dim is 8 but query's is 16", CALL,                     \
      TENSOR(K, F32, 11, 2, 8))                                                                                   \
    X(VALUE_S, PRM, VALIDATE, INV, "value", "value has shape [2, 6, 16]; it must be key's but for the head dim",  \
      CALL, TENSOR(V, F32, 2, 6, 16))                                                                             \
    X(KEY_BATCH, PRM, VALIDATE, INV, "key", "key has batch 3 but query 2", CALL, TENSOR(K, F32, 3, 7, 32),        \
      TENSOR(V, F32, 3, 7, 16))                                                                                   \
    X(VALUE_HEAD_DIM_0, TND, VALIDATE, INV, "value", "value's head dim is 0; it must be >= 1", CALL,              \
      TENSOR(V, F32, 11, 2, 0))                                                                                   \
    X(KEY_HEADS_NOT_NUM_KV_HEADS, PRM, VALIDATE, INV, "num_key_value_heads", "key has 2 heads but "               \
      "num_key_value_heads is 1", CALL, PARAM(num_key_value_heads, 1))                                            \
    X(HEADS_NOT_MULTIPLE_OF_KV_HEADS, TND, VALIDATE, INV, "num_heads", "num_heads = 4 is not a multiple of the 3 "\
      "key/value heads", CALL, TENSOR(K, F32, 11, 3, 16), TENSOR(V, F32, 11, 3, 8),                               \
      PARAM(num_key_value_heads, 3))                                                                              \
    X(BLOCK_ID_BEYOND_CACHE, DEC, VALIDATE, INV, "block_table", "block_table[1][1] = 7 is not a block of the "    \
      "cache (it has 7)", CALL, SET(TABLE, 4, 7))                                                                 \
    /* check_rope */                                                                                              \
    X(QUERY_ROPE_ALONE, PRM, VALIDATE, INV, "key_rope", "query_rope and key_rope go together; only query_rope "   \
      "is given", CALL, TENSOR(QROPE, F32, 2, 5, 32))                                                             \
    X(QUERY_ROPE_F16, PRM, VALIDATE, INV, "'query_rope'", "has dtype f16 but must be f32 (the rope inputs", CALL, \
      ROPE_PRM, TENSOR(QROPE, F16, 2, 5, 32))                                                                     \
    X(KEY_ROPE_F16, PRM, VALIDATE, INV, "'key_rope'", "has dtype f16 but must be f32 (the rope inputs", CALL,     \
      ROPE_PRM, TENSOR(KROPE, F16, 2, 7, 16))                                                                     \
    X(QUERY_ROPE_SHAPE, PRM, VALIDATE, INV, "query_rope", "query_rope has shape [2, 4, 32]; it must be query's "  \
      "with the rope head dim", CALL, ROPE_PRM, TENSOR(QROPE, F32, 2, 4, 32))                                     \
    X(PAGED_KEY_ROPE_BLOCKS, DEC, VALIDATE, INV, "key_rope", "paged key_rope has shape [6, 4, 16]; it must be "   \
      "key's with head dim 8", CALL, ROPE_DEC, TENSOR(KROPE, F32, 6, 4, 16))                                      \
    X(KEY_ROPE_SHAPE, PRM, VALIDATE, INV, "key_rope", ": key_rope has shape [2, 6, 16]; it must be key's with "   \
      "head dim 8", CALL, ROPE_PRM, TENSOR(KROPE, F32, 2, 6, 16))                                                 \
    /* check_lengths */                                                                                           \
    X(TND_NO_Q_LENGTHS, TND, VALIDATE, NUL, "actual_seq_lengths", "layout TND needs actual_seq_lengths "          \
      "(cumulative query lengths)", CALL, UNBIND(SEQ_Q))                                                          \
    X(BLOCK_TABLE_I64, DEC, VALIDATE, INV, "'block_table'", "but must be i32 (block ids are int32)", CALL,        \
      TENSOR(TABLE, I64, 2, 3))                                                                                   \
    X(BLOCK_TABLE_ROWS, DEC, VALIDATE, INV, "block_table", "block_table has shape [3, 3]; it must be [B = 2, "    \
      "max_blocks]", CALL, TENSOR(TABLE, I32, 3, 3))                                                              \
    X(PAGED_BLOCK_SIZE_0, DEC, VALIDATE, INV, "block_size", "block_size is 0; a paged cache (block_table) needs " \
      "it >= 1", CALL, PARAM(block_size, 0))                                                                      \
    X(PAGED_NO_KV_LENGTHS, DEC, VALIDATE, NUL, "actual_seq_lengths_kv", "a paged cache (block_table) needs "      \
      "actual_seq_lengths_kv", CALL, UNBIND(SEQ_KV))                                                              \
    X(TND_NO_KV_LENGTHS, TND, VALIDATE, NUL, "actual_seq_lengths_kv", "layout TND needs actual_seq_lengths_kv "   \
      "(cumulative key lengths)", CALL, UNBIND(SEQ_KV))                                                           \
    /* check_mask */                                                                                              \
    X(SPARSE_MODE_1_NO_MASK, PRM, VALIDATE, NUL, "atten_mask", "sparse_mode 1 needs atten_mask", CALL,            \
      PARAM(sparse_mode, 1))                                                                                      \
    X(SPARSE_MODE_4_BOTH_NEGATIVE, PRM, VALIDATE, INV, "pre_tokens", "sparse_mode 4 with pre_tokens = -1 and "    \
      "next_tokens = -1; they may not both be negative", CALL, COMPRESSED_MASK, PARAM(sparse_mode, 4),            \
      PARAM(pre_tokens, -1), PARAM(next_tokens, -1))                                                              \
    X(MASK_F32, PRM, VALIDATE, INV, "atten_mask", "atten_mask must be bool, uint8 or int8; got f32", CALL,        \
      TENSOR(MASK, F32, 5, 7))                                                                                    \
    X(SPARSE_MODE_2_FULL_MASK, PRM, VALIDATE, INV, "atten_mask", "atten_mask has shape [5, 7]; sparse_mode 2 "    \
      "takes the compressed [2048, 2048]", CALL, TENSOR(MASK, BOOL, 5, 7), PARAM(sparse_mode, 2))                 \
    X(DECODE_MASK_SHORT, DEC, VALIDATE, INV, "atten_mask", "atten_mask has shape [2, 11]; a decode step takes "   \
      "[B, S2'], [B, 1, S2'] or [B, 1, 1, S2'] with B = 2, S2' >= 12", CALL, TENSOR(MASK, U8, 2, 11))             \
    X(PROMPT_MASK_SHORT, PRM, VALIDATE, INV, "atten_mask", "atten_mask has shape [4, 7]; the prompt branch takes "\
      "[S1', S2']", CALL, TENSOR(MASK, BOOL, 4, 7))                                                               \
    /* check_pse */                                                                                               \
    X(PSE_F16, PRM, VALIDATE, INV, "'pse_shift'", "has dtype f16 but must be f32 (pse_shift takes query's "       \
      "dtype)", CALL, TENSOR(PSE, F16, 1, 4, 5, 7))                                                               \
    X(PSE_HEADS, PRM, VALIDATE, INV, "pse_shift", "pse_shift has shape [1, 3, 5, 7]; it must be [B|1, N1 = 4, "   \
      "S1' >= 5, S2' >= 7]", CALL, TENSOR(PSE, F32, 1, 3, 5, 7))                                                  \
    /* check_alibi */                                                                                             \
    X(ALIBI_RULE_1, PRM, VALIDATE, INV, "alibi_rule", "alibi_rule is 1; it must be 0 (bottom-right), 2 or 3",     \
      CALL, PARAM(alibi_rule, 1))                                                                                 \
    X(ALIBI_RULE_2_NO_SLOPES, PRM, VALIDATE, NUL, "alibi_slopes", "alibi_rule is 2 but alibi_slopes is NULL",     \
      CALL, PARAM(alibi_rule, ATTNOPS_ALIBI_START_IDX))                                                           \
    X(ALIBI_Q_START_BEYOND_INT32, PRM, VALIDATE, INV, "alibi_q_start_idx", "alibi_q_start_idx is 2147483648 and " \
      "alibi_kv_start_idx 0; each must fit int32", CALL, TENSOR(SLOPES, F32, 4),                                  \
      PARAM(alibi_q_start_idx, 2147483648.0))                                                                     \
    X(ALIBI_STARTS_TOO_FAR_APART, PRM, ALSO, INV, "alibi_kv_start_idx", "alibi_kv_start_idx 1048577; each must "  \
      "fit int32 and they may differ by at most 2^20", CALL, PARAM(alibi_kv_start_idx, 1048577))                  \
    X(ALIBI_SLOPES_F16, PRM, VALIDATE, INV, "'alibi_slopes'", "has dtype f16 but must be f32 (ALiBi slopes are "  \
      "f32)", CALL, TENSOR(SLOPES, F16, 4))                                                                       \
    X(ALIBI_SLOPES_SHAPE, PRM, VALIDATE, INV, "alibi_slopes", "alibi_slopes has shape [3]; it must be [N1 = 4] "  \
      "or [B = 2, N1]", CALL, TENSOR(SLOPES, F32, 3))                                                             \
    /* check_sink */                                                                                              \
    X(SINK_I32, PRM, VALIDATE, INV, "learnable_sink", "learnable_sink has dtype i", CALL, TENSOR(SINK, I32, 4))   \
    X(SINK_SHAPE, PRM, VALIDATE, INV, "'learnable_sink'", "has shape [3] but must be [4] ([N1 = num_heads]",      \
      CALL, TENSOR(SINK, F32, 3))                                                                                 \
    /* check_outputs */                                                                                           \
    X(OUT_F16, PRM, VALIDATE, INV, "'attention_out'", "has dtype f16 but must be f32 (attention_out takes", CALL, \
      TENSOR(OUT, F16, 2, 5, 32))                                                                                 \
    X(OUT_SHAPE, PRM, VALIDATE, INV, "'attention_out'", "has shape [2, 5, 64] but must be [2, 5, 32]", CALL,      \
      TENSOR(OUT, F32, 2, 5, 64))                                                                                 \
    X(LSE_MISSING, PRM, VALIDATE, NUL, "'softmax_lse'", "required tensor 'softmax_lse' is NULL", CALL,            \
      UNBIND(LSE))                                                                                                \
    X(LSE_NULL_DATA, PRM, VALIDATE, NUL, "'softmax_lse'", "elements but a NULL data pointer", CALL,               \
      NULL_DATA(LSE))                                                                                             \
    X(LSE_F16, PRM, VALIDATE, INV, "'softmax_lse'", "has dtype f16 but must be f32 (softmax_lse is f32).", CALL,  \
      TENSOR(LSE, F16, 2, 4, 5, 1))                                                                               \
    X(TND_LSE_SHAPE, TND, VALIDATE, INV, "'softmax_lse'", "[T1, N1, 1] with softmax_lse_flag", CALL,              \
      TENSOR(LSE, F32, 7, 4, 2))                                                                                  \
    X(LSE_SHAPE, PRM, VALIDATE, INV, "'softmax_lse'", "[B, N1, S1, 1] with softmax_lse_flag", CALL,               \
      TENSOR(LSE, F32, 2, 4, 5))                                                                                  \
    X(UNFLAGGED_LSE_NEGATIVE_STRIDE, PRM, VALIDATE, INV, "'softmax_lse'", "has negative stride -1 in dimension 3",\
      CALL, PARAM(softmax_lse_flag, 0), STRIDE(LSE, 3, -1))                                                       \
    X(UNFLAGGED_LSE_F16, PRM, VALIDATE, INV, "'softmax_lse'", "(written 0 without softmax_lse_flag)", CALL,       \
      PARAM(softmax_lse_flag, 0), TENSOR(LSE, F16, 2, 4, 5, 1))                                                   \
    X(OUTPUTS_OVERLAP, PRM, VALIDATE, INV, "'softmax_lse'", "output tensors 'attention_out' and 'softmax_lse' "    \
      "overlap in memory", CALL, ALIAS(LSE, OUT, 0))                                                              \
    X(OUT_ZERO_STRIDE, PRM, ALSO, INV, "'attention_out'", "has stride 0 in dimension 1 of extent 5", CALL,        \
      STRIDE(OUT, 1, 0))                                                                                          \
    /* fia_validate */                                                                                            \
    X(NULL_ARGS, PRM, VALIDATE, NUL, "args", "args is NULL", K_NULL_ARGS, NONE)                                   \
    X(NULL_QUERY, PRM, VALIDATE, NUL, "'query'", "required tensor 'query' is NULL", CALL, UNBIND(Q))              \
    X(NULL_KEY, DEC, ALSO, NUL, "'key'", "required tensor 'key' is NULL", CALL, UNBIND(K))                        \
    X(NULL_VALUE, TND, ALSO, NUL, "'value'", "required tensor 'value' is NULL", CALL, UNBIND(V))                  \
    X(NULL_ATTENTION_OUT, PRM, ALSO, NUL, "'attention_out'", "required tensor 'attention_out' is NULL", CALL,     \
      UNBIND(OUT))                                                                                                \
    X(NULL_DATA_KEY, DEC, VALIDATE, NUL, "'key'", "elements but a NULL data pointer", CALL, NULL_DATA(K))         \
    X(QUERY_RANK_0, PRM, ALSO, INV, "'query'", "has rank 0; ranks 1..", CALL, RANK(Q, 0))                         \
    X(VALUE_DTYPE_CODE_99, PRM, ALSO, INV, "'value'", "has unknown dtype code 99", CALL, DTYPE_CODE(V, 99))       \
    X(OUT_NEGATIVE_EXTENT, PRM, ALSO, INV, "'attention_out'", "has negative extent -2 in dimension 0", CALL,      \
      EXTENT(OUT, 0, -2))                                                                                         \
    X(KEY_NEGATIVE_STRIDE, PRM, ALSO, INV, "'key'", "has negative stride -1 in dimension 1", CALL,                \
      STRIDE(K, 1, -1))                                                                                           \
    X(NULL_DATA_BLOCK_TABLE, DEC, VALIDATE, NUL, "'block_table'", "elements but a NULL data pointer", CALL,       \
      NULL_DATA(TABLE))                                                                                           \
    X(MASK_NEGATIVE_STRIDE, PRM, ALSO, INV, "'atten_mask'", "has negative stride -1 in dimension 0", CALL,        \
      TENSOR(MASK, BOOL, 5, 7), STRIDE(MASK, 0, -1))                                                              \
    X(DECODE_INNER_PRECISE_2, DEC, VALIDATE, INV, "inner_precise", "inner_precise is 2; a decode step (S1 = 1) "  \
      "takes 0 or 1", CALL, PARAM(inner_precise, 2))                                                              \
    /* fia_antiquant.c, quant_of */                                                                               \
    X(INT8_SCALE_I32, DEC, ANTIQUANT, INV, "key antiquant scale", "key antiquant scale must be f16, bf16 or f32; " \
      "got i", CALL, INT8_SEPARATE, TENSOR(KAS, I32, 32))                                                         \
    X(COMBINED_SCALE_LEADING_3, DEC, ANTIQUANT, INV, "antiquant_scale", "antiquant_scale has shape [3, 32]; the " \
      "combined form leads with 2 (key, value)", CALL, INT8_COMBINED, TENSOR(AS, F32, 3, 32))                     \
    X(INT8_SCALE_SHAPE, DEC, ANTIQUANT, INV, "key antiquant scale", "key antiquant scale has shape [5]; key "     \
      "takes [N2 * D], [N2, D], [1, N2, D], [1, N2, 1, D] or [1] (mode 0)", CALL, INT8_SEPARATE,                  \
      TENSOR(KAS, F32, 5))                                                                                        \
    X(INT8_VALUE_TOKEN_SCALE_SHORT, DEC, ALSO, INV, "value antiquant scale", "value antiquant scale has shape "    \
      "[2, 11]; value takes [1, B, S'] or [B, S'] (mode 1)", CALL, INT8_SEPARATE, PARAM(value_antiquant_mode, 1), \
      TENSOR(VAS, F32, 2, 11))                                                                                    \
    X(INT8_OFFSET_NOT_SCALE_SHAPE, DEC, ANTIQUANT, INV, "key antiquant offset", "key antiquant offset must have "  \
      "its scale's shape and strides", CALL, INT8_SEPARATE, TENSOR(KAO, F32, 1), TENSOR(VAO, F32, 32))            \
    /* fia_validate_antiquant */                                                                                  \
    X(SCALES_WITHOUT_INT8, DEC, ANTIQUANT, INV, "key", "antiquant scales are given but key is f32", CALL,         \
      TENSOR(KAS, F32, 32), TENSOR(VAS, F32, 32))                                                                 \
    X(INT8_KEY_SCALE_ONLY, DEC, ANTIQUANT, NUL, "value_antiquant_scale", "need key_antiquant_scale and "          \
      "value_antiquant_scale (both)", CALL, INT8_SEPARATE, UNBIND(VAS))                                           \
    X(INT8_KEY_OFFSET_ONLY, DEC, ANTIQUANT, INV, "value_antiquant_offset", "key_antiquant_offset and "            \
      "value_antiquant_offset go together", CALL, INT8_SEPARATE, TENSOR(KAO, F32, 32))                            \
    X(INT8_MODES_2_0, DEC, ANTIQUANT, INV, "key_antiquant_mode", "key_antiquant_mode 2 with value_antiquant_mode "\
      "0; the modes are 0..3, equal, or key 0 with value 1", CALL, INT8_SEPARATE, PARAM(key_antiquant_mode, 2))   \
    X(INT8_NO_SCALES, DEC, ANTIQUANT, NUL, "antiquant_scale", "int8 key/value need antiquant scales", CALL,       \
      INT8_BARE)                                                                                                  \
    X(COMBINED_MODE_2, DEC, ANTIQUANT, INV, "antiquant_mode", "antiquant_mode is 2; it must be 0 (per channel) "  \
      "or 1 (per token)", CALL, INT8_COMBINED, PARAM(antiquant_mode, 2))                                          \
    /* fia_api.c, attnops_fused_infer_attention_score_workspace_size */                                           \
    X(NULL_WORKSPACE_BYTES, PRM, API, NUL, "workspace_bytes", "workspace_bytes is NULL", VC_NULL_BYTES, NONE)     \
    /* attnops_fused_infer_attention_score: the planned kernel's workspace (tiled, then split-KV) */              \
    X(ROUTE_WORKSPACE_SHORT, PRM, ALSO, INV, "workspace", "bytes but this call needs", VC_WS_SHORT, ROUTE)         \
    X(ROUTE_WORKSPACE_NULL, PRM, ALSO, NUL, "workspace", "workspace is NULL but this call needs", VC_WS_NULL,     \
      ROUTE)                                                                                                      \
    X(WORKSPACE_SHORT, DEC, API, INV, "workspace", "bytes but this call needs", VC_WS_SHORT, NONE)                \
    X(WORKSPACE_NULL, DEC, ALSO, NUL, "workspace", "workspace is NULL but this call needs", VC_WS_NULL, NONE)

#define AS_ENUM(id, ...) C_##id,
enum { CASES(AS_ENUM) N_CASES };
#define AS_CASE(id, base, file, st, name, also, kind, ...) {#id, base, {st, name, also}, kind},
static const vc_case CASE[N_CASES] = {CASES(AS_CASE)};
#define AS_FILE(id, base, file, ...) file,
static const int CASE_FILE[N_CASES] = {CASES(AS_FILE)};
#define AS_EDITS(id, base, file, st, name, also, kind, ...) EDITS(__VA_ARGS__),
static const edit *const BREAK[N_CASES] = {CASES(AS_EDITS)};

/* ---- calling and checking one case ---- */
static attnops_status fia_query(const void *a, size_t *bytes)
{
    return attnops_fused_infer_attention_score_workspace_size(a, bytes);
}
static attnops_status fia_run(const void *a, void *ws, size_t bytes)
{
    return attnops_fused_infer_attention_score(a, ws, bytes);
}
static const vc_op FIA = {OP_NAME, fia_query, fia_run, NULL};

static bool apply_case(void *p, int c, vc_expect *e)
{
    (void)e;
    fixture *fx = p;
    fx->kind = CASE[c].kind;
    apply_edits(fx, BREAK[c]);
    return true;
}

static void call_case(void *p, const vc_expect *e)
{
    fixture *fx = p;
    const vc_tensors s = tensors(fx);
    vc_snapshot(&s);
    if (fx->kind == K_NULL_ARGS) {
        unsigned char ws[64];
        size_t bytes = 7;
        memset(&fx->oc, 0, sizeof fx->oc);
        vc_record(&fx->oc, "workspace query", fia_query(NULL, &bytes), e->st);
        vc_record(&fx->oc, "run", fia_run(NULL, ws, sizeof ws), e->st);
    } else {
        vc_call(&fx->oc, &FIA, &fx->a, (vc_call_kind)fx->kind, e->st);
    }
}

static int verify_failure(void *p, const vc_expect *e)
{
    fixture *fx = p;
    vc_begin();
    vc_check_outcome(&fx->oc, e, OP_NAME, NULL);
    const vc_tensors s = tensors(fx);
    vc_check_failed_call(&s);
    return vc_problems();
}

static bool applies(const vc_case *c, int base) { return c->scope == base; }

static fixture case_fixture;
static const vc_suite SUITE = {CASE, N_CASES, N_BASES, BASE_NAME, applies, &case_fixture, fx_init, apply_case,
                               call_case, verify_failure, fx_free, NULL};

/* ---- every refusal site has a row ---- */
/* The refusal sites of a source file: calls of ao_fail and of the shared
 * checks ao_check_<what> (each can refuse); -1 when unreadable. */
static int count_sites(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char *text = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n + 4096 + 1 > cap) text = realloc(text, cap = 2 * cap + 4096 + 1);
        got = fread(text + n, 1, 4096, f);
        n += got;
    } while (got > 0);
    fclose(f);
    text[n] = '\0';
    int sites = 0;
    for (const char *s = text; (s = strstr(s, "ao_")) != NULL; s++) {
        if (!strncmp(s, "ao_fail(", 8)) {
            sites++;
        } else if (!strncmp(s, "ao_check_", 9)) {
            const char *e = s + 9;
            while ((*e >= 'a' && *e <= 'z') || *e == '_') e++;
            sites += e > s + 9 && *e == '(';
        }
    }
    free(text);
    return sites;
}

static void check_site_coverage(const char *root)
{
    int total_sites = 0, total_rows = 0;
    for (int file = VALIDATE; file <= API; file++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", root ? root : "", SITE_FILE[file]);
        int rows = 0;
        for (int c = 0; c < N_CASES; c++) rows += CASE_FILE[c] == file;
        const int sites = root ? count_sites(path) : -1;
        vc_label("site coverage %s", SITE_FILE[file]);
        VC_EXPECT(sites >= 0, "cannot read %s (argv[1] must be the source root)", path);
        if (sites >= 0)
            VC_EXPECT(rows == sites, "%d refusal sites (ao_fail / ao_check_*) but %d rows of CASES tagged with it: "
                      "a site without a row, or a row without a site", sites, rows);
        total_sites += sites > 0 ? sites : 0, total_rows += rows;
    }
    printf("site coverage: %d refusal sites, %d rows tagged with their file (%d rows in all)\n", total_sites,
           total_rows, N_CASES);
}

/* ---- the checker must be able to fail ---- */
static void run_checker_self_test(void)
{
    fixture fx;
    fx_init(&fx, PRM, 11);
    apply_case(&fx, C_IMPL_BENCHMARK, NULL);
    vc_self_test(&(vc_subject){
        .suite = &SUITE, .ctx = &fx, .right = CASE[C_IMPL_BENCHMARK].e,
        .wrong_st = NUL, .wrong_name = "num_threads", .wrong_also = "impl is 5",
        .tamper = {{vc_storage(&fx.t[OUT]) + 3, 0xFF, "a written attention_out byte", NULL},
                   {vc_storage(&fx.t[Q]) + 9, 0x01, "a changed query byte", NULL},
                   {vc_canary_byte(&fx.t[K], 2), 0xFF, "a broken canary",
                    "the canary complaint about 'key' that follows is intended"}}});
    fx_free(&fx);

    /* a rule of another site: its sentence lacks this row's words */
    const vc_subject other = {.suite = &SUITE, .ctx = &fx};
    fx_init(&fx, DEC, 12);
    apply_case(&fx, C_KV_LENGTH_BEYOND_TABLE, NULL);
    vc_self_test_wrong(&other, &CASE[C_Q_LENGTH_BEYOND_S1].e, "the sentence of another site");
    fx_free(&fx);

    /* a valid call expected to fail: wrong statuses, outputs written */
    fx_init(&fx, DEC, 13);
    fx.kind = VC_CALL;
    vc_self_test_wrong(&other, &CASE[C_NUM_HEADS_ZERO].e, "a valid call");
    fx_free(&fx);
    printf("checker self-test done\n");
}

/* ---- valid calls ---- */
#define VARIANTS(X)                                                                                                \
    X(DEC_BASE, DEC, NONE)                                                                                         \
    X(DEC_REFERENCE, DEC, PARAM(impl, ATTNOPS_IMPL_REFERENCE))                                                      \
    X(DEC_CACHE_RANK4, DEC, TENSOR(K, F32, 7, 2, 4, 16), TENSOR(V, F32, 7, 2, 4, 16))                              \
    X(DEC_CACHE_NZ, DEC, TENSOR(K, F32, 7, 2, 2, 4, 8), TENSOR(V, F32, 7, 2, 2, 4, 8))                             \
    X(DEC_INT8_SEPARATE, DEC, INT8_SEPARATE, TENSOR(KAO, F32, 32), TENSOR(VAO, F32, 32))                           \
    X(DEC_INT8_KEY_CHANNEL_VALUE_TOKEN, DEC, INT8_SEPARATE, PARAM(value_antiquant_mode, 1), TENSOR(VAS, F32, 2, 12))\
    X(DEC_INT8_COMBINED, DEC, INT8_COMBINED, TENSOR(AO, F32, 2, 32))                                                \
    X(DEC_ROPE, DEC, ROPE_DEC)                                                                                     \
    X(DEC_MASK_PSE_SINK, DEC, TENSOR(MASK, U8, 2, 1, 12), TENSOR(PSE, F32, 2, 4, 1, 12), TENSOR(SINK, F32, 4))     \
    X(DEC_ALIBI_START_IDX, DEC, TENSOR(SLOPES, F32, 4), PARAM(alibi_rule, ATTNOPS_ALIBI_START_IDX),                 \
      PARAM(alibi_q_start_idx, 3), PARAM(alibi_kv_start_idx, 1))                                                   \
    X(PRM_BASE, PRM, NONE)                                                                                         \
    X(PRM_MASK_PSE, PRM, TENSOR(MASK, BOOL, 2, 5, 7), TENSOR(PSE, F32, 1, 4, 5, 7))                                \
    X(PRM_SPARSE_MODE_3, PRM, COMPRESSED_MASK, PARAM(sparse_mode, 3))                                              \
    X(PRM_LENGTHS, PRM, LIST(SEQ_Q, I64, 5, 3), LIST(SEQ_KV, I32, 7, 4))                                           \
    X(PRM_ALIBI_ROPE, PRM, TENSOR(SLOPES, F32, 2, 4), ROPE_PRM)                                                    \
    X(PRM_BNSD_BSND, PRM, PARAM(input_layout, ATTNOPS_LAYOUT_BNSD), PARAM(output_layout, ATTNOPS_LAYOUT_BSND),     \
      TENSOR(Q, F32, 2, 4, 5, 16), TENSOR(K, F32, 2, 2, 7, 16), TENSOR(V, F32, 2, 2, 7, 8),                        \
      TENSOR(OUT, F32, 2, 5, 4, 8))                                                                                \
    X(PRM_LSE_UNFLAGGED, PRM, PARAM(softmax_lse_flag, 0)) /* softmax_lse written 0 */                              \
    X(PRM_SOFTCAP, PRM, PARAM(softcap, 30))                                                                        \
    X(PRM_FLASH_ATTENTION_ROUTE, PRM, ROUTE)                                                                       \
    X(TND_BASE, TND, NONE)                                                                                         \
    X(TND_SINK_REFERENCE, TND, TENSOR(SINK, F32, 4), PARAM(impl, ATTNOPS_IMPL_REFERENCE))

#define AS_VENUM(id, ...) V_##id,
enum { VARIANTS(AS_VENUM) N_VARIANTS };
#define AS_VROW(id, base, ...) {#id, base, EDITS(__VA_ARGS__)},
static const struct {
    const char *name;
    int base;
    const edit *edits;
} VARIANT[N_VARIANTS] = {VARIANTS(AS_VROW)};

/* Logical elements of t still holding the poison (never written). */
static int64_t unwritten(const tu_tensor *t)
{
    const attnops_tensor *v = &t->view;
    const size_t es = attnops_dtype_size(v->dtype);
    int64_t idx[ATTNOPS_MAX_RANK] = {0}, count = 0;
    for (int64_t k = 0, n = tu_numel(v); k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < v->rank; d++) off += idx[d] * v->strides[d];
        count += vc_poisoned((const unsigned char *)v->data + off * (int64_t)es, es);
        for (int d = v->rank - 1; d >= 0 && ++idx[d] == v->shape[d]; d--) idx[d] = 0;
    }
    return count;
}

static void run_success_cases(void)
{
    int passed = 0;
    for (int v = 0; v < N_VARIANTS; v++) {
        const int before = tu_failures;
        fixture fx;
        fx_init(&fx, VARIANT[v].base, tu_suite_seed() + 1000 + (uint64_t)v);
        apply_edits(&fx, VARIANT[v].edits);
        vc_label("success %s", VARIANT[v].name);
        const vc_tensors s = tensors(&fx);
        if (vc_check_valid_run(&FIA, &fx.a, &s) == ATTNOPS_SUCCESS)
            for (int i = OUT; i <= LSE; i++)
                VC_EXPECT(unwritten(&fx.t[i]) == 0, "%s: %lld of %lld elements not written", TNAME[i],
                          (long long)unwritten(&fx.t[i]), (long long)tu_numel(&fx.t[i].view));
        fx_free(&fx);
        passed += tu_failures == before;
    }
    printf("success cases: %d of %d as expected\n", passed, N_VARIANTS);
}

int main(int argc, char **argv)
{
    /* the failure cases run with vc_call's workspace: it must suffice for the base problems */
    for (int base = 0; base < N_BASES; base++) {
        fixture fx;
        fx_init(&fx, base, 1);
        vc_label("%s base problem", BASE_NAME[base]);
        vc_check_workspace_fits(&FIA, &fx.a);
        fx_free(&fx);
    }
    check_site_coverage(argc > 1 ? argv[1] : NULL);
    vc_run_failure_cases(&SUITE);
    run_checker_self_test();
    run_success_cases();
    return vc_summary("fia_validation");
}
