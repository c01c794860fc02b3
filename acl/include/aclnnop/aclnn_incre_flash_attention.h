/* attnops' CANN compatibility layer: the IncreFlashAttention (V1) entry points of CANN's
 * aclnnop/aclnn_incre_flash_attention.h, with CANN's parameter list (written here), checked against
 * hicann/ops-transformer attention/incre_flash_attention/op_host/op_api/aclnn_incre_flash_attention.h at commit
 * c29bc1069d3252c641e2aa059ec88f392d3f05ac (docs/ACL.md).  Two-phase: ...GetWorkspaceSize validates and returns a
 * single-use executor, the second call runs it.  the decode step: one query row per batch (S = 1), layouts BSH,
 * BSND, BNSD; actualSeqLengths are the key/value lengths; key and value are lists of one tensor each; pseShift is
 * accepted and not read (CANN's V1 passes NULL on). */
#ifndef ATTNOPS_ACL_ACLNN_INCRE_FLASH_ATTENTION_H
#define ATTNOPS_ACL_ACLNN_INCRE_FLASH_ATTENTION_H

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, int64_t numHeads, double scaleValue,
    char *inputLayout, int64_t numKeyValueHeads, const aclTensor *attentionOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);
ACL_FUNC_VISIBILITY aclnnStatus aclnnIncreFlashAttention(void *workspace, uint64_t workspaceSize,
                                                         aclOpExecutor *executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
