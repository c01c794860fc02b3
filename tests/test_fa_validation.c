/* Argument validation of FlashAttentionScore and FlashAttentionScoreGrad
 * (spec section 8.2 and the contract in attnops.h).
 *
 * Every case starts from one valid small problem (B=2, N1=4, N2=2, S1=5,
 * S2=7, D=8, Dv=6) in each of the layouts BNSD, BSND, BSH, SBH and breaks
 * exactly one thing.  The cases are a table (CASES: the rule, the operators,
 * the status and the words of the sentence, the way of calling); apply_case
 * holds each one's mutation of the valid call.  For both phases (workspace
 * query and run) it checks
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
    MASK, PSE, DROP, PREFIX, SEQQ, SEQKV, QSTART, KVSTART, QROPE, KROPE, DQROPE, DKROPE, DSQ, DSK, DSV, DSDY, DSO, NT
};
static const char *const TNAME[NT] = {"query", "key", "value", "attention_out", "softmax_max", "softmax_sum", "dy",
                                      "attention_in", "dq", "dk", "dv", "atten_mask", "pse", "drop_mask", "prefix",
                                      "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx", "kv_start_idx",
                                      "query_rope", "key_rope", "dq_rope", "dk_rope", "d_scale_q", "d_scale_k",
                                      "d_scale_v", "d_scale_dy", "d_scale_o"};

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
    return i == DQ || i == DK || i == DV || i == DQROPE || i == DKROPE;
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

/* Points the argument structs at the tensors (NULL for unallocated ones). */
static void fx_bind(fixture *fx)
{
    attnops_fa_fwd_args_init(&fx->fa);
    attnops_fa_bwd_args_init(&fx->ba);
    const attnops_tensor *v[NT];
    for (int i = 0; i < NT; i++) v[i] = fx->t[i].block ? &fx->t[i].view : NULL;
    attnops_fa_params *p = P(fx);
    p->query = v[Q], p->key = v[K], p->value = v[V];
    p->atten_mask = v[MASK], p->pse = v[PSE], p->drop_mask = v[DROP], p->prefix = v[PREFIX];
    p->actual_seq_qlen = v[SEQQ], p->actual_seq_kvlen = v[SEQKV], p->query_rope = v[QROPE], p->key_rope = v[KROPE];
    p->q_start_idx = v[QSTART], p->kv_start_idx = v[KVSTART];
    p->head_num = fx->d.N1;
    p->input_layout = fx->layout;
    p->scale_value = 1.0 / sqrt((double)fx->d.D);
    p->impl = ATTNOPS_IMPL_REFERENCE;
    p->num_threads = 2;
    if (fx->op == FWD) {
        fx->fa.attention_out = v[O], fx->fa.softmax_max = v[SMAX], fx->fa.softmax_sum = v[SSUM];
    } else {
        fx->ba.dy = v[DY], fx->ba.attention_in = v[AIN], fx->ba.softmax_max = v[SMAX], fx->ba.softmax_sum = v[SSUM];
        fx->ba.dq = v[DQ], fx->ba.dk = v[DK], fx->ba.dv = v[DV], fx->ba.dq_rope = v[DQROPE],
        fx->ba.dk_rope = v[DKROPE];
    }
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
    const attnops_dtype f = ATTNOPS_DTYPE_F32;
    /* TND tensors are [T, N, D]: one "batch" of T rows for layout_shape */
    const int64_t b = tnd ? 1 : d.B, s1 = tnd ? fx->T1 : d.S1, s2 = tnd ? fx->T2 : d.S2;
    for (int i = 0; i < NT; i++) {
        if (!used_by(op, i)) continue;
        switch (i) {
        case Q: case DQ: fx_qkv(fx, i, f, b, s1, d.N1, d.D); break;
        case K: case DK: fx_qkv(fx, i, f, b, s2, d.N2, d.D); break;
        case V: case DV: fx_qkv(fx, i, f, b, s2, d.N2, d.Dv); break;
        case O: case DY: case AIN: fx_qkv(fx, i, f, b, s1, d.N1, d.Dv); break;
        case SMAX: case SSUM: fx_stats(fx, i, f, 8); break;
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
    attnops_fa_params *p = P(fx);
    const attnops_tensor *v = &fx->t[i].view;
    switch (i) {
    case MASK: p->atten_mask = v; break;
    case PSE: p->pse = v; break;
    case DROP: p->drop_mask = v; break;
    case PREFIX: p->prefix = v; break;
    case SEQQ: p->actual_seq_qlen = v; break;
    case SEQKV: p->actual_seq_kvlen = v; break;
    case QSTART: p->q_start_idx = v; break;
    case KVSTART: p->kv_start_idx = v; break;
    case QROPE: p->query_rope = v; break;
    case KROPE: p->key_rope = v; break;
    case DQROPE: fx->ba.dq_rope = v; break;
    case DKROPE: fx->ba.dk_rope = v; break;
    case DSQ: p->d_scale_q = v; break;
    case DSK: p->d_scale_k = v; break;
    case DSV: p->d_scale_v = v; break;
    case DSDY: p->d_scale_dy = v; break;
    case DSO: p->d_scale_o = v; break;
    }
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
 * breaks (apply_case holds each mutation of the valid call), the operators it
 * applies to (BOTH, FWD_ONLY, BWD_ONLY), the status and the words the
 * sentence must hold (the argument, and NULL or a value it must state), and
 * how the entry points are called.  A few cases name another argument in
 * some layouts or in the backward (the comment at their row): apply_case
 * sets those. */
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
    X(PREFIX_MISSING_MODE5, BOTH, NUL, "prefix", NULL, CALL_BOTH)                                              \
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

/* Breaks case c's rule in a freshly built fixture of an operator the case
 * applies to; *e holds the case's row, which a case that names another
 * argument in this layout or operator corrects.  Returns false when the case
 * does not exist for this layout. */
static bool apply_case(fixture *fx, int c, vc_expect *e)
{
    const dims d = fx->d;
    const bool fwd = fx->op == FWD, bwd = !fwd, hid = hidden_layout(fx->layout);
    const attnops_dtype f32 = ATTNOPS_DTYPE_F32;
    attnops_fa_params *p = P(fx);
    switch (c) {
    case C_NULL_ARGS: return true; /* CALL_NULL_ARGS */
    case C_NULL_QUERY: p->query = NULL; return true;
    case C_NULL_KEY: p->key = NULL; return true;
    case C_NULL_VALUE: p->value = NULL; return true;
    case C_NULL_ATTENTION_OUT: fx->fa.attention_out = NULL; return true;
    case C_NULL_SOFTMAX_MAX:
        if (fwd) fx->fa.softmax_max = NULL; else fx->ba.softmax_max = NULL;
        return true;
    case C_NULL_SOFTMAX_SUM:
        if (fwd) fx->fa.softmax_sum = NULL; else fx->ba.softmax_sum = NULL;
        return true;
    case C_NULL_DY: fx->ba.dy = NULL; return true;
    case C_NULL_ATTENTION_IN: fx->ba.attention_in = NULL; return true;
    case C_NULL_DQ: fx->ba.dq = NULL; return true;
    case C_NULL_DK: fx->ba.dk = NULL; return true;
    case C_NULL_DV: fx->ba.dv = NULL; return true;
    case C_NULL_DATA_QUERY: fx->t[Q].view.data = NULL; return true;
    case C_NULL_DATA_VALUE: fx->t[V].view.data = NULL; return true;
    case C_NULL_DATA_OUTPUT:
        if (fwd) fx->t[SSUM].view.data = NULL;
        else fx->t[DV].view.data = NULL, e->name = "dv";
        return true;
    case C_NULL_WORKSPACE_BYTES: /* these break their rule by how they call (the table's call column) */
    case C_NULL_WORKSPACE:
    case C_WORKSPACE_SHORT: return true;
    case C_HEAD_NUM_ZERO: p->head_num = 0; return true;
    case C_HEAD_NUM_NEGATIVE: p->head_num = -4; return true;
    case C_HEAD_NUM_HALF:
    case C_HEAD_NUM_DOUBLE:
        p->head_num = c == C_HEAD_NUM_HALF ? d.N1 / 2 : d.N1 * 2;
        /* BSH/SBH carry no head count: a wrong head_num re-splits the hidden
         * size consistently for q, k, v, and the first tensor that exposes
         * N1 on its own is softmax_max [B, N1, S1, 8]. */
        e->name = hid ? "softmax_max" : "head_num";
        return true;
    case C_LAYOUT_UNSET: p->input_layout = ATTNOPS_LAYOUT_UNSET; return true;
    case C_LAYOUT_TOO_BIG: p->input_layout = (attnops_layout)(ATTNOPS_LAYOUT_TND + 1); return true;
    case C_LAYOUT_NEGATIVE: p->input_layout = (attnops_layout)-1; return true;
    case C_QUERY_RANK:
    case C_KEY_RANK: {
        int i = c == C_QUERY_RANK ? Q : K;
        int64_t s = i == Q ? d.S1 : d.S2, n = i == Q ? d.N1 : d.N2;
        if (hid) { /* a 4-D tensor where BSH/SBH want 3-D */
            int64_t sh[4] = {d.B, s, n, d.D};
            fx_set(fx, i, f32, 4, sh);
        } else { /* a 3-D tensor where BNSD/BSND want 4-D */
            int64_t sh[3] = {d.B, s, n * d.D};
            fx_set(fx, i, f32, 3, sh);
        }
        return true;
    }
    case C_KEY_DTYPE: fx_qkv(fx, K, ATTNOPS_DTYPE_F16, d.B, d.S2, d.N2, d.D); return true;
    case C_VALUE_DTYPE: fx_qkv(fx, V, ATTNOPS_DTYPE_BF16, d.B, d.S2, d.N2, d.Dv); return true;
    case C_QUERY_U8: fx_qkv(fx, Q, ATTNOPS_DTYPE_U8, d.B, d.S1, d.N1, d.D); return true;
    case C_N1_NOT_MULTIPLE_OF_N2: /* N2 = 3 for key and value, N1 = 4 */
        fx_qkv(fx, K, f32, d.B, d.S2, 3, d.D);
        fx_qkv(fx, V, f32, d.B, d.S2, 3, d.Dv);
        return true;
    case C_KEY_HEAD_DIM: fx_qkv(fx, K, f32, d.B, d.S2, d.N2, d.D + 2); return true;
    case C_DV_GREATER_THAN_D: fx_qkv(fx, V, f32, d.B, d.S2, d.N2, d.D + 2); return true;
    case C_D_ZERO: fx_qkv(fx, Q, f32, d.B, d.S1, d.N1, 0); return true;
    case C_HIDDEN_NOT_DIVISIBLE: {
        if (!hid) return false;
        int64_t sh[3];
        layout_shape(fx->layout, d.B, d.S1, 1, d.N1 * d.D - 2, sh); /* 30 = not a multiple of 4 heads */
        fx_set(fx, Q, f32, 3, sh);
        return true;
    }
    case C_VALUE_S: fx_qkv(fx, V, f32, d.B, d.S2 + 1, d.N2, d.Dv); return true;
    case C_VALUE_B: fx_qkv(fx, V, f32, d.B + 1, d.S2, d.N2, d.Dv); return true;
    case C_VALUE_N:
        if (hid) return false; /* value's heads are read with key's count there */
        fx_qkv(fx, V, f32, d.B, d.S2, d.N2 - 1, d.Dv);
        return true;
    case C_ATTENTION_OUT_SHAPE:
        fx_qkv(fx, O, f32, d.B, d.S1, d.N1, d.D); /* D instead of Dv */
        return true;
    case C_ATTENTION_OUT_DTYPE:
        fx_qkv(fx, O, ATTNOPS_DTYPE_F16, d.B, d.S1, d.N1, d.Dv);
        return true;
    case C_SOFTMAX_MAX_SHAPE: fx_stats(fx, SMAX, f32, 4); return true;
    case C_SOFTMAX_MAX_DTYPE: fx_stats(fx, SMAX, ATTNOPS_DTYPE_F16, 8); return true;
    case C_SOFTMAX_SUM_SHAPE: fx_stats(fx, SSUM, f32, 4); return true;
    case C_SOFTMAX_SUM_DTYPE: fx_stats(fx, SSUM, ATTNOPS_DTYPE_F16, 8); return true;
    case C_DQ_SHAPE: fx_qkv(fx, DQ, f32, d.B, d.S1, d.N1, d.Dv); return true;
    case C_DQ_DTYPE:
        fx_qkv(fx, DQ, ATTNOPS_DTYPE_F16, d.B, d.S1, d.N1, d.D);
        return true;
    case C_DK_SHAPE: fx_qkv(fx, DK, f32, d.B, d.S2 + 1, d.N2, d.D); return true;
    case C_DK_DTYPE:
        fx_qkv(fx, DK, ATTNOPS_DTYPE_BF16, d.B, d.S2, d.N2, d.D);
        return true;
    case C_DV_SHAPE: fx_qkv(fx, DV, f32, d.B, d.S2, d.N2, d.D); return true;
    case C_DV_DTYPE:
        fx_qkv(fx, DV, ATTNOPS_DTYPE_F16, d.B, d.S2, d.N2, d.Dv);
        return true;
    case C_DY_SHAPE: fx_qkv(fx, DY, f32, d.B, d.S1, d.N1, d.D); return true;
    case C_DY_DTYPE:
        fx_qkv(fx, DY, ATTNOPS_DTYPE_F16, d.B, d.S1, d.N1, d.Dv);
        return true;
    case C_ATTENTION_IN_SHAPE:
        fx_qkv(fx, AIN, f32, d.B, d.S1 + 1, d.N1, d.Dv);
        return true;
    case C_ATTENTION_IN_DTYPE:
        fx_qkv(fx, AIN, ATTNOPS_DTYPE_BF16, d.B, d.S1, d.N1, d.Dv);
        return true;
    case C_OVERLAP_SUM_MAX: /* softmax_sum is a view one row into softmax_max's memory */
        fx->t[SSUM].view.data = vc_storage(&fx->t[SMAX]) + 8 * sizeof(float);
        return true;
    case C_OVERLAP_OUT_SUM: /* attention_out (240 floats) inside softmax_sum (320 floats) */
        fx->t[O].view.data = vc_storage(&fx->t[SSUM]);
        return true;
    case C_OVERLAP_DQ_DK: /* dk (224 floats) at the start of dq (320 floats) */
        fx->t[DK].view.data = vc_storage(&fx->t[DQ]);
        return true;
    case C_OVERLAP_DK_DV: /* dv (168 floats) four floats into dk (224 floats) */
        fx->t[DV].view.data = vc_storage(&fx->t[DK]) + 4 * sizeof(float);
        return true;
    case C_KEEP_PROB_ZERO: p->keep_prob = 0.0; return true;
    case C_KEEP_PROB_F32_ZERO: p->keep_prob = 7.7e-307; return true; /* 0 as an f32 (fuzz_fa_args) */
    case C_KEEP_PROB_1_5: p->keep_prob = 1.5; return true;
    case C_KEEP_PROB_NAN: p->keep_prob = NAN; return true;
    case C_SOFTCAP_NEGATIVE: p->softcap = -1.0; return true;
    case C_SOFTCAP_NAN: p->softcap = NAN; return true;
    case C_SOFTCAP_INF: p->softcap = INFINITY; return true;
    case C_SOFTCAP_F32_ZERO: p->softcap = 1e-300; return true; /* 0 as an f32 */
    case C_SOFTCAP_SCALE_RATIO: p->softcap = 1e-40; return true; /* scale_value / 1e-40 overflows an f32 */
    case C_SPARSE_MODE_9: p->sparse_mode = 9; return true;
    case C_SPARSE_MODE_NEGATIVE: p->sparse_mode = -1; return true;
    case C_SPARSE_MODE_7_NOT_TND: p->sparse_mode = 7; return true;
    case C_PSE_TYPE_4: p->pse_type = 4; return true;
    case C_PSE_TYPE_2_WITHOUT_PSE: p->pse_type = 2; return true;
    case C_INNER_PRECISE_3: p->inner_precise = 3; return true;
    case C_OUT_DTYPE_2: p->out_dtype = 2; return true;
    case C_IMPL_4: p->impl = (attnops_impl)4; return true;
    case C_NEGATIVE_STRIDE_INPUT: fx->t[K].view.strides[0] = -1; return true;
    case C_NEGATIVE_STRIDE_OUTPUT: {
        int i = fwd ? O : DK;
        fx->t[i].view.strides[fx->t[i].view.rank - 1] = -1;
        e->name = TNAME[i];
        return true;
    }
    case C_ZERO_STRIDE_OUTPUT: { /* dimension 0 has extent B = 2: its elements would alias */
        int i = fwd ? O : DK;
        fx->t[i].view.strides[0] = 0;
        e->name = TNAME[i];
        return true;
    }
    case C_OVERLAPPING_STRIDE_OUTPUT: { /* rows 1 element apart over rows of D elements (found by fuzz_fa_args) */
        int i = fwd ? O : DK;
        attnops_tensor *v = &fx->t[i].view;
        v->strides[v->rank - 2] = 1;
        e->name = TNAME[i];
        return true;
    }
    case C_SCALE_NAN: p->scale_value = NAN; return true;
    /* finite as a double, infinite as the f32 CANN's attribute is (found by fuzz_fa_args) */
    case C_SCALE_F32_INF: p->scale_value = -1.14e98; return true;
    case C_PADDING_MASK: p->padding_mask = &fx->t[Q].view; return true;
    case C_SOFTMAX_IN: fx->ba.softmax_in = &fx->t[SMAX].view; return true;
    /* atten_mask (spec 3.1, 3.2): bool/u8; modes 0/1/5 a full mask [S1,S2],
     * [1,1,S1,S2], [B,1,S1,S2] or [B,N1,S1,S2]; modes 2/3/4 2048x2048; mode 6
     * 3072x2048.  Every other argument stays valid (mode 5 gets its prefix). */
    case C_MASK_DTYPE_F32: {
        int64_t sh[2] = {d.S1, d.S2};
        fx_mask(fx, f32, 2, sh);
        return true;
    }
    case C_MASK_RANK_3: {
        int64_t sh[3] = {1, d.S1, d.S2};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 3, sh);
        return true;
    }
    case C_MASK_MODE0_S1: case C_MASK_MODE0_S2: case C_MASK_MODE1_S1: case C_MASK_MODE1_S2:
    case C_MASK_MODE5_S1: case C_MASK_MODE5_S2: {
        const bool s1 = c == C_MASK_MODE0_S1 || c == C_MASK_MODE1_S1 || c == C_MASK_MODE5_S1;
        p->sparse_mode = c <= C_MASK_MODE0_S2 ? 0 : c <= C_MASK_MODE1_S2 ? 1 : 5;
        /* mode 0 an SS mask, mode 1 B1SS, mode 5 BNSS */
        int64_t sh[4] = {d.B, p->sparse_mode == 5 ? d.N1 : 1, s1 ? d.S1 + 1 : d.S1, s1 ? d.S2 : d.S2 - 1};
        if (p->sparse_mode == 0)
            fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh + 2);
        else
            fx_mask(fx, ATTNOPS_DTYPE_U8, 4, sh);
        if (p->sparse_mode == 5) fx_prefix(fx, ATTNOPS_DTYPE_I64);
        return true;
    }
    case C_MASK_MODE1_1NSS: { /* B = 2: a [1, N1] lead is neither BNSS nor B1SS nor SS */
        int64_t sh[4] = {1, d.N1, d.S1, d.S2};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 4, sh);
        p->sparse_mode = 1;
        return true;
    }
    case C_MASK_MODE5_SS: case C_MASK_MODE5_11SS: { /* mode 5's prefix is per batch, so is its mask */
        int64_t sh[4] = {1, 1, d.S1, d.S2};
        if (c == C_MASK_MODE5_SS) fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh + 2); else fx_mask(fx, ATTNOPS_DTYPE_U8, 4, sh);
        fx_prefix(fx, ATTNOPS_DTYPE_I64);
        p->sparse_mode = 5;
        return true;
    }
    case C_MASK_MODE2_1024: case C_MASK_MODE3_1024: case C_MASK_MODE4_1024: {
        int64_t sh[2] = {1024, 2048};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh);
        p->sparse_mode = 2 + (c - C_MASK_MODE2_1024);
        return true;
    }
    case C_MASK_MODE6_2048: {
        int64_t sh[2] = {2048, 2048};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh);
        fx_prefix(fx, ATTNOPS_DTYPE_I64);
        p->sparse_mode = 6;
        return true;
    }
    /* token checks (spec 3.2), made only when a mask is given: modes 0 and 4
     * (after pre' = pre + S1 - S2, next' = next - S1 + S2) fail when
     * -pre' > S2, -next' > S1 or pre' + next' < 0.  The same tokens without
     * a mask succeed (SUCCESS_VARIANTS). */
    case C_TOKENS_PRE_BEYOND_S2: case C_TOKENS_NEXT_BEYOND_S1: case C_TOKENS_NO_BAND: {
        int64_t sh[2] = {d.S1, d.S2};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh);
        if (c == C_TOKENS_PRE_BEYOND_S2) p->pre_tokens = -(d.S2 + 1), p->next_tokens = d.S2 + 1;
        if (c == C_TOKENS_NEXT_BEYOND_S1) p->pre_tokens = d.S1 + 1, p->next_tokens = -(d.S1 + 1);
        if (c == C_TOKENS_NO_BAND) p->pre_tokens = 2, p->next_tokens = -3;
        return true;
    }
    case C_TOKENS_MODE4_CORRECTED: {
        /* pre = -6, next = 6 pass the mode-0 rule (6 <= S2 = 7, sum 0), but
         * mode 4 corrects them to pre' = -8, next' = 8 and -pre' = 8 > S2 */
        int64_t sh[2] = {2048, 2048};
        fx_mask(fx, ATTNOPS_DTYPE_U8, 2, sh);
        p->sparse_mode = 4;
        p->pre_tokens = -(d.S2 - 1), p->next_tokens = d.S2 - 1;
        return true;
    }
    /* prefix (modes 5/6): required with a mask, i64/i32 [B], each value in
     * [max(0, S2 - S1), S2] = [2, 7] here */
    case C_PREFIX_MISSING_MODE5: case C_PREFIX_MISSING_MODE6: {
        const bool m5 = c == C_PREFIX_MISSING_MODE5;
        int64_t full[4] = {d.B, 1, d.S1, d.S2}, comp[2] = {3072, 2048};
        if (m5) fx_mask(fx, ATTNOPS_DTYPE_BOOL, 4, full); else fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, comp);
        p->sparse_mode = m5 ? 5 : 6;
        return true;
    }
    case C_PREFIX_LENGTH: case C_PREFIX_DTYPE_F32: case C_PREFIX_BELOW_RANGE: case C_PREFIX_ABOVE_RANGE: {
        int64_t sh[4] = {d.B, 1, d.S1, d.S2}, vals[3] = {d.S2 - d.S1, d.S2, d.S2};
        fx_mask(fx, ATTNOPS_DTYPE_U8, 4, sh);
        p->sparse_mode = 5;
        if (c == C_PREFIX_BELOW_RANGE) vals[1] = d.S2 - d.S1 - 1;
        if (c == C_PREFIX_ABOVE_RANGE) vals[1] = d.S2 + 1;
        fx_list(fx, PREFIX, c == C_PREFIX_DTYPE_F32 ? f32 : ATTNOPS_DTYPE_I64, c == C_PREFIX_LENGTH ? d.B + 1 : d.B,
                vals);
        return true;
    }
    /* pse (spec 4.1): types 0/1 take query's dtype and [B,N1,S1,S2],
     * [1,N1,S1,S2], [B,N1,1,S2] (or the compressed ALiBi form, below);
     * types 2/3 f32 slopes [N1] or [B,N1] and i64 start indices of 0 or 1
     * element */
    case C_PSE_DTYPE_TYPE0: case C_PSE_DTYPE_TYPE1: {
        int64_t sh[4] = {d.B, d.N1, d.S1, d.S2};
        fx_extra(fx, PSE, ATTNOPS_DTYPE_F16, 4, sh);
        p->pse_type = c == C_PSE_DTYPE_TYPE0 ? 0 : 1;
        return true;
    }
    case C_PSE_SHAPE_RANK3: case C_PSE_SHAPE_B1SS: case C_PSE_SHAPE_1N1S: case C_PSE_SHAPE_S2:
    case C_PSE_SHAPE_1024_ROWS: {
        int64_t sh[4] = {d.B, d.N1, d.S1, d.S2};
        int rank = 4;
        if (c == C_PSE_SHAPE_RANK3) sh[0] = d.N1, sh[1] = d.S1, sh[2] = d.S2, rank = 3;
        if (c == C_PSE_SHAPE_B1SS) sh[1] = 1;
        if (c == C_PSE_SHAPE_1N1S) sh[0] = 1, sh[2] = 1;
        if (c == C_PSE_SHAPE_S2) sh[3] = d.S2 + 1;
        if (c == C_PSE_SHAPE_1024_ROWS) sh[2] = 1024; /* the ALiBi form needs S1 > 1024 */
        fx_extra(fx, PSE, f32, rank, sh);
        p->pse_type = c == C_PSE_SHAPE_B1SS ? 0 : 1;
        return true;
    }
    case C_PSE_SLOPES_F16: {
        int64_t sh[1] = {d.N1};
        fx_extra(fx, PSE, ATTNOPS_DTYPE_F16, 1, sh);
        p->pse_type = 2;
        return true;
    }
    case C_PSE_SLOPES_LENGTH: {
        int64_t sh[1] = {d.N1 + 1};
        fx_extra(fx, PSE, f32, 1, sh);
        p->pse_type = 3;
        return true;
    }
    case C_Q_START_IDX_LENGTH: case C_Q_START_IDX_F32: case C_KV_START_IDX_LENGTH: {
        static const int64_t vals[2] = {3, 1};
        fx_slopes(fx, false);
        p->pse_type = 2;
        if (c == C_KV_START_IDX_LENGTH) {
            fx_list(fx, QSTART, ATTNOPS_DTYPE_I64, 1, vals);
            fx_list(fx, KVSTART, ATTNOPS_DTYPE_I64, 2, vals);
        } else {
            fx_list(fx, QSTART, c == C_Q_START_IDX_F32 ? f32 : ATTNOPS_DTYPE_I64, c == C_Q_START_IDX_F32 ? 1 : 2,
                    vals);
            fx_list(fx, KVSTART, ATTNOPS_DTYPE_I64, 1, vals + 1);
        }
        return true;
    }
    case C_PSE_ALIBI_NO_MASK: {
        /* the compressed ALiBi [B|1, N1, 1024, S2] needs S1 = S2 > 1024 and a
         * causal mask; S1 = S2 = 1030 without a mask.  Kept small: one
         * layout, B = N1 = 1, D = 8. */
        if (fx->layout != ATTNOPS_LAYOUT_BNSD) return false;
        const op_kind op = fx->op;
        const dims small = {1, 1, 1, 1030, 1030, 8, 8};
        fx_free(fx);
        fx_init(fx, op, ATTNOPS_LAYOUT_BNSD, small, 13);
        int64_t sh[4] = {1, 1, 1024, small.S2};
        fx_extra(fx, PSE, f32, 4, sh);
        P(fx)->pse_type = 1;
        return true;
    }
    /* well-formed requests this version refuses: 161003 */
    /* drop_mask (spec 5.6): packed bits over [B, N1, S1, S2], only with keep_prob < 1 */
    case C_DROP_MASK_KEEP_ONE:
    case C_DROP_MASK_TOO_SMALL:
    case C_DROP_MASK_DTYPE: {
        int64_t sh[1] = {(d.B * d.N1 * d.S1 * d.S2 + 7) / 8 - (c == C_DROP_MASK_TOO_SMALL)};
        fx_extra(fx, DROP, c == C_DROP_MASK_DTYPE ? ATTNOPS_DTYPE_I32 : ATTNOPS_DTYPE_U8, 1, sh);
        p->keep_prob = c == C_DROP_MASK_KEEP_ONE ? 1.0 : 0.9;
        return true;
    }
    /* MLA rope (spec 1.3): fx_rope adds query_rope/key_rope of head dim 4
     * (and, in the backward, dq_rope/dk_rope); each case breaks one rule. */
    case C_ROPE_QUERY_ONLY:
        fx_rope(fx, 4, bwd);
        p->key_rope = NULL;
        return true;
    case C_ROPE_KEY_ONLY:
        fx_rope(fx, 4, bwd);
        p->query_rope = NULL;
        return true;
    case C_ROPE_DTYPE: {
        fx_rope(fx, 4, bwd);
        int64_t sh[4];
        const int r = layout_shape(fx->layout, d.B, d.S1, d.N1, 4, sh);
        fx_extra(fx, QROPE, ATTNOPS_DTYPE_F16, r, sh);
        return true;
    }
    case C_ROPE_WIDER_THAN_D:
        fx_rope(fx, d.D + 2, bwd);
        return true;
    case C_ROPE_KEY_SHAPE: {
        fx_rope(fx, 4, bwd);
        int64_t sh[4];
        const int r = layout_shape(fx->layout, d.B, d.S2 + 1, d.N2, 4, sh);
        fx_extra(fx, KROPE, f32, r, sh);
        return true;
    }
    case C_ROPE_NO_DQ_ROPE:
        fx_rope(fx, 4, true);
        fx->ba.dq_rope = NULL;
        return true;
    case C_ROPE_DK_ROPE_SHAPE: {
        fx_rope(fx, 4, true);
        int64_t sh[4];
        const int r = layout_shape(fx->layout, d.B, d.S2, d.N2, 5, sh);
        fx_extra(fx, DKROPE, f32, r, sh);
        return true;
    }
    case C_ROPE_DQ_ROPE_OVERLAPS_DQ: /* dq_rope (80 floats) at the start of dq (320 floats) */
        fx_rope(fx, 4, true);
        fx->t[DQROPE].view.data = vc_storage(&fx->t[DQ]);
        return true;
    case C_ROPE_GRADS_WITHOUT_INPUTS:
        fx_rope(fx, 4, true);
        p->query_rope = p->key_rope = NULL;
        return true;
    /* FP8 (spec 6): fx_fp8 builds a complete valid FP8 call; each case breaks one rule. */
    case C_FP8_NO_D_SCALE_Q:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        p->d_scale_q = NULL;
        return true;
    case C_FP8_D_SCALE_K_SHAPE: {
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        int64_t sh[4] = {d.B, d.N2, 2, 1}; /* S2 = 7 has one 128-row block */
        fx_extra(fx, DSK, f32, 4, sh);
        return true;
    }
    case C_FP8_D_SCALE_V_DTYPE: {
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E5M2, ATTNOPS_DTYPE_BF16);
        int64_t sh[4] = {d.B, d.N2, 1, 1};
        fx_extra(fx, DSV, ATTNOPS_DTYPE_F16, 4, sh);
        return true;
    }
    case C_FP8_NO_D_SCALE_DY:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_BF16);
        p->d_scale_dy = NULL;
        return true;
    case C_FP8_NO_D_SCALE_O:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        p->d_scale_o = NULL;
        return true;
    case C_FP8_OUT_DTYPE_MISMATCH: /* f16 outputs, out_dtype says bf16 */
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        p->out_dtype = 1;
        if (bwd) e->name = "attention_in";
        return true;
    case C_FP8_KEY_E5M2:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        fx_qkv(fx, K, ATTNOPS_DTYPE_F8_E5M2, d.B, d.S2, d.N2, d.D);
        return true;
    case C_FP8_IMPL_CPU_FORWARD:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        p->impl = ATTNOPS_IMPL_CPU;
        return true;
    case C_FP8_IMPL_BENCHMARK: /* the triple rule's benchmark chain has no FP8 form */
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        p->impl = ATTNOPS_IMPL_BENCHMARK;
        return true;
    case C_FP8_ROPE:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        fx_rope(fx, 4, bwd);
        return true;
    case C_FP8_SOFTCAP:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        p->softcap = 30.0;
        return true;
    case C_D_SCALE_WITHOUT_FP8: {
        int64_t sh[4] = {d.B, d.N1, 1, 1};
        fx_extra(fx, DSQ, f32, 4, sh);
        return true;
    }
    case C_TND_FP8:
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16);
        return true;
    /* actual_seq_qlen / actual_seq_kvlen describe TND batches only (spec 3.4) */
    case C_ACTUAL_SEQ_QLEN_NOT_TND: {
        int64_t cu[8];
        for (int64_t b = 0; b < d.B; b++) cu[b] = (b + 1) * d.S1;
        fx_list(fx, SEQQ, ATTNOPS_DTYPE_I64, d.B, cu);
        e->also = attnops_layout_name(fx->layout);
        return true;
    }
    /* the varlen entry points take TND only (spec 8.1, 8.2 step 1): a BSND
     * call the general entry points accept */
    case C_VARLEN_LAYOUT_BSND:
        if (fx->layout != ATTNOPS_LAYOUT_BSND) return false;
        fx->varlen = true;
        return true;
    /* ---- layout TND, from TND_BASE: q lengths [3, 0, 4], kv [5, 2, 6];
     * T1 = 7, T2 = 13, max S1 = d.S1 = 4, max S2 = d.S2 = 6, B = 3 ---- */
    /* the lists (spec 3.4): both required, i64/i32, equally long, cumulative
     * (non-decreasing), ending at T1 / T2 */
    case C_TND_NULL_SEQ_QLEN: p->actual_seq_qlen = NULL; return true;
    case C_TND_NULL_SEQ_KVLEN: p->actual_seq_kvlen = NULL; return true;
    case C_TND_SEQ_COUNTS_DIFFER: { /* one more (empty) kv batch than q batches */
        const int64_t cu[4] = {5, 7, fx->T2, fx->T2};
        fx_list(fx, SEQKV, ATTNOPS_DTYPE_I64, 4, cu);
        return true;
    }
    case C_TND_SEQ_DECREASING: { /* lengths 3, -1, 5 */
        const int64_t cu[3] = {3, 2, fx->T1};
        fx_list(fx, SEQQ, ATTNOPS_DTYPE_I64, 3, cu);
        return true;
    }
    case C_TND_SEQ_QLEN_END: { /* ends at T1 - 1 */
        const int64_t cu[3] = {3, 3, fx->T1 - 1};
        fx_list(fx, SEQQ, ATTNOPS_DTYPE_I64, 3, cu);
        return true;
    }
    case C_TND_SEQ_KVLEN_END: { /* ends at T2 + 1 */
        const int64_t cu[3] = {5, 7, fx->T2 + 1};
        fx_list(fx, SEQKV, ATTNOPS_DTYPE_I64, 3, cu);
        return true;
    }
    case C_TND_SEQ_DTYPE_F32: { /* the right values as f32 */
        const int64_t cu[3] = {3, 3, fx->T1};
        fx_list(fx, SEQQ, f32, 3, cu);
        return true;
    }
    /* softmax_max / softmax_sum in TND (spec 1.1): declared [T1, N1, 8] and
     * contiguous (they hold per-batch [N1, S_b, 8] blocks), or any [T1, N1, 8]
     * array with softmax_in_layout SAME_AS_INPUT */
    case C_TND_STATS_BNS8: { /* the padded layouts' [B, N1, max S1, 8] */
        int64_t sh[4] = {d.B, d.N1, d.S1, 8};
        fx_set(fx, SMAX, f32, 4, sh);
        return true;
    }
    case C_TND_STATS_STRIDED: { /* [T1, N1, 8] with padded rows: strides [36, 9, 1] */
        int64_t sh[3] = {fx->T1, d.N1, 8};
        fx_set_pad(fx, SSUM, f32, 3, sh, 1);
        return true;
    }
    case C_TND_STATS_SAME_AS_INPUT_NT8: { /* the graph op's [N1, T1, 8] where aclnn's [T1, N1, 8] is declared */
        int64_t sh[3] = {d.N1, fx->T1, 8};
        p->softmax_in_layout = ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT;
        fx_set(fx, SMAX, f32, 3, sh);
        return true;
    }
    /* q-like / k-like outputs have T1 / T2 rows */
    case C_TND_ATTENTION_OUT_T:
        fx_qkv(fx, O, f32, 1, fx->T1 + 1, d.N1, d.Dv);
        return true;
    case C_TND_DQ_T:
        fx_qkv(fx, DQ, f32, 1, fx->T1 - 1, d.N1, d.D);
        return true;
    case C_TND_DK_T: /* T1 rows instead of T2 */
        fx_qkv(fx, DK, f32, 1, fx->T1, d.N2, d.D);
        return true;
    /* masks in TND (spec 3.2, 3.3, 8.1): modes 0/1 one [max S1, max S2]
     * mask, the compressed one otherwise, no mode 5; tokens per batch */
    case C_TND_MODE5: { /* a complete mode-5 request: per-batch mask, prefix in [max(0, S2 - S1), S2] */
        int64_t sh[4] = {d.B, 1, d.S1, d.S2};
        static const int64_t prefix[3] = {5, 2, 6};
        fx_mask(fx, ATTNOPS_DTYPE_U8, 4, sh);
        fx_list(fx, PREFIX, ATTNOPS_DTYPE_I64, 3, prefix);
        p->sparse_mode = 5;
        return true;
    }
    case C_TND_MASK_MODE1_B1SS: {
        int64_t sh[4] = {d.B, 1, d.S1, d.S2};
        fx_mask(fx, ATTNOPS_DTYPE_U8, 4, sh);
        p->sparse_mode = 1;
        return true;
    }
    case C_TND_MASK_MODE0_4X4: { /* the sentence names the shape it wants (max S1 4, max S2 6), not the one given */
        int64_t sh[2] = {4, 4};
        fx_mask(fx, ATTNOPS_DTYPE_U8, 2, sh);
        return true;
    }
    case C_TND_TOKENS_MODE0: {
        /* pre + next = 0: a band for the padded rule (pre' + next' < 0
         * fails), none for TND's per-batch rule (pre + next <= 0 fails) */
        int64_t sh[2] = {d.S1, d.S2};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh);
        p->pre_tokens = 2, p->next_tokens = -2;
        return true;
    }
    case C_TND_TOKENS_MODE7_BAND: {
        /* mode 7 checks the band batch only, the last with S1 != 0: batch 2
         * (S1 = 4, S2 = 6), where -next = 7 > S2 */
        int64_t sh[2] = {2048, 2048};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh);
        p->sparse_mode = 7;
        p->pre_tokens = 6, p->next_tokens = -7;
        return true;
    }
    /* pse in TND (spec 3.4, 4.1, 8.3): a tensor (pse_type 0/1) only in the
     * compressed ALiBi form under a causal mask, the 1-D forms are not
     * implemented; slopes (2/3) need no empty batch, no mode 7, and with
     * mode 8 S1 = S2 in every batch and q_start_idx = kv_start_idx */
    case C_TND_PSE_TYPE1: { /* the documented TND form 1NHS [1, N1, 1024, max S2], but no mask */
        int64_t sh[4] = {1, d.N1, 1024, d.S2};
        fx_extra(fx, PSE, f32, 4, sh);
        p->pse_type = 1;
        return true;
    }
    case C_TND_PSE_1D: { /* the undocumented 1-D TND form [T2 * N1] */
        int64_t sh[1] = {fx->T2 * d.N1};
        fx_extra(fx, PSE, f32, 1, sh);
        p->pse_type = 1;
        return true;
    }
    case C_TND_PSE2_EMPTY_BATCH: /* TND_BASE's batch 1 has no query rows */
        fx_slopes(fx, false);
        p->pse_type = 2;
        return true;
    case C_TND_PSE2_MODE7: case C_TND_PSE2_MODE8_S1_NE_S2: case C_TND_PSE2_MODE8_START_IDX: {
        static const seqs no_empty = {3, {3, 2, 4}, {5, 2, 6}}, last_differs = {3, {3, 2, 4}, {3, 2, 6}},
                          square = {3, {3, 2, 4}, {3, 2, 4}};
        static const int64_t one = 1, zero = 0;
        const bool m7 = c == C_TND_PSE2_MODE7;
        fx_reseq(fx, m7 ? &no_empty : c == C_TND_PSE2_MODE8_S1_NE_S2 ? &last_differs : &square);
        int64_t sh[2] = {2048, 2048};
        fx_mask(fx, ATTNOPS_DTYPE_BOOL, 2, sh);
        fx_slopes(fx, false);
        p->pse_type = 2;
        /* valid band tokens: mode 7's band batch 2 (S1 4, S2 6), mode 8's batch 0 (S1 = S2 = 3) */
        p->sparse_mode = m7 ? 7 : 8;
        p->pre_tokens = m7 ? 6 : 3, p->next_tokens = 0;
        /* MODE8_S1_NE_S2: only the last batch differs, so every batch is checked */
        if (c == C_TND_PSE2_MODE8_START_IDX) {
            fx_list(fx, QSTART, ATTNOPS_DTYPE_I64, 1, &one);
            fx_list(fx, KVSTART, ATTNOPS_DTYPE_I64, 1, &zero);
        }
        return true;
    }
    }
    return false;
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
    X(DROP_MASK_BITS)                                                                                              \
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

