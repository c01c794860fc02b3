/* The output-shape queries (attnops_flash_attention_score_output_shapes,
 * attnops_fused_infer_attention_score_output_shapes) against the shapes
 * the operators' contracts state, written here from them:
 *   FlashAttentionScore: attention_out is query's shape with the head dim
 *     Dv (BSH / SBH: N1 Dv); softmax_max / _sum [B, N1, S1, 8], TND [T1, N1, 8];
 *   FusedInferAttentionScore: attention_out in output_layout with Dv (a
 *     paged, or NZ [blocks, N2, Dv / c0, block_size, c0], cache's too);
 *     softmax_lse [B, N1, S1, 1], TND [T, N1, 1].
 * Every query runs on shape-only tensors (data NULL, as a framework's meta
 * tensors), and each dimension that names one of query's must hold query's
 * extent there.  Then a real call with outputs of the returned shapes must
 * be accepted (the query and the call agree), and the refusals give their
 * status.  The shape check is also run on a wrong expectation and must
 * report it (the check can fail).  Exits 1 on any failure. */
#include <string.h>

#include "testutil.h"

#define L_BSH ATTNOPS_LAYOUT_BSH
#define L_SBH ATTNOPS_LAYOUT_SBH
#define L_BSND ATTNOPS_LAYOUT_BSND
#define L_BNSD ATTNOPS_LAYOUT_BNSD
#define L_TND ATTNOPS_LAYOUT_TND

typedef struct dims {
    int rank;
    int64_t d[5];
} dims;

static attnops_tensor shape_only(attnops_dtype dt, dims s)
{
    attnops_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt, t.rank = s.rank;
    for (int i = 0; i < s.rank; i++) t.shape[i] = s.d[i];
    return t;
}

/* The shape is `want`, and every dimension taken from query holds query's extent. */
static bool shape_is(const attnops_output_shape *got, dims want, const attnops_tensor *query)
{
    if (got->rank != want.rank) return false;
    for (int i = 0; i < want.rank; i++) {
        const attnops_output_dim *d = &got->dims[i];
        if (d->extent != want.d[i]) return false;
        if (d->query_dim >= query->rank || (d->query_dim >= 0 && query->shape[d->query_dim] != d->extent))
            return false;
    }
    return true;
}

/* ---- FlashAttentionScore ---- */
typedef struct fa_case {
    const char *name;
    attnops_layout layout;
    int64_t heads;
    dims q, k, v, out, stats;
} fa_case;

static const fa_case FA_CASES[] = {
    {"BNSD GQA Dv<D", L_BNSD, 4, {4, {2, 4, 5, 8}}, {4, {2, 2, 7, 8}}, {4, {2, 2, 7, 6}}, {4, {2, 4, 5, 6}},
     {4, {2, 4, 5, 8}}},
    {"BSND", L_BSND, 4, {4, {2, 5, 4, 8}}, {4, {2, 7, 2, 8}}, {4, {2, 7, 2, 6}}, {4, {2, 5, 4, 6}},
     {4, {2, 4, 5, 8}}},
    {"BSH", L_BSH, 4, {3, {2, 5, 32}}, {3, {2, 7, 16}}, {3, {2, 7, 12}}, {3, {2, 5, 24}}, {4, {2, 4, 5, 8}}},
    {"SBH", L_SBH, 4, {3, {5, 2, 32}}, {3, {7, 2, 16}}, {3, {7, 2, 12}}, {3, {5, 2, 24}}, {4, {2, 4, 5, 8}}},
    {"TND", L_TND, 4, {3, {9, 4, 8}}, {3, {13, 2, 8}}, {3, {13, 2, 6}}, {3, {9, 4, 6}}, {3, {9, 4, 8}}},
};

static void fa_args(attnops_fa_fwd_args *a, const fa_case *c, const attnops_tensor *q, const attnops_tensor *k,
                    const attnops_tensor *v)
{
    attnops_fa_fwd_args_init(a);
    a->p.query = q, a->p.key = k, a->p.value = v, a->p.head_num = c->heads, a->p.input_layout = c->layout;
}

