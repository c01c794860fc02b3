/* Argument validation of FlashAttentionScore and FlashAttentionScoreGrad
 * (spec section 8.2 and the contract in attnops.h).
 *
 * Every case starts from one valid small problem (B=2, N1=4, N2=2, S1=5,
 * S2=7, D=8, Dv=6) in each of the layouts BNSD, BSND, BSH, SBH and breaks
 * exactly one thing.  The cases are a table (CASES: the rule, the operators,
 * the status and the words of the sentence, the way of calling), and so is
 * each one's mutation of the valid call (BREAK: rows of edits).  For both
 * phases (workspace query and run) it checks
 *   - the exact status code,
 *   - attnops_last_error(): one sentence "<op>: ... ." that names the
 *     offending argument,
 *   - that no output byte changed (outputs are poisoned with a byte pattern
 *     before the call), that no input byte changed, and that every canary
 *     around every tensor is intact.
 * The checker (tests/support/validation_check.h, shared with the other
 * validation tests) is also run in an inverted mode on deliberately wrong
 * expectations and must report a mismatch each time (the checker can fail).
 *
 * The masks, sparse modes 0-6, PSE types 0-3 and the prefix / start-index
 * lists (spec 3.1, 3.2, 4.1) get one failure case per rule, and valid calls
 * with each accepted form must succeed: status 0, every output element
 * written, inputs and canaries intact (SUCCESS_VARIANTS).  Requests the
 * library does not serve (the 1-D pse forms in TND; FP8 with TND, rope,
 * impl CPU forward or impl BENCHMARK) expect 161003.  MLA rope inputs get
 * one case per rule of spec 1.3 (ROPE_*), FP8 inputs per rule of spec 6
 * (FP8_*).
 *
 * The variable-length layout TND (spec 1.1, 3.2, 3.4, 4.1, 8.1) has its own
 * base problem (q [T1,N1,D] and k/v [T2,N2,D|Dv] with cumulative
 * actual_seq_qlen / actual_seq_kvlen, TND_BASE) and its own cases (the TND_
 * entries of CASES and SUCCESS_VARIANTS).  They run once, not once per padded
 * layout, through both the general entry points and the varlen ones
 * (attnops_flash_attention_varlen_score, ..._unpadding_score_grad).
 *
 * With --through-acl the same failure cases are made through CANN's aclnn
 * entry points instead (libattnops_acl, tests/acl_bridge.h: aclTensors over
 * the same memory, so the same poison, snapshot and canary checks apply).
 * There the first phase validates and the second only runs what the first
 * accepted, so a case makes the first phase alone; CANN's codes replace
 * 161003 by 161002.  Cases the aclnn parameter lists cannot express are
 * listed in NOT_IN_ACLNN with the reason the bridge gives: a case that turns
 * out expressible, or one that is not and is not listed, fails the test.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "acl_bridge.h"
#include "validation_check.h"
#include "suite.h"

/* ---- the base problem ---- */
typedef struct dims {
    int64_t B, N1, N2, S1, S2, D, Dv;
} dims;

static const dims BASE = {2, 4, 2, 5, 7, 8, 6};

/* TND batches: the real (not cumulative) query and key lengths. */
typedef struct seqs {
    int n;
    int64_t q[8], kv[8];
} seqs;

/* q [3, 0, 4] -> actual_seq_qlen [3, 3, 7] (an interior empty query batch),
 * kv [5, 2, 6] -> actual_seq_kvlen [5, 7, 13]: T1 = 7, T2 = 13, max S1 = 4,
 * max S2 = 6; N1, N2, D, Dv as BASE. */
static const seqs TND_BASE = {3, {3, 0, 4}, {5, 2, 6}};

typedef enum op_kind { FWD, BWD } op_kind;

/* Tensors of one call; the ones after T_ROPE_OUT_END are optional extras. */
enum {
    Q, K, V, O, SMAX, SSUM, DY, AIN, DQ, DK, DV, /* main */
    MASK, PSE, DROP, PREFIX, SEQQ, SEQKV, QSTART, KVSTART, QROPE, KROPE, DQROPE, DKROPE, DSQ, DSK, DSV, DSDY, DSO,
    SINK, DSINK, NT
};
static const char *const TNAME[NT] = {"query", "key", "value", "attention_out", "softmax_max", "softmax_sum", "dy",
                                      "attention_in", "dq", "dk", "dv", "atten_mask", "pse", "drop_mask", "prefix",
                                      "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx", "kv_start_idx",
                                      "query_rope", "key_rope", "dq_rope", "dk_rope", "d_scale_q", "d_scale_k",
                                      "d_scale_v", "d_scale_dy", "d_scale_o", "sink", "dsink"};

typedef struct fixture {
    op_kind op;
    attnops_layout layout;
    bool varlen; /* call the varlen entry points */
    dims d;      /* TND: B = list length, S1/S2 = the longest query/key batch */
    seqs sq;     /* TND only */
    int64_t T1, T2; /* rows of q-like and k-like tensors (B*S1, B*S2 when padded) */
    tu_tensor t[NT];
    unsigned char *snap[NT]; /* input bytes before the call */
    attnops_fa_fwd_args fa;
    attnops_fa_bwd_args ba;
    vc_outcome oc; /* of the last call_case */
    int mode;      /* how call_case calls: a call_mode (0: CALL_BOTH) */
    tu_rng rng;
} fixture;

static bool is_output(const fixture *fx, int i)
{
    if (fx->op == FWD) return i == O || i == SMAX || i == SSUM;
    return i == DQ || i == DK || i == DV || i == DQROPE || i == DKROPE || i == DSINK;
}

static bool used_by(op_kind op, int i)
{
    if (i >= MASK) return false; /* extras: only when a case adds them */
    if (op == FWD) return i <= SSUM;
    return i != O;
}

static bool is_float(attnops_dtype d)
{
    return d == ATTNOPS_DTYPE_F32 || d == ATTNOPS_DTYPE_F16 || d == ATTNOPS_DTYPE_BF16 ||
           d == ATTNOPS_DTYPE_F8_E4M3FN || d == ATTNOPS_DTYPE_F8_E5M2;
}

