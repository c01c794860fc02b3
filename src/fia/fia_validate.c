/* FusedInferAttentionScore argument validation (docs/FIA.md,
 * "Validation"): every rule one sentence behind "FusedInferAttentionScore: ",
 * NULL required tensors -> 161001, malformed values -> 161002, what attnops
 * leaves out of CANN's contract -> 161003.  The lengths and the block table
 * are read (they are inputs), nothing is written. */
#include <math.h>
#include <string.h>

#include "core/validate.h"
#include "fia/fia_problem.h"

#define NULLPTR ATTNOPS_ERR_NULLPTR
#define INVALID ATTNOPS_ERR_PARAM_INVALID
#define UNSUPPORTED ATTNOPS_ERR_UNSUPPORTED

static bool is_float_io(attnops_dtype d)
{
    return d == ATTNOPS_DTYPE_F16 || d == ATTNOPS_DTYPE_BF16 || d == ATTNOPS_DTYPE_F32;
}

/* The features of CANN's contract attnops leaves out, refused by name. */
static attnops_status check_left_out(const char *op, const attnops_fia_args *a)
{
    const struct { const attnops_tensor *t; const char *name, *what; } out[] = {
        {a->dequant_scale1, "dequant_scale1", "quantised query or output"},
        {a->quant_scale1, "quant_scale1", "quantised query or output"},
        {a->dequant_scale2, "dequant_scale2", "quantised query or output"},
        {a->quant_scale2, "quant_scale2", "quantised query or output"},
        {a->quant_offset2, "quant_offset2", "quantised query or output"},
        {a->query_padding_size, "query_padding_size", "left padding"},
        {a->kv_padding_size, "kv_padding_size", "left padding"},
        {a->key_shared_prefix, "key_shared_prefix", "a shared prefix"},
        {a->value_shared_prefix, "value_shared_prefix", "a shared prefix"},
        {a->actual_shared_prefix_len, "actual_shared_prefix_len", "a shared prefix"}};
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        if (out[i].t)
            return ao_fail(UNSUPPORTED, "%s: %s is given; attnops does not support %s (docs/FIA.md, "
                           "\"Left out\").", op, out[i].name, out[i].what);
    return ATTNOPS_SUCCESS;
}

/* The layouts and the head count: what the output shapes need besides the tensors. */
static attnops_status check_layouts(const char *op, const attnops_fia_args *a)
{
    const attnops_layout l = a->input_layout;
    if (l != ATTNOPS_LAYOUT_BSH && l != ATTNOPS_LAYOUT_BSND && l != ATTNOPS_LAYOUT_BNSD && l != ATTNOPS_LAYOUT_TND)
        return ao_fail(INVALID, "%s: input_layout is %d (%s); it must be BSH, BSND, BNSD or TND.", op, (int)l,
                       attnops_layout_name(l));
    if (a->output_layout != ATTNOPS_LAYOUT_UNSET && a->output_layout != l &&
        !(l == ATTNOPS_LAYOUT_BNSD && a->output_layout == ATTNOPS_LAYOUT_BSND))
        return ao_fail(INVALID, "%s: output_layout is %s with input_layout %s; it must be UNSET, the input's, or "
                       "BSND with BNSD input (CANN's BNSD_BSND).", op, attnops_layout_name(a->output_layout),
                       attnops_layout_name(l));
    if (a->num_heads < 1)
        return ao_fail(INVALID, "%s: num_heads is %lld; it must be >= 1.", op, (long long)a->num_heads);
    return ATTNOPS_SUCCESS;
}

static attnops_status check_attributes(const char *op, const attnops_fia_args *a)
{
    if (a->impl != ATTNOPS_IMPL_AUTO && a->impl != ATTNOPS_IMPL_REFERENCE && a->impl != ATTNOPS_IMPL_CPU)
        return ao_fail(INVALID, "%s: impl is %d; it must be AUTO, REFERENCE or CPU (no benchmark chain).", op,
                       (int)a->impl);
    if (a->num_threads < 0) return ao_fail(INVALID, "%s: num_threads is %d; it must be >= 0.", op, (int)a->num_threads);
    AO_TRY(check_layouts(op, a));
    if (a->num_key_value_heads < 0)
        return ao_fail(INVALID, "%s: num_key_value_heads is %lld; it must be >= 0 (0: num_heads).", op,
                       (long long)a->num_key_value_heads);
    if (!isfinite(a->scale_value))
        return ao_fail(INVALID, "%s: scale_value is %g; it must be finite.", op, a->scale_value);
    if (a->sparse_mode < 0 || a->sparse_mode > 4)
        return ao_fail(INVALID, "%s: sparse_mode is %lld; FusedInferAttentionScore takes 0..4.", op,
                       (long long)a->sparse_mode);
    if (a->inner_precise < 0 || a->inner_precise > 3)
        return ao_fail(INVALID, "%s: inner_precise is %lld; it must be 0..3.", op, (long long)a->inner_precise);
    if (a->block_size < 0)
        return ao_fail(INVALID, "%s: block_size is %lld; it must be >= 0.", op, (long long)a->block_size);
    /* the fast kernel caps in f32 with the factor scale_value / softcap (FlashAttention's rule, fa_validate.c) */
    const double cap = a->softcap;
    if (!(cap == 0.0 || (cap > 0.0 && isfinite((float)cap) && (float)cap > 0.0f &&
                         isfinite((float)(a->scale_value / cap)))))
        return ao_fail(INVALID, "%s: softcap is %g; it must be 0 (off) or positive, with softcap and scale_value / "
                       "softcap finite as f32s.", op, cap);
    return ATTNOPS_SUCCESS;
}

