/* Argument validation and shape derivation for FlashAttentionScore and
 * FlashAttentionScoreGrad: the one boundary where public arguments become an
 * fa_problem.  Order and codes follow the aclnn op_api checks (spec 8.2):
 * null pointers -> 161001, anything malformed -> 161002, a well-formed
 * request for a feature this version does not implement -> 161003. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "fa/fa_dropout.h"
#include "fa/fa_fp8.h"
#include "core/validate.h"
#include "fa/fa_problem.h"

#define NULLPTR ATTNOPS_ERR_NULLPTR
#define INVALID ATTNOPS_ERR_PARAM_INVALID
#define UNSUPPORTED ATTNOPS_ERR_UNSUPPORTED

static bool is_io_dtype(attnops_dtype d)
{
    return d == ATTNOPS_DTYPE_F32 || d == ATTNOPS_DTYPE_F16 || d == ATTNOPS_DTYPE_BF16;
}

/* Sizes of one q/k/v-like tensor read through its layout. */
typedef struct layout_dims {
    int64_t b, s, n, d;
} layout_dims;

/* Reads (B, S, N, D) of `t` in `layout`.  For BSH/SBH the hidden size is split
 * with `heads` heads when heads > 0, otherwise with head dim `head_dim`. */
static attnops_status read_dims(const char *op, const char *name, const attnops_tensor *t, attnops_layout layout,
                                int64_t heads, int64_t head_dim, layout_dims *out)
{
    char buf[96];
    int want_rank = (layout == ATTNOPS_LAYOUT_BSH || layout == ATTNOPS_LAYOUT_SBH || layout == ATTNOPS_LAYOUT_TND) ? 3 : 4;
    if (t->rank != want_rank)
        return ao_fail(INVALID, "%s: tensor '%s' has shape %s but layout %s needs rank %d.", op, name,
                       ao_shape_str(t, buf, sizeof buf), attnops_layout_name(layout), want_rank);
    switch (layout) {
    case ATTNOPS_LAYOUT_BNSD: *out = (layout_dims){t->shape[0], t->shape[2], t->shape[1], t->shape[3]}; break;
    case ATTNOPS_LAYOUT_BSND: *out = (layout_dims){t->shape[0], t->shape[1], t->shape[2], t->shape[3]}; break;
    case ATTNOPS_LAYOUT_TND: *out = (layout_dims){1, t->shape[0], t->shape[1], t->shape[2]}; break; /* B from the lists */
    case ATTNOPS_LAYOUT_BSH:
    case ATTNOPS_LAYOUT_SBH: {
        int64_t b = layout == ATTNOPS_LAYOUT_BSH ? t->shape[0] : t->shape[1];
        int64_t s = layout == ATTNOPS_LAYOUT_BSH ? t->shape[1] : t->shape[0];
        int64_t h = t->shape[2];
        if (heads > 0) {
            if (h % heads != 0)
                return ao_fail(INVALID, "%s: tensor '%s' has hidden size %lld, not a multiple of %lld heads.", op,
                               name, (long long)h, (long long)heads);
            *out = (layout_dims){b, s, heads, h / heads};
        } else {
            if (head_dim <= 0 || h % head_dim != 0)
                return ao_fail(INVALID, "%s: tensor '%s' has hidden size %lld, not a multiple of head dim %lld.",
                               op, name, (long long)h, (long long)head_dim);
            *out = (layout_dims){b, s, h / head_dim, head_dim};
        }
        break;
    }
    default: return ao_fail(INVALID, "%s: layout %s is not supported here.", op, attnops_layout_name(layout));
    }
    return ATTNOPS_SUCCESS;
}

/* The expected shape of a q/k/v-like tensor with the given sizes. */
static void layout_shape(attnops_layout layout, int64_t b, int64_t s, int64_t n, int64_t d, int64_t shape[4],
                         int *rank)
{
    switch (layout) {
    case ATTNOPS_LAYOUT_BNSD: shape[0] = b, shape[1] = n, shape[2] = s, shape[3] = d, *rank = 4; break;
    case ATTNOPS_LAYOUT_BSND: shape[0] = b, shape[1] = s, shape[2] = n, shape[3] = d, *rank = 4; break;
    case ATTNOPS_LAYOUT_BSH: shape[0] = b, shape[1] = s, shape[2] = n * d, *rank = 3; break;
    case ATTNOPS_LAYOUT_TND: shape[0] = s, shape[1] = n, shape[2] = d, *rank = 3; break; /* s = T */
    default: shape[0] = s, shape[1] = b, shape[2] = n * d, *rank = 3; break; /* SBH */
    }
}

/* The [b][n][s][d] view of a q/k/v-like tensor whose head dim is `d`. */
static fa_view view_of(const attnops_tensor *t, attnops_layout layout, int64_t d)
{
    fa_view v = {(char *)t->data, t->dtype, (int64_t)attnops_dtype_size(t->dtype), 0, 0, 0, 0};
    const int64_t *st = t->strides;
    switch (layout) {
    case ATTNOPS_LAYOUT_BNSD: v.sb = st[0], v.sn = st[1], v.ss = st[2], v.sd = st[3]; break;
    case ATTNOPS_LAYOUT_BSND: v.sb = st[0], v.ss = st[1], v.sn = st[2], v.sd = st[3]; break;
    case ATTNOPS_LAYOUT_BSH: v.sb = st[0], v.ss = st[1], v.sn = d * st[2], v.sd = st[2]; break;
    case ATTNOPS_LAYOUT_TND: v.sb = 0, v.ss = st[0], v.sn = st[1], v.sd = st[2]; break; /* rows are global */
    default: v.ss = st[0], v.sb = st[1], v.sn = d * st[2], v.sd = st[2]; break; /* SBH */
    }
    return v;
}

static fa_view stats_view(const attnops_tensor *t)
{
    return (fa_view){(char *)t->data, t->dtype, 4, t->strides[0], t->strides[1], t->strides[2], t->strides[3]};
}

/* Attributes and optional inputs: range checks first (161002), then the
 * features later versions add (161003), so a bad value is never reported as
 * merely unsupported. */
static attnops_status check_attributes(const char *op, const attnops_fa_params *p)
{
    if (!isfinite(p->scale_value) || !isfinite((float)p->scale_value)) /* CANN's attribute is a float */
        return ao_fail(INVALID, "%s: scale_value is %g; it must be finite as an f32.", op, p->scale_value);
    /* the fast kernels cap in f32, with the factors scale / softcap and softcap / scale (fa_scores.c) */
    const double cap = p->softcap, sv = p->scale_value;
    if (!(cap == 0.0 || (cap > 0.0 && isfinite((float)cap) && (float)cap > 0.0f && isfinite((float)(sv / cap)) &&
                         (sv == 0.0 || isfinite((float)(cap / sv))))))
        return ao_fail(INVALID, "%s: softcap is %g; it must be 0 (off) or positive, with softcap, scale_value / "
                       "softcap and softcap / scale_value finite as f32s.", op, cap);
    if (p->padding_mask)
        return ao_fail(INVALID, "%s: padding_mask is reserved by CANN and must be NULL.", op);
    if (p->head_num <= 0)
        return ao_fail(INVALID, "%s: head_num is %lld; it must be the number of query heads (>= 1).", op,
                       (long long)p->head_num);
    if (!(p->keep_prob > 0.0 && p->keep_prob <= 1.0 && (float)p->keep_prob > 0.0f)) /* a float in CANN */
        return ao_fail(INVALID, "%s: keep_prob is %g; it must lie in (0, 1] (as an f32).", op, p->keep_prob);
    if (p->sparse_mode < 0 || p->sparse_mode > 8)
        return ao_fail(INVALID, "%s: sparse_mode is %lld; it must be 0..8.", op, (long long)p->sparse_mode);
    if ((p->sparse_mode == 7 || p->sparse_mode == 8) && p->input_layout != ATTNOPS_LAYOUT_TND)
        return ao_fail(INVALID, "%s: sparse_mode %lld needs input_layout TND, got %s.", op,
                       (long long)p->sparse_mode, attnops_layout_name(p->input_layout));
    if (p->pse_type < 0 || p->pse_type > 3)
        return ao_fail(INVALID, "%s: pse_type is %lld; it must be 0..3.", op, (long long)p->pse_type);
    if (p->pse_type != 1 && !p->pse)
        return ao_fail(INVALID, "%s: pse_type is %lld but no pse tensor is given; pass pse_type 1 without pse.", op,
                       (long long)p->pse_type);
    if (p->inner_precise < 0 || p->inner_precise > 2)
        return ao_fail(INVALID, "%s: inner_precise is %lld; it must be 0, 1 or 2.", op, (long long)p->inner_precise);
    if (p->out_dtype != 0 && p->out_dtype != 1)
        return ao_fail(INVALID, "%s: out_dtype is %lld; it must be 0 (fp16) or 1 (bf16).", op,
                       (long long)p->out_dtype);
    if (p->impl < ATTNOPS_IMPL_AUTO || p->impl > ATTNOPS_IMPL_BENCHMARK)
        return ao_fail(INVALID, "%s: impl is %d; it must be AUTO, REFERENCE, CPU or BENCHMARK.", op, (int)p->impl);
    if (p->num_threads < 0)
        return ao_fail(INVALID, "%s: num_threads is %d; use 0 for the OpenMP default.", op, (int)p->num_threads);
    if (p->input_layout < ATTNOPS_LAYOUT_BNSD || p->input_layout > ATTNOPS_LAYOUT_TND)
        return ao_fail(INVALID, "%s: input_layout is %d; it must be one of BNSD, BSND, BSH, SBH, TND.", op,
                       (int)p->input_layout);

    return ATTNOPS_SUCCESS;
}

