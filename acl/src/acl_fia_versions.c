/* The aclnn FusedInferAttentionScore (V1), ...V2, ...V4 and ...V5 entry points:
 * each maps its parameter list onto the family's fia_call (acl_fia.h); the
 * rules are V3's (acl_fia.c).  V4's dequantScaleQuery and a queryQuantMode
 * other than 0 are refused by name; its learnableSink is the library's.
 * V5 (the Ascend 950 entry) is V4 with qStartIdx / kvStartIdx and pseType:
 * pseType 0 is V4's pseShift; 2 and 3 make the ALiBi inside from the slopes
 * in pseShift and the start indices (the library's alibi_rule).  Tensor indices for
 * aclSetInputTensorAddr count each signature's tensor inputs in order, NULL
 * ones included (the *_ORDER tables below); for aclSetOutputTensorAddr
 * attentionOut 0, softmaxLse 1. */
#include "acl_fia.h"
#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"

#define FIA_V1 "aclnnFusedInferAttentionScore"
#define FIA_V2 "aclnnFusedInferAttentionScoreV2"
#define FIA_V4 "aclnnFusedInferAttentionScoreV4"
#define FIA_V5 "aclnnFusedInferAttentionScoreV5"

static const fia_tensor V1_ORDER[] = {FIA_V1_TENSORS};
static const fia_tensor V2_ORDER[] = {FIA_V2_TENSORS};
/* V4's and V5's (V5's start indices are integer arrays, not tensors) */
static const fia_tensor V4_ORDER[] = {FIA_V3_TENSORS, FIA_DEQUANT_SCALE_QUERY, FIA_LEARNABLE_SINK};

aclnnStatus aclnnFusedInferAttentionScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShift,
    const aclTensor *attenMask, const aclIntArray *actualSeqLengths, const aclIntArray *actualSeqLengthsKv,
    const aclTensor *deqScale1, const aclTensor *quantScale1, const aclTensor *deqScale2, const aclTensor *quantScale2,
    const aclTensor *quantOffset2, const aclTensor *antiquantScale, const aclTensor *antiquantOffset,
    const aclTensor *blockTable, const aclTensor *queryPaddingSize, const aclTensor *kvPaddingSize, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const fia_call c = {
        .op = FIA_V1, .order = V1_ORDER, .n_order = FIA_COUNT(V1_ORDER), .key = key, .value = value,
        .t = {[FIA_QUERY] = query, [FIA_PSE_SHIFT] = pseShift, [FIA_ATTEN_MASK] = attenMask,
              [FIA_DEQ_SCALE1] = deqScale1, [FIA_QUANT_SCALE1] = quantScale1, [FIA_DEQ_SCALE2] = deqScale2,
              [FIA_QUANT_SCALE2] = quantScale2, [FIA_QUANT_OFFSET2] = quantOffset2,
              [FIA_ANTIQUANT_SCALE] = antiquantScale, [FIA_ANTIQUANT_OFFSET] = antiquantOffset,
              [FIA_BLOCK_TABLE] = blockTable, [FIA_QUERY_PADDING_SIZE] = queryPaddingSize,
              [FIA_KV_PADDING_SIZE] = kvPaddingSize},
        .q_lens = actualSeqLengths, .kv_lens = actualSeqLengthsKv, .num_heads = numHeads, .scale_value = scaleValue,
        .pre_tokens = preTokens, .next_tokens = nextTokens, .layout = inputLayout,
        .num_key_value_heads = numKeyValueHeads, .sparse_mode = sparseMode, .inner_precise = innerPrecise,
        .block_size = blockSize, .antiquant_mode = antiquantMode, .softmax_lse_flag = softmaxLseFlag,
        .attention_out = attentionOut, .softmax_lse = softmaxLse};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                          const aclrtStream stream)
{
    return acl_exec_run(FIA_V1, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional,
    const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional,
    const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,
    const aclIntArray *actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue, int64_t preTokens,
    int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse, uint64_t *workspaceSize,
    aclOpExecutor **executor)
{
    const fia_call c = {
        .op = FIA_V2, .order = V2_ORDER, .n_order = FIA_COUNT(V2_ORDER), .key = key, .value = value,
        .t = {[FIA_QUERY] = query, [FIA_PSE_SHIFT] = pseShiftOptional, [FIA_ATTEN_MASK] = attenMaskOptional,
              [FIA_DEQ_SCALE1] = deqScale1Optional, [FIA_QUANT_SCALE1] = quantScale1Optional,
              [FIA_DEQ_SCALE2] = deqScale2Optional, [FIA_QUANT_SCALE2] = quantScale2Optional,
              [FIA_QUANT_OFFSET2] = quantOffset2Optional, [FIA_ANTIQUANT_SCALE] = antiquantScaleOptional,
              [FIA_ANTIQUANT_OFFSET] = antiquantOffsetOptional, [FIA_BLOCK_TABLE] = blockTableOptional,
              [FIA_QUERY_PADDING_SIZE] = queryPaddingSizeOptional, [FIA_KV_PADDING_SIZE] = kvPaddingSizeOptional,
              [FIA_KEY_ANTIQUANT_SCALE] = keyAntiquantScaleOptional,
              [FIA_KEY_ANTIQUANT_OFFSET] = keyAntiquantOffsetOptional,
              [FIA_VALUE_ANTIQUANT_SCALE] = valueAntiquantScaleOptional,
              [FIA_VALUE_ANTIQUANT_OFFSET] = valueAntiquantOffsetOptional,
              [FIA_KEY_SHARED_PREFIX] = keySharedPrefixOptional, [FIA_VALUE_SHARED_PREFIX] = valueSharedPrefixOptional},
        .q_lens = actualSeqLengthsOptional, .kv_lens = actualSeqLengthsKvOptional,
        .prefix_lens = actualSharedPrefixLenOptional, .num_heads = numHeads, .scale_value = scaleValue,
        .pre_tokens = preTokens, .next_tokens = nextTokens, .layout = inputLayout,
        .num_key_value_heads = numKeyValueHeads, .sparse_mode = sparseMode, .inner_precise = innerPrecise,
        .block_size = blockSize, .antiquant_mode = antiquantMode, .softmax_lse_flag = softmaxLseFlag,
        .key_antiquant_mode = keyAntiquantMode, .value_antiquant_mode = valueAntiquantMode,
        .attention_out = attentionOut, .softmax_lse = softmaxLse};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            const aclrtStream stream)
{
    return acl_exec_run(FIA_V2, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

/* V5's parameter list, as its header declares it (the compiler holds the two to one list) */
#define V5_PARAMS \
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional, \
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional, \
    const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional, \
    const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional, \
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional, \
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional, \
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional, \
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional, \
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional, \
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional, \
    const aclIntArray *actualSharedPrefixLenOptional, const aclTensor *queryRopeOptional, \
    const aclTensor *keyRopeOptional, const aclTensor *keyRopeAntiquantScaleOptional, \
    const aclTensor *dequantScaleQueryOptional, const aclTensor *learnableSinkOptional, \
    const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional, int64_t numHeads, double scaleValue, \
    int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, \
    int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode, \
    int64_t valueAntiquantMode, int64_t queryQuantMode, int64_t pseType, const aclTensor *attentionOut, \
    const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor

/* V4 and V5: V4 is V5 without the start indices, with pseType 0. */
static aclnnStatus prepare_v4_v5(const char *op, V5_PARAMS)
{
    const fia_call c = {
        .op = op, .order = V4_ORDER, .n_order = FIA_COUNT(V4_ORDER), .key = key, .value = value,
        .t = {[FIA_QUERY] = query, [FIA_PSE_SHIFT] = pseShiftOptional, [FIA_ATTEN_MASK] = attenMaskOptional,
              [FIA_DEQ_SCALE1] = deqScale1Optional, [FIA_QUANT_SCALE1] = quantScale1Optional,
              [FIA_DEQ_SCALE2] = deqScale2Optional, [FIA_QUANT_SCALE2] = quantScale2Optional,
              [FIA_QUANT_OFFSET2] = quantOffset2Optional, [FIA_ANTIQUANT_SCALE] = antiquantScaleOptional,
              [FIA_ANTIQUANT_OFFSET] = antiquantOffsetOptional, [FIA_BLOCK_TABLE] = blockTableOptional,
              [FIA_QUERY_PADDING_SIZE] = queryPaddingSizeOptional, [FIA_KV_PADDING_SIZE] = kvPaddingSizeOptional,
              [FIA_KEY_ANTIQUANT_SCALE] = keyAntiquantScaleOptional,
              [FIA_KEY_ANTIQUANT_OFFSET] = keyAntiquantOffsetOptional,
              [FIA_VALUE_ANTIQUANT_SCALE] = valueAntiquantScaleOptional,
              [FIA_VALUE_ANTIQUANT_OFFSET] = valueAntiquantOffsetOptional,
              [FIA_KEY_SHARED_PREFIX] = keySharedPrefixOptional, [FIA_VALUE_SHARED_PREFIX] = valueSharedPrefixOptional,
              [FIA_QUERY_ROPE] = queryRopeOptional, [FIA_KEY_ROPE] = keyRopeOptional,
              [FIA_KEY_ROPE_ANTIQUANT_SCALE] = keyRopeAntiquantScaleOptional,
              [FIA_DEQUANT_SCALE_QUERY] = dequantScaleQueryOptional, [FIA_LEARNABLE_SINK] = learnableSinkOptional},
        .q_lens = actualSeqLengthsOptional, .kv_lens = actualSeqLengthsKvOptional,
        .prefix_lens = actualSharedPrefixLenOptional, .num_heads = numHeads, .scale_value = scaleValue,
        .pre_tokens = preTokens, .next_tokens = nextTokens, .layout = inputLayout,
        .num_key_value_heads = numKeyValueHeads, .sparse_mode = sparseMode, .inner_precise = innerPrecise,
        .block_size = blockSize, .antiquant_mode = antiquantMode, .softmax_lse_flag = softmaxLseFlag,
        .key_antiquant_mode = keyAntiquantMode, .value_antiquant_mode = valueAntiquantMode,
        .query_quant_mode = queryQuantMode, .pse_type = pseType, .q_start = qStartIdxOptional,
        .kv_start = kvStartIdxOptional, .attention_out = attentionOut, .softmax_lse = softmaxLse};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional,
    const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional,
    const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,
    const aclIntArray *actualSharedPrefixLenOptional, const aclTensor *queryRopeOptional,
    const aclTensor *keyRopeOptional, const aclTensor *keyRopeAntiquantScaleOptional,
    const aclTensor *dequantScaleQueryOptional, const aclTensor *learnableSinkOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    int64_t keyAntiquantMode, int64_t valueAntiquantMode, int64_t queryQuantMode, const aclTensor *attentionOut,
    const aclTensor *softmaxLse, uint64_t *workspaceSize, aclOpExecutor **executor)
{
    return prepare_v4_v5(FIA_V4, query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
                         actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional,
                         quantScale2Optional, quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional,
                         blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
                         keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
                         valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
                         actualSharedPrefixLenOptional, queryRopeOptional, keyRopeOptional,
                         keyRopeAntiquantScaleOptional, dequantScaleQueryOptional, learnableSinkOptional, NULL, NULL,
                         numHeads, scaleValue, preTokens, nextTokens, inputLayout, numKeyValueHeads, sparseMode,
                         innerPrecise, blockSize, antiquantMode, softmaxLseFlag, keyAntiquantMode,
                         valueAntiquantMode, queryQuantMode, 0, attentionOut, softmaxLse, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            const aclrtStream stream)
{
    return acl_exec_run(FIA_V4, EXEC_FIA, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedInferAttentionScoreV5GetWorkspaceSize(V5_PARAMS)
{
    return prepare_v4_v5(FIA_V5, query, key, value, pseShiftOptional, attenMaskOptional, actualSeqLengthsOptional,
                         actualSeqLengthsKvOptional, deqScale1Optional, quantScale1Optional, deqScale2Optional,
                         quantScale2Optional, quantOffset2Optional, antiquantScaleOptional, antiquantOffsetOptional,
                         blockTableOptional, queryPaddingSizeOptional, kvPaddingSizeOptional,
                         keyAntiquantScaleOptional, keyAntiquantOffsetOptional, valueAntiquantScaleOptional,
                         valueAntiquantOffsetOptional, keySharedPrefixOptional, valueSharedPrefixOptional,
                         actualSharedPrefixLenOptional, queryRopeOptional, keyRopeOptional,
                         keyRopeAntiquantScaleOptional, dequantScaleQueryOptional, learnableSinkOptional,
                         qStartIdxOptional, kvStartIdxOptional, numHeads, scaleValue, preTokens, nextTokens,
                         inputLayout, numKeyValueHeads, sparseMode, innerPrecise, blockSize, antiquantMode,
                         softmaxLseFlag, keyAntiquantMode, valueAntiquantMode, queryQuantMode, pseType, attentionOut,
                         softmaxLse, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV5(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            const aclrtStream stream)
{
    return acl_exec_run(FIA_V5, EXEC_FIA, workspace, workspaceSize, executor, stream);
}