/* A q-like or contiguous k-like tensor of `layout` as (B, N, S, D) with its
 * view; hidden (BSH): D given, N derived.  rank and shape are checked here. */
typedef struct dims4 {
    int64_t b, n, s, d;
} dims4;

static attnops_status view_of(const char *op, const char *name, const attnops_tensor *t, attnops_layout layout,
                              int64_t hidden_d, dims4 *dims, fia_view *v)
{
    char buf[96];
    const int want = layout == ATTNOPS_LAYOUT_BSH || layout == ATTNOPS_LAYOUT_TND ? 3 : 4;
    if (t->rank != want)
        return ao_fail(INVALID, "%s: %s has shape %s; layout %s takes rank %d.", op, name,
                       ao_shape_str(t, buf, sizeof buf), attnops_layout_name(layout), want);
    const int64_t *sh = t->shape, *st = t->strides;
    *v = (fia_view){t->data, t->dtype, (int64_t)attnops_dtype_size(t->dtype), 0, 0, 0, 0, 0, 0, 0};
    switch (layout) {
    case ATTNOPS_LAYOUT_BSH:
        if (hidden_d < 1 || sh[2] % hidden_d)
            return ao_fail(INVALID, "%s: %s has hidden size %lld, not a multiple of the head dim %lld.", op, name,
                           (long long)sh[2], (long long)hidden_d);
        *dims = (dims4){sh[0], sh[2] / hidden_d, sh[1], hidden_d};
        v->sb = st[0], v->ss = st[1], v->sn = hidden_d * st[2], v->sd = st[2];
        break;
    case ATTNOPS_LAYOUT_BSND:
        *dims = (dims4){sh[0], sh[2], sh[1], sh[3]};
        v->sb = st[0], v->ss = st[1], v->sn = st[2], v->sd = st[3];
        break;
    case ATTNOPS_LAYOUT_BNSD:
        *dims = (dims4){sh[0], sh[1], sh[2], sh[3]};
        v->sb = st[0], v->sn = st[1], v->ss = st[2], v->sd = st[3];
        break;
    default: /* TND: one batch dimension of tokens */
        *dims = (dims4){1, sh[1], sh[0], sh[2]};
        v->ss = st[0], v->sn = st[1], v->sd = st[2];
        break;
    }
    return ATTNOPS_SUCCESS;
}

/* A paged key-like cache: [block_num, block_size, N d] (rank 3, BnBsH),
 * [block_num, N, block_size, d] (rank 4, BnNBsD) or Ascend's NZ (fractal)
 * [block_num, N, d / c0, block_size, c0] (rank 5; c0 = 32 bytes of the
 * dtype: 16 for f16/bf16, 32 for int8, 8 for f32), with any query layout
 * (aclnnFusedInferAttentionScoreV4: every cache layout with every query
 * layout); the accessor (fia_kv_at, fia_d_at) reads them all. */
static attnops_status paged_view_of(const char *op, const char *name, const attnops_tensor *t, const fia_problem *p,
                                    int64_t d, int64_t *n, int64_t *blocks, fia_view *v)
{
    char buf[96];
    const int64_t *sh = t->shape, *st = t->strides, bs = p->block_size;
    *v = (fia_view){t->data, t->dtype, (int64_t)attnops_dtype_size(t->dtype), 0, 0, 0, 0, st[0], 0, 0};
    if (t->rank == 3) {
        if (sh[1] != bs || d < 1 || sh[2] % d)
            return ao_fail(INVALID, "%s: paged %s has shape %s; it must be [block_num, block_size = %lld, N2 * %lld].",
                           op, name, ao_shape_str(t, buf, sizeof buf), (long long)bs, (long long)d);
        *n = sh[2] / d, v->ss = st[1], v->sn = d * st[2], v->sd = st[2];
    } else if (t->rank == 4) {
        if (sh[2] != bs || sh[3] != d)
            return ao_fail(INVALID, "%s: paged %s has shape %s; it must be [block_num, N2, block_size = %lld, %lld].",
                           op, name, ao_shape_str(t, buf, sizeof buf), (long long)bs, (long long)d);
        *n = sh[1], v->sn = st[1], v->ss = st[2], v->sd = st[3];
    } else if (t->rank == 5) {
        const int64_t c0 = 32 / v->es;
        if (sh[3] != bs || sh[4] != c0 || sh[2] * c0 != d)
            return ao_fail(INVALID, "%s: paged %s has shape %s; the NZ cache of %s is [block_num, N2, D / %lld = "
                           "%lld, block_size = %lld, %lld].", op, name, ao_shape_str(t, buf, sizeof buf),
                           attnops_dtype_name(t->dtype), (long long)c0, (long long)(d / c0), (long long)bs,
                           (long long)c0);
        *n = sh[1], v->sn = st[1], v->ss = st[3], v->sd = st[4], v->c0 = c0, v->sc0 = st[2];
    } else {
        return ao_fail(INVALID, "%s: paged %s has shape %s; the cache is [block_num, block_size, N2 * D], "
                       "[block_num, N2, block_size, D] or NZ [block_num, N2, D / c0, block_size, c0].", op, name,
                       ao_shape_str(t, buf, sizeof buf));
    }
    *blocks = sh[0];
    return ATTNOPS_SUCCESS;
}