/* Reads element `i` of a rank-1 i32/i64 list. */
static int64_t list_at(const attnops_tensor *t, int64_t i)
{
    const char *at = (const char *)t->data + i * t->strides[0] * (int64_t)attnops_dtype_size(t->dtype);
    return t->dtype == ATTNOPS_DTYPE_I32 ? *(const int32_t *)at : *(const int64_t *)at;
}

static attnops_status check_list(const char *op, const char *name, const attnops_tensor *t, int64_t min_len,
                                 int64_t max_len)
{
    AO_TRY(ao_check_view(op, name, t));
    if (t->dtype != ATTNOPS_DTYPE_I64 && t->dtype != ATTNOPS_DTYPE_I32)
        return ao_fail(INVALID, "%s: '%s' has dtype %s; it must be i64 (or i32).", op, name,
                       attnops_dtype_name(t->dtype));
    if (t->rank != 1 || t->shape[0] < min_len || t->shape[0] > max_len)
        return ao_fail(INVALID, "%s: '%s' must be a 1-D list of %lld..%lld values, got rank %d with %lld.", op, name,
                       (long long)min_len, (long long)max_len, (int)t->rank, (long long)(t->rank ? t->shape[0] : 0));
    return ATTNOPS_SUCCESS;
}

/* [b][n][i][j] view of a 2-D [S1,S2] or 4-D [B|1, N|1, rows, S2] tensor;
 * broadcast dimensions get stride 0. */
static fa_view broadcast_view(const attnops_tensor *t)
{
    fa_view v = {(char *)t->data, t->dtype, (int64_t)attnops_dtype_size(t->dtype), 0, 0, 0, 0};
    const int r = t->rank;
    v.ss = t->shape[r - 2] == 1 ? 0 : t->strides[r - 2];
    v.sd = t->strides[r - 1];
    if (r == 4) {
        v.sb = t->shape[0] == 1 ? 0 : t->strides[0];
        v.sn = t->shape[1] == 1 ? 0 : t->strides[1];
    }
    return v;
}

/* Spec 3.2's token checks (only with a mask tensor: without one the tokens
 * are ignored).  Padded layouts: modes 0 and 4 after the mode-4 correction;
 * TND: modes 0 and 4 per batch, 7/8 for the band batch only. */
static attnops_status check_tokens(const char *op, const attnops_fa_params *p, const fa_problem *pr)
{
    const int64_t mode = p->sparse_mode, pre = ao_clamp_tokens(p->pre_tokens), next = ao_clamp_tokens(p->next_tokens);
    if (!pr->varlen) {
        if (mode != 0 && mode != 4) return ATTNOPS_SUCCESS;
        const int64_t pc = mode == 4 ? pre + pr->S1 - pr->S2 : pre, nc = mode == 4 ? next - pr->S1 + pr->S2 : next;
        if (-pc > pr->S2 || -nc > pr->S1 || pc + nc < 0)
            return ao_fail(INVALID, "%s: pre_tokens %lld and next_tokens %lld (sparse_mode %lld; %lld and %lld after "
                           "the right-down correction) leave no band: need -pre <= S2, -next <= S1 and pre + next "
                           ">= 0.", op, (long long)pre, (long long)next, (long long)mode, (long long)pc,
                           (long long)nc);
        return ATTNOPS_SUCCESS;
    }
    for (int64_t b = 0; b < pr->B; b++) {
        const int64_t s1 = fa_q_len(pr, b), s2 = fa_kv_len(pr, b);
        bool bad;
        if (mode == 0) bad = -pre > s2 || -next > s1 || pre + next <= 0;
        else if (mode == 4 || ((mode == 7 || mode == 8) && b == pr->mask.rule.band_batch))
            bad = -pre > s1 || -next > s2 || pre + next <= 0;
        else continue;
        if (bad)
            return ao_fail(INVALID, "%s: pre_tokens %lld and next_tokens %lld leave no band in batch %lld (S1 = %lld, "
                           "S2 = %lld, sparse_mode %lld): TND needs -pre <= %s, -next <= %s and pre + next > 0.", op,
                           (long long)pre, (long long)next, (long long)b, (long long)s1, (long long)s2,
                           (long long)mode, mode == 0 ? "S2" : "S1", mode == 0 ? "S1" : "S2");
    }
    return ATTNOPS_SUCCESS;
}

/* A prefix list must hold integers whatever happens to it next. */
static attnops_status check_prefix_dtype(const char *op, const attnops_tensor *t)
{
    if (!t) return ATTNOPS_SUCCESS;
    AO_TRY(ao_check_view(op, "prefix", t));
    if (t->dtype != ATTNOPS_DTYPE_I64 && t->dtype != ATTNOPS_DTYPE_I32)
        return ao_fail(INVALID, "%s: 'prefix' has dtype %s; it must be i64 (or i32).", op,
                       attnops_dtype_name(t->dtype));
    return ATTNOPS_SUCCESS;
}

/* The device's fallback for sparse_mode 5 with padded layouts (docs/NUMERICS.md,
 * "The device's fallbacks"): where CANN's host tiling cannot take the prefix
 * list (GetPrefixNList in arch22's FlashAttentionScoreTilingBase and arch35's
 * FlashAttentionScoreTilingRegbase: missing, not 1-D, not B long, or a value
 * outside [max(0, S2 - S1), S2]) it logs a warning and runs the dense path
 * over the full mask the caller gave, i.e. sparse_mode 1.  TND and mode 6
 * fail there instead, and so they do here. */
static bool prefix_falls_back(const char *op, const attnops_tensor *t, const fa_problem *pr)
{
    static atomic_bool warned;
    const char *why = NULL;
    int64_t bad_b = -1, bad_v = 0;
    if (!t) why = "is missing";
    else if (t->rank != 1 || t->shape[0] != pr->B) why = "is not a list of B values";
    else {
        for (int64_t b = 0; b < pr->B && !why; b++) {
            const int64_t s1 = fa_q_len(pr, b), s2 = fa_kv_len(pr, b), lo = s1 > s2 ? 0 : s2 - s1;
            const int64_t v = list_at(t, b);
            if (v < lo || v > s2) why = "has a value outside [max(0, S2 - S1), S2]", bad_b = b, bad_v = v;
        }
    }
    if (!why) return false;
    if (bad_b >= 0)
        ao_warn_once(&warned, "%s: sparse_mode 5's 'prefix' %s (prefix[%lld] = %lld); as CANN's tiling does, the "
                     "dense path runs over the full atten_mask given (sparse_mode 1).", op, why, (long long)bad_b,
                     (long long)bad_v);
    else
        ao_warn_once(&warned, "%s: sparse_mode 5's 'prefix' %s; as CANN's tiling does, the dense path runs over the "
                     "full atten_mask given (sparse_mode 1).", op, why);
    return true;
}

