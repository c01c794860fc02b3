/* The FlashAttention driver (harness_driver.h): a case is the seed's
 * FlashAttentionScoreGrad test row, with the seed's field names (spec
 * flash-attention 7.1), so its TestCases table can be pasted:
 *
 *   B, N1, N2, S1, S2, D, D_V, dtype (fp16 | bf16 | fp32 | fp8_e5m2 | fp8_e4m3fn),
 *   out_dtype (FP8: fp16 | bf16; the seed's "bp16" is read as bf16), input_layout,
 *   sparse_mode, pre_tockens_input / next_tockens_input (or pre_tokens / next_tokens),
 *   pse_type, pse_shape (NONE | BNSS | BN1S | 1NSS | BNHS | 1NHS | BN | N: slopes [B,N1] / [N1]),
 *   atten_mask_dtype (NONE | BOOL | uint8), atten_mask_shape (NONE | SS | 11SS | B1SS | BNSS;
 *   modes 2/3/4/6/7/8 take the compressed mask whatever the shape says),
 *   drop_out_possibility (the KEEP probability, as in the seed), seed, offset, rope (1: the
 *   golden's split of D at column 128), actual_seq_qlen / actual_seq_kvlen (TND: per-batch
 *   lengths, as in the seed, not cumulative), prefix (modes 5/6, per batch), inner_precise,
 *   scale (default 1/sqrt(D)), q_start_idx / kv_start_idx, softcap (an attnops extension),
 *   data_seed (the inputs' generator seed), compare (a rule of verify/compare.h, default
 *   dual; allclose for bf16).
 *   The seed's unused fields is_deter, sparse, padding_mask and inner_drop are accepted and
 *   ignored.
 *
 * Its chains run the forward, then the backward.  only_grad (the seed's
 * default): the kernel and benchmark backwards consume the golden forward's
 * outputs, and dq, dk, dv (dq_rope, dk_rope) are judged; auto_grad: they run
 * their own forward, whose outputs are judged too. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness_driver.h"

/* A dtype by any of its spellings (the seed's tables write CANN's: fp16,
 * fp32, fp8_e4m3fn), and the seed's "bp16" for bf16 where allow_bp16. */
static bool get_dtype(harness_parse *c, const cJSON *v, bool allow_bp16, attnops_dtype *out, bool *was_bp16)
{
    const char *s = NULL;
    if (!hp_str(c, v, &s)) return false;
    const attnops_dtype d = attnops_dtype_from_string(s);
    if (d && attnops_dtype_traits_of(d)->is_float) return *out = d, true;
    if (allow_bp16 && !strcmp(s, "bp16")) return *out = ATTNOPS_DTYPE_BF16, *was_bp16 = true, true;
    return hp_fail(c, v->string, "is '%s'; it must be fp16, bf16, fp32, fp8_e5m2 or fp8_e4m3fn", s);
}

static bool is_fp8(attnops_dtype d) { return d == ATTNOPS_DTYPE_F8_E4M3FN || d == ATTNOPS_DTYPE_F8_E5M2; }

enum {
    F_B, F_N1, F_N2, F_S1, F_S2, F_D, F_DV, F_DTYPE, F_OUT, F_LAYOUT, F_MODE, F_PRE, F_NEXT, F_PSE_TYPE, F_PSE_SHAPE,
    F_MASK_DTYPE, F_MASK_SHAPE, F_KEEP, F_SEED, F_OFFSET, F_ROPE, F_SEQQ, F_SEQKV, F_PREFIX, F_SCALE, F_DATA_SEED,
    F_COMPARE, F_INNER, F_Q_START, F_KV_START, F_SOFTCAP, F_COUNT
};

/* The raw fields of one case before they are combined. */
typedef struct raw_case {
    bool has[F_COUNT];
    int64_t B, N1, N2, S1, S2, D, Dv, sparse_mode, pre, next, pse_type, seed, offset, rope, inner_precise, data_seed;
    int64_t q_start, kv_start;
    attnops_dtype dtype, out_dtype;
    bool bp16;
    const char *layout, *pse_shape, *mask_dtype, *mask_shape, *compare;
    double keep, scale, softcap;
    int nq, nkv, nprefix;
    int64_t q[32], kv[32], prefix[32];
} raw_case;