/* A length list: i64 or i32, rank 1, one value or at least `count`. */
static attnops_status lengths_of(const char *op, const char *name, const attnops_tensor *t, int64_t count,
                                 const char **data, attnops_dtype *dt, int64_t *stride)
{
    if (t->dtype != ATTNOPS_DTYPE_I64 && t->dtype != ATTNOPS_DTYPE_I32)
        return ao_fail(INVALID, "%s: %s must be int64 or int32; got %s.", op, name, attnops_dtype_name(t->dtype));
    char buf[96];
    if (t->rank != 1 || t->shape[0] < 1 || (t->shape[0] != 1 && t->shape[0] < count))
        return ao_fail(INVALID, "%s: %s has shape %s; it takes one value (for every batch) or a list of at least B = "
                       "%lld.", op, name, ao_shape_str(t, buf, sizeof buf), (long long)count);
    *data = t->data, *dt = t->dtype;
    *stride = t->shape[0] == 1 ? 0 : t->strides[0];
    return ATTNOPS_SUCCESS;
}

/* TND cumulative lengths: non-decreasing from 0, the last one the rows. */
static attnops_status check_cumulative(const char *op, const char *name, const char *data, attnops_dtype dt,
                                       int64_t stride, int64_t B, int64_t rows)
{
    int64_t prev = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t c = fia_int_at(data, dt, b * stride);
        if (c < prev)
            return ao_fail(INVALID, "%s: %s[%lld] = %lld is below the value before it (%lld); TND lengths are "
                           "cumulative.", op, name, (long long)b, (long long)c, (long long)prev);
        prev = c;
    }
    if (prev != rows)
        return ao_fail(INVALID, "%s: %s ends at %lld but the tensor has %lld tokens; TND lengths are cumulative.", op,
                       name, (long long)prev, (long long)rows);
    return ATTNOPS_SUCCESS;
}

/* Per-batch lengths within [0, cap]. */
static attnops_status check_per_batch(const char *op, const char *name, const char *data, attnops_dtype dt,
                                      int64_t stride, int64_t B, int64_t cap, const char *what)
{
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = fia_int_at(data, dt, b * stride);
        if (n < 0 || n > cap)
            return ao_fail(INVALID, "%s: %s[%lld] = %lld; it must lie in [0, %lld] (%s).", op, name, (long long)b,
                           (long long)n, (long long)cap, what);
    }
    return ATTNOPS_SUCCESS;
}

/* Query, key, value, rope and heads: dims, layouts and views. */
static attnops_status check_tensors(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    const attnops_tensor *q = a->query, *k = a->key, *v = a->value;
    if (!is_float_io(q->dtype))
        return ao_fail(INVALID, "%s: query must be f16, bf16 or f32; got %s.", op, attnops_dtype_name(q->dtype));
    const attnops_dtype kv = k->dtype == ATTNOPS_DTYPE_I8 ? ATTNOPS_DTYPE_I8 : q->dtype;
    AO_TRY(ao_check_dtype(op, "key", k, kv, "key takes query's dtype, or int8 with antiquant scales"));
    AO_TRY(ao_check_dtype(op, "value", v, kv, "value takes key's dtype"));
    p->layout = a->input_layout;
    p->out_layout = a->output_layout ? a->output_layout : a->input_layout;
    const bool hidden = p->layout == ATTNOPS_LAYOUT_BSH && q->rank == 3;
    const int64_t hidden_d = hidden && q->shape[2] % a->num_heads == 0 ? q->shape[2] / a->num_heads : 0;
    if (hidden && hidden_d == 0)
        return ao_fail(INVALID, "%s: query's hidden size %lld is not a multiple of num_heads = %lld.", op,
                       (long long)q->shape[2], (long long)a->num_heads);
    dims4 qd;
    AO_TRY(view_of(op, "query", q, p->layout, hidden_d, &qd, &p->q));
    if (qd.n != a->num_heads)
        return ao_fail(INVALID, "%s: num_heads is %lld but query has %lld heads.", op, (long long)a->num_heads,
                       (long long)qd.n);
    p->N1 = qd.n, p->D = qd.d, p->S1 = qd.s;
    p->B = p->layout == ATTNOPS_LAYOUT_TND ? 0 : qd.b; /* TND: the lengths' count */
    if (p->D < 1) return ao_fail(INVALID, "%s: query's head dim is %lld; it must be >= 1.", op, (long long)p->D);
    return ATTNOPS_SUCCESS;
}

/* The kv lengths against the key tensor (S2 known). */
static attnops_status check_kv_lengths(const char *op, fia_problem *p)
{
    if (!p->kv_len) return ATTNOPS_SUCCESS;
    if (p->kv_cumulative)
        return check_cumulative(op, "actual_seq_lengths_kv", p->kv_len, p->kv_len_dtype, p->kv_len_stride, p->B,
                                p->S2);
    return check_per_batch(op, "actual_seq_lengths_kv", p->kv_len, p->kv_len_dtype, p->kv_len_stride, p->B,
                           p->S2, p->paged ? "the block table's capacity" : "key's S");
}

/* Value's head dim Dv: the last extent, or of a rank-3 value [.., .., N2 Dv] beside key's [.., .., N2 D]
 * (BSH, and a paged cache in that form), or D / c0 chunks of c0 in the NZ cache; 0 where the shape names
 * none.  Paged: block_table given. */