/* atten_mask, sparse_mode, tokens and prefix (spec 3). */
static attnops_status derive_mask(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    fa_mask_cfg *m = &pr->mask;
    m->rule.mode = p->sparse_mode;
    m->rule.pre = p->pre_tokens;
    m->rule.next = p->next_tokens;
    const attnops_tensor *t = p->atten_mask;
    if (!t) { /* no mask tensor: nothing is masked, whatever the mode (as CANN) */
        m->skip_invalid_rows = p->inner_precise == 2;
        return ATTNOPS_SUCCESS;
    }
    char buf[96];
    AO_TRY(ao_check_view(op, "atten_mask", t));
    if (t->dtype != ATTNOPS_DTYPE_BOOL && t->dtype != ATTNOPS_DTYPE_U8)
        return ao_fail(INVALID, "%s: atten_mask has dtype %s; it must be bool or u8 (1 = masked out).", op,
                       attnops_dtype_name(t->dtype));
    if (t->rank != 2 && t->rank != 4)
        return ao_fail(INVALID, "%s: atten_mask has shape %s; it must be 2-D or 4-D.", op, ao_shape_str(t, buf, sizeof buf));
    const int64_t rows = t->shape[t->rank - 2], cols = t->shape[t->rank - 1];
    int64_t mode = p->sparse_mode;
    const int64_t S1 = pr->S1, S2 = pr->S2;
    m->rule.active = true;
    if (mode == 5 && !pr->varlen) {
        AO_TRY(check_prefix_dtype(op, p->prefix));
        if (prefix_falls_back(op, p->prefix, pr)) mode = m->rule.mode = 1;
    }
    /* Modes 7/8: the band batch is the last (7) / first (8) with query rows. */
    m->rule.band_batch = -1;
    for (int64_t b = 0; b < pr->B && (mode == 7 || mode == 8); b++)
        if (fa_q_len(pr, b) != 0 && (mode == 7 || m->rule.band_batch < 0)) m->rule.band_batch = b;
    if (mode == 0 || mode == 1 || mode == 5) {
        bool lead_ok = t->rank == 2 || ((t->shape[0] == 1 || t->shape[0] == pr->B) &&
                                        (t->shape[1] == 1 || t->shape[1] == pr->N1) &&
                                        !(t->shape[0] == 1 && pr->B != 1 && t->shape[1] == pr->N1 && pr->N1 != 1));
        /* TND: sparse_mode 5 is not defined, and modes 0/1 take one mask shared by every batch and head. */
        if (pr->varlen && mode == 5)
            return ao_fail(INVALID, "%s: layout TND does not take sparse_mode 5 (its per-batch prefix masks are not "
                           "defined for TND).", op);
        if (pr->varlen && (rows != S1 || cols != S2 || (t->rank == 4 && (t->shape[0] != 1 || t->shape[1] != 1))))
            return ao_fail(INVALID, "%s: atten_mask has shape %s; layout TND takes sparse_mode %lld with one "
                           "[max S1, max S2] = [%lld, %lld] mask (or [1, 1, %lld, %lld]) shared by every batch.", op,
                           ao_shape_str(t, buf, sizeof buf), (long long)mode, (long long)S1, (long long)S2,
                           (long long)S1, (long long)S2);
        /* Mode 5's prefix differs per batch, so its mask must too (the golden rejects SS there). */
        if (mode == 5 && (t->rank != 4 || t->shape[0] != pr->B))
            return ao_fail(INVALID, "%s: atten_mask has shape %s; sparse_mode 5 needs a per-batch mask [B, 1, S1, S2] "
                           "or [B, N1, S1, S2] with B = %lld.", op, ao_shape_str(t, buf, sizeof buf), (long long)pr->B);
        if (rows != S1 || cols != S2 || !lead_ok)
            return ao_fail(INVALID, "%s: atten_mask has shape %s; sparse_mode %lld needs [S1, S2], [1, 1, S1, S2], "
                           "[B, 1, S1, S2] or [B, N1, S1, S2] with S1 = %lld, S2 = %lld.", op,
                           ao_shape_str(t, buf, sizeof buf), (long long)mode, (long long)S1, (long long)S2);
        m->has_elements = true;
        m->elements = broadcast_view(t);
    } else {
        const int64_t want_rows = mode == 6 ? 3072 : 2048;
        if (rows != want_rows || cols != 2048)
            return ao_fail(INVALID, "%s: atten_mask has shape %s; sparse_mode %lld takes the compressed mask, try "
                           "setting it to [%lld, 2048].", op, ao_shape_str(t, buf, sizeof buf), (long long)mode,
                           (long long)want_rows);
    }
    AO_TRY(check_tokens(op, p, pr));
    bool zero_prefix = false;
    if (mode == 5 || mode == 6) {
        if (!p->prefix) return ao_fail(NULLPTR, "%s: sparse_mode %lld needs the 'prefix' list.", op, (long long)mode);
        AO_TRY(check_list(op, "prefix", p->prefix, pr->B, pr->B));
        for (int64_t b = 0; b < pr->B; b++) {
            const int64_t s1 = fa_q_len(pr, b), s2 = fa_kv_len(pr, b), lo = s1 > s2 ? 0 : s2 - s1;
            int64_t v = list_at(p->prefix, b);
            if (v < lo || v > s2)
                return ao_fail(INVALID, "%s: prefix[%lld] is %lld; with S1 = %lld, S2 = %lld it must lie in [%lld, "
                               "%lld].", op, (long long)b, (long long)v, (long long)s1, (long long)s2, (long long)lo,
                               (long long)s2);
            zero_prefix |= v == 0;
        }
        m->rule.prefix = (attn_list){p->prefix->data, p->prefix->dtype, p->prefix->strides[0]};
    }
    /* The golden's conditions for the sentinel behaviour (spec 1.1); in TND
     * per batch (any batch meeting them selects it). */
    bool skip = p->inner_precise == 2 || zero_prefix;
    const int64_t pre = ao_clamp_tokens(p->pre_tokens), next = ao_clamp_tokens(p->next_tokens);
    for (int64_t b = 0; b < (pr->varlen ? pr->B : 1); b++) {
        const int64_t s1 = fa_q_len(pr, b), s2 = fa_kv_len(pr, b);
        const bool band = b == m->rule.band_batch;
        switch (mode) {
        case 0: skip |= pr->varlen ? (pre < 0 || next < 0)
                                   : (pre < S1 || next < S2); break;
        case 3: skip |= s1 > s2; break;
        case 4: skip |= pre < 0 || next + s2 < s1; break;
        case 7: skip |= band ? (pre < 0 || next + s2 < s1) : s1 > s2; break;
        case 8: skip |= band && (pre < 0 || next + s2 < s1); break;
        default: break;
        }
    }
    m->skip_invalid_rows = skip;
    return ATTNOPS_SUCCESS;
}

/* Sparse mode 2 or 3, or 0 / 4 with tokens that make it one (pre >= S1, next = 0). */
static bool rule_is_causal(const attn_rule *r, int64_t S1)
{
    if (!r->active) return false;
    return r->mode == 2 || r->mode == 3 || ((r->mode == 0 || r->mode == 4) && r->pre >= S1 && r->next == 0);
}

static bool mask_is_causal_square(const fa_problem *pr)
{
    return pr->S1 == pr->S2 && rule_is_causal(&pr->mask.rule, pr->S1);
}

/* TND takes an external pse only in the compressed ALiBi form
 * [B|1, N1, 1024, max S2] (docs; spec 4.1), under a causal mask, and the
 * kernel's reconstruction assumes S1_b = S2_b in every batch.  The 1-D forms
 * the tiling also accepts have no documented packing: 161003. */
static attnops_status derive_tnd_alibi(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    const attnops_tensor *t = p->pse;
    char buf[96];
    if (t->dtype != pr->out_dtype)
        return ao_fail(INVALID, "%s: pse has dtype %s but must have query's dtype %s.", op,
                       attnops_dtype_name(t->dtype), attnops_dtype_name(pr->out_dtype));
    if (t->rank != 4)
        return ao_fail(UNSUPPORTED, "%s: pse of shape %s with layout TND: only the compressed ALiBi form [B or 1, N1, "
                       "1024, max S2] is supported (the 1-D TND forms have no documented packing).", op,
                       ao_shape_str(t, buf, sizeof buf));
    const int64_t *sh = t->shape;
    if ((sh[0] != pr->B && sh[0] != 1) || sh[1] != pr->N1 || sh[2] != 1024 || sh[3] != pr->S2)
        return ao_fail(INVALID, "%s: pse has shape %s; with layout TND it must be [B or 1, N1, 1024, max S2] = [%lld, "
                       "%lld, 1024, %lld].", op, ao_shape_str(t, buf, sizeof buf), (long long)pr->B, (long long)pr->N1,
                       (long long)pr->S2);
    if (!rule_is_causal(&pr->mask.rule, pr->S1))
        return ao_fail(INVALID, "%s: the compressed ALiBi pse needs a causal mask (sparse_mode 2/3, or 0/4 with "
                       "pre_tokens >= S1 and next_tokens = 0).", op);
    for (int64_t b = 0; b < pr->B; b++)
        if (fa_q_len(pr, b) != fa_kv_len(pr, b))
            return ao_fail(INVALID, "%s: the compressed ALiBi pse needs S1 = S2 in every batch; batch %lld has %lld "
                           "and %lld.", op, (long long)b, (long long)fa_q_len(pr, b), (long long)fa_kv_len(pr, b));
    pr->pse.kind = FA_PSE_ALIBI_1024;
    pr->pse.alibi_rows = 1024;
    pr->pse.bias = broadcast_view(t);
    return ATTNOPS_SUCCESS;
}