static const harness_field FA_FIELDS[] = {
    {"B", F_B}, {"N1", F_N1}, {"N2", F_N2}, {"S1", F_S1}, {"S2", F_S2}, {"D", F_D}, {"D_V", F_DV},
    {"dtype", F_DTYPE}, {"out_dtype", F_OUT}, {"input_layout", F_LAYOUT}, {"sparse_mode", F_MODE},
    {"pre_tockens_input", F_PRE}, {"pre_tokens", F_PRE}, {"pre_tockens", F_PRE},
    {"next_tockens_input", F_NEXT}, {"next_tokens", F_NEXT}, {"next_tockens", F_NEXT},
    {"pse_type", F_PSE_TYPE}, {"pse_shape", F_PSE_SHAPE}, {"atten_mask_dtype", F_MASK_DTYPE},
    {"atten_mask_shape", F_MASK_SHAPE}, {"drop_out_possibility", F_KEEP}, {"seed", F_SEED},
    {"offset", F_OFFSET}, {"rope", F_ROPE}, {"actual_seq_qlen", F_SEQQ}, {"actual_seq_kvlen", F_SEQKV},
    {"prefix", F_PREFIX}, {"scale", F_SCALE}, {"data_seed", F_DATA_SEED}, {"compare", F_COMPARE},
    {"inner_precise", F_INNER}, {"is_deter", HP_IGNORED}, {"sparse", HP_IGNORED}, {"padding_mask", HP_IGNORED},
    {"inner_drop", HP_IGNORED}, {"q_start_idx", F_Q_START},
    {"kv_start_idx", F_KV_START}, {"softcap", F_SOFTCAP}};

/* One field into the raw case (hp_read_fn). */
static bool read_field(harness_parse *c, const cJSON *v, int f, void *ctx)
{
    const int64_t big = (int64_t)1 << 40, tok = 2147483647;
    raw_case *r = ctx;
    bool ok = true;
    switch (f) {
    case F_B: ok = hp_int(c, v, 1, big, &r->B); break;
    case F_N1: ok = hp_int(c, v, 1, big, &r->N1); break;
    case F_N2: ok = hp_int(c, v, 1, big, &r->N2); break;
    case F_S1: ok = hp_int(c, v, 1, big, &r->S1); break;
    case F_S2: ok = hp_int(c, v, 1, big, &r->S2); break;
    case F_D: ok = hp_int(c, v, 1, big, &r->D); break;
    case F_DV: ok = hp_int(c, v, 1, big, &r->Dv); break;
    case F_DTYPE: ok = get_dtype(c, v, false, &r->dtype, &r->bp16); break;
    case F_OUT: ok = get_dtype(c, v, true, &r->out_dtype, &r->bp16); break;
    case F_LAYOUT: ok = hp_str(c, v, &r->layout); break;
    case F_MODE: ok = hp_int(c, v, 0, 8, &r->sparse_mode); break;
    case F_PRE: ok = hp_int(c, v, -tok, tok, &r->pre); break;
    case F_NEXT: ok = hp_int(c, v, -tok, tok, &r->next); break;
    case F_PSE_TYPE: ok = hp_int(c, v, 0, 3, &r->pse_type); break;
    case F_PSE_SHAPE: ok = hp_str(c, v, &r->pse_shape); break;
    case F_MASK_DTYPE: ok = hp_str(c, v, &r->mask_dtype); break;
    case F_MASK_SHAPE: ok = hp_str(c, v, &r->mask_shape); break;
    case F_KEEP:
        r->keep = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        if (!(r->keep > 0.0 && r->keep <= 1.0))
            ok = hp_fail(c, v->string, "is the keep probability; it must lie in (0, 1]");
        break;
    case F_SEED: ok = hp_int(c, v, 0, big, &r->seed); break;
    case F_OFFSET: ok = hp_int(c, v, 0, big, &r->offset); break;
    case F_ROPE: ok = hp_int(c, v, 0, 1, &r->rope); break;
    case F_SEQQ: ok = hp_list(c, v, r->q, &r->nq); break;
    case F_SEQKV: ok = hp_list(c, v, r->kv, &r->nkv); break;
    case F_PREFIX: ok = hp_list(c, v, r->prefix, &r->nprefix); break;
    case F_SCALE:
        r->scale = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        if (!(r->scale > 0.0 && isfinite(r->scale))) ok = hp_fail(c, v->string, "must be a positive number");
        break;
    case F_DATA_SEED: ok = hp_int(c, v, 0, big, &r->data_seed); break;
    case F_SOFTCAP: /* an attnops extension (flash-attn's softcap): the library validates the rest */
        r->softcap = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        if (!(r->softcap > 0.0 && isfinite(r->softcap))) ok = hp_fail(c, v->string, "must be a positive number");
        break;
    /* global start of an externally split chunk (pse_type 2/3 positions) */
    case F_Q_START: ok = hp_int(c, v, -tok, tok, &r->q_start); break;
    case F_KV_START: ok = hp_int(c, v, -tok, tok, &r->kv_start); break;
    case F_COMPARE: ok = hp_str(c, v, &r->compare); break;
    case F_INNER: ok = hp_int(c, v, 0, 2, &r->inner_precise); break;
    default: break;
    }
    return ok;
}

