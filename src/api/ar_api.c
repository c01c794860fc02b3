/* Public Block Attention Residuals entry points: validate once, size the
 * chosen implementation's workspace, run it.  No output is written before
 * every check has passed. */
#include "attnres/ar_problem.h"
#include "core/validate.h"
#include "cpu/ar_cpu.h"
#include "ref/ar_ref.h"

static const char *const FWD = "AttnRes";
static const char *const BWD = "AttnResGrad";

typedef struct ar_impl_ops {
    size_t (*workspace)(const ar_problem *);
    void (*run)(const ar_problem *, void *);
} ar_impl_ops;

/* The golden and the benchmark chain are the reference; AUTO is the fast kernel. */
static ar_impl_ops pick(const ar_problem *p)
{
    if (p->impl == ATTNOPS_IMPL_REFERENCE || p->impl == ATTNOPS_IMPL_BENCHMARK)
        return (ar_impl_ops){ar_ref_workspace, ar_ref_run};
    return (ar_impl_ops){ar_cpu_workspace, ar_cpu_run};
}

static attnops_status query(attnops_status validated, const ar_problem *p, size_t *workspace_bytes)
{
    if (validated != ATTNOPS_SUCCESS) return validated;
    *workspace_bytes = pick(p).workspace(p);
    return ATTNOPS_SUCCESS;
}

static attnops_status run(const char *op, attnops_status validated, ar_problem *p, void *workspace,
                          size_t workspace_bytes)
{
    if (validated != ATTNOPS_SUCCESS) return validated;
    const ar_impl_ops ops = pick(p);
    AO_TRY(ao_check_workspace(op, workspace, workspace_bytes, ops.workspace(p)));
    p->team = ao_team_acquire(p->threads);
    ops.run(p, workspace);
    ao_team_release(p->team);
    return ATTNOPS_SUCCESS;
}

attnops_status attnops_attn_res_workspace_size(const attnops_attn_res_fwd_args *args, size_t *workspace_bytes)
{
    ao_clear_error();
    if (!workspace_bytes) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: workspace_bytes is NULL.", FWD);
    ar_problem p;
    return query(ar_validate_fwd(args, FWD, &p), &p, workspace_bytes);
}

attnops_status attnops_attn_res(const attnops_attn_res_fwd_args *args, void *workspace, size_t workspace_bytes)
{
    ao_clear_error();
    ar_problem p;
    return run(FWD, ar_validate_fwd(args, FWD, &p), &p, workspace, workspace_bytes);
}

attnops_status attnops_attn_res_grad_workspace_size(const attnops_attn_res_bwd_args *args, size_t *workspace_bytes)
{
    ao_clear_error();
    if (!workspace_bytes) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: workspace_bytes is NULL.", BWD);
    ar_problem p;
    return query(ar_validate_bwd(args, BWD, &p), &p, workspace_bytes);
}

attnops_status attnops_attn_res_grad(const attnops_attn_res_bwd_args *args, void *workspace, size_t workspace_bytes)
{
    ao_clear_error();
    ar_problem p;
    return run(BWD, ar_validate_bwd(args, BWD, &p), &p, workspace, workspace_bytes);
}