/* pse, pse_type, q/kv start idx (spec 4). */
static attnops_status derive_pse(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    fa_pse_cfg *c = &pr->pse;
    c->type = p->pse_type;
    /* q/kv_start_idx: validated whenever given, used only by pse_type 2/3. */
    const attnops_tensor *starts[2] = {p->q_start_idx, p->kv_start_idx};
    const char *names[2] = {"q_start_idx", "kv_start_idx"};
    int64_t start_values[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        if (!starts[k]) continue;
        AO_TRY(check_list(op, names[k], starts[k], 0, 1));
        start_values[k] = starts[k]->shape[0] ? list_at(starts[k], 0) : 0;
    }
    const attnops_tensor *t = p->pse;
    if (!t) return ATTNOPS_SUCCESS;
    char buf[96];
    AO_TRY(ao_check_view(op, "pse", t));
    if (pr->varlen) {
        if (p->pse_type == 0 || p->pse_type == 1) return derive_tnd_alibi(op, p, pr);
        if (pr->mask.rule.active && pr->mask.rule.mode == 7)
            return ao_fail(INVALID, "%s: sparse_mode 7 takes no pse.", op);
        for (int64_t b = 0; b < pr->B; b++) {
            const int64_t s1 = fa_q_len(pr, b), s2 = fa_kv_len(pr, b);
            if (s1 == 0 || s2 == 0)
                return ao_fail(INVALID, "%s: batch %lld has an empty sequence (S1 = %lld, S2 = %lld); pse is not "
                               "allowed then.", op, (long long)b, (long long)s1, (long long)s2);
            if (pr->mask.rule.active && pr->mask.rule.mode == 8 && s1 != s2)
                return ao_fail(INVALID, "%s: sparse_mode 8 with pse needs S1 = S2 in every batch; batch %lld has "
                               "%lld and %lld.", op, (long long)b, (long long)s1, (long long)s2);
        }
    }
    if (p->pse_type == 2 || p->pse_type == 3) {
        if (t->dtype != ATTNOPS_DTYPE_F32)
            return ao_fail(INVALID, "%s: pse_type %lld takes f32 ALiBi slopes, but pse has dtype %s.", op,
                           (long long)p->pse_type, attnops_dtype_name(t->dtype));
        bool n_form = t->rank == 1 && t->shape[0] == pr->N1;
        bool bn_form = t->rank == 2 && t->shape[0] == pr->B && t->shape[1] == pr->N1;
        if (!n_form && !bn_form)
            return ao_fail(INVALID, "%s: pse_type %lld takes slopes of shape [N1] or [B, N1] (N1 = %lld, B = %lld), "
                           "got %s.", op, (long long)p->pse_type, (long long)pr->N1, (long long)pr->B,
                           ao_shape_str(t, buf, sizeof buf));
        c->kind = FA_PSE_SLOPES;
        c->slopes = t->data;
        c->slope_sb = bn_form ? t->strides[0] : 0;
        c->slope_sn = bn_form ? t->strides[1] : t->strides[0];
        c->q_start = start_values[0], c->kv_start = start_values[1];
        if (pr->varlen && pr->mask.rule.active && pr->mask.rule.mode == 8 && c->q_start != c->kv_start)
            return ao_fail(INVALID, "%s: sparse_mode 8 with pse needs S1 - S2 + q_start_idx - kv_start_idx = 0 in "
                           "batch 0; q_start_idx is %lld and kv_start_idx %lld.", op, (long long)c->q_start,
                           (long long)c->kv_start);
        return ATTNOPS_SUCCESS;
    }
    if (t->dtype != pr->out_dtype)
        return ao_fail(INVALID, "%s: pse has dtype %s but must have %s %s.", op, attnops_dtype_name(t->dtype),
                       pr->fp8 ? "the output dtype (out_dtype) under FP8," : "query's dtype",
                       attnops_dtype_name(pr->out_dtype));
    const int64_t B = pr->B, N1 = pr->N1, S1 = pr->S1, S2 = pr->S2;
    const int64_t *sh = t->shape;
    if (t->rank == 4 && sh[1] == N1 && sh[3] == S2) {
        if ((sh[0] == B || sh[0] == 1) && sh[2] == S1) {
            c->kind = FA_PSE_TENSOR; /* BNSS or 1NSS */
        } else if (sh[0] == B && sh[2] == 1) {
            c->kind = FA_PSE_TENSOR; /* BN1S: one row for every query row */
        } else if ((sh[0] == B || sh[0] == 1) && sh[2] == 1024 && S1 > 1024) {
            if (!mask_is_causal_square(pr))
                return ao_fail(INVALID, "%s: pse of shape %s is the compressed ALiBi form (last 1024 rows), which "
                               "needs S1 = S2 (got %lld, %lld) and a causal mask (sparse_mode 2/3, or 0/4 with "
                               "pre_tokens >= S1 and next_tokens = 0).", op, ao_shape_str(t, buf, sizeof buf),
                               (long long)S1, (long long)S2);
            c->kind = FA_PSE_ALIBI_1024;
            c->alibi_rows = 1024;
        }
    }
    if (c->kind == FA_PSE_NONE)
        return ao_fail(INVALID, "%s: pse has shape %s; pse_type %lld takes [B, N1, S1, S2], [1, N1, S1, S2], "
                       "[B, N1, 1, S2], or [B|1, N1, 1024, S2] when S1 = S2 > 1024 (B = %lld, N1 = %lld, S1 = %lld, "
                       "S2 = %lld).", op, ao_shape_str(t, buf, sizeof buf), (long long)p->pse_type, (long long)B,
                       (long long)N1, (long long)S1, (long long)S2);
    c->bias = broadcast_view(t);
    return ATTNOPS_SUCCESS;
}

/* TND: the cumulative lengths (spec 3.4).  They hold no leading 0; trailing
 * batches whose query and key lengths are both 0 are dropped. */
attnops_status fa_derive_varlen(const char *op, const attnops_tensor *qlen, const attnops_tensor *kvlen,
                                int64_t T1, int64_t T2, fa_problem *pr)
{
    if (!qlen) return ao_fail(NULLPTR, "%s: layout TND needs 'actual_seq_qlen'.", op);
    if (!kvlen) return ao_fail(NULLPTR, "%s: layout TND needs 'actual_seq_kvlen'.", op);
    AO_TRY(check_list(op, "actual_seq_qlen", qlen, 1, INT64_C(1) << 21));
    AO_TRY(check_list(op, "actual_seq_kvlen", kvlen, 1, INT64_C(1) << 21));
    const int64_t n = qlen->shape[0];
    if (kvlen->shape[0] != n)
        return ao_fail(INVALID, "%s: actual_seq_qlen has %lld entries but actual_seq_kvlen has %lld; they must be "
                       "equal.", op, (long long)n, (long long)kvlen->shape[0]);
    if (T1 < 0) T1 = list_at(qlen, n - 1);  /* no tensor to check against: the lists define T */
    if (T2 < 0) T2 = list_at(kvlen, n - 1);
    const struct { const attnops_tensor *t; const char *name; int64_t total; const char *what; } lists[2] = {
        {qlen, "actual_seq_qlen", T1, "query"}, {kvlen, "actual_seq_kvlen", T2, "key"}};
    int64_t max_len[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        int64_t prev = 0;
        for (int64_t b = 0; b < n; b++) {
            int64_t v = list_at(lists[k].t, b);
            if (v < prev)
                return ao_fail(INVALID, "%s: %s[%lld] is %lld, below the previous %lld; the lengths are cumulative "
                               "(no leading 0) and must not decrease.", op, lists[k].name, (long long)b, (long long)v,
                               (long long)prev);
            if (v - prev > max_len[k]) max_len[k] = v - prev;
            prev = v;
        }
        if (prev != lists[k].total)
            return ao_fail(INVALID, "%s: %s ends at %lld but %s has T = %lld rows; the last cumulative length must be "
                           "T.", op, lists[k].name, (long long)prev, lists[k].what, (long long)lists[k].total);
    }
    int64_t B = n;
    while (B > 0 && list_at(qlen, B - 1) == (B > 1 ? list_at(qlen, B - 2) : 0) &&
           list_at(kvlen, B - 1) == (B > 1 ? list_at(kvlen, B - 2) : 0))
        B--;
    pr->varlen = true;
    pr->B = B;
    pr->T1 = T1, pr->T2 = T2;
    pr->S1 = max_len[0], pr->S2 = max_len[1];
    pr->cu_q = (attn_list){qlen->data, qlen->dtype, qlen->strides[0]};
    pr->cu_kv = (attn_list){kvlen->data, kvlen->dtype, kvlen->strides[0]};
    return ATTNOPS_SUCCESS;
}