static bool map_mask(harness_parse *c, const raw_case *r, fa_case_shape *s)
{
    const char *shape = r->has[F_MASK_SHAPE] ? r->mask_shape : "NONE";
    if (!strcmp(shape, "NONE")) return true; /* no mask: the op computes full attention whatever the mode */
    static const struct { const char *name; fa_case_mask m; } shapes[] = {
        {"SS", FA_CASE_MASK_SS}, {"11SS", FA_CASE_MASK_11SS}, {"B1SS", FA_CASE_MASK_B1SS}, {"BNSS", FA_CASE_MASK_BNSS}};
    s->mask = FA_CASE_MASK_NONE;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(shape, shapes[i].name)) s->mask = shapes[i].m;
    if (s->mask == FA_CASE_MASK_NONE)
        return hp_fail(c, "atten_mask_shape", "is '%s'; it must be NONE, SS, 11SS, B1SS or BNSS", shape);
    const int64_t m = s->sparse_mode;
    if (m == 2 || m == 3 || m == 4 || m == 6 || m == 7 || m == 8) s->mask = FA_CASE_MASK_COMPRESSED; /* what the op takes */
    const char *dt = r->has[F_MASK_DTYPE] ? r->mask_dtype : "BOOL";
    if (!strcmp(dt, "BOOL") || !strcmp(dt, "bool")) s->mask_dtype = ATTNOPS_DTYPE_BOOL;
    else if (!strcmp(dt, "uint8") || !strcmp(dt, "UINT8")) s->mask_dtype = ATTNOPS_DTYPE_U8;
    else return hp_fail(c, "atten_mask_dtype", "is '%s'; a mask must be BOOL or uint8", dt);
    return true;
}

