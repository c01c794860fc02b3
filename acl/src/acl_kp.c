/* The aclnn KeyPool entry points (aclnnop/aclnn_key_pool.h) over attnops_key_pool, with the fixed capacity
 * CANN's page documents.  Tensor indices for aclSetInputTensorAddr: hiddenStates 0, wk 1, gateWeight 2, ape 3,
 * stateCacheRef 4, cacheBlockTable 5, startPos 6, normWeight 7, normBias 8, cos 9, sin 10, cuSeqlens 11,
 * seqused 12; for aclSetOutputTensorAddr pooledKeyOut 0. */
#include "acl_internal.h"
#include "aclnnop/aclnn_key_pool.h"

#define KP "aclnnKeyPool"

static attnops_status call_key_pool(const aclOpExecutor *e, void *ws, size_t n)
{
    return attnops_key_pool(&e->kp, ws, n);
}

aclnnStatus aclnnKeyPoolGetWorkspaceSize(const aclTensor *hiddenStates, const aclTensor *wk,
                                         const aclTensor *gateWeight, const aclTensor *ape, aclTensor *stateCacheRef,
                                         const aclTensor *cacheBlockTable, const aclTensor *startPos,
                                         const aclTensor *normWeightOptional, const aclTensor *normBiasOptional,
                                         const aclTensor *cosOptional, const aclTensor *sinOptional,
                                         const aclTensor *cuSeqlensOptional, const aclTensor *sequsedOptional,
                                         int64_t cmpRatio, double normEps, int64_t rotaryMode,
                                         int64_t stateCacheStrideDim0, aclTensor *pooledKeyOut,
                                         uint64_t *workspaceSize, aclOpExecutor **executor)
{
    aclnnStatus st = acl_exec_check_phase_one(KP, workspaceSize, executor);
    if (st != ACLNN_SUCCESS) return st;
    if (stateCacheRef && stateCacheRef->view.rank > 0 && stateCacheStrideDim0 != stateCacheRef->view.strides[0]) {
        acl_set_error("%s: stateCacheStrideDim0 is %lld but stateCacheRef's stride of dimension 0 is %lld; they must "
                      "agree.", KP, (long long)stateCacheStrideDim0, (long long)stateCacheRef->view.strides[0]);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclOpExecutor *e = acl_exec_new(KP, EXEC_KEY_POOL);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    e->call = call_key_pool;
    attnops_key_pool_args *a = &e->kp;
    const aclTensor *in[] = {hiddenStates,       wk,         gateWeight,  ape,        stateCacheRef,
                             cacheBlockTable,    startPos,   normWeightOptional, normBiasOptional, cosOptional,
                             sinOptional,        cuSeqlensOptional, sequsedOptional};
    const attnops_tensor **field[] = {&a->hidden_states, &a->wk,     &a->gate_weight, &a->ape,     &a->state_cache,
                                      &a->cache_block_table, &a->start_pos, &a->norm_weight, &a->norm_bias, &a->cos,
                                      &a->sin,           &a->cu_seqlens, &a->seqused};
    e->n_inputs = (int)(sizeof in / sizeof in[0]), e->n_outputs = 1;
    for (int i = 0; i < e->n_inputs; i++) *field[i] = acl_exec_slot(e, &e->inputs[i], in[i]);
    a->pooled_key = acl_exec_slot(e, &e->outputs[0], pooledKeyOut);
    a->cmp_ratio = cmpRatio, a->norm_eps = normEps, a->rotary_mode = rotaryMode;
    a->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED;
    size_t bytes = 0;
    st = acl_exec_impl(KP, &a->impl);
    if (st == ACLNN_SUCCESS) {
        st = acl_status_from(attnops_key_pool_workspace_size(a, &bytes));
        if (st != ACLNN_SUCCESS) acl_set_error("%s: %s", KP, attnops_last_error());
    }
    return acl_exec_finish_phase_one(e, st, bytes, workspaceSize, executor);
}

aclnnStatus aclnnKeyPool(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)
{
    return acl_exec_run(KP, EXEC_KEY_POOL, workspace, workspaceSize, executor, stream);
}