/* The shape of a q/k/v-like tensor of (b, s, n, d) in `layout`. */
static int layout_shape(attnops_layout layout, int64_t b, int64_t s, int64_t n, int64_t d, int64_t *sh)
{
    switch (layout) {
    case ATTNOPS_LAYOUT_BNSD: sh[0] = b, sh[1] = n, sh[2] = s, sh[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSND: sh[0] = b, sh[1] = s, sh[2] = n, sh[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSH: sh[0] = b, sh[1] = s, sh[2] = n * d; return 3;
    case ATTNOPS_LAYOUT_SBH: sh[0] = s, sh[1] = b, sh[2] = n * d; return 3;
    default: sh[0] = b * s, sh[1] = n, sh[2] = d; return 3; /* TND */
    }
}

/* (Re)allocates tensor i: inputs get random values, outputs the poison.
 * With pad > 0 its rows are padded (a non-contiguous view). */
static void fx_set_pad(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape, int64_t pad)
{
    if (fx->t[i].block) tu_tensor_free(&fx->t[i]);
    fx->t[i] = tu_tensor_new(dtype, rank, shape, pad);
    if (is_output(fx, i))
        tu_tensor_poison(&fx->t[i], VC_POISON);
    else if (is_float(dtype))
        tu_tensor_randn(&fx->t[i], &fx->rng, 1.0);
    else
        memset(vc_storage(&fx->t[i]), 1, fx->t[i].data_bytes);
}

static void fx_set(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape)
{
    fx_set_pad(fx, i, dtype, rank, shape, 0);
}

/* A q/k/v-like tensor i with the given logical sizes. */
static void fx_qkv(fixture *fx, int i, attnops_dtype dtype, int64_t b, int64_t s, int64_t n, int64_t d)
{
    int64_t sh[4];
    int rank = layout_shape(fx->layout, b, s, n, d, sh);
    fx_set(fx, i, dtype, rank, sh);
}

/* The logical sizes (b, s, n, d) of q/k/v-like tensor i in the valid problem
 * (TND: one "batch" of T rows); rope tensors get d = 0, their callers give it. */
static void qkv_sizes(const fixture *fx, int i, int64_t z[4])
{
    const dims *d = &fx->d;
    const bool tnd = fx->layout == ATTNOPS_LAYOUT_TND;
    const bool kv = i == K || i == V || i == DK || i == DV || i == KROPE || i == DKROPE;
    const bool rope = i == QROPE || i == KROPE || i == DQROPE || i == DKROPE;
    z[0] = tnd ? 1 : d->B;
    z[1] = kv ? (tnd ? fx->T2 : d->S2) : (tnd ? fx->T1 : d->S1);
    z[2] = kv ? d->N2 : d->N1;
    z[3] = rope ? 0 : i == Q || i == K || i == DQ || i == DK ? d->D : d->Dv;
}

static void fx_stats(fixture *fx, int i, attnops_dtype dtype, int64_t last)
{
    const dims *d = &fx->d;
    if (fx->layout == ATTNOPS_LAYOUT_TND) { /* declared [T1, N1, 8] */
        int64_t sh[3] = {fx->T1, d->N1, last};
        fx_set(fx, i, dtype, 3, sh);
    } else {
        int64_t sh[4] = {d->B, d->N1, d->S1, last};
        fx_set(fx, i, dtype, 4, sh);
    }
}

static attnops_fa_params *P(fixture *fx) { return fx->op == FWD ? &fx->fa.p : &fx->ba.p; }

/* The argument of the operator's call that points at tensor i. */
static const attnops_tensor **slot(fixture *fx, int i)
{
    attnops_fa_params *p = P(fx);
    const bool fwd = fx->op == FWD;
    switch (i) {
    case Q: return &p->query;
    case K: return &p->key;
    case V: return &p->value;
    case O: return &fx->fa.attention_out;
    case SMAX: return fwd ? &fx->fa.softmax_max : &fx->ba.softmax_max;
    case SSUM: return fwd ? &fx->fa.softmax_sum : &fx->ba.softmax_sum;
    case DY: return &fx->ba.dy;
    case AIN: return &fx->ba.attention_in;
    case DQ: return &fx->ba.dq;
    case DK: return &fx->ba.dk;
    case DV: return &fx->ba.dv;
    case MASK: return &p->atten_mask;
    case PSE: return &p->pse;
    case DROP: return &p->drop_mask;
    case PREFIX: return &p->prefix;
    case SEQQ: return &p->actual_seq_qlen;
    case SEQKV: return &p->actual_seq_kvlen;
    case QSTART: return &p->q_start_idx;
    case KVSTART: return &p->kv_start_idx;
    case QROPE: return &p->query_rope;
    case KROPE: return &p->key_rope;
    case DQROPE: return &fx->ba.dq_rope;
    case DKROPE: return &fx->ba.dk_rope;
    case DSQ: return &p->d_scale_q;
    case DSK: return &p->d_scale_k;
    case DSV: return &p->d_scale_v;
    case DSDY: return &p->d_scale_dy;
    case SINK: return &p->sink;
    case DSINK: return &fx->ba.dsink;
    default: return &p->d_scale_o; /* DSO */
    }
}

/* Points the argument structs at the tensors (NULL for unallocated ones). */
static void fx_bind(fixture *fx)
{
    attnops_fa_fwd_args_init(&fx->fa);
    attnops_fa_bwd_args_init(&fx->ba);
    for (int i = 0; i < NT; i++) *slot(fx, i) = fx->t[i].block ? &fx->t[i].view : NULL;
    attnops_fa_params *p = P(fx);
    p->head_num = fx->d.N1;
    p->input_layout = fx->layout;
    p->scale_value = 1.0 / sqrt((double)fx->d.D);
    p->impl = ATTNOPS_IMPL_REFERENCE;
    p->num_threads = 2;
}

static void fx_list(fixture *fx, int i, attnops_dtype dtype, int64_t n, const int64_t *vals);

/* TND: actual_seq_qlen / actual_seq_kvlen, the cumulative sums of fx->sq. */
static void fx_seq_lists(fixture *fx, attnops_dtype dtype)
{
    int64_t cq[8], ckv[8], q = 0, kv = 0;
    for (int b = 0; b < fx->sq.n; b++) {
        q += fx->sq.q[b], kv += fx->sq.kv[b];
        cq[b] = q, ckv[b] = kv;
    }
    fx_list(fx, SEQQ, dtype, fx->sq.n, cq);
    fx_list(fx, SEQKV, dtype, fx->sq.n, ckv);
}

/* A valid problem of the given sizes; in TND of the batches `sq` (d gives
 * N1, N2, D, Dv) with i64 lists. */
static void fx_init_seqs(fixture *fx, op_kind op, attnops_layout layout, dims d, const seqs *sq, uint64_t seed)
{
    memset(fx, 0, sizeof *fx);
    const bool tnd = layout == ATTNOPS_LAYOUT_TND;
    if (tnd) {
        fx->sq = *sq;
        d.B = sq->n, d.S1 = d.S2 = 0;
        for (int b = 0; b < sq->n; b++) {
            fx->T1 += sq->q[b], fx->T2 += sq->kv[b];
            if (sq->q[b] > d.S1) d.S1 = sq->q[b];
            if (sq->kv[b] > d.S2) d.S2 = sq->kv[b];
        }
    } else {
        fx->T1 = d.B * d.S1, fx->T2 = d.B * d.S2;
    }
    fx->op = op, fx->layout = layout, fx->d = d;
    fx->rng = tu_rng_make(seed);
    for (int i = 0; i < NT; i++) {
        if (!used_by(op, i)) continue;
        if (i == SMAX || i == SSUM) {
            fx_stats(fx, i, ATTNOPS_DTYPE_F32, 8);
        } else {
            int64_t z[4];
            qkv_sizes(fx, i, z);
            fx_qkv(fx, i, ATTNOPS_DTYPE_F32, z[0], z[1], z[2], z[3]);
        }
    }
    fx_bind(fx);
    if (tnd) fx_seq_lists(fx, ATTNOPS_DTYPE_I64);
}

/* TND problems start from TND_BASE. */
static void fx_init(fixture *fx, op_kind op, attnops_layout layout, dims d, uint64_t seed)
{
    fx_init_seqs(fx, op, layout, d, &TND_BASE, seed);
}

static vc_role role_of(const void *fx, int i) { return is_output(fx, i) ? VC_OUTPUT : VC_INPUT; }
static vc_tensors tensors(fixture *fx) { return (vc_tensors){NT, fx->t, fx->snap, fx, role_of, TNAME, NULL}; }

static void fx_free(fixture *fx)
{
    const vc_tensors s = tensors(fx);
    vc_tensors_free(&s);
}

/* Rebuilds a TND fixture with other batch lengths (same operator, route and
 * head sizes). */
static void fx_reseq(fixture *fx, const seqs *sq)
{
    const op_kind op = fx->op;
    const bool varlen = fx->varlen;
    const dims d = fx->d;
    const uint64_t seed = tu_next(&fx->rng);
    fx_free(fx);
    fx_init_seqs(fx, op, ATTNOPS_LAYOUT_TND, d, sq, seed);
    fx->varlen = varlen;
}

/* Adds an optional tensor (contiguous, of the given shape). */
static void fx_extra(fixture *fx, int i, attnops_dtype dtype, int rank, const int64_t *shape)
{
    fx_set(fx, i, dtype, rank, shape);
    /* rebinding would undo attribute edits; set the pointer directly */
    *slot(fx, i) = &fx->t[i].view;
}

/* MLA rope inputs of head dim dr in the fixture's layout and dtype, and
 * with `grads` the matching dq_rope / dk_rope outputs. */
static void fx_rope(fixture *fx, int64_t dr, bool grads)
{
    const dims d = fx->d;
    const bool tnd = fx->layout == ATTNOPS_LAYOUT_TND;
    const int64_t b = tnd ? 1 : d.B, s1 = tnd ? fx->T1 : d.S1, s2 = tnd ? fx->T2 : d.S2;
    const attnops_dtype dt = fx->t[Q].view.dtype;
    int64_t sh[4];
    int r = layout_shape(fx->layout, b, s1, d.N1, dr, sh);
    fx_extra(fx, QROPE, dt, r, sh);
    if (grads) fx_extra(fx, DQROPE, dt, r, sh);
    r = layout_shape(fx->layout, b, s2, d.N2, dr, sh);
    fx_extra(fx, KROPE, dt, r, sh);
    if (grads) fx_extra(fx, DKROPE, dt, r, sh);
}

/* FP8 inputs (spec 6): q, k, v (and dy) in f8, outputs (and attention_in)
 * in `out` (f16 or bf16, with the matching out_dtype), and every d_scale
 * the operator takes, f32 [B, N, ceil(S/128), 1]. */
static void fx_fp8(fixture *fx, attnops_dtype f8, attnops_dtype out)
{
    const dims d = fx->d;
    const bool fwd = fx->op == FWD, tnd = fx->layout == ATTNOPS_LAYOUT_TND;
    const int64_t b = tnd ? 1 : d.B, s1 = tnd ? fx->T1 : d.S1, s2 = tnd ? fx->T2 : d.S2; /* TND: [T, N, D] */
    fx_qkv(fx, Q, f8, b, s1, d.N1, d.D);
    fx_qkv(fx, K, f8, b, s2, d.N2, d.D);
    fx_qkv(fx, V, f8, b, s2, d.N2, d.Dv);
    if (fwd) {
        fx_qkv(fx, O, out, b, s1, d.N1, d.Dv);
    } else {
        fx_qkv(fx, DY, f8, b, s1, d.N1, d.Dv);
        fx_qkv(fx, AIN, out, b, s1, d.N1, d.Dv);
        fx_qkv(fx, DQ, out, b, s1, d.N1, d.D);
        fx_qkv(fx, DK, out, b, s2, d.N2, d.D);
        fx_qkv(fx, DV, out, b, s2, d.N2, d.Dv);
    }
    int64_t q_side[4] = {d.B, d.N1, (d.S1 + 127) / 128, 1}, kv_side[4] = {d.B, d.N2, (d.S2 + 127) / 128, 1};
    const attnops_dtype f32 = ATTNOPS_DTYPE_F32;
    fx_extra(fx, DSQ, f32, 4, q_side);
    fx_extra(fx, DSK, f32, 4, kv_side);
    fx_extra(fx, DSV, f32, 4, kv_side);
    if (!fwd) fx_extra(fx, DSDY, f32, 4, q_side), fx_extra(fx, DSO, f32, 4, q_side);
    P(fx)->out_dtype = out == ATTNOPS_DTYPE_BF16 ? 1 : 0;
}

/* An atten_mask (CANN polarity, 1 = masked out).  A one-byte dtype gets
 * content: the compressed shapes (last dims 2048 wide) their documented
 * structure (triu(k=1) on 2048 rows, then zeros | ones on the 1024 rows of
 * mode 6), a full mask random 0/1 with about a third masked.  Any other
 * dtype keeps fx_set's random values. */
static void fx_mask(fixture *fx, attnops_dtype dtype, int rank, const int64_t *shape)
{
    fx_extra(fx, MASK, dtype, rank, shape);
    if (attnops_dtype_size(dtype) != 1 || rank < 2) return;
    unsigned char *m = vc_storage(&fx->t[MASK]);
    const int64_t rows = shape[rank - 2], cols = shape[rank - 1], n = tu_numel(&fx->t[MASK].view);
    if (cols != 2048) { /* full */
        for (int64_t k = 0; k < n; k++) m[k] = tu_uniform(&fx->rng) < 0.3;
        return;
    }
    for (int64_t k = 0; k < n; k += cols) { /* compressed, row by row */
        int64_t r = (k / cols) % rows, keep = r < 2048 ? r + 1 : 1024; /* leading zeros of this row */
        memset(m + k, 0, (size_t)keep);
        memset(m + k + keep, 1, (size_t)(cols - keep));
    }
}

/* A 1-D list (prefix, q/kv start idx) holding `vals` in an integer or f32 dtype. */
static void fx_list(fixture *fx, int i, attnops_dtype dtype, int64_t n, const int64_t *vals)
{
    fx_extra(fx, i, dtype, 1, &n);
    void *data = vc_storage(&fx->t[i]);
    for (int64_t k = 0; k < n; k++) {
        if (dtype == ATTNOPS_DTYPE_I64) ((int64_t *)data)[k] = vals[k];
        else if (dtype == ATTNOPS_DTYPE_I32) ((int32_t *)data)[k] = (int32_t)vals[k];
        else if (dtype == ATTNOPS_DTYPE_F32) ((float *)data)[k] = (float)vals[k];
    }
}

/* A valid prefix list for modes 5/6: both ends of [max(0, S2 - S1), S2]. */
static void fx_prefix(fixture *fx, attnops_dtype dtype)
{
    const dims d = fx->d;
    int64_t lo = d.S1 > d.S2 ? 0 : d.S2 - d.S1, vals[8];
    for (int64_t b = 0; b < d.B && b < 8; b++) vals[b] = b % 2 ? d.S2 : lo;
    fx_list(fx, PREFIX, dtype, d.B, vals);
}

/* ALiBi slopes for pse_type 2/3: f32 [N1] (bn = false) or [B, N1]. */
static void fx_slopes(fixture *fx, bool bn)
{
    const dims d = fx->d;
    int64_t sh[2] = {d.B, d.N1};
    fx_extra(fx, PSE, ATTNOPS_DTYPE_F32, bn ? 2 : 1, bn ? sh : sh + 1);
    float *s = (float *)vc_storage(&fx->t[PSE]);
    for (int64_t b = 0; b < (bn ? d.B : 1); b++) attnops_alibi_slopes(d.N1, s + b * d.N1);
}

static void fx_snapshot(fixture *fx)
{
    const vc_tensors s = tensors(fx);
    vc_snapshot(&s);
}

/* Cases may point views elsewhere (NULL data, aliases); undo that. */
static void fx_restore_views(fixture *fx)
{
    for (int i = 0; i < NT; i++)
        if (fx->t[i].block) fx->t[i].view.data = vc_storage(&fx->t[i]);
}

/* ---- calling ---- */
typedef enum call_mode {
    CALL_BOTH,       /* workspace query, then run with a large workspace: both must fail */
    CALL_NULL_ARGS,  /* both phases with args == NULL */
    CALL_NULL_BYTES, /* workspace query with workspace_bytes == NULL */
    CALL_WS_NULL,    /* valid query, run with workspace NULL and the queried size */
    CALL_WS_SHORT    /* valid query, run with one byte less than the queried size */
} call_mode;


/* The entry points: [op][varlen].  The varlen ones (TND only) name
 * themselves for the layout check. */
static attnops_status fwd_query(const void *a, size_t *b) { return attnops_flash_attention_score_workspace_size(a, b); }
static attnops_status fwd_run(const void *a, void *ws, size_t b) { return attnops_flash_attention_score(a, ws, b); }
static attnops_status bwd_query(const void *a, size_t *b)
{
    return attnops_flash_attention_score_grad_workspace_size(a, b);
}
static attnops_status bwd_run(const void *a, void *ws, size_t b)
{
    return attnops_flash_attention_score_grad(a, ws, b);
}
static attnops_status varlen_fwd_query(const void *a, size_t *b)
{
    return attnops_flash_attention_varlen_score_workspace_size(a, b);
}
static attnops_status varlen_fwd_run(const void *a, void *ws, size_t b)
{
    return attnops_flash_attention_varlen_score(a, ws, b);
}
static attnops_status varlen_bwd_query(const void *a, size_t *b)
{
    return attnops_flash_attention_unpadding_score_grad_workspace_size(a, b);
}
static attnops_status varlen_bwd_run(const void *a, void *ws, size_t b)
{
    return attnops_flash_attention_unpadding_score_grad(a, ws, b);
}
static const vc_op ENTRY[2][2] = {
    [FWD] = {{"FlashAttentionScore", fwd_query, fwd_run, NULL},
             {"FlashAttentionVarLenScore", varlen_fwd_query, varlen_fwd_run, NULL}},
    [BWD] = {{"FlashAttentionScoreGrad", bwd_query, bwd_run, NULL},
             {"FlashAttentionUnpaddingScoreGrad", varlen_bwd_query, varlen_bwd_run, NULL}},
};

/* ---- the same calls through the aclnn entry points (--through-acl) ---- */
static bool through_acl;
static struct {
    op_kind op;
    bool varlen;
    aclb_call call;
    aclOpExecutor *executor; /* from a successful first phase, not yet run */
    const char *error;       /* the bridge's own sentence, or NULL: aclGetRecentErrMsg */
} acl_state;

/* The native call the aclnn call stands for, translated; NULL or why not. */
static const char *acl_translate(op_kind op, bool varlen, const void *args)
{
    aclb_release(&acl_state.call);
    return op == FWD ? aclb_from_fwd(&acl_state.call, args, varlen) : aclb_from_bwd(&acl_state.call, args, varlen);
}

static attnops_status acl_query(const void *args, size_t *bytes)
{
    acl_state.error = acl_translate(acl_state.op, acl_state.varlen, args);
    if (acl_state.error) return ATTNOPS_ERR_INTERNAL;
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus st = aclb_prepare(&acl_state.call, bytes ? &ws : NULL, &ex);
    if (bytes) *bytes = (size_t)ws;
    if (st != ACLNN_SUCCESS && ex) {
        acl_state.error = "aclnn: a failed first phase handed out an executor.";
        return ATTNOPS_ERR_INTERNAL;
    }
    acl_state.executor = ex;
    return (attnops_status)st;
}

static attnops_status acl_run(const void *args, void *ws, size_t bytes)
{
    (void)args; /* the executor carries the call */
    aclOpExecutor *ex = acl_state.executor;
    acl_state.executor = NULL, acl_state.error = NULL;
    return (attnops_status)aclb_run(&acl_state.call, ws, bytes, ex, NULL);
}

static const char *acl_last_error(void)
{
    if (acl_state.error) return acl_state.error;
    const char *m = aclGetRecentErrMsg();
    return m ? m : "";
}

static const vc_op ACL_ENTRY = {"aclnn", acl_query, acl_run, acl_last_error};

/* The operator's argument struct, or NULL. */
static const void *args_of(const fixture *fx, bool null_args)
{
    if (null_args) return NULL;
    return fx->op == FWD ? (const void *)&fx->fa : (const void *)&fx->ba;
}

/* Through the general entry points, or the varlen ones when fx->varlen. */
static attnops_status q_size(fixture *fx, bool null_args, size_t *bytes)
{
    return ENTRY[fx->op][fx->varlen].query(args_of(fx, null_args), bytes);
}

static attnops_status q_run(fixture *fx, bool null_args, void *ws, size_t bytes)
{
    return ENTRY[fx->op][fx->varlen].run(args_of(fx, null_args), ws, bytes);
}

/* Calls the entry points as fx->mode says, expecting e->st; the outcome goes
 * to fx->oc. */
static void call_case(fixture *fx, const vc_expect *e)
{
    static const vc_call_kind KIND[] = {[CALL_BOTH] = VC_CALL, [CALL_NULL_ARGS] = VC_CALL,
                                        [CALL_NULL_BYTES] = VC_NULL_BYTES, [CALL_WS_NULL] = VC_WS_NULL,
                                        [CALL_WS_SHORT] = VC_WS_SHORT};
    fx_snapshot(fx);
    if (through_acl) {
        acl_state.op = fx->op, acl_state.varlen = fx->varlen;
        const attnops_status st = e->st == ATTNOPS_ERR_UNSUPPORTED ? ATTNOPS_ERR_PARAM_INVALID : e->st;
        vc_call(&fx->oc, &ACL_ENTRY, args_of(fx, fx->mode == CALL_NULL_ARGS),
                fx->mode == CALL_BOTH ? VC_QUERY : KIND[fx->mode], st);
    } else {
        vc_call(&fx->oc, &ENTRY[fx->op][fx->varlen], args_of(fx, fx->mode == CALL_NULL_ARGS), KIND[fx->mode], e->st);
    }
    fx_restore_views(fx);
}

/* ---- checking ---- */
/* Elements of an output that still hold the poison pattern (never written). */
/* Poisoned elements of the view, through its strides (padding is not an element). */
static int64_t unwritten(const tu_tensor *t)
{
    const attnops_tensor *v = &t->view;
    const size_t es = attnops_dtype_size(v->dtype);
    const int64_t n = tu_numel(v);
    const unsigned char *b = v->data;
    int64_t bad = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t rest = k, at = 0;
        for (int d = v->rank - 1; d >= 0; d--) at += (rest % v->shape[d]) * v->strides[d], rest /= v->shape[d];
        bad += vc_poisoned(b + (size_t)at * es, es);
    }
    return bad;
}

/* Returns the number of problems found.  The sentence names the operator of
 * the entry point: the general one's; through a varlen entry point the
 * varlen one's for its own check (a layout other than TND), and after it,
 * where the varlen entry point runs the general operator, either name.
 * Outputs untouched, inputs unchanged, canaries intact (tu_tensor_untouched
 * reads through view.data, which call_case restored). */
static int verify_failure(fixture *fx, const vc_expect *want)
{
    const bool tnd = fx->layout == ATTNOPS_LAYOUT_TND;
    const char *general = ENTRY[fx->op][0].name, *varlen = ENTRY[fx->op][1].name;
    vc_begin();
    if (through_acl) { /* the library's sentence, or the aclnn layer's own (naming its entry point) */
        const char *const ops[3] = {fx->varlen && !tnd ? varlen : general, aclb_entry_name(&acl_state.call),
                                    varlen};
        vc_check_outcome_any(&fx->oc, want, ops, fx->varlen && tnd ? 3 : 2);
    } else {
        vc_check_outcome(&fx->oc, want, fx->varlen && !tnd ? varlen : general, fx->varlen && tnd ? varlen : NULL);
    }
    const vc_tensors s = tensors(fx);
    vc_check_failed_call(&s);
    return vc_problems();
}

/* ---- the cases ---- */
/* The failure cases: X(id, ops, status, name, also, call) -- the rule a case
 * breaks (BREAK holds each mutation of the valid call), the operators it
 * applies to (BOTH, FWD_ONLY, BWD_ONLY), the status and the words the
 * sentence must hold (the argument, and NULL or a value it must state), and
 * how the entry points are called.  A few cases name another argument in
 * some layouts or in the backward (the comment at their row): their BREAK
 * row says so. */
#define NUL ATTNOPS_ERR_NULLPTR
#define INV ATTNOPS_ERR_PARAM_INVALID
#define UNS ATTNOPS_ERR_UNSUPPORTED
enum { BOTH, FWD_ONLY, BWD_ONLY };
#define CASES(X)                                                                                               \
    X(NULL_ARGS, BOTH, NUL, "args", NULL, CALL_NULL_ARGS)                                                      \
    X(NULL_QUERY, BOTH, NUL, "query", NULL, CALL_BOTH)                                                         \
    X(NULL_KEY, BOTH, NUL, "key", NULL, CALL_BOTH)                                                             \
    X(NULL_VALUE, BOTH, NUL, "value", NULL, CALL_BOTH)                                                         \
    X(NULL_ATTENTION_OUT, FWD_ONLY, NUL, "attention_out", NULL, CALL_BOTH)                                     \
    X(NULL_SOFTMAX_MAX, BOTH, NUL, "softmax_max", NULL, CALL_BOTH)                                             \
    X(NULL_SOFTMAX_SUM, BOTH, NUL, "softmax_sum", NULL, CALL_BOTH)                                             \
    X(NULL_DY, BWD_ONLY, NUL, "dy", NULL, CALL_BOTH)                                                           \
    X(NULL_ATTENTION_IN, BWD_ONLY, NUL, "attention_in", NULL, CALL_BOTH)                                       \
    X(NULL_DQ, BWD_ONLY, NUL, "dq", NULL, CALL_BOTH)                                                           \
    X(NULL_DK, BWD_ONLY, NUL, "dk", NULL, CALL_BOTH)                                                           \
    X(NULL_DV, BWD_ONLY, NUL, "dv", NULL, CALL_BOTH)                                                           \
    X(NULL_DATA_QUERY, BOTH, NUL, "query", NULL, CALL_BOTH)                                                    \
    X(NULL_DATA_VALUE, BOTH, NUL, "value", NULL, CALL_BOTH)                                                    \
    X(NULL_DATA_OUTPUT, BOTH, NUL, "softmax_sum", NULL, CALL_BOTH) /* backward: dv */                          \
    X(NULL_WORKSPACE_BYTES, BOTH, NUL, "workspace_bytes", NULL, CALL_NULL_BYTES)                               \
    X(NULL_WORKSPACE, BOTH, NUL, "workspace", NULL, CALL_WS_NULL)                                              \
    X(WORKSPACE_SHORT, BOTH, INV, "workspace", NULL, CALL_WS_SHORT)                                            \
    X(HEAD_NUM_ZERO, BOTH, INV, "head_num", NULL, CALL_BOTH)                                                   \
    X(HEAD_NUM_NEGATIVE, BOTH, INV, "head_num", NULL, CALL_BOTH)                                               \
    X(HEAD_NUM_HALF, BOTH, INV, "head_num", NULL, CALL_BOTH) /* BSH, SBH: softmax_max */                       \
    X(HEAD_NUM_DOUBLE, BOTH, INV, "head_num", NULL, CALL_BOTH) /* BSH, SBH: softmax_max */                     \
    X(LAYOUT_UNSET, BOTH, INV, "input_layout", NULL, CALL_BOTH)                                                \
    X(LAYOUT_TOO_BIG, BOTH, INV, "input_layout", NULL, CALL_BOTH)                                              \
    X(LAYOUT_NEGATIVE, BOTH, INV, "input_layout", NULL, CALL_BOTH)                                             \
    X(QUERY_RANK, BOTH, INV, "query", NULL, CALL_BOTH)                                                         \
    X(KEY_RANK, BOTH, INV, "key", NULL, CALL_BOTH)                                                             \
    X(KEY_DTYPE, BOTH, INV, "key", NULL, CALL_BOTH)                                                            \
    X(VALUE_DTYPE, BOTH, INV, "value", NULL, CALL_BOTH)                                                        \
    X(QUERY_U8, BOTH, INV, "query", NULL, CALL_BOTH)                                                           \
    X(N1_NOT_MULTIPLE_OF_N2, BOTH, INV, "key", NULL, CALL_BOTH)                                                \
    X(KEY_HEAD_DIM, BOTH, INV, "key", NULL, CALL_BOTH)                                                         \
    X(DV_GREATER_THAN_D, BOTH, INV, "value", NULL, CALL_BOTH)                                                  \
    X(D_ZERO, BOTH, INV, "query", NULL, CALL_BOTH)                                                             \
    X(HIDDEN_NOT_DIVISIBLE, BOTH, INV, "query", NULL, CALL_BOTH)                                               \
    X(VALUE_S, BOTH, INV, "value", NULL, CALL_BOTH)                                                            \
    X(VALUE_B, BOTH, INV, "value", NULL, CALL_BOTH)                                                            \
    X(VALUE_N, BOTH, INV, "value", NULL, CALL_BOTH)                                                            \
    X(ATTENTION_OUT_SHAPE, FWD_ONLY, INV, "attention_out", NULL, CALL_BOTH)                                    \
    X(ATTENTION_OUT_DTYPE, FWD_ONLY, INV, "attention_out", NULL, CALL_BOTH)                                    \
    X(SOFTMAX_MAX_SHAPE, BOTH, INV, "softmax_max", NULL, CALL_BOTH)                                            \
    X(SOFTMAX_MAX_DTYPE, BOTH, INV, "softmax_max", NULL, CALL_BOTH)                                            \
    X(SOFTMAX_SUM_SHAPE, BOTH, INV, "softmax_sum", NULL, CALL_BOTH)                                            \
    X(SOFTMAX_SUM_DTYPE, BOTH, INV, "softmax_sum", NULL, CALL_BOTH)                                            \
    X(DQ_SHAPE, BWD_ONLY, INV, "dq", NULL, CALL_BOTH)                                                          \
    X(DQ_DTYPE, BWD_ONLY, INV, "dq", NULL, CALL_BOTH)                                                          \
    X(DK_SHAPE, BWD_ONLY, INV, "dk", NULL, CALL_BOTH)                                                          \
    X(DK_DTYPE, BWD_ONLY, INV, "dk", NULL, CALL_BOTH)                                                          \
    X(DV_SHAPE, BWD_ONLY, INV, "dv", NULL, CALL_BOTH)                                                          \
    X(DV_DTYPE, BWD_ONLY, INV, "dv", NULL, CALL_BOTH)                                                          \
    X(DY_SHAPE, BWD_ONLY, INV, "dy", NULL, CALL_BOTH)                                                          \
    X(DY_DTYPE, BWD_ONLY, INV, "dy", NULL, CALL_BOTH)                                                          \
    X(ATTENTION_IN_SHAPE, BWD_ONLY, INV, "attention_in", NULL, CALL_BOTH)                                      \
    X(ATTENTION_IN_DTYPE, BWD_ONLY, INV, "attention_in", NULL, CALL_BOTH)                                      \
    X(OVERLAP_SUM_MAX, FWD_ONLY, INV, "softmax_sum", NULL, CALL_BOTH)                                          \
    X(OVERLAP_OUT_SUM, FWD_ONLY, INV, "attention_out", NULL, CALL_BOTH)                                        \
    X(OVERLAP_DQ_DK, BWD_ONLY, INV, "dk", NULL, CALL_BOTH)                                                     \
    X(OVERLAP_DK_DV, BWD_ONLY, INV, "dv", NULL, CALL_BOTH)                                                     \
    X(KEEP_PROB_ZERO, BOTH, INV, "keep_prob", NULL, CALL_BOTH)                                                 \
    X(KEEP_PROB_F32_ZERO, BOTH, INV, "keep_prob", NULL, CALL_BOTH)                                             \
    X(KEEP_PROB_1_5, BOTH, INV, "keep_prob", NULL, CALL_BOTH)                                                  \
    X(KEEP_PROB_NAN, BOTH, INV, "keep_prob", NULL, CALL_BOTH)                                                  \
    X(SOFTCAP_NEGATIVE, BOTH, INV, "softcap", "-1", CALL_BOTH)                                                 \
    X(SOFTCAP_NAN, BOTH, INV, "softcap", "nan", CALL_BOTH)                                                     \
    X(SOFTCAP_INF, BOTH, INV, "softcap", "inf", CALL_BOTH)                                                     \
    X(SOFTCAP_F32_ZERO, BOTH, INV, "softcap", "f32", CALL_BOTH)                                                \
    X(SOFTCAP_SCALE_RATIO, BOTH, INV, "softcap", "scale_value / softcap", CALL_BOTH)                           \
    X(SPARSE_MODE_9, BOTH, INV, "sparse_mode", NULL, CALL_BOTH)                                                \
    X(SPARSE_MODE_NEGATIVE, BOTH, INV, "sparse_mode", NULL, CALL_BOTH)                                         \
    X(SPARSE_MODE_7_NOT_TND, BOTH, INV, "sparse_mode", NULL, CALL_BOTH)                                        \
    X(PSE_TYPE_4, BOTH, INV, "pse_type", NULL, CALL_BOTH)                                                      \
    X(PSE_TYPE_2_WITHOUT_PSE, BOTH, INV, "pse_type", NULL, CALL_BOTH)                                          \
    X(INNER_PRECISE_3, BOTH, INV, "inner_precise", NULL, CALL_BOTH)                                            \
    X(OUT_DTYPE_2, BOTH, INV, "out_dtype", NULL, CALL_BOTH)                                                    \
    X(IMPL_4, BOTH, INV, "impl", "4", CALL_BOTH)                                                               \
    X(NEGATIVE_STRIDE_INPUT, BOTH, INV, "key", NULL, CALL_BOTH)                                                \
    X(NEGATIVE_STRIDE_OUTPUT, BOTH, INV, "attention_out", NULL, CALL_BOTH) /* backward: dk */                  \
    X(ZERO_STRIDE_OUTPUT, BOTH, INV, "attention_out", NULL, CALL_BOTH) /* backward: dk */                      \
    X(OVERLAPPING_STRIDE_OUTPUT, BOTH, INV, "attention_out", NULL, CALL_BOTH) /* backward: dk */               \
    X(SCALE_NAN, BOTH, INV, "scale_value", NULL, CALL_BOTH)                                                    \
    X(SCALE_F32_INF, BOTH, INV, "scale_value", NULL, CALL_BOTH)                                                \
    X(PADDING_MASK, BOTH, INV, "padding_mask", NULL, CALL_BOTH)                                                \
    X(SOFTMAX_IN, BWD_ONLY, INV, "softmax_in", NULL, CALL_BOTH)                                                \
    X(MASK_DTYPE_F32, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                \
    X(MASK_RANK_3, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                   \
    X(MASK_MODE0_S1, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                 \
    X(MASK_MODE0_S2, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                 \
    X(MASK_MODE1_S1, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                 \
    X(MASK_MODE1_S2, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                 \
    X(MASK_MODE5_S1, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                 \
    X(MASK_MODE5_S2, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                 \
    X(MASK_MODE1_1NSS, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                               \
    X(MASK_MODE5_SS, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                                 \
    X(MASK_MODE5_11SS, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                               \
    X(MASK_MODE2_1024, BOTH, INV, "atten_mask", "[2048, 2048]", CALL_BOTH)                                     \
    X(MASK_MODE3_1024, BOTH, INV, "atten_mask", "[2048, 2048]", CALL_BOTH)                                     \
    X(MASK_MODE4_1024, BOTH, INV, "atten_mask", "[2048, 2048]", CALL_BOTH)                                     \
    X(MASK_MODE6_2048, BOTH, INV, "atten_mask", "3072", CALL_BOTH)                                             \
    X(TOKENS_PRE_BEYOND_S2, BOTH, INV, "pre_tokens", "next_tokens", CALL_BOTH)                                 \
    X(TOKENS_NEXT_BEYOND_S1, BOTH, INV, "pre_tokens", "next_tokens", CALL_BOTH)                                \
    X(TOKENS_NO_BAND, BOTH, INV, "pre_tokens", "next_tokens", CALL_BOTH)                                       \
    X(TOKENS_MODE4_CORRECTED, BOTH, INV, "pre_tokens", "-8", CALL_BOTH)                                        \
    X(PREFIX_MISSING_MODE6, BOTH, NUL, "prefix", NULL, CALL_BOTH)                                              \
    X(PREFIX_LENGTH, BOTH, INV, "prefix", NULL, CALL_BOTH)                                                     \
    X(PREFIX_DTYPE_F32, BOTH, INV, "prefix", NULL, CALL_BOTH)                                                  \
    X(PREFIX_BELOW_RANGE, BOTH, INV, "prefix", NULL, CALL_BOTH)                                                \
    X(PREFIX_ABOVE_RANGE, BOTH, INV, "prefix", NULL, CALL_BOTH)                                                \
    X(PSE_DTYPE_TYPE0, BOTH, INV, "pse", NULL, CALL_BOTH)                                                      \
    X(PSE_DTYPE_TYPE1, BOTH, INV, "pse", NULL, CALL_BOTH)                                                      \
    X(PSE_SHAPE_RANK3, BOTH, INV, "pse", NULL, CALL_BOTH)                                                      \
    X(PSE_SHAPE_B1SS, BOTH, INV, "pse", NULL, CALL_BOTH)                                                       \
    X(PSE_SHAPE_1N1S, BOTH, INV, "pse", NULL, CALL_BOTH)                                                       \
    X(PSE_SHAPE_S2, BOTH, INV, "pse", NULL, CALL_BOTH)                                                         \
    X(PSE_SHAPE_1024_ROWS, BOTH, INV, "pse", NULL, CALL_BOTH)                                                  \
    X(PSE_SLOPES_F16, BOTH, INV, "pse", NULL, CALL_BOTH)                                                       \
    X(PSE_SLOPES_LENGTH, BOTH, INV, "pse", NULL, CALL_BOTH)                                                    \
    X(Q_START_IDX_LENGTH, BOTH, INV, "q_start_idx", NULL, CALL_BOTH)                                           \
    X(Q_START_IDX_F32, BOTH, INV, "q_start_idx", NULL, CALL_BOTH)                                              \
    X(KV_START_IDX_LENGTH, BOTH, INV, "kv_start_idx", NULL, CALL_BOTH)                                         \
    X(PSE_ALIBI_NO_MASK, BOTH, INV, "pse", "causal", CALL_BOTH)                                                \
    X(DROP_MASK_KEEP_ONE, BOTH, INV, "drop_mask", NULL, CALL_BOTH)                                             \
    X(DROP_MASK_TOO_SMALL, BOTH, INV, "drop_mask", NULL, CALL_BOTH)                                            \
    X(DROP_MASK_DTYPE, BOTH, INV, "drop_mask", NULL, CALL_BOTH)                                                \
    X(FP8_NO_D_SCALE_Q, BOTH, NUL, "d_scale_q", NULL, CALL_BOTH)                                               \
    X(FP8_D_SCALE_K_SHAPE, BOTH, INV, "d_scale_k", "128", CALL_BOTH)                                           \
    X(FP8_D_SCALE_V_DTYPE, BOTH, INV, "d_scale_v", NULL, CALL_BOTH)                                            \
    X(FP8_NO_D_SCALE_DY, BWD_ONLY, NUL, "d_scale_dy", NULL, CALL_BOTH)                                         \
    X(FP8_NO_D_SCALE_O, BWD_ONLY, NUL, "d_scale_o", NULL, CALL_BOTH)                                           \
    X(FP8_OUT_DTYPE_MISMATCH, BOTH, INV, "attention_out", "out_dtype", CALL_BOTH) /* backward: attention_in */ \
    X(FP8_KEY_E5M2, BOTH, INV, "key", NULL, CALL_BOTH)                                                         \
    X(FP8_IMPL_CPU_FORWARD, FWD_ONLY, UNS, "impl", "REFERENCE", CALL_BOTH)                                     \
    X(FP8_IMPL_BENCHMARK, BOTH, UNS, "BENCHMARK", NULL, CALL_BOTH)                                             \
    X(FP8_ROPE, BOTH, UNS, "query_rope", NULL, CALL_BOTH)                                                      \
    X(FP8_SOFTCAP, BOTH, UNS, "softcap", "FP8", CALL_BOTH)                                                     \
    X(D_SCALE_WITHOUT_FP8, BOTH, INV, "d_scale_q", "f32", CALL_BOTH)                                           \
    X(SINK_DTYPE, BOTH, INV, "sink", "f32", CALL_BOTH)                                                         \
    X(SINK_SHAPE, BOTH, INV, "sink", "N1", CALL_BOTH)                                                          \
    X(SINK_FP8, BOTH, UNS, "sink", "FP8", CALL_BOTH)                                                           \
    X(DSINK_WITHOUT_SINK, BWD_ONLY, INV, "dsink", NULL, CALL_BOTH)                                             \
    X(DSINK_SHAPE, BWD_ONLY, INV, "dsink", NULL, CALL_BOTH)                                                    \
    X(ROPE_QUERY_ONLY, BOTH, NUL, "key_rope", NULL, CALL_BOTH)                                                 \
    X(ROPE_KEY_ONLY, BOTH, NUL, "query_rope", NULL, CALL_BOTH)                                                 \
    X(ROPE_DTYPE, BOTH, INV, "query_rope", "f16", CALL_BOTH)                                                   \
    X(ROPE_WIDER_THAN_D, BOTH, INV, "query_rope", "10", CALL_BOTH)                                             \
    X(ROPE_KEY_SHAPE, BOTH, INV, "key_rope", NULL, CALL_BOTH)                                                  \
    X(ROPE_NO_DQ_ROPE, BWD_ONLY, NUL, "dq_rope", NULL, CALL_BOTH)                                              \
    X(ROPE_DK_ROPE_SHAPE, BWD_ONLY, INV, "dk_rope", NULL, CALL_BOTH)                                           \
    X(ROPE_DQ_ROPE_OVERLAPS_DQ, BWD_ONLY, INV, "dq_rope", NULL, CALL_BOTH)                                     \
    X(ROPE_GRADS_WITHOUT_INPUTS, BWD_ONLY, INV, "dq_rope", NULL, CALL_BOTH)                                    \
    X(ACTUAL_SEQ_QLEN_NOT_TND, BOTH, INV, "actual_seq_qlen", "BNSD", CALL_BOTH) /* also: the layout's name */  \
    X(VARLEN_LAYOUT_BSND, BOTH, INV, "TND", "input_layout BSND is not TND", CALL_BOTH)                         \
    /* from here on layout TND only (TND_FIRST_CASE) */                                                        \
    X(TND_NULL_SEQ_QLEN, BOTH, NUL, "actual_seq_qlen", NULL, CALL_BOTH)                                        \
    X(TND_NULL_SEQ_KVLEN, BOTH, NUL, "actual_seq_kvlen", NULL, CALL_BOTH)                                      \
    X(TND_SEQ_COUNTS_DIFFER, BOTH, INV, "actual_seq_kvlen", NULL, CALL_BOTH)                                   \
    X(TND_SEQ_DECREASING, BOTH, INV, "actual_seq_qlen", NULL, CALL_BOTH)                                       \
    X(TND_SEQ_QLEN_END, BOTH, INV, "actual_seq_qlen", NULL, CALL_BOTH)                                         \
    X(TND_SEQ_KVLEN_END, BOTH, INV, "actual_seq_kvlen", NULL, CALL_BOTH)                                       \
    X(TND_SEQ_DTYPE_F32, BOTH, INV, "actual_seq_qlen", "f32", CALL_BOTH)                                       \
    X(TND_STATS_BNS8, BOTH, INV, "softmax_max", "[7, 4, 8]", CALL_BOTH)                                        \
    X(TND_STATS_STRIDED, BOTH, INV, "softmax_sum", "contiguous", CALL_BOTH)                                    \
    X(TND_STATS_SAME_AS_INPUT_NT8, BOTH, INV, "softmax_max", "[7, 4, 8]", CALL_BOTH)                           \
    X(TND_ATTENTION_OUT_T, FWD_ONLY, INV, "attention_out", NULL, CALL_BOTH)                                    \
    X(TND_DQ_T, BWD_ONLY, INV, "dq", NULL, CALL_BOTH)                                                          \
    X(TND_DK_T, BWD_ONLY, INV, "dk", NULL, CALL_BOTH)                                                          \
    X(TND_MODE5, BOTH, INV, "sparse_mode", "TND", CALL_BOTH)                                                   \
    X(TND_MASK_MODE1_B1SS, BOTH, INV, "atten_mask", NULL, CALL_BOTH)                                           \
    X(TND_MASK_MODE0_4X4, BOTH, INV, "atten_mask", "= [4, 6] mask", CALL_BOTH)                                 \
    X(TND_TOKENS_MODE0, BOTH, INV, "pre_tokens", "batch 0", CALL_BOTH)                                         \
    X(TND_TOKENS_MODE7_BAND, BOTH, INV, "pre_tokens", "batch 2", CALL_BOTH)                                    \
    X(TND_PSE_TYPE1, BOTH, INV, "pse", "causal", CALL_BOTH)                                                    \
    X(TND_PSE_1D, BOTH, UNS, "pse", NULL, CALL_BOTH)                                                           \
    X(TND_PSE2_EMPTY_BATCH, BOTH, INV, "pse", "batch 1", CALL_BOTH)                                            \
    X(TND_PSE2_MODE7, BOTH, INV, "pse", "sparse_mode 7", CALL_BOTH)                                            \
    X(TND_PSE2_MODE8_S1_NE_S2, BOTH, INV, "pse", "batch 2", CALL_BOTH)                                         \
    X(TND_PSE2_MODE8_START_IDX, BOTH, INV, "q_start_idx", NULL, CALL_BOTH)                                     \
    X(TND_FP8, BOTH, UNS, "TND", NULL, CALL_BOTH)

#define AS_ENUM(c, ...) C_##c,
#define AS_NAME(c) #c,
enum { CASES(AS_ENUM) N_CASES };
static const vc_case CASE[] = {CASES(VC_CASE_ROW)}; /* scope: BOTH, FWD_ONLY or BWD_ONLY */
enum { TND_FIRST_CASE = C_TND_NULL_SEQ_QLEN };

static bool hidden_layout(attnops_layout l) { return l == ATTNOPS_LAYOUT_BSH || l == ATTNOPS_LAYOUT_SBH; }

/* ---- how a case breaks the valid call: rows of edits ---- */
/* The cases' mutations are data (BREAK, VALID) so that the case list reads
 * as a table; the few steps no edit can say are named functions in a row. */

/* A size of the problem as the rows write it, k * <of> / div + add (k and
 * div 0 count as 1), read when its edit is made: after a RESEQ or a row's
 * code, of the new problem. */
typedef enum size_of {
    Z_SAME, /* RESIZE: the valid tensor's own size; elsewhere: the end of a list */
    Z_NUM,  /* the constant add */
    Z_B, Z_N1, Z_N2, Z_S1, Z_S2, Z_D, Z_Dv, Z_T1, Z_T2,
    Z_H1,         /* N1 * D, query's hidden size in BSH / SBH */
    Z_T2N1,       /* T2 * N1 */
    Z_PREFIX_MIN, /* max(0, S2 - S1), the least valid prefix */
    Z_DROP_BYTES  /* bytes of a bit per element of [B, N1, S1, S2] */
} size_of;

typedef struct size_x {
    size_of of;
    int64_t add, k, div;
} size_x;

#define SZ(w) {.of = Z_##w}
#define NUM(v) {.of = Z_NUM, .add = (v)}
#define PLUS(w, v) {.of = Z_##w, .add = (v)}
#define NEG(w, v) {.of = Z_##w, .add = -(v), .k = -1} /* -(w + v) */
#define TIMES(w, v) {.of = Z_##w, .k = (v)}
#define OVER(w, v) {.of = Z_##w, .div = (v)}

static int64_t size_value(const fixture *fx, size_x z)
{
    const dims *d = &fx->d;
    int64_t v = 0;
    switch (z.of) {
    case Z_SAME: case Z_NUM: break;
    case Z_B: v = d->B; break;
    case Z_N1: v = d->N1; break;
    case Z_N2: v = d->N2; break;
    case Z_S1: v = d->S1; break;
    case Z_S2: v = d->S2; break;
    case Z_D: v = d->D; break;
    case Z_Dv: v = d->Dv; break;
    case Z_T1: v = fx->T1; break;
    case Z_T2: v = fx->T2; break;
    case Z_H1: v = d->N1 * d->D; break;
    case Z_T2N1: v = fx->T2 * d->N1; break;
    case Z_PREFIX_MIN: v = d->S1 > d->S2 ? 0 : d->S2 - d->S1; break;
    case Z_DROP_BYTES: v = (d->B * d->N1 * d->S1 * d->S2 + 7) / 8; break;
    }
    return (z.k ? z.k : 1) * v / (z.div ? z.div : 1) + z.add;
}

/* The sizes of z up to its first Z_SAME (at most 4); returns their count. */
static int size_list(const fixture *fx, const size_x *z, int64_t *out)
{
    int n = 0;
    for (; n < 4 && z[n].of != Z_SAME; n++) out[n] = size_value(fx, z[n]);
    return n;
}

typedef enum edit_kind {
    E_END,       /* ends a list of edits */
    E_UNBIND,    /* the argument that points at tensor t becomes NULL */
    E_NULL_DATA, /* t's data pointer becomes NULL */
    E_ALIAS,     /* t's data points `bytes` into the storage of tensor `into` */
    E_STRIDE,    /* t's stride of dimension dim (< 0: from the end) becomes `stride` */
    E_POINT,     /* the argument at offset `off` of the operator's struct points at t */
    E_PARAM,     /* the attribute at offset `off` of the params becomes f, or z[0] when set */
    E_QKV,       /* t becomes a q/k/v-like tensor of dtype dt, sizes (b, s, n, d) */
    E_STATS,     /* t becomes a softmax statistic of dtype dt, last dimension z[0] */
    E_TENSOR,    /* t becomes a tensor of dtype dt and shape z, its rows padded by `pad` */
    E_MASK,      /* an atten_mask of dtype dt and shape z (fx_mask) */
    E_LIST,      /* t becomes a 1-D list of dtype dt holding z */
    E_PREFIX,    /* a valid prefix of dtype dt (fx_prefix) */
    E_SLOPES,    /* ALiBi slopes, [B, N1] when `flag` (fx_slopes) */
    E_ROPE,      /* rope inputs of head dim z[0] (fx_rope) */
    E_FP8,       /* a valid FP8 call, inputs dt, outputs `out` (fx_fp8) */
    E_SEQ_LISTS, /* TND: actual_seq_qlen / _kvlen in dtype dt */
    E_RESEQ,     /* TND: the problem rebuilt with the batches *sq */
    E_VARLEN     /* the call goes to the varlen entry points */
} edit_kind;

/* One edit; each kind reads the fields its comment names.  Written with the
 * macros below: a row is EDITS(...) of them. */
typedef struct edit {
    edit_kind kind;
    int t; /* a tensor (Q ... DSO) */
    attnops_dtype dt;
    union {
        size_x z[4];
        struct {
            size_x b, s, n, d; /* E_QKV; Z_SAME: as in the valid call */
        };
    };
    bool flag; /* E_QKV: in the layout of the other rank (BSND for BSH/SBH, BSH for BNSD/BSND) */
    attnops_dtype out;
    int into, dim;
    int64_t bytes, stride, pad;
    size_t off, size; /* E_PARAM: the attribute's size */
    bool real;        /* E_PARAM: the attribute is a double */
    double f;
    const seqs *sq;
} edit;

#define DT(dt) ATTNOPS_DTYPE_##dt
#define UNBIND(i) {.kind = E_UNBIND, .t = (i)}
#define NULL_DATA(i) {.kind = E_NULL_DATA, .t = (i)}
#define ALIAS(i, into_, bytes_) {.kind = E_ALIAS, .t = (i), .into = (into_), .bytes = (bytes_)}
#define STRIDE(i, dim_, v) {.kind = E_STRIDE, .t = (i), .dim = (dim_), .stride = (v)}
#define POINT(args, field, i) {.kind = E_POINT, .t = (i), .off = offsetof(args, field)}
#define PARAM_AT(field)                                                                                            \
    .kind = E_PARAM, .off = offsetof(attnops_fa_params, field), .size = sizeof(((attnops_fa_params *)0)->field),   \
    .real = _Generic(((attnops_fa_params *)0)->field, double: true, default: false)
#define PARAM(field, v) {PARAM_AT(field), .f = (v)}
#define PARAM_SZ(field, v) {PARAM_AT(field), .z = {v}}
#define RETYPE(i, dt_) {.kind = E_QKV, .t = (i), .dt = DT(dt_)}
#define RESIZE(i, dt_, ...) {.kind = E_QKV, .t = (i), .dt = DT(dt_), __VA_ARGS__}
#define OTHER_RANK(i) {.kind = E_QKV, .t = (i), .dt = DT(F32), .flag = true}
#define STATS(i, dt_, last) {.kind = E_STATS, .t = (i), .dt = DT(dt_), .z = {NUM(last)}}
#define TENSOR(i, dt_, ...) {.kind = E_TENSOR, .t = (i), .dt = DT(dt_), .z = {__VA_ARGS__}}
#define PADDED(i, dt_, pad_, ...) {.kind = E_TENSOR, .t = (i), .dt = DT(dt_), .pad = (pad_), .z = {__VA_ARGS__}}
#define ATTEN_MASK(dt_, ...) {.kind = E_MASK, .t = MASK, .dt = DT(dt_), .z = {__VA_ARGS__}}
#define LIST(i, dt_, ...) {.kind = E_LIST, .t = (i), .dt = DT(dt_), .z = {__VA_ARGS__}}
#define EMPTY_LIST(i, dt_) {.kind = E_LIST, .t = (i), .dt = DT(dt_)}
#define VALID_PREFIX(dt_) {.kind = E_PREFIX, .dt = DT(dt_)}
#define SLOPES(bn) {.kind = E_SLOPES, .flag = (bn)}
#define ROPE(dr) {.kind = E_ROPE, .z = {dr}}
#define FP8(in, out_) {.kind = E_FP8, .dt = DT(in), .out = DT(out_)}
#define SEQ_LISTS(dt_) {.kind = E_SEQ_LISTS, .dt = DT(dt_)}
#define RESEQ(...) {.kind = E_RESEQ, .sq = &(const seqs){__VA_ARGS__}}
#define VARLEN_ENTRY {.kind = E_VARLEN}
#define EDITS(...) ((const edit[]){__VA_ARGS__, {.kind = E_END}})
#define NO_EDIT ((const edit[]){{.kind = E_END}})

_Static_assert(offsetof(attnops_fa_fwd_args, p) == 0 && offsetof(attnops_fa_bwd_args, p) == 0,
               "POINT takes params offsets as offsets into either operator's struct");
_Static_assert(sizeof(attnops_layout) == sizeof(int) && sizeof(attnops_impl) == sizeof(int) &&
                   sizeof(attnops_softmax_layout) == sizeof(int),
               "PARAM writes the enum attributes as ints");

static void set_param(fixture *fx, const edit *e)
{
    unsigned char *at = (unsigned char *)P(fx) + e->off;
    if (e->real) {
        memcpy(at, &e->f, sizeof e->f);
        return;
    }
    const int64_t v = e->z[0].of != Z_SAME ? size_value(fx, e->z[0]) : (int64_t)e->f;
    const int narrow = (int)v;
    memcpy(at, e->size == sizeof v ? (const void *)&v : (const void *)&narrow, e->size);
}

static void set_qkv(fixture *fx, const edit *e)
{
    int64_t z[4], sh[4];
    qkv_sizes(fx, e->t, z);
    for (int k = 0; k < 4; k++)
        if (e->z[k].of != Z_SAME) z[k] = size_value(fx, e->z[k]);
    attnops_layout layout = fx->layout;
    if (e->flag) layout = hidden_layout(layout) ? ATTNOPS_LAYOUT_BSND : ATTNOPS_LAYOUT_BSH;
    fx_set(fx, e->t, e->dt, layout_shape(layout, z[0], z[1], z[2], z[3], sh), sh);
}

static void apply_edits(fixture *fx, const edit *e)
{
    for (;; e++) {
        attnops_tensor *view = &fx->t[e->t].view;
        unsigned char *args = fx->op == FWD ? (unsigned char *)&fx->fa : (unsigned char *)&fx->ba;
        int64_t z[4];
        const int n = size_list(fx, e->z, z);
        switch (e->kind) {
        case E_END: return;
        case E_UNBIND: *slot(fx, e->t) = NULL; break;
        case E_NULL_DATA: view->data = NULL; break;
        case E_ALIAS: view->data = vc_storage(&fx->t[e->into]) + e->bytes; break;
        case E_STRIDE: view->strides[e->dim < 0 ? view->rank + e->dim : e->dim] = e->stride; break;
        case E_POINT: *(const attnops_tensor **)(args + e->off) = view; break;
        case E_PARAM: set_param(fx, e); break;
        case E_QKV: set_qkv(fx, e); break;
        case E_STATS: fx_stats(fx, e->t, e->dt, z[0]); break;
        case E_TENSOR:
            fx_set_pad(fx, e->t, e->dt, n, z, e->pad);
            *slot(fx, e->t) = view;
            break;
        case E_MASK: fx_mask(fx, e->dt, n, z); break;
        case E_LIST: fx_list(fx, e->t, e->dt, n, z); break;
        case E_PREFIX: fx_prefix(fx, e->dt); break;
        case E_SLOPES: fx_slopes(fx, e->flag); break;
        case E_ROPE: fx_rope(fx, z[0], fx->op == BWD); break;
        case E_FP8: fx_fp8(fx, e->dt, e->out); break;
        case E_SEQ_LISTS: fx_seq_lists(fx, e->dt); break;
        case E_RESEQ: fx_reseq(fx, e->sq); break;
        case E_VARLEN: fx->varlen = true; break;
        }
    }
}

/* What no edit says.  PSE_ALIBI_NO_MASK: the compressed ALiBi [B|1, N1,
 * 1024, S2] needs S1 = S2 > 1024 and a causal mask; S1 = S2 = 1030, kept
 * small: B = N1 = 1, D = 8. */
static void long_square_problem(fixture *fx, vc_expect *e)
{
    const op_kind op = fx->op;
    const attnops_layout layout = fx->layout;
    const dims small = {1, 1, 1, 1030, 1030, 8, 8};
    fx_free(fx);
    fx_init(fx, op, layout, small, 13);
}

/* ACTUAL_SEQ_QLEN_NOT_TND: cumulative lengths of the B padded batches, in a
 * layout the sentence names. */
static void seq_qlen_in_padded_layout(fixture *fx, vc_expect *e)
{
    int64_t cu[8];
    for (int64_t b = 0; b < fx->d.B; b++) cu[b] = (b + 1) * fx->d.S1;
    fx_list(fx, SEQQ, ATTNOPS_DTYPE_I64, fx->d.B, cu);
    e->also = attnops_layout_name(fx->layout);
}

/* How each failure case breaks the valid call. */
typedef struct case_break {
    const edit *edits; /* in order, up to E_END */
    const edit *bwd;   /* NULL, or the backward's edits where they differ */
    void (*code)(fixture *fx, vc_expect *e); /* NULL, or what edits cannot say, run before them */
    unsigned layouts;  /* 0, or the layouts the case exists in: IN(...) */
    const char *bwd_name, *hid_name; /* NULL, or the argument named instead in the backward / in BSH, SBH */
} case_break;

#define IN(layout) (1u << ATTNOPS_LAYOUT_##layout)
#define ROW(...) {.edits = EDITS(__VA_ARGS__)}
#define BY_CALL {.edits = NO_EDIT} /* the call column breaks the rule */

static const case_break BREAK[N_CASES] = {
    [C_NULL_ARGS] = BY_CALL,
    [C_NULL_QUERY] = ROW(UNBIND(Q)),
    [C_NULL_KEY] = ROW(UNBIND(K)),
    [C_NULL_VALUE] = ROW(UNBIND(V)),
    [C_NULL_ATTENTION_OUT] = ROW(UNBIND(O)),
    [C_NULL_SOFTMAX_MAX] = ROW(UNBIND(SMAX)),
    [C_NULL_SOFTMAX_SUM] = ROW(UNBIND(SSUM)),
    [C_NULL_DY] = ROW(UNBIND(DY)),
    [C_NULL_ATTENTION_IN] = ROW(UNBIND(AIN)),
    [C_NULL_DQ] = ROW(UNBIND(DQ)),
    [C_NULL_DK] = ROW(UNBIND(DK)),
    [C_NULL_DV] = ROW(UNBIND(DV)),
    [C_NULL_DATA_QUERY] = ROW(NULL_DATA(Q)),
    [C_NULL_DATA_VALUE] = ROW(NULL_DATA(V)),
    [C_NULL_DATA_OUTPUT] = {.edits = EDITS(NULL_DATA(SSUM)), .bwd = EDITS(NULL_DATA(DV)), .bwd_name = "dv"},
    [C_NULL_WORKSPACE_BYTES] = BY_CALL,
    [C_NULL_WORKSPACE] = BY_CALL,
    [C_WORKSPACE_SHORT] = BY_CALL,
    [C_HEAD_NUM_ZERO] = ROW(PARAM(head_num, 0)),
    [C_HEAD_NUM_NEGATIVE] = ROW(PARAM(head_num, -4)),
    /* BSH/SBH carry no head count: a wrong head_num re-splits the hidden size
     * consistently for q, k, v, and the first tensor that exposes N1 on its
     * own is softmax_max [B, N1, S1, 8] */
    [C_HEAD_NUM_HALF] = {.edits = EDITS(PARAM_SZ(head_num, OVER(N1, 2))), .hid_name = "softmax_max"},
    [C_HEAD_NUM_DOUBLE] = {.edits = EDITS(PARAM_SZ(head_num, TIMES(N1, 2))), .hid_name = "softmax_max"},
    [C_LAYOUT_UNSET] = ROW(PARAM(input_layout, ATTNOPS_LAYOUT_UNSET)),
    [C_LAYOUT_TOO_BIG] = ROW(PARAM(input_layout, ATTNOPS_LAYOUT_TND + 1)),
    [C_LAYOUT_NEGATIVE] = ROW(PARAM(input_layout, -1)),
    [C_QUERY_RANK] = ROW(OTHER_RANK(Q)), /* 4-D where BSH/SBH want 3-D, 3-D where BNSD/BSND want 4-D */
    [C_KEY_RANK] = ROW(OTHER_RANK(K)),
    [C_KEY_DTYPE] = ROW(RETYPE(K, F16)),
    [C_VALUE_DTYPE] = ROW(RETYPE(V, BF16)),
    [C_QUERY_U8] = ROW(RETYPE(Q, U8)),
    [C_N1_NOT_MULTIPLE_OF_N2] = ROW(RESIZE(K, F32, .n = NUM(3)), RESIZE(V, F32, .n = NUM(3))), /* N1 = 4 */
    [C_KEY_HEAD_DIM] = ROW(RESIZE(K, F32, .d = PLUS(D, 2))),
    [C_DV_GREATER_THAN_D] = ROW(RESIZE(V, F32, .d = PLUS(D, 2))),
    [C_D_ZERO] = ROW(RESIZE(Q, F32, .d = NUM(0))),
    /* one head of 30 = not a multiple of 4 heads */
    [C_HIDDEN_NOT_DIVISIBLE] = {.edits = EDITS(RESIZE(Q, F32, .n = NUM(1), .d = PLUS(H1, -2))),
                                .layouts = IN(BSH) | IN(SBH)},
    [C_VALUE_S] = ROW(RESIZE(V, F32, .s = PLUS(S2, 1))),
    [C_VALUE_B] = ROW(RESIZE(V, F32, .b = PLUS(B, 1))),
    /* BSH/SBH read value's heads with key's count */
    [C_VALUE_N] = {.edits = EDITS(RESIZE(V, F32, .n = PLUS(N2, -1))), .layouts = IN(BNSD) | IN(BSND)},
    [C_ATTENTION_OUT_SHAPE] = ROW(RESIZE(O, F32, .d = SZ(D))), /* D instead of Dv */
    [C_ATTENTION_OUT_DTYPE] = ROW(RETYPE(O, F16)),
    [C_SOFTMAX_MAX_SHAPE] = ROW(STATS(SMAX, F32, 4)),
    [C_SOFTMAX_MAX_DTYPE] = ROW(STATS(SMAX, F16, 8)),
    [C_SOFTMAX_SUM_SHAPE] = ROW(STATS(SSUM, F32, 4)),
    [C_SOFTMAX_SUM_DTYPE] = ROW(STATS(SSUM, F16, 8)),
    [C_DQ_SHAPE] = ROW(RESIZE(DQ, F32, .d = SZ(Dv))),
    [C_DQ_DTYPE] = ROW(RETYPE(DQ, F16)),
    [C_DK_SHAPE] = ROW(RESIZE(DK, F32, .s = PLUS(S2, 1))),
    [C_DK_DTYPE] = ROW(RETYPE(DK, BF16)),
    [C_DV_SHAPE] = ROW(RESIZE(DV, F32, .d = SZ(D))),
    [C_DV_DTYPE] = ROW(RETYPE(DV, F16)),
    [C_DY_SHAPE] = ROW(RESIZE(DY, F32, .d = SZ(D))),
    [C_DY_DTYPE] = ROW(RETYPE(DY, F16)),
    [C_ATTENTION_IN_SHAPE] = ROW(RESIZE(AIN, F32, .s = PLUS(S1, 1))),
    [C_ATTENTION_IN_DTYPE] = ROW(RETYPE(AIN, BF16)),
    [C_OVERLAP_SUM_MAX] = ROW(ALIAS(SSUM, SMAX, 8 * sizeof(float))), /* one row into softmax_max */
    [C_OVERLAP_OUT_SUM] = ROW(ALIAS(O, SSUM, 0)),   /* attention_out (240 floats) in softmax_sum (320) */
    [C_OVERLAP_DQ_DK] = ROW(ALIAS(DK, DQ, 0)),      /* dk (224 floats) at the start of dq (320) */
    [C_OVERLAP_DK_DV] = ROW(ALIAS(DV, DK, 4 * sizeof(float))), /* dv (168 floats) four floats into dk (224) */
    [C_KEEP_PROB_ZERO] = ROW(PARAM(keep_prob, 0.0)),
    [C_KEEP_PROB_F32_ZERO] = ROW(PARAM(keep_prob, 7.7e-307)), /* 0 as an f32 (fuzz_fa_args) */
    [C_KEEP_PROB_1_5] = ROW(PARAM(keep_prob, 1.5)),
    [C_KEEP_PROB_NAN] = ROW(PARAM(keep_prob, NAN)),
    [C_SOFTCAP_NEGATIVE] = ROW(PARAM(softcap, -1.0)),
    [C_SOFTCAP_NAN] = ROW(PARAM(softcap, NAN)),
    [C_SOFTCAP_INF] = ROW(PARAM(softcap, INFINITY)),
    [C_SOFTCAP_F32_ZERO] = ROW(PARAM(softcap, 1e-300)),    /* 0 as an f32 */
    [C_SOFTCAP_SCALE_RATIO] = ROW(PARAM(softcap, 1e-40)), /* scale_value / 1e-40 overflows an f32 */
    [C_SPARSE_MODE_9] = ROW(PARAM(sparse_mode, 9)),
    [C_SPARSE_MODE_NEGATIVE] = ROW(PARAM(sparse_mode, -1)),
    [C_SPARSE_MODE_7_NOT_TND] = ROW(PARAM(sparse_mode, 7)),
    [C_PSE_TYPE_4] = ROW(PARAM(pse_type, 4)),
    [C_PSE_TYPE_2_WITHOUT_PSE] = ROW(PARAM(pse_type, 2)),
    [C_INNER_PRECISE_3] = ROW(PARAM(inner_precise, 3)),
    [C_OUT_DTYPE_2] = ROW(PARAM(out_dtype, 2)),
    [C_IMPL_4] = ROW(PARAM(impl, 4)),
    [C_NEGATIVE_STRIDE_INPUT] = ROW(STRIDE(K, 0, -1)),
    [C_NEGATIVE_STRIDE_OUTPUT] = {.edits = EDITS(STRIDE(O, -1, -1)), .bwd = EDITS(STRIDE(DK, -1, -1)),
                                  .bwd_name = "dk"},
    /* dimension 0 has extent B = 2: its elements would alias */
    [C_ZERO_STRIDE_OUTPUT] = {.edits = EDITS(STRIDE(O, 0, 0)), .bwd = EDITS(STRIDE(DK, 0, 0)), .bwd_name = "dk"},
    /* rows 1 element apart over rows of D elements (found by fuzz_fa_args) */
    [C_OVERLAPPING_STRIDE_OUTPUT] = {.edits = EDITS(STRIDE(O, -2, 1)), .bwd = EDITS(STRIDE(DK, -2, 1)),
                                     .bwd_name = "dk"},
    [C_SCALE_NAN] = ROW(PARAM(scale_value, NAN)),
    /* finite as a double, infinite as the f32 CANN's attribute is (found by fuzz_fa_args) */
    [C_SCALE_F32_INF] = ROW(PARAM(scale_value, -1.14e98)),
    [C_PADDING_MASK] = ROW(POINT(attnops_fa_params, padding_mask, Q)),
    [C_SOFTMAX_IN] = ROW(POINT(attnops_fa_bwd_args, softmax_in, SMAX)),
    /* atten_mask (spec 3.1, 3.2): bool/u8; modes 0/1/5 a full mask [S1,S2],
     * [1,1,S1,S2], [B,1,S1,S2] or [B,N1,S1,S2]; modes 2/3/4 2048x2048; mode 6
     * 3072x2048.  Every other argument stays valid (mode 5 gets its prefix). */
    [C_MASK_DTYPE_F32] = ROW(ATTEN_MASK(F32, SZ(S1), SZ(S2))),
    [C_MASK_RANK_3] = ROW(ATTEN_MASK(BOOL, NUM(1), SZ(S1), SZ(S2))),
    [C_MASK_MODE0_S1] = ROW(PARAM(sparse_mode, 0), ATTEN_MASK(BOOL, PLUS(S1, 1), SZ(S2))),
    [C_MASK_MODE0_S2] = ROW(PARAM(sparse_mode, 0), ATTEN_MASK(BOOL, SZ(S1), PLUS(S2, -1))),
    [C_MASK_MODE1_S1] = ROW(PARAM(sparse_mode, 1), ATTEN_MASK(U8, SZ(B), NUM(1), PLUS(S1, 1), SZ(S2))),
    [C_MASK_MODE1_S2] = ROW(PARAM(sparse_mode, 1), ATTEN_MASK(U8, SZ(B), NUM(1), SZ(S1), PLUS(S2, -1))),
    [C_MASK_MODE5_S1] = ROW(PARAM(sparse_mode, 5), ATTEN_MASK(U8, SZ(B), SZ(N1), PLUS(S1, 1), SZ(S2)),
                            VALID_PREFIX(I64)),
    [C_MASK_MODE5_S2] = ROW(PARAM(sparse_mode, 5), ATTEN_MASK(U8, SZ(B), SZ(N1), SZ(S1), PLUS(S2, -1)),
                            VALID_PREFIX(I64)),
    /* B = 2: a [1, N1] lead is neither BNSS nor B1SS nor SS */
    [C_MASK_MODE1_1NSS] = ROW(ATTEN_MASK(BOOL, NUM(1), SZ(N1), SZ(S1), SZ(S2)), PARAM(sparse_mode, 1)),
    /* mode 5's prefix is per batch, so is its mask */
    [C_MASK_MODE5_SS] = ROW(ATTEN_MASK(BOOL, SZ(S1), SZ(S2)), VALID_PREFIX(I64), PARAM(sparse_mode, 5)),
    [C_MASK_MODE5_11SS] = ROW(ATTEN_MASK(U8, NUM(1), NUM(1), SZ(S1), SZ(S2)), VALID_PREFIX(I64), PARAM(sparse_mode, 5)),
    [C_MASK_MODE2_1024] = ROW(ATTEN_MASK(BOOL, NUM(1024), NUM(2048)), PARAM(sparse_mode, 2)),
    [C_MASK_MODE3_1024] = ROW(ATTEN_MASK(BOOL, NUM(1024), NUM(2048)), PARAM(sparse_mode, 3)),
    [C_MASK_MODE4_1024] = ROW(ATTEN_MASK(BOOL, NUM(1024), NUM(2048)), PARAM(sparse_mode, 4)),
    [C_MASK_MODE6_2048] = ROW(ATTEN_MASK(BOOL, NUM(2048), NUM(2048)), VALID_PREFIX(I64), PARAM(sparse_mode, 6)),
    /* token checks (spec 3.2), made only when a mask is given: modes 0 and 4
     * (after pre' = pre + S1 - S2, next' = next - S1 + S2) fail when
     * -pre' > S2, -next' > S1 or pre' + next' < 0.  The same tokens without
     * a mask succeed (SUCCESS_VARIANTS). */
    [C_TOKENS_PRE_BEYOND_S2] = ROW(ATTEN_MASK(BOOL, SZ(S1), SZ(S2)), PARAM_SZ(pre_tokens, NEG(S2, 1)),
                                   PARAM_SZ(next_tokens, PLUS(S2, 1))),
    [C_TOKENS_NEXT_BEYOND_S1] = ROW(ATTEN_MASK(BOOL, SZ(S1), SZ(S2)), PARAM_SZ(pre_tokens, PLUS(S1, 1)),
                                    PARAM_SZ(next_tokens, NEG(S1, 1))),
    [C_TOKENS_NO_BAND] = ROW(ATTEN_MASK(BOOL, SZ(S1), SZ(S2)), PARAM(pre_tokens, 2), PARAM(next_tokens, -3)),
    /* pre = -6, next = 6 pass the mode-0 rule (6 <= S2 = 7, sum 0), but mode 4
     * corrects them to pre' = -8, next' = 8 and -pre' = 8 > S2 */
    [C_TOKENS_MODE4_CORRECTED] = ROW(ATTEN_MASK(U8, NUM(2048), NUM(2048)), PARAM(sparse_mode, 4),
                                     PARAM_SZ(pre_tokens, NEG(S2, -1)), PARAM_SZ(next_tokens, PLUS(S2, -1))),
    /* prefix (mode 6): required with a mask, i64/i32 [B], each value in
     * [max(0, S2 - S1), S2] = [2, 7] here; B = 2.  Mode 5 takes a missing or
     * out-of-range prefix as the device does, falling back to the full mask
     * (SUCCESS_VARIANTS' MODE5_PREFIX_FALLBACK_*); an f32 list is refused for
     * every mode. */
    [C_PREFIX_MISSING_MODE6] = ROW(ATTEN_MASK(BOOL, NUM(3072), NUM(2048)), PARAM(sparse_mode, 6)),
    [C_PREFIX_LENGTH] = ROW(ATTEN_MASK(U8, NUM(3072), NUM(2048)), PARAM(sparse_mode, 6),
                            LIST(PREFIX, I64, SZ(PREFIX_MIN), SZ(S2), SZ(S2))),
    [C_PREFIX_DTYPE_F32] = ROW(ATTEN_MASK(U8, SZ(B), NUM(1), SZ(S1), SZ(S2)), PARAM(sparse_mode, 5),
                               LIST(PREFIX, F32, SZ(PREFIX_MIN), SZ(S2))),
    [C_PREFIX_BELOW_RANGE] = ROW(ATTEN_MASK(U8, NUM(3072), NUM(2048)), PARAM(sparse_mode, 6),
                                 LIST(PREFIX, I64, SZ(PREFIX_MIN), PLUS(PREFIX_MIN, -1))),
    [C_PREFIX_ABOVE_RANGE] = ROW(ATTEN_MASK(U8, NUM(3072), NUM(2048)), PARAM(sparse_mode, 6),
                                 LIST(PREFIX, I64, SZ(PREFIX_MIN), PLUS(S2, 1))),
    /* pse (spec 4.1): types 0/1 take query's dtype and [B,N1,S1,S2],
     * [1,N1,S1,S2], [B,N1,1,S2] (or the compressed ALiBi form, below);
     * types 2/3 f32 slopes [N1] or [B,N1] and i64 start indices of 0 or 1
     * element */
    [C_PSE_DTYPE_TYPE0] = ROW(TENSOR(PSE, F16, SZ(B), SZ(N1), SZ(S1), SZ(S2)), PARAM(pse_type, 0)),
    [C_PSE_DTYPE_TYPE1] = ROW(TENSOR(PSE, F16, SZ(B), SZ(N1), SZ(S1), SZ(S2)), PARAM(pse_type, 1)),
    [C_PSE_SHAPE_RANK3] = ROW(TENSOR(PSE, F32, SZ(N1), SZ(S1), SZ(S2)), PARAM(pse_type, 1)),
    [C_PSE_SHAPE_B1SS] = ROW(TENSOR(PSE, F32, SZ(B), NUM(1), SZ(S1), SZ(S2)), PARAM(pse_type, 0)),
    [C_PSE_SHAPE_1N1S] = ROW(TENSOR(PSE, F32, NUM(1), SZ(N1), NUM(1), SZ(S2)), PARAM(pse_type, 1)),
    [C_PSE_SHAPE_S2] = ROW(TENSOR(PSE, F32, SZ(B), SZ(N1), SZ(S1), PLUS(S2, 1)), PARAM(pse_type, 1)),
    /* the ALiBi form needs S1 > 1024 */
    [C_PSE_SHAPE_1024_ROWS] = ROW(TENSOR(PSE, F32, SZ(B), SZ(N1), NUM(1024), SZ(S2)), PARAM(pse_type, 1)),
    [C_PSE_SLOPES_F16] = ROW(TENSOR(PSE, F16, SZ(N1)), PARAM(pse_type, 2)),
    [C_PSE_SLOPES_LENGTH] = ROW(TENSOR(PSE, F32, PLUS(N1, 1)), PARAM(pse_type, 3)),
    [C_Q_START_IDX_LENGTH] = ROW(SLOPES(false), PARAM(pse_type, 2), LIST(QSTART, I64, NUM(3), NUM(1)),
                                 LIST(KVSTART, I64, NUM(1))),
    [C_Q_START_IDX_F32] = ROW(SLOPES(false), PARAM(pse_type, 2), LIST(QSTART, F32, NUM(3)),
                              LIST(KVSTART, I64, NUM(1))),
    [C_KV_START_IDX_LENGTH] = ROW(SLOPES(false), PARAM(pse_type, 2), LIST(QSTART, I64, NUM(3)),
                                  LIST(KVSTART, I64, NUM(3), NUM(1))),
    [C_PSE_ALIBI_NO_MASK] = {.code = long_square_problem, .layouts = IN(BNSD),
                             .edits = EDITS(TENSOR(PSE, F32, NUM(1), NUM(1), NUM(1024), SZ(S2)), PARAM(pse_type, 1))},
    /* drop_mask (spec 5.6): packed bits over [B, N1, S1, S2], only with keep_prob < 1 */
    [C_DROP_MASK_KEEP_ONE] = ROW(TENSOR(DROP, U8, SZ(DROP_BYTES)), PARAM(keep_prob, 1.0)),
    [C_DROP_MASK_TOO_SMALL] = ROW(TENSOR(DROP, U8, PLUS(DROP_BYTES, -1)), PARAM(keep_prob, 0.9)),
    [C_DROP_MASK_DTYPE] = ROW(TENSOR(DROP, I32, SZ(DROP_BYTES)), PARAM(keep_prob, 0.9)),
    /* FP8 (spec 6): FP8 makes a complete valid FP8 call; each case breaks one
     * rule.  Requests this version refuses expect 161003. */
    [C_FP8_NO_D_SCALE_Q] = ROW(FP8(F8_E4M3FN, F16), UNBIND(DSQ)),
    /* attention sinks: f32 [N1], no FP8; dsink f32 [N1], only with a sink */
    [C_SINK_DTYPE] = ROW(TENSOR(SINK, F16, SZ(N1))),
    [C_SINK_SHAPE] = ROW(TENSOR(SINK, F32, PLUS(N1, 1))),
    [C_SINK_FP8] = ROW(FP8(F8_E4M3FN, F16), TENSOR(SINK, F32, SZ(N1))),
    [C_DSINK_WITHOUT_SINK] = ROW(TENSOR(DSINK, F32, SZ(N1))),
    [C_DSINK_SHAPE] = ROW(TENSOR(SINK, F32, SZ(N1)), TENSOR(DSINK, F32, SZ(N1), NUM(1))),
    /* S2 = 7 has one 128-row block */
    [C_FP8_D_SCALE_K_SHAPE] = ROW(FP8(F8_E4M3FN, F16), TENSOR(DSK, F32, SZ(B), SZ(N2), NUM(2), NUM(1))),
    [C_FP8_D_SCALE_V_DTYPE] = ROW(FP8(F8_E5M2, BF16), TENSOR(DSV, F16, SZ(B), SZ(N2), NUM(1), NUM(1))),
    [C_FP8_NO_D_SCALE_DY] = ROW(FP8(F8_E4M3FN, BF16), UNBIND(DSDY)),
    [C_FP8_NO_D_SCALE_O] = ROW(FP8(F8_E4M3FN, F16), UNBIND(DSO)),
    /* f16 outputs, out_dtype says bf16 */
    [C_FP8_OUT_DTYPE_MISMATCH] = {.edits = EDITS(FP8(F8_E4M3FN, F16), PARAM(out_dtype, 1)),
                                  .bwd_name = "attention_in"},
    [C_FP8_KEY_E5M2] = ROW(FP8(F8_E4M3FN, F16), RETYPE(K, F8_E5M2)),
    [C_FP8_IMPL_CPU_FORWARD] = ROW(FP8(F8_E4M3FN, F16), PARAM(impl, ATTNOPS_IMPL_CPU)),
    /* the triple rule's benchmark chain has no FP8 form */
    [C_FP8_IMPL_BENCHMARK] = ROW(FP8(F8_E4M3FN, F16), PARAM(impl, ATTNOPS_IMPL_BENCHMARK)),
    [C_FP8_ROPE] = ROW(FP8(F8_E4M3FN, F16), ROPE(NUM(4))),
    [C_FP8_SOFTCAP] = ROW(FP8(F8_E4M3FN, F16), PARAM(softcap, 30.0)),
    [C_D_SCALE_WITHOUT_FP8] = ROW(TENSOR(DSQ, F32, SZ(B), SZ(N1), NUM(1), NUM(1))),
    /* MLA rope (spec 1.3): ROPE adds query_rope/key_rope of head dim 4 (and,
     * in the backward, dq_rope/dk_rope); each case breaks one rule. */
    [C_ROPE_QUERY_ONLY] = ROW(ROPE(NUM(4)), UNBIND(KROPE)),
    [C_ROPE_KEY_ONLY] = ROW(ROPE(NUM(4)), UNBIND(QROPE)),
    [C_ROPE_DTYPE] = ROW(ROPE(NUM(4)), RESIZE(QROPE, F16, .d = NUM(4))),
    [C_ROPE_WIDER_THAN_D] = ROW(ROPE(PLUS(D, 2))),
    [C_ROPE_KEY_SHAPE] = ROW(ROPE(NUM(4)), RESIZE(KROPE, F32, .s = PLUS(S2, 1), .d = NUM(4))),
    [C_ROPE_NO_DQ_ROPE] = ROW(ROPE(NUM(4)), UNBIND(DQROPE)),
    [C_ROPE_DK_ROPE_SHAPE] = ROW(ROPE(NUM(4)), RESIZE(DKROPE, F32, .d = NUM(5))),
    /* dq_rope (80 floats) at the start of dq (320 floats) */
    [C_ROPE_DQ_ROPE_OVERLAPS_DQ] = ROW(ROPE(NUM(4)), ALIAS(DQROPE, DQ, 0)),
    [C_ROPE_GRADS_WITHOUT_INPUTS] = ROW(ROPE(NUM(4)), UNBIND(QROPE), UNBIND(KROPE)),
    /* actual_seq_qlen / actual_seq_kvlen describe TND batches only (spec 3.4) */
    [C_ACTUAL_SEQ_QLEN_NOT_TND] = {.code = seq_qlen_in_padded_layout, .edits = NO_EDIT},
    /* the varlen entry points take TND only (spec 8.1, 8.2 step 1): a BSND
     * call the general entry points accept */
    [C_VARLEN_LAYOUT_BSND] = {.edits = EDITS(VARLEN_ENTRY), .layouts = IN(BSND)},
    /* ---- layout TND, from TND_BASE: q lengths [3, 0, 4], kv [5, 2, 6];
     * T1 = 7, T2 = 13, max S1 = 4, max S2 = 6, B = 3 ---- */
    /* the lists (spec 3.4): both required, i64/i32, equally long, cumulative
     * (non-decreasing), ending at T1 / T2 */
    [C_TND_NULL_SEQ_QLEN] = ROW(UNBIND(SEQQ)),
    [C_TND_NULL_SEQ_KVLEN] = ROW(UNBIND(SEQKV)),
    /* one more (empty) kv batch than q batches */
    [C_TND_SEQ_COUNTS_DIFFER] = ROW(LIST(SEQKV, I64, NUM(5), NUM(7), SZ(T2), SZ(T2))),
    [C_TND_SEQ_DECREASING] = ROW(LIST(SEQQ, I64, NUM(3), NUM(2), SZ(T1))), /* lengths 3, -1, 5 */
    [C_TND_SEQ_QLEN_END] = ROW(LIST(SEQQ, I64, NUM(3), NUM(3), PLUS(T1, -1))),
    [C_TND_SEQ_KVLEN_END] = ROW(LIST(SEQKV, I64, NUM(5), NUM(7), PLUS(T2, 1))),
    [C_TND_SEQ_DTYPE_F32] = ROW(LIST(SEQQ, F32, NUM(3), NUM(3), SZ(T1))), /* the right values as f32 */
    /* softmax_max / softmax_sum in TND (spec 1.1): declared [T1, N1, 8] and
     * contiguous (they hold per-batch [N1, S_b, 8] blocks), or any [T1, N1, 8]
     * array with softmax_in_layout SAME_AS_INPUT */
    /* the padded layouts' [B, N1, max S1, 8] */
    [C_TND_STATS_BNS8] = ROW(TENSOR(SMAX, F32, SZ(B), SZ(N1), SZ(S1), NUM(8))),
    /* [T1, N1, 8] with padded rows: strides [36, 9, 1] */
    [C_TND_STATS_STRIDED] = ROW(PADDED(SSUM, F32, 1, SZ(T1), SZ(N1), NUM(8))),
    /* the graph op's [N1, T1, 8] where aclnn's [T1, N1, 8] is declared */
    [C_TND_STATS_SAME_AS_INPUT_NT8] = ROW(PARAM(softmax_in_layout, ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT),
                                          TENSOR(SMAX, F32, SZ(N1), SZ(T1), NUM(8))),
    /* q-like / k-like outputs have T1 / T2 rows */
    [C_TND_ATTENTION_OUT_T] = ROW(RESIZE(O, F32, .s = PLUS(T1, 1))),
    [C_TND_DQ_T] = ROW(RESIZE(DQ, F32, .s = PLUS(T1, -1))),
    [C_TND_DK_T] = ROW(RESIZE(DK, F32, .s = SZ(T1))), /* T1 rows instead of T2 */
    /* masks in TND (spec 3.2, 3.3, 8.1): modes 0/1 one [max S1, max S2]
     * mask, the compressed one otherwise, no mode 5; tokens per batch */
    /* a complete mode-5 request: per-batch mask, prefix in [max(0, S2 - S1), S2] */
    [C_TND_MODE5] = ROW(ATTEN_MASK(U8, SZ(B), NUM(1), SZ(S1), SZ(S2)), LIST(PREFIX, I64, NUM(5), NUM(2), NUM(6)),
                        PARAM(sparse_mode, 5)),
    [C_TND_MASK_MODE1_B1SS] = ROW(ATTEN_MASK(U8, SZ(B), NUM(1), SZ(S1), SZ(S2)), PARAM(sparse_mode, 1)),
    /* the sentence names the shape it wants (max S1 4, max S2 6), not the one given */
    [C_TND_MASK_MODE0_4X4] = ROW(ATTEN_MASK(U8, NUM(4), NUM(4))),
    /* pre + next = 0: a band for the padded rule (pre' + next' < 0 fails),
     * none for TND's per-batch rule (pre + next <= 0 fails) */
    [C_TND_TOKENS_MODE0] = ROW(ATTEN_MASK(BOOL, SZ(S1), SZ(S2)), PARAM(pre_tokens, 2), PARAM(next_tokens, -2)),
    /* mode 7 checks the band batch only, the last with S1 != 0: batch 2
     * (S1 = 4, S2 = 6), where -next = 7 > S2 */
    [C_TND_TOKENS_MODE7_BAND] = ROW(ATTEN_MASK(BOOL, NUM(2048), NUM(2048)), PARAM(sparse_mode, 7), PARAM(pre_tokens, 6),
                                    PARAM(next_tokens, -7)),
    /* pse in TND (spec 3.4, 4.1, 8.3): a tensor (pse_type 0/1) only in the
     * compressed ALiBi form under a causal mask, the 1-D forms are not
     * implemented; slopes (2/3) need no empty batch, no mode 7, and with
     * mode 8 S1 = S2 in every batch and q_start_idx = kv_start_idx */
    /* the documented TND form 1NHS [1, N1, 1024, max S2], but no mask */
    [C_TND_PSE_TYPE1] = ROW(TENSOR(PSE, F32, NUM(1), SZ(N1), NUM(1024), SZ(S2)), PARAM(pse_type, 1)),
    [C_TND_PSE_1D] = ROW(TENSOR(PSE, F32, SZ(T2N1)), PARAM(pse_type, 1)), /* the undocumented 1-D TND form */
    [C_TND_PSE2_EMPTY_BATCH] = ROW(SLOPES(false), PARAM(pse_type, 2)), /* TND_BASE's batch 1 has no query rows */
    /* valid band tokens: mode 7's band batch 2 (S1 4, S2 6), mode 8's batch 0
     * (S1 = S2 = 3); MODE8_S1_NE_S2: only the last batch differs, so every
     * batch is checked */
    [C_TND_PSE2_MODE7] = ROW(RESEQ(3, {3, 2, 4}, {5, 2, 6}), ATTEN_MASK(BOOL, NUM(2048), NUM(2048)), SLOPES(false),
                             PARAM(pse_type, 2), PARAM(sparse_mode, 7), PARAM(pre_tokens, 6), PARAM(next_tokens, 0)),
    [C_TND_PSE2_MODE8_S1_NE_S2] = ROW(RESEQ(3, {3, 2, 4}, {3, 2, 6}), ATTEN_MASK(BOOL, NUM(2048), NUM(2048)),
                                      SLOPES(false), PARAM(pse_type, 2), PARAM(sparse_mode, 8),
                                      PARAM(pre_tokens, 3), PARAM(next_tokens, 0)),
    [C_TND_PSE2_MODE8_START_IDX] = ROW(RESEQ(3, {3, 2, 4}, {3, 2, 4}), ATTEN_MASK(BOOL, NUM(2048), NUM(2048)),
                                       SLOPES(false), PARAM(pse_type, 2), PARAM(sparse_mode, 8),
                                       PARAM(pre_tokens, 3), PARAM(next_tokens, 0), LIST(QSTART, I64, NUM(1)),
                                       LIST(KVSTART, I64, NUM(0))),
    [C_TND_FP8] = ROW(FP8(F8_E4M3FN, F16)),
};

/* Breaks case c's rule in a freshly built fixture of an operator the case
 * applies to; *e holds the case's row, which a case that names another
 * argument in this layout or operator corrects.  Returns false when the case
 * does not exist for this layout. */
static bool apply_case(fixture *fx, int c, vc_expect *e)
{
    const case_break *r = &BREAK[c];
    TU_CHECK(r->edits, "case %s has no row in BREAK", CASE[c].name);
    if (!r->edits || (r->layouts && !(r->layouts & 1u << fx->layout))) return false;
    const bool bwd = fx->op == BWD;
    if (bwd && r->bwd_name) e->name = r->bwd_name;
    if (hidden_layout(fx->layout) && r->hid_name) e->name = r->hid_name;
    if (r->code) r->code(fx, e);
    apply_edits(fx, bwd && r->bwd ? r->bwd : r->edits);
    return true;
}

static const attnops_layout LAYOUTS[] = {ATTNOPS_LAYOUT_BNSD, ATTNOPS_LAYOUT_BSND, ATTNOPS_LAYOUT_BSH,
                                         ATTNOPS_LAYOUT_SBH};

/* The failure cases CANN's aclnn parameter lists cannot express, each with
 * words of the reason the bridge gives (--through-acl). */
static const struct {
    int c;
    const char *why;
} NOT_IN_ACLNN[] = {
    {C_NULL_ARGS, "argument struct"},
    {C_LAYOUT_UNSET, "input_layout"},
    {C_LAYOUT_TOO_BIG, "input_layout"},
    {C_LAYOUT_NEGATIVE, "input_layout"},
    {C_OUT_DTYPE_2, "out_dtype"},
    {C_IMPL_4, "impl"},
    {C_NEGATIVE_STRIDE_INPUT, "negative stride"},
    {C_NEGATIVE_STRIDE_OUTPUT, "negative stride"},
    {C_SOFTMAX_IN, "softmaxInOptional"},
    {C_PREFIX_DTYPE_F32, "int list"},
    {C_SINK_DTYPE, "attention sinks"},
    {C_SINK_SHAPE, "attention sinks"},
    {C_SINK_FP8, "FP8 de-scales"},
    {C_DSINK_WITHOUT_SINK, "attention sinks"},
    {C_DSINK_SHAPE, "attention sinks"},
    {C_Q_START_IDX_F32, "int list"},
    {C_TND_SEQ_DTYPE_F32, "int list"},
    {C_ACTUAL_SEQ_QLEN_NOT_TND, "actual_seq_qlen"},
    {C_TND_STATS_SAME_AS_INPUT_NT8, "softmax_in_layout"},
    /* FP8: the aclnn entry points have no d_scale or out_dtype arguments */
    {C_FP8_NO_D_SCALE_Q, "FP8 de-scales"},
    {C_FP8_D_SCALE_K_SHAPE, "FP8 de-scales"},
    {C_FP8_D_SCALE_V_DTYPE, "out_dtype"},
    {C_FP8_NO_D_SCALE_DY, "out_dtype"},
    {C_FP8_NO_D_SCALE_O, "FP8 de-scales"},
    {C_FP8_OUT_DTYPE_MISMATCH, "out_dtype"},
    {C_FP8_KEY_E5M2, "FP8 de-scales"},
    {C_FP8_IMPL_CPU_FORWARD, "impl"},
    {C_FP8_IMPL_BENCHMARK, "impl"},
    {C_FP8_ROPE, "rope"},
    {C_FP8_SOFTCAP, "FP8 de-scales"},
    {C_SOFTCAP_NEGATIVE, "softcap"},
    {C_SOFTCAP_NAN, "softcap"},
    {C_SOFTCAP_INF, "softcap"},
    {C_SOFTCAP_F32_ZERO, "softcap"},
    {C_SOFTCAP_SCALE_RATIO, "softcap"},
    {C_D_SCALE_WITHOUT_FP8, "FP8 de-scales"},
    {C_TND_FP8, "FP8 de-scales"},
    /* MLA: no query_rope / key_rope (or their gradients) either */
    {C_ROPE_QUERY_ONLY, "rope"},
    {C_ROPE_KEY_ONLY, "rope"},
    {C_ROPE_DTYPE, "rope"},
    {C_ROPE_WIDER_THAN_D, "rope"},
    {C_ROPE_KEY_SHAPE, "rope"},
    {C_ROPE_NO_DQ_ROPE, "rope"},
    {C_ROPE_DK_ROPE_SHAPE, "rope"},
    {C_ROPE_DQ_ROPE_OVERLAPS_DQ, "rope"},
    {C_ROPE_GRADS_WITHOUT_INPUTS, "rope"},
};

/* NULL, or the reason words when case c is listed in NOT_IN_ACLNN. */
static const char *listed_not_in_aclnn(int c)
{
    for (size_t i = 0; i < sizeof NOT_IN_ACLNN / sizeof *NOT_IN_ACLNN; i++)
        if (NOT_IN_ACLNN[i].c == c) return NOT_IN_ACLNN[i].why;
    return NULL;
}

/* Through aclnn: true when the case is to be made; a case expressible
 * against the list, or inexpressible for another reason, fails. */
static bool expressible_in_aclnn(fixture *fx, int c, vc_expect *e, int *inexpressible)
{
    const char *listed = listed_not_in_aclnn(c);
    const char *gap = acl_translate(fx->op, fx->varlen, args_of(fx, fx->mode == CALL_NULL_ARGS));
    if (gap) {
        (*inexpressible)++;
        TU_CHECK(listed && strstr(gap, listed), "%s: not expressible through aclnn (\"%s\"), but %s", vc_label_text(),
                 gap, listed ? "NOT_IN_ACLNN gives another reason" : "not in NOT_IN_ACLNN");
        return false;
    }
    TU_CHECK(!listed, "%s: listed in NOT_IN_ACLNN (%s) but expressible through aclnn", vc_label_text(), listed);
    if (c == C_NULL_WORKSPACE_BYTES) e->name = "workspaceSize"; /* aclnn's name of the pointer */
    return true;
}

/* The failure cases as a vc_suite.  Scopes: the operator times the padded
 * LAYOUTS (through the general entry points), then TND through the general
 * and through the varlen ones; the padded cases run in the padded scopes,
 * the TND cases in the two TND ones (through aclnn the varlen one only: the
 * others take no sequence lists). */
#define N_LAYOUTS ((int)(sizeof LAYOUTS / sizeof LAYOUTS[0]))
enum { SCOPES_PER_OP = N_LAYOUTS + 2 };
_Static_assert(N_LAYOUTS == 4, "SCOPE_NAME lists the layouts of LAYOUTS");
static const char *const SCOPE_NAME[2 * SCOPES_PER_OP] = {
    "fwd BNSD", "fwd BSND", "fwd BSH", "fwd SBH", "fwd TND", "fwd TND varlen",
    "bwd BNSD", "bwd BSND", "bwd BSH", "bwd SBH", "bwd TND", "bwd TND varlen"};
static op_kind scope_op(int scope) { return scope < SCOPES_PER_OP ? FWD : BWD; }
static int scope_layout(int scope) { return scope % SCOPES_PER_OP; } /* >= N_LAYOUTS: TND */

static bool case_applies(const vc_case *c, int scope)
{
    const int li = scope_layout(scope);
    const bool tnd = li >= N_LAYOUTS, tnd_case = c - CASE >= TND_FIRST_CASE;
    if (through_acl && li == N_LAYOUTS) return false;
    return tnd == tnd_case && c->scope != (scope_op(scope) == FWD ? BWD_ONLY : FWD_ONLY);
}

static fixture case_fixture;
static int inexpressible; /* through aclnn: cases the aclnn API cannot state (NOT_IN_ACLNN) */

static void suite_init(void *fx, int scope, uint64_t seed)
{
    const int li = scope_layout(scope);
    fx_init(fx, scope_op(scope), li >= N_LAYOUTS ? ATTNOPS_LAYOUT_TND : LAYOUTS[li], BASE, seed);
    ((fixture *)fx)->varlen = li == N_LAYOUTS + 1;
}

static bool suite_apply(void *vfx, int c, vc_expect *e)
{
    fixture *fx = vfx;
    fx->mode = CASE[c].kind;
    if (!apply_case(fx, c, e)) return false; /* the case does not exist in this layout */
    if (fx->varlen && fx->layout != ATTNOPS_LAYOUT_TND) /* a padded case that calls the varlen entry */
        vc_label("%s %s varlen %s", fx->op == FWD ? "fwd" : "bwd", attnops_layout_name(fx->layout), CASE[c].name);
    return !through_acl || expressible_in_aclnn(fx, c, e, &inexpressible);
}

static void suite_call(void *fx, const vc_expect *e) { call_case(fx, e); }
static int suite_verify(void *fx, const vc_expect *e) { return verify_failure(fx, e); }
static void suite_free(void *fx) { fx_free(fx); }

static int run_failure_cases(void)
{
    const vc_suite suite = {CASE, N_CASES, 2 * SCOPES_PER_OP, SCOPE_NAME, case_applies, &case_fixture, suite_init,
                            suite_apply, suite_call, suite_verify, suite_free,
                            through_acl ? "failure cases through aclnn" : "failure cases"};
    inexpressible = 0;
    const int passed = vc_run_failure_cases(&suite);
    if (through_acl) printf("not expressible through aclnn (NOT_IN_ACLNN): %d\n", inexpressible);
    return passed;
}

/* ---- the checker must be able to fail ---- */

static int run_checker_self_test(void)
{
    /* a NULL query: 161001 naming it */
    fixture fx;
    fx_init(&fx, FWD, ATTNOPS_LAYOUT_BNSD, BASE, 11);
    fx.fa.p.query = NULL;
    int passed = vc_self_test(&(vc_subject){
        .ctx = &fx, .call = suite_call, .verify = suite_verify, .right = {ATTNOPS_ERR_NULLPTR, "query", NULL},
        .wrong_st = ATTNOPS_ERR_PARAM_INVALID, .wrong_name = "softmax_sum", .wrong_also = "3072",
        .tamper = {{vc_storage(&fx.t[SMAX]) + 17, 0xFF, "a written output byte (softmax_max)", NULL},
                   {vc_storage(&fx.t[K]) + 3, 0x01, "a changed input byte (key)", NULL},
                   {vc_canary_byte(&fx.t[O], 5), 0xFF, "a broken canary",
                    "the canary complaint about 'attention_out' that follows is intended"}}});
    /* the success check's detector of unwritten output elements: all
     * poisoned, then one element written */
    int64_t all_left = unwritten(&fx.t[SMAX]), numel = tu_numel(&fx.t[SMAX].view);
    vc_storage(&fx.t[SMAX])[0] ^= 0xFF;
    int64_t one_written = unwritten(&fx.t[SMAX]);
    vc_storage(&fx.t[SMAX])[0] ^= 0xFF;
    fx_free(&fx);

    vc_invert(true);
    /* a valid call that is (wrongly) expected to fail: wrong status and outputs written */
    fx_init(&fx, FWD, ATTNOPS_LAYOUT_BSH, BASE, 12);
    const vc_expect wrongly_invalid = {ATTNOPS_ERR_PARAM_INVALID, "head_num", NULL};
    vc_label("self-test valid call");
    call_case(&fx, &wrongly_invalid);
    int found_valid = verify_failure(&fx, &wrongly_invalid);
    fx_free(&fx);

    /* a sentence of another operator: the varlen forward refuses BSND
     * ("FlashAttentionVarLenScore: ..."), checked as a general call */
    fx_init(&fx, FWD, ATTNOPS_LAYOUT_BSND, BASE, 14);
    fx.varlen = true;
    const vc_expect layout_refused = {ATTNOPS_ERR_PARAM_INVALID, "TND", NULL};
    call_case(&fx, &layout_refused);
    fx.varlen = false;
    vc_label("self-test other operator");
    int found_op = verify_failure(&fx, &layout_refused);
    fx_free(&fx);
    vc_invert(false);

    TU_CHECK(all_left == numel && one_written == numel - 1,
             "unwritten() counts %lld and %lld of %lld poisoned elements, expected %lld and %lld", (long long)all_left,
             (long long)one_written, (long long)numel, (long long)numel, (long long)(numel - 1));
    /* natively a case makes two phases, through aclnn one (the second runs only what the first accepted) */
    const int phases = through_acl ? 1 : 2, want_valid = phases + 1;
    TU_CHECK(found_valid >= want_valid, "checker did not detect a successful call (status x%d, %s): %d", phases,
             through_acl ? "the sentence" : "writes", found_valid);
    TU_CHECK(found_op >= phases, "checker did not detect a sentence naming another operator: %d", found_op);
    passed += (all_left == numel && one_written == numel - 1) + (found_valid >= want_valid) + (found_op >= phases);
    return passed;
}

/* ---- successful calls ---- */

/* Valid requests: the base problem alone, and with each new input in an
 * accepted form.  Compressed masks are only read for their shape, and
 * without an atten_mask sparse_mode, pre/next_tokens and prefix are ignored:
 * the token values the failure cases reject must pass then. */
#define SUCCESS_VARIANTS(X)                                                                                        \
    X(PLAIN) X(MASK_MODE1_B1SS_U8) X(MASK_MODE2_COMPRESSED_BOOL) X(MASK_MODE6_PREFIX) X(PSE_TYPE0_BNSS)            \
    X(PSE_TYPE2_SLOPES_START_IDX) X(MASK_MODE5_BNSS_I32_PREFIX) X(MASK_MODE4_BAND) X(MASK_MODE0_SS_TOKENS)          \
    X(PSE_TYPE1_1NSS) X(PSE_TYPE1_BN1S_MODE3) X(PSE_TYPE3_BN_SLOPES_EMPTY_Q_START) X(NO_MASK_MODE0_PRE_BEYOND_S2)   \
    X(NO_MASK_MODE0_NO_BAND) X(NO_MASK_MODE4_CORRECTED) X(NO_MASK_MODE6_NO_PREFIX) X(DROPOUT_KEEP_HALF)           \
    X(DROP_MASK_BITS) X(MODE5_PREFIX_FALLBACK_MISSING) X(MODE5_PREFIX_FALLBACK_RANGE_SS) X(SINK_AND_DSINK)        \
    X(MODE5_PREFIX_FALLBACK_LENGTH)                                                                                \
    X(ROPE) X(ROPE_MASK_PSE_DROPOUT) X(FP8_E4M3_F16_OUT) X(FP8_E5M2_BF16_OUT_MASK_PSE_DROPOUT)                       \
    /* from here on layout TND only (TND_FIRST_VALID) */                                                           \
    X(TND_PLAIN) X(TND_I32_LISTS) X(TND_TRAILING_EMPTY_BATCHES) X(TND_STATS_SAME_AS_INPUT) X(TND_MODE0_SS_TOKENS)  \
    X(TND_MODE1_SS) X(TND_MODE3_COMPRESSED) X(TND_MODE7_BAND) X(TND_MODE8_BAND) X(TND_PSE2_SLOPES)                 \
    X(TND_PSE2_BN_SLOPES_MODE8_SQUARE) X(TND_NO_MASK_NO_BAND) X(TND_DROPOUT) X(TND_ROPE)                           \
    X(TND_PSE2_SLOPES_TRAILING_EMPTY) X(TND_MODE0_NEGATIVE_PRE_TRAILING_EMPTY)

#define AS_VALID_ENUM(c) V_##c,
enum { SUCCESS_VARIANTS(AS_VALID_ENUM) N_VALID };
static const char *const VALID_NAME[] = {SUCCESS_VARIANTS(AS_NAME)};
enum { TND_FIRST_VALID = V_TND_PLAIN };

/* How each variant changes the base call (a pse tensor of types 0/1 takes
 * query's dtype: f32 outside FP8). */
static const edit *const VALID[N_VALID] = {
    [V_PLAIN] = NO_EDIT,
    [V_MASK_MODE1_B1SS_U8] = EDITS(ATTEN_MASK(U8, SZ(B), NUM(1), SZ(S1), SZ(S2)), PARAM(sparse_mode, 1)),
    [V_MASK_MODE2_COMPRESSED_BOOL] = EDITS(ATTEN_MASK(BOOL, NUM(2048), NUM(2048)), PARAM(sparse_mode, 2)),
    [V_MASK_MODE6_PREFIX] = EDITS(ATTEN_MASK(BOOL, NUM(3072), NUM(2048)), VALID_PREFIX(I64), PARAM(sparse_mode, 6)),
    [V_PSE_TYPE0_BNSS] = EDITS(TENSOR(PSE, F32, SZ(B), SZ(N1), SZ(S1), SZ(S2)), PARAM(pse_type, 0)),
    [V_PSE_TYPE2_SLOPES_START_IDX] = EDITS(SLOPES(false), LIST(QSTART, I64, NUM(3)), LIST(KVSTART, I64, NUM(1)),
                                           PARAM(pse_type, 2)),
    [V_MASK_MODE5_BNSS_I32_PREFIX] = EDITS(ATTEN_MASK(BOOL, SZ(B), SZ(N1), SZ(S1), SZ(S2)), VALID_PREFIX(I32),
                                           PARAM(sparse_mode, 5)),
    [V_MASK_MODE4_BAND] = EDITS(ATTEN_MASK(U8, NUM(2048), NUM(2048)), PARAM(sparse_mode, 4), PARAM(pre_tokens, 3),
                                PARAM(next_tokens, 1)),
    /* the tokens mode 4 rejects after its correction are fine for mode 0 */
    [V_MASK_MODE0_SS_TOKENS] = EDITS(ATTEN_MASK(BOOL, SZ(S1), SZ(S2)), PARAM_SZ(pre_tokens, NEG(S2, -1)),
                                     PARAM_SZ(next_tokens, PLUS(S2, -1))),
    [V_PSE_TYPE1_1NSS] = EDITS(TENSOR(PSE, F32, NUM(1), SZ(N1), SZ(S1), SZ(S2))),
    [V_PSE_TYPE1_BN1S_MODE3] = EDITS(TENSOR(PSE, F32, SZ(B), SZ(N1), NUM(1), SZ(S2)),
                                     ATTEN_MASK(U8, NUM(2048), NUM(2048)), PARAM(sparse_mode, 3)),
    [V_PSE_TYPE3_BN_SLOPES_EMPTY_Q_START] = EDITS(SLOPES(true), EMPTY_LIST(QSTART, I64), LIST(KVSTART, I64, NUM(2)),
                                                  PARAM(pse_type, 3)),
    [V_NO_MASK_MODE0_PRE_BEYOND_S2] = EDITS(PARAM_SZ(pre_tokens, NEG(S2, 1)), PARAM_SZ(next_tokens, PLUS(S2, 1))),
    [V_NO_MASK_MODE0_NO_BAND] = EDITS(PARAM(pre_tokens, 2), PARAM(next_tokens, -3)),
    [V_NO_MASK_MODE4_CORRECTED] = EDITS(PARAM(sparse_mode, 4), PARAM_SZ(pre_tokens, NEG(S2, -1)),
                                        PARAM_SZ(next_tokens, PLUS(S2, -1))),
    [V_NO_MASK_MODE6_NO_PREFIX] = EDITS(PARAM(sparse_mode, 6)),
    [V_DROPOUT_KEEP_HALF] = EDITS(PARAM(keep_prob, 0.5), PARAM(seed, 5), PARAM(offset, 16)),
    [V_DROP_MASK_BITS] = EDITS(TENSOR(DROP, U8, SZ(DROP_BYTES)), PARAM(keep_prob, 0.8)),
    /* the device's fallback: sparse_mode 5 without a usable prefix runs over
     * the full mask given, of any form mode 1 takes (docs/NUMERICS.md) */
    [V_MODE5_PREFIX_FALLBACK_MISSING] = EDITS(ATTEN_MASK(BOOL, SZ(B), NUM(1), SZ(S1), SZ(S2)), PARAM(sparse_mode, 5)),
    [V_MODE5_PREFIX_FALLBACK_RANGE_SS] = EDITS(ATTEN_MASK(U8, SZ(S1), SZ(S2)), PARAM(sparse_mode, 5),
                                               LIST(PREFIX, I64, SZ(PREFIX_MIN), PLUS(S2, 1))),
    [V_MODE5_PREFIX_FALLBACK_LENGTH] = EDITS(ATTEN_MASK(U8, SZ(B), SZ(N1), SZ(S1), SZ(S2)), PARAM(sparse_mode, 5),
                                             LIST(PREFIX, I64, SZ(PREFIX_MIN), SZ(S2), SZ(S2))),
    [V_SINK_AND_DSINK] = EDITS(TENSOR(SINK, F32, SZ(N1)), TENSOR(DSINK, F32, SZ(N1)), PARAM(sparse_mode, 0)),
    [V_ROPE] = EDITS(ROPE(NUM(3))),
    /* rope combines with everything (the aclnn entry's limits are not ours) */
    [V_ROPE_MASK_PSE_DROPOUT] = EDITS(ROPE(SZ(D)), ATTEN_MASK(BOOL, NUM(2048), NUM(2048)), PARAM(sparse_mode, 3),
                                      SLOPES(false), PARAM(pse_type, 2), PARAM(keep_prob, 0.9)),
    [V_FP8_E4M3_F16_OUT] = EDITS(FP8(F8_E4M3FN, F16)),
    /* pse of the output dtype under FP8 */
    [V_FP8_E5M2_BF16_OUT_MASK_PSE_DROPOUT] = EDITS(FP8(F8_E5M2, BF16), ATTEN_MASK(BOOL, NUM(2048), NUM(2048)),
                                                   PARAM(sparse_mode, 2),
                                                   TENSOR(PSE, BF16, SZ(B), SZ(N1), SZ(S1), SZ(S2)),
                                                   PARAM(pse_type, 0), PARAM(keep_prob, 0.8)),
    /* TND, from TND_BASE: q lengths [3, 0, 4] -> [3, 3, 7], kv [5, 2, 6] ->
     * [5, 7, 13]; S1 = max S1 = 4, S2 = max S2 = 6 */
    [V_TND_PLAIN] = NO_EDIT,
    [V_TND_I32_LISTS] = EDITS(SEQ_LISTS(I32)),
    /* [3, 7, 7, 7] and [5, 11, 11, 11]: B = 2 */
    [V_TND_TRAILING_EMPTY_BATCHES] = EDITS(RESEQ(4, {3, 4, 0, 0}, {5, 6, 0, 0})),
    /* a true [T1, N1, 8] array: strided (padded rows) is fine */
    [V_TND_STATS_SAME_AS_INPUT] = EDITS(PARAM(softmax_in_layout, ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT),
                                        PADDED(SMAX, F32, 1, SZ(T1), SZ(N1), NUM(8)),
                                        TENSOR(SSUM, F32, SZ(T1), SZ(N1), NUM(8))),
    [V_TND_MODE0_SS_TOKENS] = EDITS(ATTEN_MASK(BOOL, SZ(S1), SZ(S2)), PARAM(pre_tokens, 2), PARAM(next_tokens, 1)),
    [V_TND_MODE1_SS] = EDITS(ATTEN_MASK(U8, SZ(S1), SZ(S2)), PARAM(sparse_mode, 1)),
    /* S1 <= S2 per batch */
    [V_TND_MODE3_COMPRESSED] = EDITS(ATTEN_MASK(BOOL, NUM(2048), NUM(2048)), PARAM(sparse_mode, 3)),
    /* band batch 2 (S1 4, S2 6): pre >= S2, S1 - S2 <= next <= 0 */
    [V_TND_MODE7_BAND] = EDITS(ATTEN_MASK(U8, NUM(2048), NUM(2048)), PARAM(sparse_mode, 7), PARAM(pre_tokens, 6),
                               PARAM(next_tokens, 0)),
    /* band batch 0 (S1 3, S2 5): pre >= S2, next >= S1 - S2 */
    [V_TND_MODE8_BAND] = EDITS(ATTEN_MASK(BOOL, NUM(2048), NUM(2048)), PARAM(sparse_mode, 8), PARAM(pre_tokens, 5),
                               PARAM(next_tokens, -2)),
    [V_TND_PSE2_SLOPES] = EDITS(RESEQ(3, {3, 2, 4}, {5, 2, 6}), SLOPES(false), PARAM(pse_type, 2)),
    /* mode 8 takes pse when every S1 = S2 and q/kv starts agree */
    [V_TND_PSE2_BN_SLOPES_MODE8_SQUARE] = EDITS(RESEQ(3, {3, 2, 4}, {3, 2, 4}), ATTEN_MASK(BOOL, NUM(2048), NUM(2048)),
                                                SLOPES(true), LIST(QSTART, I64, NUM(2)), LIST(KVSTART, I64, NUM(2)),
                                                PARAM(pse_type, 2), PARAM(sparse_mode, 8), PARAM(pre_tokens, 3),
                                                PARAM(next_tokens, 0)),
    /* ignored without a mask */
    [V_TND_NO_MASK_NO_BAND] = EDITS(PARAM(pre_tokens, 2), PARAM(next_tokens, -2)),
    [V_TND_DROPOUT] = EDITS(PARAM(keep_prob, 0.9), PARAM(seed, 2), PARAM(offset, 0)),
    [V_TND_ROPE] = EDITS(ROPE(NUM(3))),
    /* valid only because trailing empty batches are dropped (spec 3.4): pse and
     * negative tokens refuse an empty batch that remains */
    [V_TND_PSE2_SLOPES_TRAILING_EMPTY] = EDITS(RESEQ(4, {3, 2, 4, 0}, {5, 2, 6, 0}), SLOPES(false),
                                               PARAM(pse_type, 2)),
    /* a band 1 to 3 keys after the diagonal */
    [V_TND_MODE0_NEGATIVE_PRE_TRAILING_EMPTY] = EDITS(RESEQ(3, {3, 4, 0}, {5, 6, 0}),
                                                      ATTEN_MASK(BOOL, NUM(4), NUM(6)), PARAM(pre_tokens, -1),
                                                      PARAM(next_tokens, 3)),
};

static void apply_valid(fixture *fx, int v)
{
    TU_CHECK(VALID[v], "variant %s has no row in VALID", VALID_NAME[v]);
    if (VALID[v]) apply_edits(fx, VALID[v]);
}

static tu_tensor new_workspace(size_t bytes)
{
    int64_t n = (int64_t)bytes;
    tu_tensor w = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &n, 0);
    tu_tensor_poison(&w, 0x00);
    return w;
}

static bool all_canaries(const fixture *fx)
{
    bool ok = true;
    for (int i = 0; i < NT; i++)
        if (fx->t[i].block) ok &= tu_canaries_ok(&fx->t[i], TNAME[i]);
    return ok;
}

/* Copies the outputs of one call into doubles (concatenated). */
static int64_t outputs_f64(const fixture *fx, double *buf)
{
    int64_t n = 0;
    for (int i = 0; i < NT; i++) {
        if (!fx->t[i].block || !is_output(fx, i)) continue;
        tu_tensor_to_f64(&fx->t[i], buf + n);
        n += tu_numel(&fx->t[i].view);
    }
    return n;
}

/* The workspace query is deterministic, the exact size suffices, the last
 * error is "" after a success (even after an earlier failure), the outputs
 * are written, and an oversized workspace gives identical results.  Under
 * the reference and under AUTO (the fast kernel wherever it serves the call),
 * so that an output element the fast kernel leaves unwritten is seen. */
static int run_success_cases(void)
{
    int passed = 0, ran = 0;
    static double first[4096], second[4096];
    static const attnops_impl IMPLS[] = {ATTNOPS_IMPL_REFERENCE, ATTNOPS_IMPL_AUTO};
    for (size_t m = 0; m < sizeof IMPLS / sizeof IMPLS[0]; m++) {
        for (int v = 0; v < N_VALID; v++) {
            /* padded variants in each of LAYOUTS; TND ones once, in TND, through
             * the general (k = 0) and the varlen (k = 1) entry points */
            const bool tnd = v >= TND_FIRST_VALID;
            const size_t n_runs = tnd ? 2 : sizeof LAYOUTS / sizeof LAYOUTS[0];
            for (int op = FWD; op <= BWD; op++) {
                for (size_t k = 0; k < n_runs; k++) {
                    const attnops_layout layout = tnd ? ATTNOPS_LAYOUT_TND : LAYOUTS[k];
                    const bool route = tnd && k == 1;
                    int before = tu_failures;
                    vc_label("%s %s%s success %s (impl %s)", op == FWD ? "fwd" : "bwd",
                             attnops_layout_name(layout), route ? " varlen" : "", VALID_NAME[v],
                             IMPLS[m] == ATTNOPS_IMPL_AUTO ? "AUTO" : "REFERENCE");
                    fixture fx;
                    fx_init(&fx, (op_kind)op, layout, BASE, tu_suite_seed() + 99 + (uint64_t)v);
                    fx.varlen = route;
                    apply_valid(&fx, v);
                    P(&fx)->impl = IMPLS[m];
                    ran++;
                    if (op == BWD) {
                        /* realistic attention_in and statistics: the forward's own results */
                        attnops_fa_fwd_args fa;
                        attnops_fa_fwd_args_init(&fa);
                        fa.p = fx.ba.p;
                        fa.attention_out = &fx.t[AIN].view, fa.softmax_max = &fx.t[SMAX].view;
                        fa.softmax_sum = &fx.t[SSUM].view;
                        size_t b = 0;
                        VC_EXPECT(attnops_flash_attention_score_workspace_size(&fa, &b) == 0, "forward setup query: %s",
                                  attnops_last_error());
                        tu_tensor w = new_workspace(b);
                        VC_EXPECT(attnops_flash_attention_score(&fa, w.view.data, b) == 0, "forward setup: %s",
                                  attnops_last_error());
                        tu_tensor_free(&w);
                    }
                    fx_snapshot(&fx);
                    size_t b1 = 1, b2 = 2;
                    attnops_status s1 = q_size(&fx, false, &b1), s2 = q_size(&fx, false, &b2);
                    VC_EXPECT(s1 == 0 && s2 == 0, "workspace query failed: %s", attnops_last_error());
                    VC_EXPECT(b1 == b2, "workspace query not deterministic: %zu then %zu", b1, b2);
                    VC_EXPECT(b1 > 0 || IMPLS[m] != ATTNOPS_IMPL_REFERENCE,
                              "the reference needs a workspace, got 0 bytes");

                    /* a failure first, so that the success has an error to clear */
                    VC_EXPECT(q_run(&fx, true, NULL, 0) == ATTNOPS_ERR_NULLPTR, "NULL args accepted");
                    VC_EXPECT(attnops_last_error()[0] != '\0', "no sentence after a failure");
                    tu_tensor w = new_workspace(b1);
                    attnops_status st = q_run(&fx, false, w.view.data, b1);
                    VC_EXPECT(st == ATTNOPS_SUCCESS, "run with exactly %zu bytes failed: %d %s", b1, (int)st,
                              attnops_last_error());
                    VC_EXPECT(strcmp(attnops_last_error(), "") == 0, "last error after a success is \"%s\"",
                              attnops_last_error());
                    VC_EXPECT(tu_canaries_ok(&w, "workspace"), "the run wrote outside its workspace");
                    VC_EXPECT(all_canaries(&fx), "canary broken by a successful run");
                    for (int i = 0; i < NT; i++) {
                        if (!fx.t[i].block) continue;
                        if (is_output(&fx, i)) {
                            int64_t left = unwritten(&fx.t[i]);
                            VC_EXPECT(left == 0, "output '%s': %lld of %lld elements not written", TNAME[i],
                                      (long long)left, (long long)tu_numel(&fx.t[i].view));
                        } else {
                            VC_EXPECT(memcmp(fx.snap[i], vc_storage(&fx.t[i]), fx.t[i].data_bytes) == 0,
                                      "input '%s' modified by a successful run", TNAME[i]);
                        }
                    }
                    int64_t n = outputs_f64(&fx, first);
                    tu_tensor_free(&w);

                    /* an oversized workspace (and a clean one) gives the same bits */
                    for (int i = 0; i < NT; i++)
                        if (fx.t[i].block && is_output(&fx, i)) tu_tensor_poison(&fx.t[i], VC_POISON);
                    w = new_workspace(b1 + 4096);
                    tu_tensor_poison(&w, 0x7F);
                    st = q_run(&fx, false, w.view.data, b1 + 4096);
                    VC_EXPECT(st == ATTNOPS_SUCCESS, "run with a larger workspace failed: %s",
                              attnops_last_error());
                    outputs_f64(&fx, second);
                    tu_compare_result r =
                        tu_compare(vc_label_text(), second, first, n, (tu_tolerance){0.0, 0.0}, NULL, 0, NULL);
                    VC_EXPECT(r.pass, "results depend on the workspace size or contents");
                    tu_tensor_free(&w);
                    fx_free(&fx);
                    if (tu_failures == before) passed++;
                }
            }
        }
    }
    printf("success cases: %d of %d as expected\n", passed, ran);
    return passed;
}

/* Empty problems: status 0, workspace 0, nothing written.  With S1 = 0 the
 * backward's dk and dv are not empty: the gradient of a sum over no query
 * rows is zero, so they must be written as zeros (or the call refused with
 * 161002 and nothing written). */
static int run_empty_cases(void)
{
    int passed = 0;
    for (int op = FWD; op <= BWD; op++) {
        for (size_t li = 0; li < sizeof LAYOUTS / sizeof LAYOUTS[0]; li++) {
            for (int which = 0; which < 2; which++) {
                int before = tu_failures;
                dims d = BASE;
                if (which == 0) d.B = 0; else d.S1 = 0;
                vc_label("%s %s empty %s", op == FWD ? "fwd" : "bwd",
                         attnops_layout_name(LAYOUTS[li]), which == 0 ? "B=0" : "S1=0");
                fixture fx;
                fx_init(&fx, (op_kind)op, LAYOUTS[li], d, 5);
                fx_snapshot(&fx);
                size_t bytes = 777;
                attnops_status st = q_size(&fx, false, &bytes);
                VC_EXPECT(st == ATTNOPS_SUCCESS, "workspace query: %d %s", (int)st, attnops_last_error());
                VC_EXPECT(bytes == 0, "workspace of an empty problem is %zu bytes", bytes);
                st = q_run(&fx, false, NULL, 0);
                bool refused = st == ATTNOPS_ERR_PARAM_INVALID && op == BWD && which == 1;
                VC_EXPECT(st == ATTNOPS_SUCCESS || refused, "run: %d %s", (int)st, attnops_last_error());
                for (int i = 0; i < NT; i++) {
                    const tu_tensor *t = &fx.t[i];
                    if (!t->block) continue;
                    VC_EXPECT(tu_canaries_ok(t, TNAME[i]), "canary of '%s'", TNAME[i]);
                    if (!is_output(&fx, i)) {
                        VC_EXPECT(memcmp(fx.snap[i], vc_storage(t), t->data_bytes) == 0, "input '%s' modified",
                                  TNAME[i]);
                    } else if (tu_numel(&t->view) == 0 || refused) {
                        VC_EXPECT(tu_tensor_untouched(t, VC_POISON), "empty output '%s' written", TNAME[i]);
                    } else { /* backward, S1 = 0: dk, dv = 0 */
                        static double vals[4096];
                        tu_tensor_to_f64(t, vals);
                        int64_t n = tu_numel(&t->view), bad = 0;
                        for (int64_t k = 0; k < n; k++) bad += vals[k] != 0.0;
                        VC_EXPECT(bad == 0, "'%s' has %lld of %lld elements not zero (gradient over no query rows)",
                                  TNAME[i], (long long)bad, (long long)n);
                    }
                }
                fx_free(&fx);
                if (tu_failures == before) passed++;
            }
        }
    }
    return passed;
}

static int run_status_strings(void)
{
    static const struct { attnops_status st; const char *name; } table[] = {
        {ATTNOPS_SUCCESS, "ATTNOPS_SUCCESS"},
        {ATTNOPS_ERR_NULLPTR, "ATTNOPS_ERR_NULLPTR"},
        {ATTNOPS_ERR_PARAM_INVALID, "ATTNOPS_ERR_PARAM_INVALID"},
        {ATTNOPS_ERR_UNSUPPORTED, "ATTNOPS_ERR_UNSUPPORTED"},
        {ATTNOPS_ERR_OUT_OF_MEMORY, "ATTNOPS_ERR_OUT_OF_MEMORY"},
        {ATTNOPS_ERR_INTERNAL, "ATTNOPS_ERR_INTERNAL"},
    };
    int passed = 0;
    TU_CHECK(ATTNOPS_ERR_NULLPTR == 161001 && ATTNOPS_ERR_PARAM_INVALID == 161002 &&
                 ATTNOPS_ERR_UNSUPPORTED == 161003,
             "status codes differ from aclnn's");
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const char *s = attnops_status_string(table[i].st);
        bool ok = s && strcmp(s, table[i].name) == 0;
        TU_CHECK(ok, "attnops_status_string(%d) = \"%s\", expected \"%s\"", (int)table[i].st, s ? s : "(null)",
                 table[i].name);
        passed += ok;
    }
    const char *unknown = attnops_status_string((attnops_status)42);
    TU_CHECK(unknown && *unknown && strcmp(unknown, "ATTNOPS_SUCCESS") != 0, "unknown status string \"%s\"",
             unknown ? unknown : "(null)");
    return passed + (unknown && *unknown);
}

/* test_fa_validation [--through-acl] */
int main(int argc, char **argv)
{
    through_acl = argc > 1 && !strcmp(argv[1], "--through-acl");
    if (argc > 2 || (argc == 2 && !through_acl)) {
        fprintf(stderr, "usage: %s [--through-acl]\n", argv[0]);
        return 2;
    }
    int passed = 0;
    if (through_acl) { /* the failure cases and the checker's self-test, through aclnn */
        TU_CHECK(aclInit(NULL) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS, "aclInit");
        passed += run_failure_cases();
        passed += run_checker_self_test();
        aclb_release(&acl_state.call);
        TU_CHECK(aclrtResetDevice(0) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS, "aclFinalize");
    } else {
        passed += run_status_strings();
        passed += run_failure_cases();
        passed += run_checker_self_test();
        passed += run_success_cases();
        passed += run_empty_cases();
    }
    if (tu_failures) fprintf(stderr, "seed %llu (ATTNOPS_TEST_SEED)\n", (unsigned long long)tu_suite_seed());
    return tu_finish(through_acl ? "fa_validation_acl" : "fa_validation", passed);
}