/* drop_mask (spec 5.6): a packed keep mask used instead of the generated
 * stream, one bit per element (LSB first) over the unaligned
 * [B, N1, S1, S2], or in TND N1 * sum S1_b * S2_b elements. */
static attnops_status derive_drop_mask(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    const attnops_tensor *t = p->drop_mask;
    if (!t) return ATTNOPS_SUCCESS;
    AO_TRY(ao_check_view(op, "drop_mask", t));
    if (p->keep_prob >= 1.0)
        return ao_fail(INVALID, "%s: drop_mask is given but keep_prob is 1; pass keep_prob < 1 or no drop_mask.", op);
    const int64_t count = fa_score_count(pr);
    if (t->dtype != ATTNOPS_DTYPE_U8 || t->rank != 1)
        return ao_fail(INVALID, "%s: drop_mask must be a 1-D u8 tensor of packed bits, got %s with rank %d.", op,
                       attnops_dtype_name(t->dtype), (int)t->rank);
    if (t->shape[0] < (count + 7) / 8)
        return ao_fail(INVALID, "%s: drop_mask has %lld bytes; %lld elements need at least %lld.", op,
                       (long long)t->shape[0], (long long)count, (long long)((count + 7) / 8));
    pr->drop_bits = t->data;
    pr->drop_bits_stride = t->strides[0];
    return ATTNOPS_SUCCESS;
}

/* The dropout block (attnops_fa_params.dropout_*): where this call lies in
 * the whole call whose stream it draws. */
static const char *const block_len_names[2] = {"dropout_seq_qlen", "dropout_seq_kvlen"};
static const char *const block_start_names[2] = {"dropout_q_start", "dropout_kv_start"};

/* Every length and start in [0, INT32_MAX] and the whole call's stream
 * below 2^62 bytes, before any position is computed from them.  entries:
 * the lengths' count (TND: actual_seq_qlen's, trailing empty batches too). */
static attnops_status check_block_values(const char *op, const attnops_fa_params *p, const fa_problem *pr,
                                         int64_t entries)
{
    const attnops_tensor *lens[2] = {p->dropout_seq_qlen, p->dropout_seq_kvlen};
    const attnops_tensor *starts[2] = {p->dropout_q_start, p->dropout_kv_start};
    double stream_bytes = 0;
    for (int64_t b = 0; b < entries; b++) {
        int64_t whole[2];
        for (int k = 0; k < 2; k++) {
            const int64_t end = list_at(lens[k], b), begin = pr->varlen && b ? list_at(lens[k], b - 1) : 0;
            whole[k] = end - begin;
            if (end < begin || begin < 0 || end > INT32_MAX)
                return ao_fail(INVALID, "%s: %s[%lld] is %lld; %s.", op, block_len_names[k], (long long)b,
                               (long long)end,
                               pr->varlen ? "the whole call's cumulative lengths must not decrease and stay in [0, "
                                            "INT32_MAX]"
                                          : "the whole call's length must lie in [0, INT32_MAX]");
        }
        stream_bytes += (double)p->dropout_head_num * (double)whole[0] * (double)((whole[1] + 15) / 16 * 16);
    }
    for (int k = 0; k < 2; k++)
        for (int64_t b = 0; starts[k] && b < starts[k]->shape[0]; b++) {
            const int64_t first = list_at(starts[k], b);
            if (first < 0 || first > INT32_MAX)
                return ao_fail(INVALID, "%s: %s[%lld] is %lld; it must lie in [0, INT32_MAX].", op,
                               block_start_names[k], (long long)b, (long long)first);
        }
    if (stream_bytes >= 0x1p62)
        return ao_fail(INVALID, "%s: the whole call of the dropout block (dropout_head_num %lld and its lengths) has "
                       "%.3g elements; at most 2^62 are supported.", op, (long long)p->dropout_head_num, stream_bytes);
    return ATTNOPS_SUCCESS;
}

/* Each batch's rows fit in the whole call's from their starts. */
static attnops_status check_block_fits(const char *op, const fa_problem *pr)
{
    const fa_dropout d = fa_dropout_make(0, 0, 0.5); /* the generated stream's indexing */
    for (int64_t b = 0; b < pr->B; b++) {
        const fa_dropout_batch at = fa_dropout_batch_of(pr, &d, b);
        int64_t whole[2];
        fa_dropout_whole_lengths(pr, b, &whole[0], &whole[1]);
        const int64_t start[2] = {at.row0, at.col0}, mine[2] = {fa_q_len(pr, b), fa_kv_len(pr, b)};
        for (int k = 0; k < 2; k++)
            if (start[k] > whole[k] - mine[k])
                return ao_fail(INVALID, "%s: batch %lld's %lld %s rows from %s = %lld do not fit in the whole "
                               "call's %lld (%s).", op, (long long)b, (long long)mine[k], k ? "key" : "query",
                               block_start_names[k], (long long)start[k], (long long)whole[k], block_len_names[k]);
    }
    return ATTNOPS_SUCCESS;
}

static attnops_status derive_dropout_block(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    const attnops_tensor *lens[2] = {p->dropout_seq_qlen, p->dropout_seq_kvlen};
    const attnops_tensor *starts[2] = {p->dropout_q_start, p->dropout_kv_start};
    if (p->dropout_head_num == 0) {
        for (int k = 0; k < 2; k++)
            if (lens[k] || starts[k])
                return ao_fail(INVALID, "%s: '%s' is given but dropout_head_num is 0; a dropout block needs "
                               "dropout_head_num, the whole call's head count.", op,
                               lens[k] ? block_len_names[k] : block_start_names[k]);
        if (p->dropout_head_start != 0)
            return ao_fail(INVALID, "%s: dropout_head_start is %lld but dropout_head_num is 0 (no dropout block).",
                           op, (long long)p->dropout_head_start);
        return ATTNOPS_SUCCESS;
    }
    if (p->dropout_head_num < 0 || p->dropout_head_num > INT32_MAX || p->dropout_head_start < 0 ||
        p->dropout_head_start > p->dropout_head_num - pr->N1)
        return ao_fail(INVALID, "%s: dropout_head_num %lld and dropout_head_start %lld do not hold this call's %lld "
                       "heads (0 <= start <= dropout_head_num - N1, dropout_head_num <= INT32_MAX).", op,
                       (long long)p->dropout_head_num, (long long)p->dropout_head_start, (long long)pr->N1);
    if (p->drop_mask)
        return ao_fail(INVALID, "%s: drop_mask is given with a dropout block (dropout_head_num %lld); pass the "
                       "block's own bits and no dropout block.", op, (long long)p->dropout_head_num);
    const int64_t entries = pr->varlen ? p->actual_seq_qlen->shape[0] : 1;
    const int64_t batches = pr->varlen ? entries : pr->B;
    fa_drop_block *blk = &pr->drop_block;
    attn_list *len_lists[2] = {&blk->seq_q, &blk->seq_kv}, *start_lists[2] = {&blk->q0, &blk->kv0};
    int64_t *start_counts[2] = {&blk->q0_count, &blk->kv0_count};
    for (int k = 0; k < 2; k++) {
        if (!lens[k])
            return ao_fail(NULLPTR, "%s: a dropout block (dropout_head_num %lld) needs '%s'.", op,
                           (long long)p->dropout_head_num, block_len_names[k]);
        AO_TRY(check_list(op, block_len_names[k], lens[k], entries, entries));
        *len_lists[k] = (attn_list){lens[k]->data, lens[k]->dtype, lens[k]->strides[0]};
        if (!starts[k]) continue;
        AO_TRY(check_list(op, block_start_names[k], starts[k], 1, batches));
        if (starts[k]->shape[0] != 1 && starts[k]->shape[0] != batches)
            return ao_fail(INVALID, "%s: '%s' has %lld entries; it takes 1 (every batch) or %lld (one per batch).",
                           op, block_start_names[k], (long long)starts[k]->shape[0], (long long)batches);
        *start_lists[k] = (attn_list){starts[k]->data, starts[k]->dtype, starts[k]->strides[0]};
        *start_counts[k] = starts[k]->shape[0];
    }
    AO_TRY(check_block_values(op, p, pr, entries));
    blk->active = true;
    blk->N1 = p->dropout_head_num, blk->head0 = p->dropout_head_start;
    return check_block_fits(op, pr);
}

/* q, k, v: dtypes, ranks and the derived sizes. */
/* MLA rope inputs (spec 1.3): both or neither, query's dtype, query's / key's
 * shape with a head dim Dr <= D.  The aclnn entry adds device limits (bf16
 * only, TND only, a mask required, no pse or dropout, not mode 6) that the
 * seed's own MLA case (fp16, BNSD, no mask) does not follow; here rope is
 * what it means, a concatenation, and combines with everything else. */
