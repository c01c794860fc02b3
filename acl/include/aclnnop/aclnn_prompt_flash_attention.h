/* attnops' CANN compatibility layer: the PromptFlashAttention (V1) entry points of CANN's
 * aclnnop/aclnn_prompt_flash_attention.h, with CANN's parameter list (written here), checked against
 * hicann/ops-transformer attention/prompt_flash_attention/op_host/op_api/aclnn_prompt_flash_attention.h at commit
 * c29bc1069d3252c641e2aa059ec88f392d3f05ac (docs/ACL.md).  Two-phase: ...GetWorkspaceSize validates and returns a
 * single-use executor, the second call runs it.  the prompt branch; key and value are tensors; no softmaxLse;
 * pseShift is accepted and not read (CANN's V1 passes NULL on); a query of one row per batch is refused with
 * attenMask or query lengths other than 1 (attnops runs it on the decode branch). */
#ifndef ATTNOPS_ACL_ACLNN_PROMPT_FLASH_ATTENTION_H
#define ATTNOPS_ACL_ACLNN_PROMPT_FLASH_ATTENTION_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, int64_t numHeads, double scaleValue,
    int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, const aclTensor *attentionOut,
    uint64_t *workspaceSize, aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnPromptFlashAttention(void *workspace, uint64_t workspaceSize,
                                                          aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
