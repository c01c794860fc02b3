/* Public KeyPool entry points: validate once, size the chosen
 * implementation's workspace, run it.  pooled_key and state_cache are
 * written only after every check has passed. */
#include "core/validate.h"
#include "cpu/kp_cpu.h"
#include "keypool/kp_problem.h"
#include "ref/kp_ref.h"

static const char *const OP = "KeyPool";

typedef struct kp_impl_ops {
    size_t (*workspace)(const kp_problem *);
    void (*run)(const kp_problem *, void *);
} kp_impl_ops;

static kp_impl_ops pick(const kp_problem *p)
{
    if (p->impl == ATTNOPS_IMPL_REFERENCE) return (kp_impl_ops){kp_ref_workspace, kp_ref_run};
    return (kp_impl_ops){kp_cpu_workspace, kp_cpu_run};
}

attnops_status attnops_key_pool_output_shape(const attnops_key_pool_args *args, int32_t *rank, int64_t shape[3])
{
    ao_clear_error();
    if (!rank || !shape) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: rank or shape is NULL.", OP);
    kp_problem p;
    attnops_status st = kp_validate(args, OP, false, &p);
    if (st != ATTNOPS_SUCCESS) return st;
    kp_output_shape(&p, rank, shape);
    return ATTNOPS_SUCCESS;
}

attnops_status attnops_key_pool_valid_rows(const attnops_key_pool_args *args, int64_t *valid_rows)
{
    ao_clear_error();
    if (!valid_rows) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: valid_rows is NULL.", OP);
    kp_problem p;
    attnops_status st = kp_validate(args, OP, false, &p);
    if (st != ATTNOPS_SUCCESS) return st;
    for (int64_t b = 0; b < p.B; b++) valid_rows[b] = kp_valid_rows(&p, b);
    return ATTNOPS_SUCCESS;
}

attnops_status attnops_key_pool_workspace_size(const attnops_key_pool_args *args, size_t *workspace_bytes)
{
    ao_clear_error();
    if (!workspace_bytes) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: workspace_bytes is NULL.", OP);
    kp_problem p;
    attnops_status st = kp_validate(args, OP, true, &p);
    if (st != ATTNOPS_SUCCESS) return st;
    *workspace_bytes = pick(&p).workspace(&p);
    return ATTNOPS_SUCCESS;
}

attnops_status attnops_key_pool(const attnops_key_pool_args *args, void *workspace, size_t workspace_bytes)
{
    ao_clear_error();
    kp_problem p;
    attnops_status st = kp_validate(args, OP, true, &p);
    if (st != ATTNOPS_SUCCESS) return st;
    const kp_impl_ops ops = pick(&p);
    AO_TRY(ao_check_workspace(OP, workspace, workspace_bytes, ops.workspace(&p)));
    p.team = ao_team_acquire(p.threads);
    ops.run(&p, workspace);
    ao_team_release(p.team);
    return ATTNOPS_SUCCESS;
}
