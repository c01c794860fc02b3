/* The aclnn IncreFlashAttention entry points (V1..V4): the decode step of
 * the FusedInferAttentionScore family, each mapped onto a fia_call
 * (acl_fia.h).  IncreFlashAttention's actualSeqLengths are the key/value
 * lengths; a query of more than one row per batch and the layouts TND and
 * BNSD_BSND are refused; V1 and V2 accept pseShift and do not read it, as
 * CANN's V1 and V2 pass NULL on; the int8 cache (V3, V4) is the combined
 * antiquantScale / antiquantOffset pair in mode 0.  Tensor indices for
 * aclSetInputTensorAddr count each signature's tensor inputs in order, NULL
 * ones included; for aclSetOutputTensorAddr attentionOut 0. */
#include "acl_fia.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"

#define IFA_V1 "aclnnIncreFlashAttention"
#define IFA_V2 "aclnnIncreFlashAttentionV2"
#define IFA_V3 "aclnnIncreFlashAttentionV3"
#define IFA_V4 "aclnnIncreFlashAttentionV4"

#define IFA_V1_TENSORS FIA_QUERY, FIA_KEY, FIA_VALUE, FIA_PSE_SHIFT, FIA_ATTEN_MASK
#define IFA_V2_TENSORS                                                                                               \
    IFA_V1_TENSORS, FIA_DEQ_SCALE1, FIA_QUANT_SCALE1, FIA_DEQ_SCALE2, FIA_QUANT_SCALE2, FIA_QUANT_OFFSET2
#define IFA_V3_TENSORS IFA_V2_TENSORS, FIA_ANTIQUANT_SCALE, FIA_ANTIQUANT_OFFSET, FIA_BLOCK_TABLE
static const fia_tensor V1_ORDER[] = {IFA_V1_TENSORS};
static const fia_tensor V2_ORDER[] = {IFA_V2_TENSORS};
static const fia_tensor V3_ORDER[] = {IFA_V3_TENSORS};
static const fia_tensor V4_ORDER[] = {IFA_V3_TENSORS, FIA_KV_PADDING_SIZE};

