/* attnops' CANN compatibility layer: the IncreFlashAttentionV2 entry points of CANN's
 * aclnnop/aclnn_incre_flash_attention_v2.h, with CANN's parameter list (written here), checked against
 * hicann/ops-transformer attention/incre_flash_attention/op_host/op_api/aclnn_incre_flash_attention_v2.h at commit
 * c29bc1069d3252c641e2aa059ec88f392d3f05ac (docs/ACL.md).  Two-phase: ...GetWorkspaceSize validates and returns a
 * single-use executor, the second call runs it.  V1's rules; the quantised query/output arguments are refused when
 * given (161002); pseShift is accepted and not read (CANN's V2 passes NULL on). */
#ifndef ATTNOPS_ACL_ACLNN_INCRE_FLASH_ATTENTION_V2_H
#define ATTNOPS_ACL_ACLNN_INCRE_FLASH_ATTENTION_V2_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionV2GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclTensor *dequantScale1,
    const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, int64_t numHeads, double scaleValue, char *inputLayout, int64_t numKeyValueHeads,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionV2(void *workspace, uint64_t workspaceSize,
                                                           aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