/* A real forward with outputs of the queried shapes (padded layouts: TND needs its lists). */
static void fa_call_accepts(const fa_case *c, const attnops_output_shape *out, const attnops_output_shape *stats)
{
    tu_rng rng = tu_rng_make(7);
    tu_tensor t[6];
    const dims *in[3] = {&c->q, &c->k, &c->v};
    for (int i = 0; i < 3; i++)
        t[i] = tu_tensor_new(ATTNOPS_DTYPE_F32, in[i]->rank, in[i]->d, 0), tu_tensor_randn(&t[i], &rng, 1.0);
    const attnops_output_shape *os[3] = {out, stats, stats};
    for (int i = 0; i < 3; i++) {
        int64_t shape[ATTNOPS_MAX_RANK];
        for (int d = 0; d < os[i]->rank; d++) shape[d] = os[i]->dims[d].extent;
        t[3 + i] = tu_tensor_new(ATTNOPS_DTYPE_F32, os[i]->rank, shape, 0);
    }
    attnops_fa_fwd_args a;
    fa_args(&a, c, &t[0].view, &t[1].view, &t[2].view);
    a.attention_out = &t[3].view, a.softmax_max = &t[4].view, a.softmax_sum = &t[5].view;
    size_t bytes = 0;
    const attnops_status st = attnops_flash_attention_score_workspace_size(&a, &bytes);
    TU_CHECK(st == ATTNOPS_SUCCESS, "FA %s: the call refuses the queried shapes: %s", c->name, attnops_last_error());
    for (int i = 0; i < 6; i++) tu_tensor_free(&t[i]);
}

static void check_fa(void)
{
    for (size_t n = 0; n < sizeof FA_CASES / sizeof FA_CASES[0]; n++) {
        const fa_case *c = &FA_CASES[n];
        const attnops_tensor q = shape_only(ATTNOPS_DTYPE_BF16, c->q), k = shape_only(ATTNOPS_DTYPE_BF16, c->k),
                             v = shape_only(ATTNOPS_DTYPE_BF16, c->v);
        attnops_fa_fwd_args a;
        fa_args(&a, c, &q, &k, &v);
        attnops_output_shape out, stats;
        const attnops_status st = attnops_flash_attention_score_output_shapes(&a, &out, &stats);
        TU_CHECK(st == ATTNOPS_SUCCESS, "FA %s: status %d: %s", c->name, (int)st, attnops_last_error());
        TU_CHECK(shape_is(&out, c->out, &q), "FA %s: attention_out's shape", c->name);
        TU_CHECK(shape_is(&stats, c->stats, &q), "FA %s: the statistics' shape", c->name);
        if (c->layout != L_TND) fa_call_accepts(c, &out, &stats);
    }
}

/* ---- FusedInferAttentionScore ---- */
typedef struct fia_case {
    const char *name;
    attnops_layout in, out_layout;
    int64_t heads, kv_heads;
    attnops_dtype dtype;
    bool paged;
    dims q, k, v, out, lse;
} fia_case;