static void apply_valid(fixture *fx, int v)
{
    const dims d = fx->d;
    attnops_fa_params *p = P(fx);
    const attnops_dtype b8 = ATTNOPS_DTYPE_BOOL, u8 = ATTNOPS_DTYPE_U8, i64 = ATTNOPS_DTYPE_I64;
    int64_t full[4] = {d.B, d.N1, d.S1, d.S2}, comp[2] = {2048, 2048};
    switch (v) {
    case V_PLAIN: break;
    case V_DROPOUT_KEEP_HALF: p->keep_prob = 0.5, p->seed = 5, p->offset = 16; break;
    case V_DROP_MASK_BITS: {
        int64_t sh[1] = {(d.B * d.N1 * d.S1 * d.S2 + 7) / 8};
        fx_extra(fx, DROP, u8, 1, sh);
        p->keep_prob = 0.8;
        break;
    }
    case V_TND_DROPOUT: p->keep_prob = 0.9, p->seed = 2, p->offset = 0; break;
    case V_ROPE:
    case V_TND_ROPE: fx_rope(fx, 3, fx->op == BWD); break;
    case V_FP8_E4M3_F16_OUT: fx_fp8(fx, ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F16); break;
    case V_FP8_E5M2_BF16_OUT_MASK_PSE_DROPOUT: /* pse of the output dtype under FP8 */
        fx_fp8(fx, ATTNOPS_DTYPE_F8_E5M2, ATTNOPS_DTYPE_BF16);
        fx_mask(fx, b8, 2, comp), p->sparse_mode = 2;
        fx_extra(fx, PSE, ATTNOPS_DTYPE_BF16, 4, full), p->pse_type = 0;
        p->keep_prob = 0.8;
        break;
    case V_ROPE_MASK_PSE_DROPOUT: /* rope combines with everything (the aclnn entry's limits are not ours) */
        fx_rope(fx, d.D, fx->op == BWD);
        fx_mask(fx, b8, 2, comp), p->sparse_mode = 3;
        fx_slopes(fx, false), p->pse_type = 2;
        p->keep_prob = 0.9;
        break;
    case V_MASK_MODE1_B1SS_U8: full[1] = 1, fx_mask(fx, u8, 4, full), p->sparse_mode = 1; break;
    case V_MASK_MODE2_COMPRESSED_BOOL: fx_mask(fx, b8, 2, comp), p->sparse_mode = 2; break;
    case V_MASK_MODE6_PREFIX:
        comp[0] = 3072;
        fx_mask(fx, b8, 2, comp);
        fx_prefix(fx, i64);
        p->sparse_mode = 6;
        break;
    case V_PSE_TYPE0_BNSS: fx_extra(fx, PSE, fx->t[Q].view.dtype, 4, full), p->pse_type = 0; break;
    case V_PSE_TYPE2_SLOPES_START_IDX: {
        static const int64_t q_start = 3, kv_start = 1;
        fx_slopes(fx, false);
        fx_list(fx, QSTART, i64, 1, &q_start);
        fx_list(fx, KVSTART, i64, 1, &kv_start);
        p->pse_type = 2;
        break;
    }
    case V_MASK_MODE5_BNSS_I32_PREFIX:
        fx_mask(fx, b8, 4, full);
        fx_prefix(fx, ATTNOPS_DTYPE_I32);
        p->sparse_mode = 5;
        break;
    case V_MASK_MODE4_BAND: fx_mask(fx, u8, 2, comp), p->sparse_mode = 4, p->pre_tokens = 3, p->next_tokens = 1; break;
    case V_MASK_MODE0_SS_TOKENS: /* the tokens mode 4 rejects after its correction are fine for mode 0 */
        fx_mask(fx, b8, 2, full + 2);
        p->pre_tokens = -(d.S2 - 1), p->next_tokens = d.S2 - 1;
        break;
    case V_PSE_TYPE1_1NSS: full[0] = 1, fx_extra(fx, PSE, fx->t[Q].view.dtype, 4, full); break;
    case V_PSE_TYPE1_BN1S_MODE3:
        full[2] = 1;
        fx_extra(fx, PSE, fx->t[Q].view.dtype, 4, full);
        fx_mask(fx, u8, 2, comp);
        p->sparse_mode = 3;
        break;
    case V_PSE_TYPE3_BN_SLOPES_EMPTY_Q_START: {
        static const int64_t kv_start = 2;
        fx_slopes(fx, true);
        fx_list(fx, QSTART, i64, 0, NULL);
        fx_list(fx, KVSTART, i64, 1, &kv_start);
        p->pse_type = 3;
        break;
    }
    case V_NO_MASK_MODE0_PRE_BEYOND_S2: p->pre_tokens = -(d.S2 + 1), p->next_tokens = d.S2 + 1; break;
    case V_NO_MASK_MODE0_NO_BAND: p->pre_tokens = 2, p->next_tokens = -3; break;
    case V_NO_MASK_MODE4_CORRECTED: p->sparse_mode = 4, p->pre_tokens = -(d.S2 - 1), p->next_tokens = d.S2 - 1; break;
    case V_NO_MASK_MODE6_NO_PREFIX: p->sparse_mode = 6; break;

    /* TND, from TND_BASE: q lengths [3, 0, 4] -> [3, 3, 7], kv [5, 2, 6] ->
     * [5, 7, 13]; d.S1 = max S1 = 4, d.S2 = max S2 = 6 */
    case V_TND_PLAIN: break;
    case V_TND_I32_LISTS: fx_seq_lists(fx, ATTNOPS_DTYPE_I32); break;
    case V_TND_TRAILING_EMPTY_BATCHES: { /* [3, 7, 7, 7] and [5, 11, 11, 11]: B = 2 */
        static const seqs trailing = {4, {3, 4, 0, 0}, {5, 6, 0, 0}};
        fx_reseq(fx, &trailing);
        break;
    }
    case V_TND_STATS_SAME_AS_INPUT: { /* a true [T1, N1, 8] array: strided (padded rows) is fine */
        int64_t sh[3] = {fx->T1, d.N1, 8};
        p->softmax_in_layout = ATTNOPS_SOFTMAX_LAYOUT_SAME_AS_INPUT;
        fx_set_pad(fx, SMAX, ATTNOPS_DTYPE_F32, 3, sh, 1);
        fx_set(fx, SSUM, ATTNOPS_DTYPE_F32, 3, sh);
        break;
    }
    case V_TND_MODE0_SS_TOKENS: fx_mask(fx, b8, 2, full + 2), p->pre_tokens = 2, p->next_tokens = 1; break;
    case V_TND_MODE1_SS: fx_mask(fx, u8, 2, full + 2), p->sparse_mode = 1; break;
    case V_TND_MODE3_COMPRESSED: fx_mask(fx, b8, 2, comp), p->sparse_mode = 3; break; /* S1 <= S2 per batch */
    case V_TND_MODE7_BAND: /* band batch 2 (S1 4, S2 6): pre >= S2, S1 - S2 <= next <= 0 */
        fx_mask(fx, u8, 2, comp), p->sparse_mode = 7, p->pre_tokens = 6, p->next_tokens = 0;
        break;
    case V_TND_MODE8_BAND: /* band batch 0 (S1 3, S2 5): pre >= S2, next >= S1 - S2 */
        fx_mask(fx, b8, 2, comp), p->sparse_mode = 8, p->pre_tokens = 5, p->next_tokens = -2;
        break;
    case V_TND_PSE2_SLOPES: {
        static const seqs no_empty = {3, {3, 2, 4}, {5, 2, 6}};
        fx_reseq(fx, &no_empty);
        fx_slopes(fx, false);
        p->pse_type = 2;
        break;
    }
    /* valid only because trailing empty batches are dropped (spec 3.4): pse and
     * negative tokens refuse an empty batch that remains */
    case V_TND_PSE2_SLOPES_TRAILING_EMPTY: {
        static const seqs trailing = {4, {3, 2, 4, 0}, {5, 2, 6, 0}};
        fx_reseq(fx, &trailing);
        fx_slopes(fx, false);
        p->pse_type = 2;
        break;
    }
    case V_TND_MODE0_NEGATIVE_PRE_TRAILING_EMPTY: { /* a band 1 to 3 keys after the diagonal */
        static const seqs trailing = {3, {3, 4, 0}, {5, 6, 0}};
        fx_reseq(fx, &trailing);
        int64_t sh[2] = {4, 6};
        fx_mask(fx, b8, 2, sh), p->pre_tokens = -1, p->next_tokens = 3;
        break;
    }
    case V_TND_PSE2_BN_SLOPES_MODE8_SQUARE: { /* mode 8 takes pse when every S1 = S2 and q/kv starts agree */
        static const seqs square = {3, {3, 2, 4}, {3, 2, 4}};
        static const int64_t start = 2;
        fx_reseq(fx, &square);
        fx_mask(fx, b8, 2, comp);
        fx_slopes(fx, true);
        fx_list(fx, QSTART, i64, 1, &start);
        fx_list(fx, KVSTART, i64, 1, &start);
        p->pse_type = 2, p->sparse_mode = 8, p->pre_tokens = 3, p->next_tokens = 0;
        break;
    }
    case V_TND_NO_MASK_NO_BAND: p->pre_tokens = 2, p->next_tokens = -2; break; /* ignored without a mask */
    }
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
