/* Public FlashAttention entry points: validate once, size the workspace of
 * the chosen implementation, run it.  Nothing is written to an output before
 * every check has passed. */
#include <string.h>

#include "core/validate.h"
#include "cpu/fa_cpu.h"
#include "fa/fa_problem.h"
#include "ref/fa_ref.h"

typedef struct fa_impl_ops {
    size_t (*workspace)(const fa_problem *);
    void (*run)(const fa_problem *, void *);
} fa_impl_ops;

/* The FP8 forward exists in the reference only (the fast kernel's online
 * softmax cannot quantise the final P the golden quantises); AUTO takes it. */
static fa_impl_ops pick(const fa_problem *p, bool backward)
{
    if (p->impl == ATTNOPS_IMPL_REFERENCE || p->impl == ATTNOPS_IMPL_BENCHMARK || (p->fp8 && !backward))
        return backward ? (fa_impl_ops){fa_ref_bwd_workspace, fa_ref_bwd} : (fa_impl_ops){fa_ref_fwd_workspace, fa_ref_fwd};
    return backward ? (fa_impl_ops){fa_cpu_bwd_workspace, fa_cpu_bwd} : (fa_impl_ops){fa_cpu_fwd_workspace, fa_cpu_fwd};
}

static size_t impl_workspace_size(const fa_problem *p, bool backward)
{
    return fa_problem_is_empty(p) ? 0 : pick(p, backward).workspace(p);
}

/* ---- MLA (spec 1.3): the implementations see one head dim D + Dr ----
 * Q = [query | query_rope] and K = [key | key_rope] are gathered into
 * workspace copies, BNSD-dense [B][N][S][D + Dr] ([N][T][D + Dr] in TND,
 * whose views carry the global row); the backward's dq and dk land in two
 * more and are copied out to dq | dq_rope and dk | dk_rope.  Copies are
 * exact (same dtype): each gradient is rounded once, by the implementation.
 * The cost is O(S D) against attention's O(S^2 D). */
enum { JOIN_Q, JOIN_K, JOIN_DQ, JOIN_DK, JOIN_COUNT };

static int64_t join_rows(const fa_problem *p, int which)
{
    const bool q_side = which == JOIN_Q || which == JOIN_DQ;
    return p->varlen ? (q_side ? p->T1 : p->T2) : (q_side ? p->S1 : p->S2);
}

static int64_t join_heads(const fa_problem *p, int which)
{
    return which == JOIN_Q || which == JOIN_DQ ? p->N1 : p->N2;
}

static size_t join_piece_bytes(const fa_problem *p, int which)
{
    const int64_t batches = p->varlen ? 1 : p->B;
    return ao_align_up((size_t)(batches * join_heads(p, which) * join_rows(p, which) * (p->D + p->Dr)) *
                           attnops_dtype_size(p->dtype), 64);
}

static int join_pieces(bool backward) { return backward ? JOIN_COUNT : JOIN_DQ; }

static size_t join_bytes(const fa_problem *p, bool backward)
{
    size_t total = 0;
    for (int w = 0; p->Dr && w < join_pieces(backward); w++) total += join_piece_bytes(p, w);
    return total;
}

static fa_view join_view(const fa_problem *p, int which, char *data)
{
    const int64_t Dt = p->D + p->Dr, rows = join_rows(p, which);
    const int64_t sn = rows * Dt, sb = p->varlen ? 0 : join_heads(p, which) * sn;
    return (fa_view){data, p->dtype, (int64_t)attnops_dtype_size(p->dtype), sb, sn, Dt, 1};
}

/* Columns [s_col0, s_col0 + cols) of every head row of src into dst's
 * columns [d_col0, d_col0 + cols); `which` gives the side's heads and rows. */