#define BF16 ATTNOPS_DTYPE_BF16
static const fia_case FIA_CASES[] = {
    {"BSH GQA Dv<D", L_BSH, 0, 4, 2, BF16, false, {3, {2, 3, 32}}, {3, {2, 7, 16}}, {3, {2, 7, 12}},
     {3, {2, 3, 24}}, {4, {2, 4, 3, 1}}},
    {"BNSD", L_BNSD, 0, 4, 2, BF16, false, {4, {2, 4, 3, 8}}, {4, {2, 2, 7, 8}}, {4, {2, 2, 7, 6}},
     {4, {2, 4, 3, 6}}, {4, {2, 4, 3, 1}}},
    {"BNSD_BSND", L_BNSD, L_BSND, 4, 2, BF16, false, {4, {2, 4, 3, 8}}, {4, {2, 2, 7, 8}}, {4, {2, 2, 7, 6}},
     {4, {2, 3, 4, 6}}, {4, {2, 4, 3, 1}}},
    {"BSND", L_BSND, 0, 4, 2, BF16, false, {4, {2, 3, 4, 8}}, {4, {2, 7, 2, 8}}, {4, {2, 7, 2, 6}},
     {4, {2, 3, 4, 6}}, {4, {2, 4, 3, 1}}},
    {"TND", L_TND, 0, 4, 2, BF16, false, {3, {9, 4, 8}}, {3, {13, 2, 8}}, {3, {13, 2, 6}}, {3, {9, 4, 6}},
     {3, {9, 4, 1}}},
    {"paged [blocks, bs, N2 D]", L_BSH, 0, 4, 2, BF16, true, {3, {2, 1, 32}}, {3, {5, 16, 16}}, {3, {5, 16, 12}},
     {3, {2, 1, 24}}, {4, {2, 4, 1, 1}}},
    {"paged [blocks, N2, bs, D]", L_BSND, 0, 4, 2, BF16, true, {4, {2, 1, 4, 8}}, {4, {5, 2, 16, 8}},
     {4, {5, 2, 16, 6}}, {4, {2, 1, 4, 6}}, {4, {2, 4, 1, 1}}},
    {"paged NZ bf16 (c0 16)", L_BNSD, 0, 4, 2, BF16, true, {4, {2, 4, 1, 32}}, {5, {5, 2, 2, 16, 16}},
     {5, {5, 2, 1, 16, 16}}, {4, {2, 4, 1, 16}}, {4, {2, 4, 1, 1}}},
};

static void fia_args(attnops_fia_args *a, const fia_case *c, const attnops_tensor *q, const attnops_tensor *k,
                     const attnops_tensor *v, const attnops_tensor *table)
{
    attnops_fia_args_init(a);
    a->query = q, a->key = k, a->value = v, a->num_heads = c->heads, a->num_key_value_heads = c->kv_heads;
    a->input_layout = c->in, a->output_layout = c->out_layout;
    if (c->paged) a->block_table = table, a->block_size = 16;
}

/* A real contiguous call with outputs of the queried shapes. */
static void fia_call_accepts(const fia_case *c, const attnops_output_shape *out, const attnops_output_shape *lse)
{
    tu_rng rng = tu_rng_make(8);
    tu_tensor t[5];
    const dims *in[3] = {&c->q, &c->k, &c->v};
    for (int i = 0; i < 3; i++)
        t[i] = tu_tensor_new(c->dtype, in[i]->rank, in[i]->d, 0), tu_tensor_randn(&t[i], &rng, 1.0);
    const attnops_output_shape *os[2] = {out, lse};
    for (int i = 0; i < 2; i++) {
        int64_t shape[ATTNOPS_MAX_RANK];
        for (int d = 0; d < os[i]->rank; d++) shape[d] = os[i]->dims[d].extent;
        t[3 + i] = tu_tensor_new(i ? ATTNOPS_DTYPE_F32 : c->dtype, os[i]->rank, shape, 0);
    }
    attnops_fia_args a;
    fia_args(&a, c, &t[0].view, &t[1].view, &t[2].view, NULL);
    a.attention_out = &t[3].view, a.softmax_lse = &t[4].view, a.softmax_lse_flag = 1;
    size_t bytes = 0;
    const attnops_status st = attnops_fused_infer_attention_score_workspace_size(&a, &bytes);
    TU_CHECK(st == ATTNOPS_SUCCESS, "FIA %s: the call refuses the queried shapes: %s", c->name, attnops_last_error());
    for (int i = 0; i < 5; i++) tu_tensor_free(&t[i]);
}