static int64_t value_head_dim(const attnops_fia_args *a, int64_t D)
{
    const attnops_tensor *k = a->key, *v = a->value;
    const bool paged = a->block_table != NULL;
    if (paged && v->rank == 5) return v->shape[2] * v->shape[4];
    if (v->rank != 3 || (!paged && a->input_layout != ATTNOPS_LAYOUT_BSH)) return v->shape[v->rank - 1];
    int64_t n2 = 0;
    if (paged && k->rank >= 4) n2 = k->shape[1];
    else if (k->rank == 3 && D > 0 && k->shape[2] % D == 0) n2 = k->shape[2] / D;
    return n2 > 0 && v->shape[2] % n2 == 0 ? v->shape[2] / n2 : 0;
}

static attnops_status check_value_head_dim(const char *op, int64_t dv)
{
    if (dv < 1) return ao_fail(INVALID, "%s: value's head dim is %lld; it must be >= 1.", op, (long long)dv);
    return ATTNOPS_SUCCESS;
}

static attnops_status check_kv(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    char buf[96];
    const attnops_tensor *k = a->key, *v = a->value;
    int64_t n2k, n2v, blocks_k = 0, blocks_v = 0;
    if (p->paged) {
        AO_TRY(paged_view_of(op, "key", k, p, p->D, &n2k, &blocks_k, &p->k));
        const int64_t vd = value_head_dim(a, p->D);
        AO_TRY(paged_view_of(op, "value", v, p, vd, &n2v, &blocks_v, &p->v));
        if (v->rank != k->rank || blocks_v != blocks_k || n2v != n2k)
            return ao_fail(INVALID, "%s: paged value has shape %s; it must be key's but for the head dim.", op,
                           ao_shape_str(v, buf, sizeof buf));
        p->Dv = vd, p->S2 = p->table_cols * p->block_size;
    } else {
        dims4 kd, vd;
        AO_TRY(view_of(op, "key", k, p->layout, p->D, &kd, &p->k));
        if (kd.d != p->D)
            return ao_fail(INVALID, "%s: key's head dim is %lld but query's is %lld.", op, (long long)kd.d,
                           (long long)p->D);
        const int64_t hidden_dv = p->layout == ATTNOPS_LAYOUT_BSH && v->rank == 3 ? value_head_dim(a, p->D) : 0;
        AO_TRY(view_of(op, "value", v, p->layout, hidden_dv ? hidden_dv : p->D, &vd, &p->v));
        if (vd.b != kd.b || vd.n != kd.n || vd.s != kd.s)
            return ao_fail(INVALID, "%s: value has shape %s; it must be key's but for the head dim.", op,
                           ao_shape_str(v, buf, sizeof buf));
        if (p->layout != ATTNOPS_LAYOUT_TND && kd.b != p->B)
            return ao_fail(INVALID, "%s: key has batch %lld but query %lld.", op, (long long)kd.b, (long long)p->B);
        n2k = kd.n, p->Dv = vd.d, p->S2 = kd.s;
        blocks_k = 0;
    }
    AO_TRY(check_value_head_dim(op, p->Dv));
    const int64_t want_n2 = a->num_key_value_heads ? a->num_key_value_heads : p->N1;
    if (n2k != want_n2)
        return ao_fail(INVALID, "%s: key has %lld heads but num_key_value_heads is %lld (0 means num_heads = %lld).",
                       op, (long long)n2k, (long long)a->num_key_value_heads, (long long)p->N1);
    if (n2k < 1 || p->N1 % n2k)
        return ao_fail(INVALID, "%s: num_heads = %lld is not a multiple of the %lld key/value heads.", op,
                       (long long)p->N1, (long long)n2k);
    p->N2 = n2k, p->G = p->N1 / n2k;
    AO_TRY(check_kv_lengths(op, p));
    if (p->paged) { /* every block a used position maps to exists */
        for (int64_t b = 0; b < p->B; b++) {
            const int64_t used = (fia_kv_len(p, b) + p->block_size - 1) / p->block_size;
            for (int64_t c = 0; c < used; c++) {
                const int32_t id = p->table[b * p->table_sb + c * p->table_sc];
                if (id < 0 || id >= blocks_k)
                    return ao_fail(INVALID, "%s: block_table[%lld][%lld] = %d is not a block of the cache (it has "
                                   "%lld).", op, (long long)b, (long long)c, (int)id, (long long)blocks_k);
            }
        }
    }
    return ATTNOPS_SUCCESS;
}

/* MLA: query_rope beside query, key_rope beside key, head dim Dr. */
static attnops_status check_rope(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    if (!a->query_rope != !a->key_rope)
        return ao_fail(INVALID, "%s: query_rope and key_rope go together; only %s is given.", op,
                       a->query_rope ? "query_rope" : "key_rope");
    if (!a->query_rope) return ATTNOPS_SUCCESS;
    const attnops_tensor *q = a->query, *qr = a->query_rope, *kr = a->key_rope;
    char buf[96];
    AO_TRY(ao_check_dtype(op, "query_rope", qr, q->dtype, "the rope inputs take query's dtype"));
    AO_TRY(ao_check_dtype(op, "key_rope", kr, q->dtype, "the rope inputs take query's dtype"));
    const int64_t heads_in_last = p->layout == ATTNOPS_LAYOUT_BSH ? p->N1 : 1, last = qr->shape[qr->rank - 1];
    const int64_t dr = last / heads_in_last;
    bool same = qr->rank == q->rank && dr >= 1 && last % heads_in_last == 0;
    for (int i = 0; same && i < q->rank - 1; i++) same = qr->shape[i] == q->shape[i];
    if (!same)
        return ao_fail(INVALID, "%s: query_rope has shape %s; it must be query's with the rope head dim.", op,
                       ao_shape_str(qr, buf, sizeof buf));
    dims4 qd;
    AO_TRY(view_of(op, "query_rope", qr, p->layout, dr, &qd, &p->qr));
    p->Dr = dr;
    if (p->paged) {
        int64_t n2, blocks;
        AO_TRY(paged_view_of(op, "key_rope", kr, p, dr, &n2, &blocks, &p->kr));
        if (n2 != p->N2 || kr->rank != a->key->rank || blocks != a->key->shape[0])
            return ao_fail(INVALID, "%s: paged key_rope has shape %s; it must be key's with head dim %lld.", op,
                           ao_shape_str(kr, buf, sizeof buf), (long long)dr);
    } else {
        dims4 kd;
        AO_TRY(view_of(op, "key_rope", kr, p->layout, dr, &kd, &p->kr));
        if (kd.n != p->N2 || kd.s != p->S2 || kd.d != dr || (p->layout != ATTNOPS_LAYOUT_TND && kd.b != p->B))
            return ao_fail(INVALID, "%s: key_rope has shape %s; it must be key's with head dim %lld.", op,
                           ao_shape_str(kr, buf, sizeof buf), (long long)dr);
    }
    return ATTNOPS_SUCCESS;
}