static void copy_columns(const fa_problem *p, int which, const fa_view *src, int64_t s_col0, const fa_view *dst,
                         int64_t d_col0, int64_t cols)
{
    const int64_t batches = p->varlen ? 1 : p->B, heads = join_heads(p, which), rows = join_rows(p, which);
    const size_t es = (size_t)src->esize;
    for (int64_t b = 0; b < batches; b++)
        for (int64_t n = 0; n < heads; n++)
            for (int64_t s = 0; s < rows; s++) {
                if (src->sd == 1 && dst->sd == 1) {
                    memcpy(fa_at(dst, b, n, s, d_col0), fa_at(src, b, n, s, s_col0), (size_t)cols * es);
                    continue;
                }
                for (int64_t c = 0; c < cols; c++)
                    memcpy(fa_at(dst, b, n, s, d_col0 + c), fa_at(src, b, n, s, s_col0 + c), es);
            }
}

/* The problem with Dr folded into D, its joined views carved from `area`
 * (NULL when only sizes are needed). */
static fa_problem join_problem(const fa_problem *p, bool backward, char *area)
{
    fa_problem j = *p;
    if (!p->Dr) return j;
    j.D = p->D + p->Dr, j.Dr = 0;
    fa_view *views[JOIN_COUNT] = {&j.q, &j.k, &j.dq, &j.dk};
    for (int w = 0; w < join_pieces(backward); w++) {
        *views[w] = join_view(p, w, area);
        if (area) area += join_piece_bytes(p, w);
    }
    return j;
}

static size_t workspace_size(const fa_problem *p, bool backward)
{
    const fa_problem j = join_problem(p, backward, NULL);
    return join_bytes(p, backward) + impl_workspace_size(&j, backward);
}

/* A backward with no query rows still has kv rows: their gradients are 0. */
static void zero_kv_grads(const fa_problem *p)
{
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t n = 0; n < p->N2; n++)
            for (int64_t s = fa_kv_first(p, b); s < fa_kv_first(p, b) + fa_kv_len(p, b); s++) {
                for (int64_t d = 0; d < p->D; d++) ao_store_f64(fa_at(&p->dk, b, n, s, d), p->out_dtype, 0.0);
                for (int64_t d = 0; d < p->Dv; d++) ao_store_f64(fa_at(&p->dv, b, n, s, d), p->out_dtype, 0.0);
            }
}

static attnops_status run(const fa_problem *p, bool backward, void *ws, size_t bytes)
{
    const size_t need = workspace_size(p, backward);
    AO_TRY(ao_check_workspace(p->op, ws, bytes, need));
    const fa_problem j = join_problem(p, backward, ws);
    if (p->Dr) {
        copy_columns(p, JOIN_Q, &p->q, 0, &j.q, 0, p->D);
        copy_columns(p, JOIN_Q, &p->qr, 0, &j.q, p->D, p->Dr);
        copy_columns(p, JOIN_K, &p->k, 0, &j.k, 0, p->D);
        copy_columns(p, JOIN_K, &p->kr, 0, &j.k, p->D, p->Dr);
    }
    if (!fa_problem_is_empty(&j)) pick(&j, backward).run(&j, (char *)ws + join_bytes(p, backward));
    else if (backward) zero_kv_grads(&j);
    if (p->Dr && backward) {
        copy_columns(p, JOIN_DQ, &j.dq, 0, &p->dq, 0, p->D);
        copy_columns(p, JOIN_DQ, &j.dq, p->D, &p->dqr, 0, p->Dr);
        copy_columns(p, JOIN_DK, &j.dk, 0, &p->dk, 0, p->D);
        copy_columns(p, JOIN_DK, &j.dk, p->D, &p->dkr, 0, p->Dr);
    }
    return ATTNOPS_SUCCESS;
}

/* The four public operators share these; `tnd_only` is the varlen entry
 * points' extra rule (like aclnnFlashAttentionVarLenScore and
 * aclnnFlashAttentionUnpaddingScoreGradV2, they take only layout TND). */
typedef struct fa_entry {
    const char *op;
    bool backward, tnd_only;
} fa_entry;