static void check_fia(void)
{
    const attnops_tensor table = shape_only(ATTNOPS_DTYPE_I32, (dims){2, {2, 3}});
    for (size_t n = 0; n < sizeof FIA_CASES / sizeof FIA_CASES[0]; n++) {
        const fia_case *c = &FIA_CASES[n];
        const attnops_tensor q = shape_only(c->dtype, c->q), k = shape_only(c->dtype, c->k),
                             v = shape_only(c->dtype, c->v);
        attnops_fia_args a;
        fia_args(&a, c, &q, &k, &v, &table);
        attnops_output_shape out, lse;
        const attnops_status st = attnops_fused_infer_attention_score_output_shapes(&a, &out, &lse);
        TU_CHECK(st == ATTNOPS_SUCCESS, "FIA %s: status %d: %s", c->name, (int)st, attnops_last_error());
        TU_CHECK(shape_is(&out, c->out, &q), "FIA %s: attention_out's shape", c->name);
        TU_CHECK(shape_is(&lse, c->lse, &q), "FIA %s: softmax_lse's shape", c->name);
        if (!c->paged && c->in != L_TND) fia_call_accepts(c, &out, &lse);
    }
}

/* ---- refusals, and the check's own failure ---- */
static void expect(attnops_status got, attnops_status want, const char *words, const char *what)
{
    TU_CHECK(got == want && strstr(attnops_last_error(), words), "%s: status %d (want %d): %s", what, (int)got,
             (int)want, attnops_last_error());
}

static void check_refusals(void)
{
    const fa_case *fc = &FA_CASES[0];
    const attnops_tensor q = shape_only(BF16, fc->q), k = shape_only(BF16, fc->k), v = shape_only(BF16, fc->v);
    attnops_output_shape out, stats;
    attnops_fa_fwd_args fa;
    expect(attnops_flash_attention_score_output_shapes(NULL, &out, &stats), ATTNOPS_ERR_NULLPTR, "args is NULL",
           "FA NULL args");
    fa_args(&fa, fc, &q, &k, &v);
    expect(attnops_flash_attention_score_output_shapes(&fa, &out, NULL), ATTNOPS_ERR_NULLPTR,
           "output shape pointer", "FA NULL shape");
    fa.p.key = NULL;
    expect(attnops_flash_attention_score_output_shapes(&fa, &out, &stats), ATTNOPS_ERR_NULLPTR, "'key'",
           "FA no key");
    fa_args(&fa, fc, &q, &k, &v);
    fa.p.input_layout = L_BSH;
    expect(attnops_flash_attention_score_output_shapes(&fa, &out, &stats), ATTNOPS_ERR_PARAM_INVALID, "rank",
           "FA rank for the layout");

    const fia_case *ic = &FIA_CASES[0];
    const attnops_tensor iq = shape_only(BF16, ic->q), ik = shape_only(BF16, ic->k), iv = shape_only(BF16, ic->v);
    attnops_fia_args ia;
    attnops_output_shape lse;
    expect(attnops_fused_infer_attention_score_output_shapes(NULL, &out, &lse), ATTNOPS_ERR_NULLPTR,
           "args is NULL", "FIA NULL args");
    fia_args(&ia, ic, &iq, &ik, &iv, NULL);
    ia.input_layout = L_SBH;
    expect(attnops_fused_infer_attention_score_output_shapes(&ia, &out, &lse), ATTNOPS_ERR_PARAM_INVALID,
           "input_layout", "FIA layout SBH");
    fia_args(&ia, ic, &iq, &ik, &iv, NULL);
    ia.num_heads = 5;
    expect(attnops_fused_infer_attention_score_output_shapes(&ia, &out, &lse), ATTNOPS_ERR_PARAM_INVALID,
           "num_heads", "FIA heads not dividing the hidden size");

    /* the check itself: a wrong extent and a wrong query reference are mismatches */
    fa_args(&fa, fc, &q, &k, &v);
    TU_CHECK(attnops_flash_attention_score_output_shapes(&fa, &out, &stats) == ATTNOPS_SUCCESS, "FA base");
    dims wrong = fc->out;
    wrong.d[3] += 1;
    TU_CHECK(!shape_is(&out, wrong, &q), "the shape check accepts a wrong extent");
    out.dims[0].query_dim = 1;
    TU_CHECK(!shape_is(&out, fc->out, &q), "the shape check accepts a wrong query dimension");
}

int main(void)
{
    check_fa();
    check_fia();
    check_refusals();
    printf("output_shapes: %d failed checks\n", tu_failures);
    return tu_failures ? 1 : 0;
}