static bool map_pse(harness_parse *c, const raw_case *r, fa_case_shape *s)
{
    const char *shape = r->has[F_PSE_SHAPE] ? r->pse_shape : "NONE";
    s->pse_type = r->has[F_PSE_TYPE] ? r->pse_type : 1;
    if (!strcmp(shape, "NONE")) {
        if (s->pse_type != 1) return hp_fail(c, "pse_type", "is %lld but pse_shape is NONE", (long long)s->pse_type);
        return true;
    }
    static const struct { const char *name; fa_case_pse p; bool slopes; } shapes[] = {
        {"BNSS", FA_CASE_PSE_BNSS, false}, {"BN1S", FA_CASE_PSE_BN1S, false}, {"1NSS", FA_CASE_PSE_1NSS, false},
        {"BNHS", FA_CASE_PSE_BNHS, false}, {"1NHS", FA_CASE_PSE_1NHS, false},
        {"BN", FA_CASE_PSE_SLOPES_BN, true}, {"N", FA_CASE_PSE_SLOPES_N, true}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (strcmp(shape, shapes[i].name)) continue;
        if (shapes[i].slopes != (s->pse_type >= 2))
            return hp_fail(c, "pse_shape", "%s goes with pse_type %s, not %lld", shape, shapes[i].slopes ? "2 or 3" : "0 or 1",
                        (long long)s->pse_type);
        s->pse = shapes[i].p;
        return true;
    }
    return hp_fail(c, "pse_shape", "is '%s'; it must be NONE, BNSS, BN1S, 1NSS, BNHS, 1NHS, BN or N", shape);
}

static bool fa_parse(harness_parse *c, const cJSON *obj, harness_case *h)
{
    raw_case r;
    memset(&r, 0, sizeof r);
    if (!hp_read_fields(c, obj, FA_FIELDS, sizeof FA_FIELDS / sizeof FA_FIELDS[0], "", r.has, read_field, &r))
        return false;
    static const int required[] = {F_N1, F_N2, F_D, F_DTYPE, F_LAYOUT};
    static const char *const required_names[] = {"N1", "N2", "D", "dtype", "input_layout"};
    if (!hp_require(c, r.has, required, required_names, sizeof required / sizeof required[0])) return false;

    fa_case_shape *s = &h->shape;
    const char *spec = "B=1"; /* fa_case_parse's defaults, then the fields */
    fa_case_parse(spec, s);
    s->N1 = r.N1, s->N2 = r.N2, s->D = r.D, s->Dv = r.has[F_DV] ? r.Dv : r.D, s->dtype = r.dtype;
    s->layout = attnops_layout_from_string(r.layout);
    if (s->layout == ATTNOPS_LAYOUT_UNSET)
        return hp_fail(c, "input_layout", "is '%s'; it must be BNSD, BSND, BSH, SBH or TND", r.layout);
    if (is_fp8(s->dtype)) {
        if (!r.has[F_OUT] || (r.out_dtype != ATTNOPS_DTYPE_F16 && r.out_dtype != ATTNOPS_DTYPE_BF16))
            return hp_fail(c, "out_dtype", "must be fp16 or bf16 with FP8 inputs");
        s->out_dtype = r.out_dtype;
        if (r.bp16) snprintf(h->note, sizeof h->note, "out_dtype \"bp16\" read as bf16 (the seed's typo)");
    } else if (r.has[F_OUT] && (r.out_dtype != s->dtype || r.bp16)) {
        return hp_fail(c, "out_dtype", "must equal dtype except for FP8 inputs");
    }
    if (r.rope) {
        if (s->D <= 128) return hp_fail(c, "rope", "is 1 but D = %lld; the golden splits D at column 128", (long long)s->D);
        s->Dr = s->D - 128, s->D = 128;
    }
    const bool tnd = s->layout == ATTNOPS_LAYOUT_TND;
    if (tnd) {
        if (!r.has[F_SEQQ]) return hp_fail(c, "actual_seq_qlen", "is missing; layout TND takes per-batch lengths");
        if (r.has[F_SEQKV] && r.nkv != r.nq)
            return hp_fail(c, "actual_seq_kvlen", "has %d lengths but actual_seq_qlen %d", r.nkv, r.nq);
        s->nseq = r.nq;
        int64_t m1 = 0, m2 = 0;
        for (int b = 0; b < r.nq; b++) {
            s->seq_q[b] = r.q[b], s->seq_kv[b] = r.has[F_SEQKV] ? r.kv[b] : r.q[b];
            m1 = s->seq_q[b] > m1 ? s->seq_q[b] : m1, m2 = s->seq_kv[b] > m2 ? s->seq_kv[b] : m2;
        }
        if (r.has[F_B] && r.B != r.nq) return hp_fail(c, "B", "is %lld but actual_seq_qlen has %d batches", (long long)r.B, r.nq);
        if (r.has[F_S1] && r.S1 != m1) return hp_fail(c, "S1", "is %lld but the longest query batch is %lld", (long long)r.S1, (long long)m1);
        if (r.has[F_S2] && r.S2 != m2) return hp_fail(c, "S2", "is %lld but the longest key batch is %lld", (long long)r.S2, (long long)m2);
    } else {
        if (r.has[F_SEQQ] || r.has[F_SEQKV]) return hp_fail(c, "actual_seq_qlen", "describes TND batches only");
        static const int dims[] = {F_B, F_S1, F_S2};
        static const char *const dim_names[] = {"B", "S1", "S2"};
        for (int i = 0; i < 3; i++)
            if (!r.has[dims[i]]) return hp_fail(c, dim_names[i], "is missing");
        s->B = r.B, s->S1 = r.S1, s->S2 = r.S2;
    }
    s->sparse_mode = r.sparse_mode;
    s->pre = r.has[F_PRE] ? r.pre : 2147483647;
    s->next = r.has[F_NEXT] ? r.next : 2147483647;
    s->inner_precise = r.inner_precise;
    if (!map_mask(c, &r, s) || !map_pse(c, &r, s)) return false;
    if (r.has[F_PREFIX]) {
        s->nprefix = r.nprefix;
        memcpy(s->prefix, r.prefix, sizeof r.prefix);
    }
    s->q_start = r.q_start, s->kv_start = r.kv_start;
    if (r.has[F_KEEP] && r.keep < 1.0) {
        s->keep_prob = r.keep;
        s->seed = r.has[F_SEED] ? r.seed : 2;
        s->offset = r.offset;
    }
    s->scale = r.has[F_SCALE] ? r.scale : 0.0;
    s->softcap = r.has[F_SOFTCAP] ? r.softcap : 0.0;
    h->data_seed = r.has[F_DATA_SEED] ? (uint64_t)r.data_seed : 1;
    /* The seed's dual rule bounds an element at 0.5 % of its magnitude, finer
     * than one bf16 rounding step (up to 2^-7 relative): a correct bf16
     * kernel fails it.  bf16 cases default to PyPTO's bf16 rule instead. */
    h->rule = s->dtype == ATTNOPS_DTYPE_BF16 ? CMP_ALLCLOSE : CMP_DUAL;
    return !r.has[F_COMPARE] || hp_rule(c, r.compare, &h->rule);
}


