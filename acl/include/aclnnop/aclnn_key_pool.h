/* attnops' CANN compatibility layer: the KeyPool entry points of CANN's aclnnop/aclnn_key_pool.h, with the
 * parameter list of ops-transformer's attention/key_pool/docs/aclnnKeyPool.md (written here; docs/ACL.md).
 * Two-phase: aclnnKeyPoolGetWorkspaceSize validates and returns a single-use executor, aclnnKeyPool runs it.
 * stateCacheRef is updated in place; pooledKeyOut has the fixed capacity [B, ceil(L * blockSize / cmpRatio), D]
 * (zeros past each batch's valid rows), as the page documents.  stateCacheStrideDim0 must be stateCacheRef's own
 * stride of dimension 0 (the aclTensor carries it): another value is refused (161002), not trusted. */
#ifndef ATTNOPS_ACL_ACLNN_KEY_POOL_H
#define ATTNOPS_ACL_ACLNN_KEY_POOL_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnKeyPoolGetWorkspaceSize(
    const aclTensor *hiddenStates, const aclTensor *wk, const aclTensor *gateWeight, const aclTensor *ape,
    aclTensor *stateCacheRef, const aclTensor *cacheBlockTable, const aclTensor *startPos,
    const aclTensor *normWeightOptional, const aclTensor *normBiasOptional, const aclTensor *cosOptional,
    const aclTensor *sinOptional, const aclTensor *cuSeqlensOptional, const aclTensor *sequsedOptional,
    int64_t cmpRatio, double normEps, int64_t rotaryMode, int64_t stateCacheStrideDim0, aclTensor *pooledKeyOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnKeyPool(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