/* The lengths, the batch count (TND) and the branch. */
static attnops_status check_lengths(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    const bool tnd = p->layout == ATTNOPS_LAYOUT_TND;
    if (tnd) {
        if (!a->actual_seq_lengths)
            return ao_fail(NULLPTR, "%s: layout TND needs actual_seq_lengths (cumulative query lengths).", op);
        p->B = a->actual_seq_lengths->rank == 1 ? a->actual_seq_lengths->shape[0] : 0;
    }
    if (a->actual_seq_lengths) {
        AO_TRY(lengths_of(op, "actual_seq_lengths", a->actual_seq_lengths, p->B, &p->q_len, &p->q_len_dtype,
                          &p->q_len_stride));
        p->q_cumulative = tnd;
        if (tnd) AO_TRY(check_cumulative(op, "actual_seq_lengths", p->q_len, p->q_len_dtype, p->q_len_stride, p->B,
                                         p->S1));
    }
    if (a->block_table) {
        const attnops_tensor *t = a->block_table;
        char buf[96];
        AO_TRY(ao_check_dtype(op, "block_table", t, ATTNOPS_DTYPE_I32, "block ids are int32"));
        if (t->rank != 2 || t->shape[0] != p->B)
            return ao_fail(INVALID, "%s: block_table has shape %s; it must be [B = %lld, max_blocks].", op,
                           ao_shape_str(t, buf, sizeof buf), (long long)p->B);
        if (a->block_size < 1)
            return ao_fail(INVALID, "%s: block_size is %lld; a paged cache (block_table) needs it >= 1.", op,
                           (long long)a->block_size);
        if (!a->actual_seq_lengths_kv)
            return ao_fail(NULLPTR, "%s: a paged cache (block_table) needs actual_seq_lengths_kv.", op);
        p->paged = true, p->table = t->data, p->table_sb = t->strides[0], p->table_sc = t->strides[1];
        p->table_cols = t->shape[1], p->block_size = a->block_size;
    }
    if (tnd && !p->paged && !a->actual_seq_lengths_kv)
        return ao_fail(NULLPTR, "%s: layout TND needs actual_seq_lengths_kv (cumulative key lengths).", op);
    if (a->actual_seq_lengths_kv) {
        AO_TRY(lengths_of(op, "actual_seq_lengths_kv", a->actual_seq_lengths_kv, p->B, &p->kv_len, &p->kv_len_dtype,
                          &p->kv_len_stride));
        p->kv_cumulative = tnd && !p->paged;
    }
    /* the branch: one query row per batch */
    int64_t longest = tnd ? 0 : p->S1;
    for (int64_t b = 0; tnd && b < p->B; b++) longest = fia_q_len(p, b) > longest ? fia_q_len(p, b) : longest;
    p->decode = longest == 1;
    if (p->q_len && !tnd && !p->decode)
        AO_TRY(check_per_batch(op, "actual_seq_lengths", p->q_len, p->q_len_dtype, p->q_len_stride, p->B, p->S1,
                               "query's S"));
    if (tnd && p->q_len) p->S1 = longest; /* the longest batch: the mask's and pse's rows */
    return ATTNOPS_SUCCESS;
}

/* The rank-2..4 shape with its leading extents in `leading` (1 or B) and the
 * last two at least rows x cols: true when t fits. */
static bool fits(const attnops_tensor *t, int min_rank, int max_rank, int64_t B, int64_t rows, int64_t cols)
{
    if (t->rank < min_rank || t->rank > max_rank) return false;
    const int r = t->rank;
    for (int i = 0; i < r - 2; i++)
        if (t->shape[i] != 1 && !(i == 0 && t->shape[i] == B)) return false;
    return t->shape[r - 2] >= rows && t->shape[r - 1] >= cols;
}

/* The device's fallback (docs/NUMERICS.md "The device's fallbacks"): an empty atten_mask or pse_shift
 * tensor (no elements) is no mask / no bias, as CANN's tilings take it (IncreFlashAttention's
 * CheckAttenMaskShape warns "atten_mask tensor exist, but atten_mask shape size is 0", PromptFlashAttention
 * skips the mask's and the bias's checks and use); one warning per process and argument. */