static attnops_status derive_rope(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    if (!p->query_rope && !p->key_rope) return ATTNOPS_SUCCESS;
    if (!p->query_rope || !p->key_rope)
        return ao_fail(NULLPTR, "%s: %s is given but %s is NULL; MLA takes query_rope and key_rope together.", op,
                       p->query_rope ? "query_rope" : "key_rope", p->query_rope ? "key_rope" : "query_rope");
    AO_TRY(ao_check_view(op, "query_rope", p->query_rope));
    AO_TRY(ao_check_view(op, "key_rope", p->key_rope));
    AO_TRY(ao_check_dtype(op, "query_rope", p->query_rope, pr->dtype, "it shares query's dtype"));
    AO_TRY(ao_check_dtype(op, "key_rope", p->key_rope, pr->dtype, "it shares query's dtype"));
    const attnops_layout layout = p->input_layout;
    const bool hidden = layout == ATTNOPS_LAYOUT_BSH || layout == ATTNOPS_LAYOUT_SBH;
    layout_dims r;
    AO_TRY(read_dims(op, "query_rope", p->query_rope, layout, hidden ? pr->N1 : 0, 0, &r));
    if (r.d == 0) return ao_fail(INVALID, "%s: the head dimension of query_rope is zero.", op);
    if (r.d > pr->D)
        return ao_fail(INVALID, "%s: query_rope head dim %lld exceeds query head dim D = %lld; the rope dim must be "
                       "<= D.", op, (long long)r.d, (long long)pr->D);
    int64_t shape[4];
    int rank;
    const int64_t rows_q = pr->varlen ? pr->T1 : pr->S1, rows_kv = pr->varlen ? pr->T2 : pr->S2;
    layout_shape(layout, pr->B, rows_q, pr->N1, r.d, shape, &rank);
    AO_TRY(ao_check_shape(op, "query_rope", p->query_rope, shape, rank, "query's shape with its own head dim"));
    layout_shape(layout, pr->B, rows_kv, pr->N2, r.d, shape, &rank);
    AO_TRY(ao_check_shape(op, "key_rope", p->key_rope, shape, rank, "key's shape with query_rope's head dim"));
    pr->Dr = r.d;
    pr->qr = view_of(p->query_rope, layout, r.d);
    pr->kr = view_of(p->key_rope, layout, r.d);
    return ATTNOPS_SUCCESS;
}

/* One d_scale tensor: f32 [B, N, ceil(S/128), 1] (spec 6). */
static attnops_status check_dscale(const char *op, const char *name, const attnops_tensor *t, const fa_problem *pr,
                                   int64_t heads, int64_t rows, fa_view *view)
{
    AO_TRY(ao_check_present(op, name, t));
    AO_TRY(ao_check_view(op, name, t));
    AO_TRY(ao_check_dtype(op, name, t, ATTNOPS_DTYPE_F32, "FP8 de-quantisation scales are f32"));
    const int64_t shape[4] = {pr->B, heads, (rows + FA_FP8_BLOCK - 1) / FA_FP8_BLOCK, 1};
    AO_TRY(ao_check_shape(op, name, t, shape, 4, "[B, N, ceil(S / 128), 1]: one scale per 128-row block"));
    *view = (fa_view){(char *)t->data, t->dtype, 4, t->strides[0], t->strides[1], t->strides[2], t->strides[3]};
    return ATTNOPS_SUCCESS;
}

/* FP8 inputs (spec 6): the d_scale tensors, out_dtype, and the combinations
 * left out (TND, as on the device; rope). */
static attnops_status derive_fp8(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    if (!pr->fp8) {
        const struct { const attnops_tensor *t; const char *name; } scales[] = {
            {p->d_scale_q, "d_scale_q"}, {p->d_scale_k, "d_scale_k"}, {p->d_scale_v, "d_scale_v"},
            {p->d_scale_dy, "d_scale_dy"}, {p->d_scale_o, "d_scale_o"}};
        for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
            if (scales[i].t)
                return ao_fail(INVALID, "%s: %s is given but query has dtype %s; d_scale inputs go with FP8 inputs "
                               "only.", op, scales[i].name, attnops_dtype_name(pr->dtype));
        return ATTNOPS_SUCCESS;
    }
    if (pr->varlen)
        return ao_fail(UNSUPPORTED, "%s: FP8 inputs with layout TND are not supported (the device rejects them "
                       "too).", op);
    if (pr->Dr)
        return ao_fail(UNSUPPORTED, "%s: FP8 inputs with query_rope/key_rope are not supported.", op);
    if (p->impl == ATTNOPS_IMPL_BENCHMARK)
        return ao_fail(UNSUPPORTED, "%s: impl BENCHMARK (the unfused chain of the triple rule) has no FP8 form.", op);
    if (p->softcap != 0.0)
        return ao_fail(UNSUPPORTED, "%s: softcap %g with FP8 inputs is not supported (soft-capping is an attnops "
                       "extension for f32/f16/bf16 inputs).", op, p->softcap);
    AO_TRY(check_dscale(op, "d_scale_q", p->d_scale_q, pr, pr->N1, pr->S1, &pr->dsq));
    AO_TRY(check_dscale(op, "d_scale_k", p->d_scale_k, pr, pr->N2, pr->S2, &pr->dsk));
    AO_TRY(check_dscale(op, "d_scale_v", p->d_scale_v, pr, pr->N2, pr->S2, &pr->dsv));
    return ATTNOPS_SUCCESS;
}

/* A per-head f32 [N1] vector (sink, dsink). */
static attnops_status check_head_vector(const char *op, const char *name, const attnops_tensor *t,
                                        const fa_problem *pr)
{
    AO_TRY(ao_check_view(op, name, t));
    AO_TRY(ao_check_dtype(op, name, t, ATTNOPS_DTYPE_F32, "sinks are f32, one per query head"));
    const int64_t shape[1] = {pr->N1};
    return ao_check_shape(op, name, t, shape, 1, "[N1 = head_num]");
}

/* Attention sinks (docs/NUMERICS.md "Attention sinks"): f32 [N1]. */
static attnops_status derive_sink(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    if (!p->sink) return ATTNOPS_SUCCESS;
    AO_TRY(check_head_vector(op, "sink", p->sink, pr));
    if (pr->fp8)
        return ao_fail(UNSUPPORTED, "%s: sink with FP8 inputs is not supported (the FP8 golden has no sink term).",
                       op);
    pr->sink = (attn_sinks){p->sink->data, ATTNOPS_DTYPE_F32, p->sink->strides[0]};
    return ATTNOPS_SUCCESS;
}

