/* The aclnn PromptFlashAttention entry points (V1..V3): the prompt branch
 * of the FusedInferAttentionScore family, each mapped onto a fia_call
 * (acl_fia.h).  key and value are tensors, not lists; there is no
 * softmaxLse.  V1 and V2 accept pseShift and do not read it, as CANN's V1
 * and V2 pass NULL on, and run with innerPrecise 1 as they do; V1 has no
 * sparseMode (0).  A query of one row per batch is refused with attenMask,
 * a sparseMode or query lengths other than 1 (acl_fia.c says why).  Tensor
 * indices for aclSetInputTensorAddr: query 0, key 1, value 2, pseShift 3,
 * attenMask 4, then (V2, V3) deqScale1 5 .. quantOffset2 9; for
 * aclSetOutputTensorAddr attentionOut 0. */
#include "acl_fia.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"

#define PFA_V1 "aclnnPromptFlashAttention"
#define PFA_V2 "aclnnPromptFlashAttentionV2"
#define PFA_V3 "aclnnPromptFlashAttentionV3"

#define PFA_V1_TENSORS FIA_QUERY, FIA_KEY, FIA_VALUE, FIA_PSE_SHIFT, FIA_ATTEN_MASK
static const fia_tensor V1_ORDER[] = {PFA_V1_TENSORS};
static const fia_tensor V2_ORDER[] = {PFA_V1_TENSORS, FIA_DEQ_SCALE1, FIA_QUANT_SCALE1, FIA_DEQ_SCALE2,
                                      FIA_QUANT_SCALE2, FIA_QUANT_OFFSET2};

aclnnStatus aclnnPromptFlashAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, int64_t numHeads, double scaleValue,
    int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, const aclTensor *attentionOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fia_call c = {.op = PFA_V1, .branch = FIA_BRANCH_PROMPT, .order = V1_ORDER, .n_order = FIA_COUNT(V1_ORDER),
                        .t = {[FIA_QUERY] = query, [FIA_KEY] = key, [FIA_VALUE] = value, [FIA_PSE_SHIFT] = pseShift,
                              [FIA_ATTEN_MASK] = attenMask},
                        .kv_tensors = true, .pse_reserved = true, .q_lens = actualSeqLengths, .num_heads = numHeads,
                        .scale_value = scaleValue, .pre_tokens = preTokens, .next_tokens = nextTokens,
                        .layout = inputLayout, .num_key_value_heads = numKeyValueHeads, .inner_precise = 1,
                        .attention_out = attentionOut, .no_lse = true};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnPromptFlashAttention(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                      const aclrtStream stream)
{
    return acl_exec_run(PFA_V1, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnPromptFlashAttentionV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,
    const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens,
    char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, const aclTensor *attentionOut,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fia_call c = {.op = PFA_V2, .branch = FIA_BRANCH_PROMPT, .order = V2_ORDER, .n_order = FIA_COUNT(V2_ORDER),
                        .t = {[FIA_QUERY] = query, [FIA_KEY] = key, [FIA_VALUE] = value, [FIA_PSE_SHIFT] = pseShift,
                              [FIA_ATTEN_MASK] = attenMask, [FIA_DEQ_SCALE1] = deqScale1,
                              [FIA_QUANT_SCALE1] = quantScale1, [FIA_DEQ_SCALE2] = deqScale2,
                              [FIA_QUANT_SCALE2] = quantScale2, [FIA_QUANT_OFFSET2] = quantOffset2},
                        .kv_tensors = true, .pse_reserved = true, .q_lens = actualSeqLengths,
                        .kv_lens = actualSeqLengthsKv, .num_heads = numHeads, .scale_value = scaleValue,
                        .pre_tokens = preTokens, .next_tokens = nextTokens, .layout = inputLayout,
                        .num_key_value_heads = numKeyValueHeads, .sparse_mode = sparseMode, .inner_precise = 1,
                        .attention_out = attentionOut, .no_lse = true};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnPromptFlashAttentionV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        const aclrtStream stream)
{
    return acl_exec_run(PFA_V2, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnPromptFlashAttentionV3GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,
    const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, int64_t numHeads, double scaleValue, int64_t preTokens, int64_t nextTokens,
    char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fia_call c = {.op = PFA_V3, .branch = FIA_BRANCH_PROMPT, .order = V2_ORDER, .n_order = FIA_COUNT(V2_ORDER),
                        .t = {[FIA_QUERY] = query, [FIA_KEY] = key, [FIA_VALUE] = value, [FIA_PSE_SHIFT] = pseShift,
                              [FIA_ATTEN_MASK] = attenMask, [FIA_DEQ_SCALE1] = deqScale1,
                              [FIA_QUANT_SCALE1] = quantScale1, [FIA_DEQ_SCALE2] = deqScale2,
                              [FIA_QUANT_SCALE2] = quantScale2, [FIA_QUANT_OFFSET2] = quantOffset2},
                        .kv_tensors = true, .q_lens = actualSeqLengths, .kv_lens = actualSeqLengthsKv,
                        .num_heads = numHeads, .scale_value = scaleValue, .pre_tokens = preTokens,
                        .next_tokens = nextTokens, .layout = inputLayout, .num_key_value_heads = numKeyValueHeads,
                        .sparse_mode = sparseMode, .inner_precise = innerPrecise, .attention_out = attentionOut,
                        .no_lse = true};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnPromptFlashAttentionV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        const aclrtStream stream)
{
    return acl_exec_run(PFA_V3, EXEC_FIA, workspace, workspaceSize, executor, stream);
}
