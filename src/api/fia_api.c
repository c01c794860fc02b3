/* Public FusedInferAttentionScore entry points: validate once, size the
 * planned kernel's workspace (attn_plan.c: REFERENCE the golden; AUTO and
 * CPU the split-KV kernel, or the tiled one for a long prompt), run it.  No
 * output is written before every check has passed. */
#include <limits.h>
#include <string.h>

#include "attn/attn_plan.h"
#include "core/validate.h"
#include "fia/fia_problem.h"

static const char *const OP = "FusedInferAttentionScore";

void attnops_fia_args_init(attnops_fia_args *a)
{
    memset(a, 0, sizeof *a);
    a->num_heads = 1;
    a->scale_value = 1.0;
    a->pre_tokens = INT32_MAX;
    a->next_tokens = INT32_MAX;
    a->input_layout = ATTNOPS_LAYOUT_BSH;
}

attnops_status attnops_fused_infer_attention_score_workspace_size(const attnops_fia_args *args,
                                                                 size_t *workspace_bytes)
{
    ao_clear_error();
    if (!workspace_bytes) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: workspace_bytes is NULL.", OP);
    fia_problem p;
    AO_TRY(fia_validate(args, OP, &p));
    attn_plan plan;
    attn_plan_fia(&p, &plan);
    *workspace_bytes = attn_plan_workspace(&plan);
    return ATTNOPS_SUCCESS;
}

/* Without softmax_lse_flag a given softmax_lse is written 0 (CANN's
 * documented value; spec gap G7). */
static void zero_lse(const attnops_tensor *t)
{
    int64_t idx[ATTNOPS_MAX_RANK] = {0};
    const int64_t n = ao_tensor_numel(t);
    for (int64_t e = 0; e < n; e++) {
        int64_t at = 0;
        for (int d = 0; d < t->rank; d++) at += idx[d] * t->strides[d];
        ((float *)t->data)[at] = 0.0f;
        for (int d = t->rank - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
    }
}

attnops_status attnops_fused_infer_attention_score(const attnops_fia_args *args, void *workspace,
                                                  size_t workspace_bytes)
{
    ao_clear_error();
    fia_problem p;
    AO_TRY(fia_validate(args, OP, &p));
    p.team = ao_team_acquire(p.threads);
    attn_plan plan;
    attn_plan_fia(&p, &plan);
    const attnops_status st = ao_check_workspace(OP, workspace, workspace_bytes, attn_plan_workspace(&plan));
    if (st == ATTNOPS_SUCCESS) {
        if (p.lse && !p.lse_flag) zero_lse(p.lse);
        attn_plan_run(&plan, workspace);
    }
    ao_team_release(p.team);
    return st;
}