static attnops_status derive_qkv(const char *op, const attnops_fa_params *p, fa_problem *pr)
{
    AO_TRY(ao_check_present(op, "query", p->query));
    AO_TRY(ao_check_present(op, "key", p->key));
    AO_TRY(ao_check_present(op, "value", p->value));
    AO_TRY(ao_check_view(op, "query", p->query));
    AO_TRY(ao_check_view(op, "key", p->key));
    AO_TRY(ao_check_view(op, "value", p->value));
    AO_TRY(check_attributes(op, p));

    attnops_dtype dt = p->query->dtype;
    const bool fp8 = dt == ATTNOPS_DTYPE_F8_E4M3FN || dt == ATTNOPS_DTYPE_F8_E5M2;
    if (!is_io_dtype(dt) && !fp8)
        return ao_fail(INVALID, "%s: query has dtype %s; it must be f16, bf16, f32, f8_e4m3fn or f8_e5m2.", op,
                       attnops_dtype_name(dt));
    AO_TRY(ao_check_dtype(op, "key", p->key, dt, "q, k, v and dy share one dtype"));
    AO_TRY(ao_check_dtype(op, "value", p->value, dt, "q, k, v and dy share one dtype"));

    attnops_layout layout = p->input_layout;
    bool hidden = layout == ATTNOPS_LAYOUT_BSH || layout == ATTNOPS_LAYOUT_SBH;
    layout_dims q, k, v;
    AO_TRY(read_dims(op, "query", p->query, layout, hidden ? p->head_num : 0, 0, &q));
    if (q.d == 0) return ao_fail(INVALID, "%s: the head dimension D of query is zero.", op);
    if (q.n != p->head_num)
        return ao_fail(INVALID, "%s: head_num is %lld but query has %lld heads.", op, (long long)p->head_num,
                       (long long)q.n);
    AO_TRY(read_dims(op, "key", p->key, layout, 0, q.d, &k));
    if (k.d != q.d)
        return ao_fail(INVALID, "%s: key head dim %lld differs from query head dim %lld; they must be equal.", op,
                       (long long)k.d, (long long)q.d);
    if (k.n == 0) return ao_fail(INVALID, "%s: key has 0 heads (N2 = 0).", op);
    if (q.n % k.n != 0)
        return ao_fail(INVALID, "%s: query heads N1 = %lld are not a multiple of key heads N2 = %lld.", op,
                       (long long)q.n, (long long)k.n);
    if (k.b != q.b)
        return ao_fail(INVALID, "%s: key batch %lld differs from query batch %lld.", op, (long long)k.b,
                       (long long)q.b);
    AO_TRY(read_dims(op, "value", p->value, layout, hidden ? k.n : 0, 0, &v));
    if (v.b != k.b || v.s != k.s || v.n != k.n)
        return ao_fail(INVALID, "%s: value (B %lld, S %lld, N %lld) must match key (B %lld, S %lld, N %lld) except "
                       "in the head dim.", op, (long long)v.b, (long long)v.s, (long long)v.n, (long long)k.b,
                       (long long)k.s, (long long)k.n);
    if (v.d == 0) return ao_fail(INVALID, "%s: the head dimension Dv of value is zero.", op);
    if (v.d > q.d)
        return ao_fail(INVALID, "%s: value head dim Dv = %lld exceeds query head dim D = %lld; Dv <= D is required.",
                       op, (long long)v.d, (long long)q.d);

    pr->op = op;
    pr->B = q.b, pr->N1 = q.n, pr->N2 = k.n, pr->G = q.n / k.n;
    pr->S1 = q.s, pr->S2 = k.s, pr->D = q.d, pr->Dv = v.d;
    pr->dtype = dt;
    pr->fp8 = fp8;
    pr->out_dtype = !fp8 ? dt : (p->out_dtype == 1 ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F16);
    pr->scale = p->scale_value;
    pr->softcap = p->scale_value != 0.0 ? p->softcap : 0.0; /* scale 0: the capped term is 0, as uncapped */
    pr->q = view_of(p->query, layout, pr->D);
    pr->k = view_of(p->key, layout, pr->D);
    pr->v = view_of(p->value, layout, pr->Dv);
    pr->impl = p->impl;
    pr->chain_round = p->impl == ATTNOPS_IMPL_BENCHMARK ? dt : 0;
    pr->deterministic = p->deterministic != 0;
    pr->seed = p->seed, pr->offset = p->offset, pr->keep_prob = p->keep_prob;
    pr->T1 = pr->B * pr->S1, pr->T2 = pr->B * pr->S2;
    if (layout == ATTNOPS_LAYOUT_TND) /* read_dims put T in S */
        AO_TRY(fa_derive_varlen(op, p->actual_seq_qlen, p->actual_seq_kvlen, pr->S1, pr->S2, pr));
    else if (p->actual_seq_qlen || p->actual_seq_kvlen)
        return ao_fail(INVALID, "%s: actual_seq_qlen / actual_seq_kvlen are given but input_layout is %s; they "
                       "describe TND batches only.", op, attnops_layout_name(layout));
#ifdef _OPENMP
    pr->threads = p->num_threads > 0 ? p->num_threads : omp_get_max_threads();
#else
    pr->threads = 1;
#endif
    pr->team = pr->threads; /* the entry points cap it for their run */
    AO_TRY(derive_rope(op, p, pr));
    AO_TRY(derive_fp8(op, p, pr));
    AO_TRY(derive_mask(op, p, pr));
    AO_TRY(derive_pse(op, p, pr));
    AO_TRY(derive_drop_mask(op, p, pr));
    AO_TRY(derive_sink(op, p, pr));
    return derive_dropout_block(op, p, pr);
}

/* A q-like tensor with head dim Dv (attention_out, dy, attention_in). */
/* A tensor of query's layout and sizes with head dim d; an output (or
 * attention_in) has the output dtype, dy query's. */
static attnops_status check_q_like(const char *op, const char *name, const attnops_tensor *t,
                                   const attnops_fa_params *p, const fa_problem *pr, int64_t d, bool output_dtype,
                                   fa_view *view)
{
    AO_TRY(ao_check_present(op, name, t));
    AO_TRY(ao_check_view(op, name, t));
    if (output_dtype && pr->fp8)
        AO_TRY(ao_check_dtype(op, name, t, pr->out_dtype, "FP8 inputs give outputs of out_dtype (0: f16, 1: bf16)"));
    else
        AO_TRY(ao_check_dtype(op, name, t, pr->dtype, "it shares query's dtype"));
    int64_t shape[4];
    int rank;
    layout_shape(p->input_layout, pr->B, pr->varlen ? pr->T1 : pr->S1, pr->N1, d, shape, &rank);
    AO_TRY(ao_check_shape(op, name, t, shape, rank, d == pr->D ? "query's shape" : "query's shape with D -> Dv"));
    *view = view_of(t, p->input_layout, d);
    return ATTNOPS_SUCCESS;
}

/* softmax_max / softmax_sum: f32 [B, N1, S1, 8]; in TND declared [T1, N1, 8]
 * in either softmax_in_layout: by default contiguous, holding per-batch
 * [N1, S_b, 8] blocks (the kernel's order), with "same_as_input" a true
 * [T1, N1, 8] array (any strides).  This is the aclnn / torch_npu meaning
 * (VarLenScoreV4's softmaxOutLayout, UnpaddingScoreGradV4's softmaxInLayout,
 * torch_npu's softmax_layout="TND"): the graph op FlashAttentionScoreGrad
 * takes [N1, T1, 8] there, but only because aclnn transposes the caller's
 * [T1, N1, 8] before it (docs/NUMERICS.md, "TND statistics"). */
static attnops_status check_stats(const char *op, const char *name, const attnops_tensor *t,
                                  const attnops_fa_params *p, fa_problem *pr, fa_view *view)
{
    AO_TRY(ao_check_present(op, name, t));
    AO_TRY(ao_check_view(op, name, t));
    AO_TRY(ao_check_dtype(op, name, t, ATTNOPS_DTYPE_F32, "softmax statistics are f32"));
    if (!pr->varlen) {
        int64_t shape[4] = {pr->B, pr->N1, pr->S1, 8};
        AO_TRY(ao_check_shape(op, name, t, shape, 4, "[B, N1 = head_num, S1, 8]"));
        *view = stats_view(t);
        return ATTNOPS_SUCCESS;
    }
    const bool same_as_input = p->softmax_in_layout == ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT;
    int64_t shape[3] = {pr->T1, pr->N1, 8};
    AO_TRY(ao_check_shape(op, name, t, shape, 3, same_as_input ? "[T1, N1, 8] (same_as_input)" : "[T1, N1, 8]"));
    if (same_as_input) { /* rows are global: b's rows start at its cumulative offset */
        *view = (fa_view){(char *)t->data, t->dtype, 4, 0, t->strides[1], t->strides[0], t->strides[2]};
        return ATTNOPS_SUCCESS;
    }
    if (t->strides[2] != 1 || t->strides[1] != 8 || t->strides[0] != 8 * pr->N1)
        return ao_fail(INVALID, "%s: tensor '%s' must be contiguous in layout TND: it holds per-batch [N1, S_b, 8] "
                       "blocks, not a strided [T1, N1, 8] array (softmax_in_layout \"same_as_input\" takes that).",
                       op, name);
    pr->stats_packed = true;
    *view = (fa_view){(char *)t->data, t->dtype, 4, 0, 0, 0, 1};
    return ATTNOPS_SUCCESS;
}

attnops_status fa_output_shapes(const attnops_fa_params *p, const char *op, attnops_output_shape *out,
                                attnops_output_shape *stats)
{
    const attnops_layout layout = p->input_layout;
    const bool hidden = layout == ATTNOPS_LAYOUT_BSH || layout == ATTNOPS_LAYOUT_SBH;
    layout_dims q, k, v;
    AO_TRY(read_dims(op, "query", p->query, layout, hidden ? p->head_num : 0, 0, &q));
    if (q.d == 0) return ao_fail(INVALID, "%s: the head dimension D of query is zero.", op);
    AO_TRY(read_dims(op, "key", p->key, layout, 0, q.d, &k));
    if (k.n == 0) return ao_fail(INVALID, "%s: key has 0 heads (N2 = 0).", op);
    AO_TRY(read_dims(op, "value", p->value, layout, hidden ? k.n : 0, 0, &v));
    const attnops_tensor *query = p->query;
    memset(out, 0, sizeof *out), memset(stats, 0, sizeof *stats);
    for (int d = 0; d + 1 < query->rank; d++) ao_out_query_dim(out, query, d);
    ao_out_extent(out, hidden ? q.n * v.d : v.d);
    if (layout == ATTNOPS_LAYOUT_TND) {
        ao_out_query_dim(stats, query, 0), ao_out_extent(stats, q.n), ao_out_extent(stats, 8);
        return ATTNOPS_SUCCESS;
    }
    const int b_dim = layout == ATTNOPS_LAYOUT_SBH ? 1 : 0;
    const int s_dim = layout == ATTNOPS_LAYOUT_SBH ? 0 : layout == ATTNOPS_LAYOUT_BNSD ? 2 : 1;
    ao_out_query_dim(stats, query, b_dim), ao_out_extent(stats, q.n);
    ao_out_query_dim(stats, query, s_dim), ao_out_extent(stats, 8);
    return ATTNOPS_SUCCESS;
}