aclnnStatus aclnnIncreFlashAttentionGetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, int64_t numHeads, double scaleValue,
    char *inputLayout, int64_t numKeyValueHeads, const aclTensor *attentionOut, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const fia_call c = {.op = IFA_V1, .branch = FIA_BRANCH_DECODE, .order = V1_ORDER, .n_order = FIA_COUNT(V1_ORDER),
                        .t = {[FIA_QUERY] = query, [FIA_PSE_SHIFT] = pseShift, [FIA_ATTEN_MASK] = attenMask},
                        .key = key, .value = value, .pse_reserved = true, .kv_lens = actualSeqLengths,
                        .num_heads = numHeads, .scale_value = scaleValue, .pre_tokens = FIA_ALL_TOKENS,
                        .next_tokens = FIA_ALL_TOKENS, .layout = inputLayout,
                        .num_key_value_heads = numKeyValueHeads, .inner_precise = 1, .attention_out = attentionOut,
                        .no_lse = true};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttention(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     const aclrtStream stream)
{
    return acl_exec_run(IFA_V1, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV2GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclTensor *dequantScale1,
    const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, int64_t numHeads, double scaleValue, char *inputLayout, int64_t numKeyValueHeads,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fia_call c = {.op = IFA_V2, .branch = FIA_BRANCH_DECODE, .order = V2_ORDER, .n_order = FIA_COUNT(V2_ORDER),
                        .t = {[FIA_QUERY] = query, [FIA_PSE_SHIFT] = pseShift, [FIA_ATTEN_MASK] = attenMask,
                              [FIA_DEQ_SCALE1] = dequantScale1, [FIA_QUANT_SCALE1] = quantScale1,
                              [FIA_DEQ_SCALE2] = dequantScale2, [FIA_QUANT_SCALE2] = quantScale2,
                              [FIA_QUANT_OFFSET2] = quantOffset2},
                        .key = key, .value = value, .pse_reserved = true, .kv_lens = actualSeqLengths,
                        .num_heads = numHeads, .scale_value = scaleValue, .pre_tokens = FIA_ALL_TOKENS,
                        .next_tokens = FIA_ALL_TOKENS, .layout = inputLayout,
                        .num_key_value_heads = numKeyValueHeads, .inner_precise = 1, .attention_out = attentionOut,
                        .no_lse = true};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       const aclrtStream stream)
{
    return acl_exec_run(IFA_V2, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV3GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclTensor *dequantScale1,
    const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset,
    const aclTensor *blocktable, int64_t numHeads, double scaleValue, char *inputLayout, int64_t numKeyValueHeads,
    int64_t blockSize, int64_t innerPrecise, const aclTensor *attentionOut, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const fia_call c = {.op = IFA_V3, .branch = FIA_BRANCH_DECODE, .order = V3_ORDER, .n_order = FIA_COUNT(V3_ORDER),
                        .t = {[FIA_QUERY] = query, [FIA_PSE_SHIFT] = pseShift, [FIA_ATTEN_MASK] = attenMask,
                              [FIA_DEQ_SCALE1] = dequantScale1, [FIA_QUANT_SCALE1] = quantScale1,
                              [FIA_DEQ_SCALE2] = dequantScale2, [FIA_QUANT_SCALE2] = quantScale2,
                              [FIA_QUANT_OFFSET2] = quantOffset2, [FIA_ANTIQUANT_SCALE] = antiquantScale,
                              [FIA_ANTIQUANT_OFFSET] = antiquantOffset, [FIA_BLOCK_TABLE] = blocktable},
                        .key = key, .value = value, .kv_lens = actualSeqLengths, .num_heads = numHeads,
                        .scale_value = scaleValue, .pre_tokens = FIA_ALL_TOKENS, .next_tokens = FIA_ALL_TOKENS,
                        .layout = inputLayout, .num_key_value_heads = numKeyValueHeads,
                        .block_size = blockSize, .inner_precise = innerPrecise, .attention_out = attentionOut,
                        .no_lse = true};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       const aclrtStream stream)
{
    return acl_exec_run(IFA_V3, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclTensor *dequantScale1,
    const aclTensor *quantScale1, const aclTensor *dequantScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset,
    const aclTensor *blocktable, const aclTensor *kvPaddingSize, int64_t numHeads, double scaleValue,
    char *inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise,
    const aclTensor *attentionOut, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fia_call c = {.op = IFA_V4, .branch = FIA_BRANCH_DECODE, .order = V4_ORDER, .n_order = FIA_COUNT(V4_ORDER),
                        .t = {[FIA_QUERY] = query, [FIA_PSE_SHIFT] = pseShift, [FIA_ATTEN_MASK] = attenMask,
                              [FIA_DEQ_SCALE1] = dequantScale1, [FIA_QUANT_SCALE1] = quantScale1,
                              [FIA_DEQ_SCALE2] = dequantScale2, [FIA_QUANT_SCALE2] = quantScale2,
                              [FIA_QUANT_OFFSET2] = quantOffset2, [FIA_ANTIQUANT_SCALE] = antiquantScale,
                              [FIA_ANTIQUANT_OFFSET] = antiquantOffset, [FIA_BLOCK_TABLE] = blocktable,
                              [FIA_KV_PADDING_SIZE] = kvPaddingSize},
                        .key = key, .value = value, .kv_lens = actualSeqLengths, .num_heads = numHeads,
                        .scale_value = scaleValue, .pre_tokens = FIA_ALL_TOKENS, .next_tokens = FIA_ALL_TOKENS,
                        .layout = inputLayout, .num_key_value_heads = numKeyValueHeads,
                        .block_size = blockSize, .inner_precise = innerPrecise, .attention_out = attentionOut,
                        .no_lse = true};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnIncreFlashAttentionV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       const aclrtStream stream)
{
    return acl_exec_run(IFA_V4, EXEC_FIA, workspace, workspaceSize, executor, stream);
}