static const attnops_tensor *unless_empty(const char *op, const char *name, const attnops_tensor *t,
                                          atomic_bool *warned)
{
    if (!t || ao_tensor_numel(t) != 0) return t;
    ao_warn_once(warned, "%s: %s has no elements (shape with a 0); as CANN's tiling does, the call runs without it.",
                 op, name);
    return NULL;
}

static attnops_status check_mask(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    static atomic_bool warned;
    const attnops_tensor *m = a->atten_mask;
    /* an empty mask stands for none only where none is allowed: a sparse mode that needs one still does */
    if (p->decode || a->sparse_mode == 0) m = unless_empty(op, "atten_mask", m, &warned);
    p->rule = (attn_rule){.mode = a->sparse_mode, .pre = a->pre_tokens, .next = a->next_tokens};
    if (!p->decode && a->sparse_mode >= 1 && !m)
        return ao_fail(NULLPTR, "%s: sparse_mode %lld needs atten_mask.", op, (long long)a->sparse_mode);
    if (!p->decode && a->sparse_mode == 4 && a->pre_tokens < 0 && a->next_tokens < 0)
        return ao_fail(INVALID, "%s: sparse_mode 4 with pre_tokens = %lld and next_tokens = %lld; they may not both be "
                       "negative.", op, (long long)a->pre_tokens, (long long)a->next_tokens);
    if (!m) return ATTNOPS_SUCCESS;
    char buf[96];
    if (m->dtype != ATTNOPS_DTYPE_BOOL && m->dtype != ATTNOPS_DTYPE_U8 && m->dtype != ATTNOPS_DTYPE_I8)
        return ao_fail(INVALID, "%s: atten_mask must be bool, uint8 or int8; got %s.", op,
                       attnops_dtype_name(m->dtype));
    bool compressed = m->rank >= 2 && m->rank <= 4 && m->shape[m->rank - 1] == 2048 && m->shape[m->rank - 2] == 2048;
    for (int i = 0; compressed && i < m->rank - 2; i++) compressed = m->shape[i] == 1;
    if (a->sparse_mode >= 2 && p->decode && compressed) return ATTNOPS_SUCCESS; /* CANN ignores the mode there */
    if (a->sparse_mode >= 2 && !p->decode) { /* the compressed tile: its shape only */
        if (!compressed)
            return ao_fail(INVALID, "%s: atten_mask has shape %s; sparse_mode %lld takes the compressed [2048, 2048] "
                           "lower-triangle tile.", op, ao_shape_str(m, buf, sizeof buf), (long long)a->sparse_mode);
        p->mask = FIA_MASK_COMPRESSED, p->rule.active = true;
        return ATTNOPS_SUCCESS;
    }
    const int r = m->rank;
    if (p->decode) { /* [B, S2'], [B, 1, S2'], [B, 1, 1, S2']: mask[b][j] */
        bool ok = r >= 2 && r <= 4 && m->shape[0] == p->B && m->shape[r - 1] >= p->S2;
        for (int i = 1; ok && i < r - 1; i++) ok = m->shape[i] == 1;
        if (!ok)
            return ao_fail(INVALID, "%s: atten_mask has shape %s; a decode step takes [B, S2'], [B, 1, S2'] or "
                           "[B, 1, 1, S2'] with B = %lld, S2' >= %lld.", op, ao_shape_str(m, buf, sizeof buf),
                           (long long)p->B, (long long)p->S2);
        p->mask_sb = m->strides[0], p->mask_si = 0, p->mask_sj = m->strides[r - 1];
    } else {
        if (!fits(m, 2, 4, p->B, p->S1, p->S2) || (r == 4 && m->shape[1] != 1))
            return ao_fail(INVALID, "%s: atten_mask has shape %s; the prompt branch takes [S1', S2'], [B|1, S1', S2'] "
                           "or [B|1, 1, S1', S2'] with S1' >= %lld, S2' >= %lld.", op, ao_shape_str(m, buf, sizeof buf),
                           (long long)p->S1, (long long)p->S2);
        p->mask_sb = r > 2 && m->shape[0] == p->B && p->B > 1 ? m->strides[0] : 0;
        p->mask_si = m->strides[r - 2], p->mask_sj = m->strides[r - 1];
    }
    p->mask = FIA_MASK_USER, p->mask_data = m->data;
    p->rule.active = !p->decode; /* the tokens and modes are a prompt's */
    return ATTNOPS_SUCCESS;
}

static attnops_status check_pse(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    static atomic_bool warned;
    const attnops_tensor *t = unless_empty(op, "pse_shift", a->pse_shift, &warned);
    if (!t) return ATTNOPS_SUCCESS;
    char buf[96];
    AO_TRY(ao_check_dtype(op, "pse_shift", t, a->query->dtype, "pse_shift takes query's dtype"));
    const int64_t rows = p->decode ? 1 : p->S1;
    if (t->rank != 4 || (t->shape[0] != 1 && t->shape[0] != p->B) || t->shape[1] != p->N1 || t->shape[2] < rows ||
        t->shape[3] < p->S2)
        return ao_fail(INVALID, "%s: pse_shift has shape %s; it must be [B|1, N1 = %lld, S1' >= %lld, S2' >= %lld].",
                       op, ao_shape_str(t, buf, sizeof buf), (long long)p->N1, (long long)rows, (long long)p->S2);
    p->pse = t->data, p->pse_dtype = t->dtype;
    p->pse_sb = t->shape[0] == 1 ? 0 : t->strides[0];
    p->pse_sh = t->strides[1], p->pse_si = t->strides[2], p->pse_sj = t->strides[3];
    return ATTNOPS_SUCCESS;
}