static const fa_entry FWD = {"FlashAttentionScore", false, false};
static const fa_entry BWD = {"FlashAttentionScoreGrad", true, false};
static const fa_entry VARLEN_FWD = {"FlashAttentionVarLenScore", false, true};
static const fa_entry UNPADDING_BWD = {"FlashAttentionUnpaddingScoreGrad", true, true};

static attnops_status validate(const fa_entry *e, const void *args, fa_problem *p)
{
    if (!args) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: args is NULL.", e->op);
    const attnops_fa_params *params =
        e->backward ? &((const attnops_fa_bwd_args *)args)->p : &((const attnops_fa_fwd_args *)args)->p;
    if (e->tnd_only && params->input_layout != ATTNOPS_LAYOUT_TND)
        return ao_fail(ATTNOPS_ERR_PARAM_INVALID, "%s: input_layout %s is not TND.", e->op,
                       attnops_layout_name(params->input_layout));
    const attnops_status st = e->backward ? fa_validate_bwd(args, e->op, p) : fa_validate_fwd(args, e->op, p);
    if (st == ATTNOPS_SUCCESS && p->fp8 && !e->backward && p->impl == ATTNOPS_IMPL_CPU)
        return ao_fail(ATTNOPS_ERR_UNSUPPORTED, "%s: impl CPU has no FP8 forward; use impl AUTO or REFERENCE (the "
                       "reference computes it).", e->op);
    return st;
}

static attnops_status entry_workspace_size(const fa_entry *e, const void *args, size_t *bytes)
{
    ao_clear_error();
    if (!bytes) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: workspace_bytes is NULL.", e->op);
    fa_problem p;
    attnops_status st = validate(e, args, &p);
    if (st == ATTNOPS_SUCCESS) *bytes = workspace_size(&p, e->backward);
    return st;
}

static attnops_status entry_run(const fa_entry *e, const void *args, void *ws, size_t bytes)
{
    ao_clear_error();
    fa_problem p;
    attnops_status st = validate(e, args, &p);
    if (st != ATTNOPS_SUCCESS) return st;
    p.team = ao_team_acquire(p.threads);
    st = run(&p, e->backward, ws, bytes);
    ao_team_release(p.team);
    return st;
}

attnops_status attnops_flash_attention_score_workspace_size(const attnops_fa_fwd_args *args, size_t *bytes)
{
    return entry_workspace_size(&FWD, args, bytes);
}

attnops_status attnops_flash_attention_score(const attnops_fa_fwd_args *args, void *ws, size_t bytes)
{
    return entry_run(&FWD, args, ws, bytes);
}

attnops_status attnops_flash_attention_score_grad_workspace_size(const attnops_fa_bwd_args *args, size_t *bytes)
{
    return entry_workspace_size(&BWD, args, bytes);
}

attnops_status attnops_flash_attention_score_grad(const attnops_fa_bwd_args *args, void *ws, size_t bytes)
{
    return entry_run(&BWD, args, ws, bytes);
}

attnops_status attnops_flash_attention_varlen_score_workspace_size(const attnops_fa_fwd_args *args, size_t *bytes)
{
    return entry_workspace_size(&VARLEN_FWD, args, bytes);
}

attnops_status attnops_flash_attention_varlen_score(const attnops_fa_fwd_args *args, void *ws, size_t bytes)
{
    return entry_run(&VARLEN_FWD, args, ws, bytes);
}

attnops_status attnops_flash_attention_unpadding_score_grad_workspace_size(const attnops_fa_bwd_args *args,
                                                                           size_t *bytes)
{
    return entry_workspace_size(&UNPADDING_BWD, args, bytes);
}

attnops_status attnops_flash_attention_unpadding_score_grad(const attnops_fa_bwd_args *args, void *ws, size_t bytes)
{
    return entry_run(&UNPADDING_BWD, args, ws, bytes);
}
