/* Public FlashAttention entry points: validate once, size the workspace of
 * the chosen implementation, run it.  Nothing is written to an output before
 * every check has passed. */
#include "attn/attn_plan.h"
#include "core/validate.h"
#include "cpu/fa_cpu.h"
#include "fa/fa_problem.h"
#include "fa/fa_rope_join.h"
#include "fa/fa_sink.h"
#include "ref/fa_ref.h"

/* The backward: the golden, or the fast kernel (the forward's choice is the planner's, attn_plan.c). */
static bool backward_on_golden(const fa_problem *p)
{
    return p->impl == ATTNOPS_IMPL_REFERENCE || p->impl == ATTNOPS_IMPL_BENCHMARK;
}

static size_t impl_workspace_size(const fa_problem *p, bool backward)
{
    if (fa_problem_is_empty(p)) return 0;
    if (backward) return backward_on_golden(p) ? fa_ref_bwd_workspace(p) : fa_cpu_bwd_workspace(p);
    attn_plan plan;
    attn_plan_fa_fwd(p, &plan);
    return attn_plan_workspace(&plan);
}

static void impl_run(const fa_problem *p, bool backward, void *ws)
{
    if (backward) {
        if (backward_on_golden(p)) fa_ref_bwd(p, ws);
        else fa_cpu_bwd(p, ws);
        return;
    }
    attn_plan plan;
    attn_plan_fa_fwd(p, &plan);
    attn_plan_run(&plan, ws);
}

static size_t workspace_size(const fa_problem *p, bool backward)
{
    const fa_problem j = fa_rope_join_problem(p, backward, NULL);
    return fa_rope_join_bytes(p, backward) + impl_workspace_size(&j, backward);
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

/* Where the joined views lie (the workspace, not yet checked) changes no
 * size, so the size check can plan the joined problem before its inputs are
 * joined. */
static attnops_status run(const fa_problem *p, bool backward, void *ws, size_t bytes)
{
    const fa_problem j = fa_rope_join_problem(p, backward, ws);
    const bool empty = fa_problem_is_empty(&j);
    const size_t join_bytes = fa_rope_join_bytes(p, backward);
    AO_TRY(ao_check_workspace(p->op, ws, bytes, join_bytes + impl_workspace_size(&j, backward)));
    fa_rope_join_inputs(p, &j);
    if (!empty) impl_run(&j, backward, (char *)ws + join_bytes);
    else if (backward) zero_kv_grads(&j);
    if (backward) fa_rope_split_grads(p, &j);
    if (backward) fa_sink_grad(p);
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
