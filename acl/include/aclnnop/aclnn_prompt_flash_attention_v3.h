/* attnops' CANN compatibility layer: the PromptFlashAttentionV3 entry points of CANN's
 * aclnnop/aclnn_prompt_flash_attention_v3.h, with CANN's parameter list (written here), checked against
 * hicann/ops-transformer attention/prompt_flash_attention/op_host/op_api/aclnn_prompt_flash_attention_v3.h at
 * commit c29bc1069d3252c641e2aa059ec88f392d3f05ac (docs/ACL.md).  Two-phase: ...GetWorkspaceSize validates and
 * returns a single-use executor, the second call runs it.  V2's rules, with pseShift read and innerPrecise. */
#ifndef ATTNOPS_ACL_ACLNN_PROMPT_FLASH_ATTENTION_V3_H
#define ATTNOPS_ACL_ACLNN_PROMPT_FLASH_ATTENTION_V3_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionV3GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,
    const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens,
    char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionV3(void *workspace, uint64_t workspaceSize,
                                                            aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