/* The ALiBi slopes (an attnops extension): f32 [N1] or [B, N1], on either branch. */
static attnops_status check_alibi(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    const attnops_tensor *t = a->alibi_slopes;
    const int32_t rule = a->alibi_rule;
    if (rule != ATTNOPS_ALIBI_BOTTOM_RIGHT && rule != ATTNOPS_ALIBI_START_IDX && rule != ATTNOPS_ALIBI_START_IDX_SQRT)
        return ao_fail(INVALID, "%s: alibi_rule is %d; it must be 0 (bottom-right), 2 or 3 (CANN's pseType).", op,
                       (int)rule);
    if (rule != ATTNOPS_ALIBI_BOTTOM_RIGHT && !t) /* a missing tensor: 161001, as sparse_mode without a mask */
        return ao_fail(NULLPTR, "%s: alibi_rule is %d but alibi_slopes is NULL; CANN's inner ALiBi needs the "
                       "slopes.", op, (int)rule);
    const int64_t qs = a->alibi_q_start_idx, ks = a->alibi_kv_start_idx;
    if (qs < INT32_MIN || qs > INT32_MAX || ks < INT32_MIN || ks > INT32_MAX || ks - qs > (1 << 20) ||
        ks - qs < -(1 << 20))
        return ao_fail(INVALID, "%s: alibi_q_start_idx is %lld and alibi_kv_start_idx %lld; each must fit int32 "
                       "and they may differ by at most 2^20 (CANN's tiling).", op, (long long)qs, (long long)ks);
    if (!t) return ATTNOPS_SUCCESS;
    char buf[96];
    AO_TRY(ao_check_dtype(op, "alibi_slopes", t, ATTNOPS_DTYPE_F32, "ALiBi slopes are f32"));
    const bool per_head = t->rank == 1 && t->shape[0] == p->N1;
    const bool per_batch = t->rank == 2 && t->shape[0] == p->B && t->shape[1] == p->N1;
    if (!per_head && !per_batch)
        return ao_fail(INVALID, "%s: alibi_slopes has shape %s; it must be [N1 = %lld] or [B = %lld, N1].", op,
                       ao_shape_str(t, buf, sizeof buf), (long long)p->N1, (long long)p->B);
    p->alibi = t->data;
    p->alibi_sb = per_batch ? t->strides[0] : 0;
    p->alibi_sh = t->strides[t->rank - 1];
    p->alibi_from_starts = rule != ATTNOPS_ALIBI_BOTTOM_RIGHT;
    p->alibi_sqrt = rule == ATTNOPS_ALIBI_START_IDX_SQRT;
    p->alibi_shift = qs - ks;
    return ATTNOPS_SUCCESS;
}

/* Attention sinks (CANN's learnable_sink): one logit per query head, [N1] of f32, f16 or bf16. */
static attnops_status check_sink(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    const attnops_tensor *t = a->learnable_sink;
    if (!t) return ATTNOPS_SUCCESS;
    if (t->dtype != ATTNOPS_DTYPE_F32 && t->dtype != ATTNOPS_DTYPE_F16 && t->dtype != ATTNOPS_DTYPE_BF16)
        return ao_fail(INVALID, "%s: learnable_sink has dtype %s; it must be f32, f16 or bf16.", op,
                       attnops_dtype_name(t->dtype));
    const int64_t shape[1] = {p->N1};
    AO_TRY(ao_check_shape(op, "learnable_sink", t, shape, 1, "[N1 = num_heads]: one logit per query head"));
    p->sink = (attn_sinks){t->data, t->dtype, t->strides[0]};
    return ATTNOPS_SUCCESS;
}

static attnops_status check_outputs(const char *op, const attnops_fia_args *a, fia_problem *p)
{
    const attnops_tensor *o = a->attention_out;
    AO_TRY(ao_check_dtype(op, "attention_out", o, a->query->dtype, "attention_out takes query's dtype"));
    const int64_t T1 = p->layout == ATTNOPS_LAYOUT_TND ? a->query->shape[0] : 0;
    int64_t want[4];
    int rank = 4;
    switch (p->out_layout) {
    case ATTNOPS_LAYOUT_BSH: rank = 3, want[0] = p->B, want[1] = p->S1, want[2] = p->N1 * p->Dv; break;
    case ATTNOPS_LAYOUT_BSND: want[0] = p->B, want[1] = p->S1, want[2] = p->N1, want[3] = p->Dv; break;
    case ATTNOPS_LAYOUT_BNSD: want[0] = p->B, want[1] = p->N1, want[2] = p->S1, want[3] = p->Dv; break;
    default: rank = 3, want[0] = T1, want[1] = p->N1, want[2] = p->Dv; break;
    }
    AO_TRY(ao_check_shape(op, "attention_out", o, want, rank, "the output layout with value's head dim"));
    dims4 od;
    AO_TRY(view_of(op, "attention_out", o, p->out_layout, p->Dv, &od, &p->out));
    const attnops_tensor *lse = a->softmax_lse;
    p->lse_flag = a->softmax_lse_flag;
    if (a->softmax_lse_flag) {
        AO_TRY(ao_check_present(op, "softmax_lse", lse));
        AO_TRY(ao_check_view(op, "softmax_lse", lse));
        AO_TRY(ao_check_dtype(op, "softmax_lse", lse, ATTNOPS_DTYPE_F32, "softmax_lse is f32"));
        const int64_t lb[4] = {p->B, p->N1, p->S1, 1}, lt[3] = {T1, p->N1, 1};
        if (p->layout == ATTNOPS_LAYOUT_TND)
            AO_TRY(ao_check_shape(op, "softmax_lse", lse, lt, 3, "[T1, N1, 1] with softmax_lse_flag"));
        else
            AO_TRY(ao_check_shape(op, "softmax_lse", lse, lb, 4, "[B, N1, S1, 1] with softmax_lse_flag"));
    } else if (lse) {
        AO_TRY(ao_check_view(op, "softmax_lse", lse));
        AO_TRY(ao_check_dtype(op, "softmax_lse", lse, ATTNOPS_DTYPE_F32, "softmax_lse is f32 (written 0 without "
                              "softmax_lse_flag)"));
    }
    p->lse = lse;
    const attnops_tensor *outs[2] = {o, lse};
    const char *const names[2] = {"attention_out", "softmax_lse"};
    return ao_check_disjoint(op, outs, names, 2);
}