static double fa_bytes(const harness_case *h)
{
    const fa_case_shape *s = &h->shape;
    double rows_q = (double)s->B * (double)s->S1, rows_kv = (double)s->B * (double)s->S2;
    if (s->layout == ATTNOPS_LAYOUT_TND) {
        rows_q = rows_kv = 0.0;
        for (int b = 0; b < s->nseq; b++) rows_q += (double)s->seq_q[b], rows_kv += (double)s->seq_kv[b];
    }
    const double d = (double)(s->D > s->Dv ? s->D : s->Dv) + (double)s->Dr;
    const double scores = s->mask != FA_CASE_MASK_NONE || s->pse != FA_CASE_PSE_NONE
                              ? (double)s->B * (double)s->N1 * (double)s->S1 * (double)s->S2 : 0.0;
    return 8.0 * (5.0 * rows_q * (double)s->N1 * d + 5.0 * rows_kv * (double)s->N2 * d + 2.0 * scores +
                  16.0 * rows_q * (double)s->N1);
}

/* The chains, each a whole problem (inputs and outputs) from one data seed. */
typedef struct fa_run {
    fa_case chain[HARNESS_CHAIN_COUNT];
    bool made[HARNESS_CHAIN_COUNT];
} fa_run;

static void fa_free(harness_run *r)
{
    fa_run *s = r->state;
    for (int c = 0; c < HARNESS_CHAIN_COUNT; c++)
        if (s->made[c]) fa_case_free(&s->chain[c]);
    free(s);
}