attnops_status fa_validate_fwd(const attnops_fa_fwd_args *a, const char *op, fa_problem *pr)
{
    memset(pr, 0, sizeof *pr);
    AO_TRY(derive_qkv(op, &a->p, pr));
    AO_TRY(check_stats(op, "softmax_max", a->softmax_max, &a->p, pr, &pr->smax));
    AO_TRY(check_stats(op, "softmax_sum", a->softmax_sum, &a->p, pr, &pr->ssum));
    AO_TRY(check_q_like(op, "attention_out", a->attention_out, &a->p, pr, pr->Dv, true, &pr->o));
    const attnops_tensor *outs[] = {a->attention_out, a->softmax_max, a->softmax_sum};
    const char *names[] = {"attention_out", "softmax_max", "softmax_sum"};
    return ao_check_disjoint(op, outs, names, 3);
}

attnops_status fa_validate_bwd(const attnops_fa_bwd_args *a, const char *op, fa_problem *pr)
{
    memset(pr, 0, sizeof *pr);
    /* aclnn order: every required pointer first, then shapes. */
    AO_TRY(ao_check_present(op, "dy", a->dy));
    AO_TRY(ao_check_present(op, "attention_in", a->attention_in));
    AO_TRY(ao_check_present(op, "dq", a->dq));
    AO_TRY(ao_check_present(op, "dk", a->dk));
    AO_TRY(ao_check_present(op, "dv", a->dv));
    AO_TRY(derive_qkv(op, &a->p, pr));
    AO_TRY(check_q_like(op, "dy", a->dy, &a->p, pr, pr->Dv, false, &pr->dy));
    AO_TRY(check_q_like(op, "attention_in", a->attention_in, &a->p, pr, pr->Dv, true, &pr->o));
    AO_TRY(check_stats(op, "softmax_max", a->softmax_max, &a->p, pr, &pr->smax));
    AO_TRY(check_stats(op, "softmax_sum", a->softmax_sum, &a->p, pr, &pr->ssum));
    AO_TRY(check_q_like(op, "dq", a->dq, &a->p, pr, pr->D, true, &pr->dq));
    if (pr->fp8) {
        AO_TRY(check_dscale(op, "d_scale_dy", a->p.d_scale_dy, pr, pr->N1, pr->S1, &pr->dsdy));
        fa_view unused; /* d_scale_o: checked like the device does; attention_in is not quantised */
        AO_TRY(check_dscale(op, "d_scale_o", a->p.d_scale_o, pr, pr->N1, pr->S1, &unused));
    }

    int64_t shape[4];
    int rank;
    AO_TRY(ao_check_view(op, "dk", a->dk));
    AO_TRY(ao_check_dtype(op, "dk", a->dk, pr->out_dtype, pr->fp8 ? "FP8 inputs give outputs of out_dtype" : "it shares key's dtype"));
    layout_shape(a->p.input_layout, pr->B, pr->varlen ? pr->T2 : pr->S2, pr->N2, pr->D, shape, &rank);
    AO_TRY(ao_check_shape(op, "dk", a->dk, shape, rank, "key's shape"));
    pr->dk = view_of(a->dk, a->p.input_layout, pr->D);
    AO_TRY(ao_check_view(op, "dv", a->dv));
    AO_TRY(ao_check_dtype(op, "dv", a->dv, pr->out_dtype, pr->fp8 ? "FP8 inputs give outputs of out_dtype" : "it shares value's dtype"));
    layout_shape(a->p.input_layout, pr->B, pr->varlen ? pr->T2 : pr->S2, pr->N2, pr->Dv, shape, &rank);
    AO_TRY(ao_check_shape(op, "dv", a->dv, shape, rank, "value's shape"));
    pr->dv = view_of(a->dv, a->p.input_layout, pr->Dv);
    if (a->softmax_in)
        return ao_fail(INVALID, "%s: softmax_in is reserved by CANN and must be NULL.", op);
    if (!pr->Dr && (a->dq_rope || a->dk_rope))
        return ao_fail(INVALID, "%s: dq_rope/dk_rope are given but query_rope/key_rope are not.", op);
    if (pr->Dr) {
        AO_TRY(ao_check_present(op, "dq_rope", a->dq_rope));
        AO_TRY(ao_check_present(op, "dk_rope", a->dk_rope));
        AO_TRY(ao_check_view(op, "dq_rope", a->dq_rope));
        AO_TRY(ao_check_view(op, "dk_rope", a->dk_rope));
        AO_TRY(ao_check_dtype(op, "dq_rope", a->dq_rope, pr->dtype, "it shares query_rope's dtype"));
        AO_TRY(ao_check_dtype(op, "dk_rope", a->dk_rope, pr->dtype, "it shares key_rope's dtype"));
        AO_TRY(ao_check_shape(op, "dq_rope", a->dq_rope, a->p.query_rope->shape, a->p.query_rope->rank, "query_rope's shape"));
        AO_TRY(ao_check_shape(op, "dk_rope", a->dk_rope, a->p.key_rope->shape, a->p.key_rope->rank, "key_rope's shape"));
        pr->dqr = view_of(a->dq_rope, a->p.input_layout, pr->Dr);
        pr->dkr = view_of(a->dk_rope, a->p.input_layout, pr->Dr);
    }

    if (a->dsink) {
        if (!pr->sink.data) return ao_fail(INVALID, "%s: dsink is given but sink is not.", op);
        AO_TRY(check_head_vector(op, "dsink", a->dsink, pr));
        pr->dsink = a->dsink->data, pr->dsink_stride = a->dsink->strides[0];
    }

    const attnops_tensor *outs[] = {a->dq, a->dk, a->dv, a->dq_rope, a->dk_rope, a->dsink};
    const char *names[] = {"dq", "dk", "dv", "dq_rope", "dk_rope", "dsink"};
    return ao_check_disjoint(op, outs, names, 6);
}

attnops_status fa_layout_view(const char *op, const char *name, const attnops_tensor *t, attnops_layout layout,
                              int64_t heads, int64_t dims[4], fa_view *view)
{
    AO_TRY(ao_check_present(op, name, t));
    AO_TRY(ao_check_view(op, name, t));
    layout_dims d;
    AO_TRY(read_dims(op, name, t, layout, heads, 0, &d));
    dims[0] = d.b, dims[1] = d.s, dims[2] = d.n, dims[3] = d.d;
    *view = view_of(t, layout, d.d);
    return ATTNOPS_SUCCESS;
}

/* ---- small public helpers that belong with the argument structs ---- */

void attnops_fa_params_init(attnops_fa_params *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->scale_value = 1.0;
    p->keep_prob = 1.0;
    p->pre_tokens = INT32_MAX;
    p->next_tokens = INT32_MAX;
    p->pse_type = 1;
    p->seed = 2;
}

void attnops_fa_fwd_args_init(attnops_fa_fwd_args *a)
{
    if (!a) return;
    memset(a, 0, sizeof *a);
    attnops_fa_params_init(&a->p);
}

void attnops_fa_bwd_args_init(attnops_fa_bwd_args *a)
{
    if (!a) return;
    memset(a, 0, sizeof *a);
    attnops_fa_params_init(&a->p);
}

static const char *const layout_names[] = {"UNSET", "BNSD", "BSND", "BSH", "SBH", "TND"};

attnops_layout attnops_layout_from_string(const char *name)
{
    if (!name) return ATTNOPS_LAYOUT_UNSET;
    for (int i = ATTNOPS_LAYOUT_BNSD; i <= ATTNOPS_LAYOUT_TND; i++)
        if (strcmp(name, layout_names[i]) == 0) return (attnops_layout)i;
    return ATTNOPS_LAYOUT_UNSET;
}

const char *attnops_layout_name(attnops_layout layout)
{
    if (layout < ATTNOPS_LAYOUT_UNSET || layout > ATTNOPS_LAYOUT_TND) return "?";
    return layout_names[layout];
}