attnops_status fia_output_shapes(const attnops_fia_args *a, const char *op, attnops_output_shape *out,
                                 attnops_output_shape *lse)
{
    AO_TRY(check_layouts(op, a));
    fia_problem p;
    memset(&p, 0, sizeof p);
    AO_TRY(check_tensors(op, a, &p));
    const int64_t dv = value_head_dim(a, p.D);
    AO_TRY(check_value_head_dim(op, dv));
    const attnops_tensor *q = a->query;
    const int s_dim = p.layout == ATTNOPS_LAYOUT_BNSD ? 2 : 1;
    memset(out, 0, sizeof *out), memset(lse, 0, sizeof *lse);
    if (p.layout == ATTNOPS_LAYOUT_TND) {
        ao_out_query_dim(out, q, 0), ao_out_extent(out, p.N1), ao_out_extent(out, dv);
        ao_out_query_dim(lse, q, 0), ao_out_extent(lse, p.N1), ao_out_extent(lse, 1);
        return ATTNOPS_SUCCESS;
    }
    ao_out_query_dim(out, q, 0);
    if (p.out_layout == ATTNOPS_LAYOUT_BNSD) ao_out_extent(out, p.N1);
    ao_out_query_dim(out, q, s_dim);
    if (p.out_layout == ATTNOPS_LAYOUT_BSH) ao_out_extent(out, p.N1 * dv);
    else if (p.out_layout == ATTNOPS_LAYOUT_BSND) ao_out_extent(out, p.N1), ao_out_extent(out, dv);
    else ao_out_extent(out, dv);
    ao_out_query_dim(lse, q, 0), ao_out_extent(lse, p.N1), ao_out_query_dim(lse, q, s_dim), ao_out_extent(lse, 1);
    return ATTNOPS_SUCCESS;
}

attnops_status fia_validate(const attnops_fia_args *a, const char *op, fia_problem *p)
{
    memset(p, 0, sizeof *p);
    if (!a) return ao_fail(NULLPTR, "%s: args is NULL.", op);
    const struct { const attnops_tensor *t; const char *name; } required[] = {
        {a->query, "query"}, {a->key, "key"}, {a->value, "value"}, {a->attention_out, "attention_out"}};
    for (size_t i = 0; i < 4; i++) {
        AO_TRY(ao_check_present(op, required[i].name, required[i].t));
        AO_TRY(ao_check_view(op, required[i].name, required[i].t));
    }
    const struct { const attnops_tensor *t; const char *name; } optional[] = {
        {a->pse_shift, "pse_shift"}, {a->atten_mask, "atten_mask"}, {a->actual_seq_lengths, "actual_seq_lengths"},
        {a->actual_seq_lengths_kv, "actual_seq_lengths_kv"}, {a->block_table, "block_table"},
        {a->query_rope, "query_rope"}, {a->key_rope, "key_rope"}, {a->key_antiquant_scale, "key_antiquant_scale"},
        {a->key_antiquant_offset, "key_antiquant_offset"}, {a->value_antiquant_scale, "value_antiquant_scale"},
        {a->value_antiquant_offset, "value_antiquant_offset"}, {a->antiquant_scale, "antiquant_scale"},
        {a->antiquant_offset, "antiquant_offset"}, {a->alibi_slopes, "alibi_slopes"},
        {a->learnable_sink, "learnable_sink"}};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        if (optional[i].t) AO_TRY(ao_check_view(op, optional[i].name, optional[i].t));
    AO_TRY(check_left_out(op, a));
    AO_TRY(check_attributes(op, a));
    AO_TRY(check_tensors(op, a, p));
    AO_TRY(check_lengths(op, a, p));
    AO_TRY(check_kv(op, a, p));
    AO_TRY(check_rope(op, a, p));
    AO_TRY(fia_validate_antiquant(a, op, p));
    if (p->decode && a->inner_precise > 1)
        return ao_fail(INVALID, "%s: inner_precise is %lld; a decode step (S1 = 1) takes 0 or 1.", op,
                       (long long)a->inner_precise);
    AO_TRY(check_mask(op, a, p));
    AO_TRY(check_pse(op, a, p));
    AO_TRY(check_alibi(op, a, p));
    AO_TRY(check_sink(op, a, p));
    AO_TRY(check_outputs(op, a, p));
    p->scale = a->scale_value, p->softcap = a->softcap, p->inner_precise = a->inner_precise, p->impl = a->impl;
    p->deterministic = a->deterministic;
#ifdef _OPENMP
    p->threads = a->num_threads > 0 ? a->num_threads : omp_get_max_threads();
#else
    p->threads = 1;
#endif
    return ATTNOPS_SUCCESS;
}