/* A kernel or benchmark chain: its own forward (auto_grad; FP8 forwards
 * run on the golden whatever the implementation: AUTO picks it) or the
 * golden's, then its backward. */
static attnops_status fa_chain(const harness_case *hc, const harness_run_options *o, fa_run *s, harness_chain c,
                               attnops_impl impl)
{
    fa_case *x = &s->chain[c];
    fa_case_init(x, &hc->shape, hc->data_seed);
    s->made[c] = true;
    attnops_status st = ATTNOPS_SUCCESS;
    if (o->auto_grad) {
        const bool fp8 = hc->shape.dtype == ATTNOPS_DTYPE_F8_E4M3FN || hc->shape.dtype == ATTNOPS_DTYPE_F8_E5M2;
        st = fa_case_forward(x, fp8 && impl == ATTNOPS_IMPL_CPU ? ATTNOPS_IMPL_AUTO : impl, o->threads, 0);
    } else {
        fa_case_copy_forward(x, &s->chain[HARNESS_GOLDEN]);
    }
    return st == ATTNOPS_SUCCESS ? fa_case_backward(x, impl, o->threads, 0) : st;
}

/* The manifest's attributes: the backward's, as CANN names them. */
static cJSON *fa_attributes(const fa_case *c)
{
    const attnops_fa_params *p = &c->bwd.p;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "input_layout", attnops_layout_name(p->input_layout));
    cJSON_AddNumberToObject(a, "head_num", (double)p->head_num);
    cJSON_AddNumberToObject(a, "scale_value", p->scale_value);
    cJSON_AddNumberToObject(a, "keep_prob", p->keep_prob);
    if (p->softcap > 0) cJSON_AddNumberToObject(a, "softcap", p->softcap); /* an attnops extension: no CANN attribute */
    cJSON_AddNumberToObject(a, "seed", (double)p->seed);
    cJSON_AddNumberToObject(a, "offset", (double)p->offset);
    cJSON_AddNumberToObject(a, "pre_tokens", (double)p->pre_tokens);
    cJSON_AddNumberToObject(a, "next_tokens", (double)p->next_tokens);
    cJSON_AddNumberToObject(a, "sparse_mode", (double)p->sparse_mode);
    cJSON_AddNumberToObject(a, "pse_type", (double)p->pse_type);
    cJSON_AddNumberToObject(a, "inner_precise", (double)p->inner_precise);
    cJSON_AddNumberToObject(a, "out_dtype", (double)p->out_dtype);
    return a;
}

/* The case's tensors, present ones only: the inputs, the forward's outputs
 * (attention_in: the backward's name; its verdicts say attention_out) and
 * the backward's. */
