/* attnops' CANN compatibility layer: the IncreFlashAttentionV3 entry points of CANN's
 * aclnnop/aclnn_incre_flash_attention_v3.h, with CANN's parameter list (written here), checked against
 * hicann/ops-transformer attention/incre_flash_attention/op_host/op_api/aclnn_incre_flash_attention_v3.h at commit
 * c29bc1069d3252c641e2aa059ec88f392d3f05ac (docs/ACL.md).  Two-phase: ...GetWorkspaceSize validates and returns a
 * single-use executor, the second call runs it.  V2's rules, with pseShift read; an int8 cache takes the combined
 * antiquantScale / antiquantOffset pair in mode 0; blocktable pages the cache. */
#ifndef ATTNOPS_ACL_ACLNN_INCRE_FLASH_ATTENTION_V3_H
#define ATTNOPS_ACL_ACLNN_INCRE_FLASH_ATTENTION_V3_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionV3GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclTensor *dequantScale1,
    const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset,
    const aclTensor *blocktable, int64_t numHeads, double scaleValue, char *inputLayout, int64_t numKeyValueHeads,
    int64_t blockSize, int64_t innerPrecise, const aclTensor *attentionOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionV3(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