static void fa_tensors(harness_run *r, const fa_run *s, bool own_forward)
{
    const fa_case *g = &s->chain[HARNESS_GOLDEN];
    static const struct { const char *name, *role, *verdict; size_t at; } all[] = {
        {"query", "input", NULL, offsetof(fa_case, q)},          {"key", "input", NULL, offsetof(fa_case, k)},
        {"value", "input", NULL, offsetof(fa_case, v)},          {"dy", "input", NULL, offsetof(fa_case, dy)},
        {"query_rope", "input", NULL, offsetof(fa_case, qr)},    {"key_rope", "input", NULL, offsetof(fa_case, kr)},
        {"atten_mask", "input", NULL, offsetof(fa_case, mask)},  {"pse", "input", NULL, offsetof(fa_case, pse)},
        {"prefix", "input", NULL, offsetof(fa_case, prefix)},    {"q_start_idx", "input", NULL, offsetof(fa_case, q_start)},
        {"kv_start_idx", "input", NULL, offsetof(fa_case, kv_start)},
        {"actual_seq_qlen", "input", NULL, offsetof(fa_case, cu_q)},
        {"actual_seq_kvlen", "input", NULL, offsetof(fa_case, cu_kv)},
        {"d_scale_q", "input", NULL, offsetof(fa_case, dsq)},    {"d_scale_k", "input", NULL, offsetof(fa_case, dsk)},
        {"d_scale_v", "input", NULL, offsetof(fa_case, dsv)},    {"d_scale_dy", "input", NULL, offsetof(fa_case, dsdy)},
        {"d_scale_o", "input", NULL, offsetof(fa_case, dso)},
        {"attention_in", "forward", "attention_out", offsetof(fa_case, out)},
        {"softmax_max", "forward", NULL, offsetof(fa_case, smax)},
        {"softmax_sum", "forward", NULL, offsetof(fa_case, ssum)},
        {"dq", "output", NULL, offsetof(fa_case, dq)},           {"dk", "output", NULL, offsetof(fa_case, dk)},
        {"dv", "output", NULL, offsetof(fa_case, dv)},           {"dq_rope", "output", NULL, offsetof(fa_case, dqr)},
        {"dk_rope", "output", NULL, offsetof(fa_case, dkr)}};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const tu_tensor *gt = (const tu_tensor *)((const char *)g + all[i].at);
        if (!gt->block) continue;
        const bool input = !strcmp(all[i].role, "input");
        const attnops_tensor *v[HARNESS_CHAIN_COUNT] = {&gt->view, NULL, NULL};
        for (int c = HARNESS_KERNEL; c < HARNESS_CHAIN_COUNT && !input; c++)
            if (s->made[c]) v[c] = &((const tu_tensor *)((const char *)&s->chain[c] + all[i].at))->view;
        harness_tensor *t = harness_add(r, all[i].name, all[i].role, v[0], v[1], v[2]);
        t->judged = !strcmp(all[i].role, "output") || (own_forward && !input);
        t->verdict = all[i].verdict;
    }
}

static attnops_status fa_run_case(const harness_case *hc, const harness_run_options *o, harness_run *r)
{
    fa_run *s = calloc(1, sizeof *s);
    r->state = s;
    fa_case *g = &s->chain[HARNESS_GOLDEN];
    fa_case_init(g, &hc->shape, hc->data_seed);
    s->made[HARNESS_GOLDEN] = true;
    attnops_status st = fa_case_forward(g, ATTNOPS_IMPL_REFERENCE, o->threads, 0);
    if (st == ATTNOPS_SUCCESS) st = fa_case_backward(g, ATTNOPS_IMPL_REFERENCE, o->threads, 0);
    if (st == ATTNOPS_SUCCESS && o->kernel) st = fa_chain(hc, o, s, HARNESS_KERNEL, o->impl);
    if (st == ATTNOPS_SUCCESS && o->bench) st = fa_chain(hc, o, s, HARNESS_BENCH, ATTNOPS_IMPL_BENCHMARK);
    if (st != ATTNOPS_SUCCESS) return st;
    r->attributes = fa_attributes(g);
    fa_tensors(r, s, o->auto_grad);
    return st;
}

/* Perf mode: one problem; the backward consumes the forward's outputs. */
static attnops_status fa_perf_setup(const harness_case *hc, attnops_impl impl, int threads, harness_perf *p)
{
    fa_case *c = calloc(1, sizeof *c);
    p->state = c;
    fa_case_init(c, &hc->shape, hc->data_seed);
    c->fwd.p.impl = c->bwd.p.impl = impl;
    c->fwd.p.num_threads = c->bwd.p.num_threads = threads;
    return ATTNOPS_SUCCESS;
}

static double view_bytes(const tu_tensor *t)
{
    return t->block ? (double)tu_numel(&t->view) * (double)attnops_dtype_size(t->view.dtype) : 0.0;
}

/* Dense-equivalent FLOPs (docs/PERFORMANCE.md: 2 S1 S2 (D + Dv) per head
 * and batch forward, 2.5 times that backward) and every tensor each call
 * reads and writes, once. */
static attnops_status fa_perf_phase(harness_perf *p, int phase)
{
    const fa_case *c = p->state;
    const fa_case_shape *s = &c->shape;
    double pairs = (double)s->B * (double)s->S1 * (double)s->S2;
    if (s->layout == ATTNOPS_LAYOUT_TND) {
        pairs = 0.0;
        for (int b = 0; b < s->nseq; b++) pairs += (double)s->seq_q[b] * (double)s->seq_kv[b];
    }
    const double fwd = 2.0 * pairs * (double)s->N1 * (double)(s->D + s->Dr + s->Dv);
    const double inputs = view_bytes(&c->q) + view_bytes(&c->k) + view_bytes(&c->v) + view_bytes(&c->qr) +
                          view_bytes(&c->kr) + view_bytes(&c->mask) + view_bytes(&c->pse);
    const double forward_out = view_bytes(&c->out) + view_bytes(&c->smax) + view_bytes(&c->ssum);
    p->flops = phase ? 2.5 * fwd : fwd;
    p->in_bytes = inputs + (phase ? view_bytes(&c->dy) + forward_out : 0.0);
    p->out_bytes = phase ? view_bytes(&c->dq) + view_bytes(&c->dk) + view_bytes(&c->dv) + view_bytes(&c->dqr) +
                               view_bytes(&c->dkr)
                         : forward_out;
    p->gemm_dtype = s->dtype == ATTNOPS_DTYPE_BF16 ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F32;
    return phase ? attnops_flash_attention_score_grad_workspace_size(&c->bwd, &p->workspace_bytes)
                 : attnops_flash_attention_score_workspace_size(&c->fwd, &p->workspace_bytes);
}

static attnops_status fa_perf_call(harness_perf *p, int phase, void *workspace)
{
    const fa_case *c = p->state;
    return phase ? attnops_flash_attention_score_grad(&c->bwd, workspace, p->workspace_bytes)
                 : attnops_flash_attention_score(&c->fwd, workspace, p->workspace_bytes);
}

static void fa_perf_free(harness_perf *p)
{
    fa_case_free(p->state);
    free(p->state);
}

static const char *const FA_PHASES[] = {"fwd", "bwd", NULL};

static const attnops_dtype FA_ALL[] = {ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F8_E5M2,
                                       ATTNOPS_DTYPE_F8_E4M3FN, 0};
static const attnops_dtype FA_BENCH[] = {ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F32, 0};

static void fa_example(attnops_dtype dtype, char *json, size_t n)
{
    const bool fp8 = dtype == ATTNOPS_DTYPE_F8_E4M3FN || dtype == ATTNOPS_DTYPE_F8_E5M2;
    snprintf(json, n, "{\"B\": 1, \"N1\": 2, \"N2\": 1, \"S1\": 9, \"S2\": 12, \"D\": 16, \"dtype\": \"%s\"%s, "
             "\"input_layout\": \"BSND\", \"sparse_mode\": 2, \"atten_mask_shape\": \"SS\"}",
             attnops_dtype_traits_of(dtype)->cann_name, fp8 ? ", \"out_dtype\": \"fp16\"" : "");
}

const harness_driver driver_flash_attention_grad = {
    .name = "flash_attention_grad",
    .title = "FlashAttentionScore + FlashAttentionScoreGrad",
    .dtypes = {[ATTNOPS_IMPL_REFERENCE] = FA_ALL, [ATTNOPS_IMPL_CPU] = FA_ALL, [ATTNOPS_IMPL_BENCHMARK] = FA_BENCH},
    .cpu_note = "FP8: the forward runs on the reference",
    .example = fa_example,
    .grad_modes = true,
    .parse = fa_parse,
    .bytes = fa_bytes,
    .run = fa_run_case,
    .free = fa_free,
    .phases = FA_PHASES,
    .perf_setup = fa_perf_setup,
    .perf_phase = fa_perf_phase,
    .perf_call = fa_perf_call,
    .perf_free = fa_perf_free,
};
