/* The aclnn FusedInferAttentionScoreV3 entry points on attnops, through the
 * shared executors (acl_exec.c): phase one fills an attnops_fia_args from
 * CANN's argument list and validates through the library's workspace query,
 * so a failure carries the library's sentence with CANN's status (161003, a
 * request attnops does not implement -- a quantised query or output, padding
 * sizes, a shared prefix -- as 161002).  key and value are lists of one
 * tensor.  Tensor indices for aclSetInputTensorAddr: query 0, key 1, value 2,
 * then the optional tensors in signature order (pseShift 3, attenMask 4,
 * deqScale1 5 .. quantOffset2 9, antiquantScale 10, antiquantOffset 11,
 * blockTable 12, queryPaddingSize 13, kvPaddingSize 14, keyAntiquantScale
 * 15 .. valueAntiquantOffset 18, keySharedPrefix 19, valueSharedPrefix 20,
 * queryRope 21, keyRope 22, keyRopeAntiquantScale 23); for
 * aclSetOutputTensorAddr attentionOut 0, softmaxLse 1. */
#include <string.h>

#include "acl_internal.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"

#define FIA_V3 "aclnnFusedInferAttentionScoreV3"

static attnops_status call_fia(const aclOpExecutor *e, void *ws, size_t n)
{
    return attnops_fused_infer_attention_score(&e->fia, ws, n);
}

/* The one tensor of a key or value list. */
static aclnnStatus list_tensor(const char *name, const aclTensorList *l, const aclTensor **t)
{
    *t = NULL;
    if (!l) {
        acl_set_error(FIA_V3 ": %s is NULL.", name);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (!acl_handle_live(ACL_HANDLE_TENSOR_LIST, (uintptr_t)l)) {
        acl_set_error(FIA_V3 ": %s (%p) is not a list made by aclCreateTensorList.", name, (const void *)l);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (l->size != 1) {
        acl_set_error(FIA_V3 ": %s holds %llu tensors; attnops takes a list of one tensor (a tensor per batch is "
                      "not supported).", name, (unsigned long long)l->size);
        return ACLNN_ERR_PARAM_INVALID;
    }
    *t = l->values[0];
    return ACLNN_SUCCESS;
}

/* "BNSD" or "BNSD_BSND" (input, then output layout). */
static aclnnStatus parse_layout(const char *layout, attnops_fia_args *a)
{
    if (!layout) {
        acl_set_error(FIA_V3 ": inputLayout is NULL.");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    const char *under = strchr(layout, '_');
    char in[8] = "";
    const size_t n = under ? (size_t)(under - layout) : strlen(layout);
    if (n < sizeof in) memcpy(in, layout, n), in[n] = '\0';
    a->input_layout = attnops_layout_from_string(in);
    a->output_layout = under ? attnops_layout_from_string(under + 1) : ATTNOPS_LAYOUT_UNSET;
    if (a->input_layout == ATTNOPS_LAYOUT_UNSET || (under && a->output_layout == ATTNOPS_LAYOUT_UNSET)) {
        acl_set_error(FIA_V3 ": inputLayout is \"%s\"; it must be BSH, BSND, BNSD, TND or BNSD_BSND.", layout);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
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
    const aclTensor *keyRopeOptional, const aclTensor *keyRopeAntiquantScaleOptional, int64_t numHeads,
    double scaleValue, int64_t preTokens, int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads,
    int64_t sparseMode, int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,
    int64_t keyAntiquantMode, int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse,
    uint64_t *workspaceSize, aclOpExecutor **executor)
{
    aclnnStatus st = acl_exec_check_phase_one(FIA_V3, workspaceSize, executor);
    const aclTensor *k = NULL, *v = NULL;
    if (st == ACLNN_SUCCESS) st = list_tensor("key", key, &k);
    if (st == ACLNN_SUCCESS) st = list_tensor("value", value, &v);
    if (st == ACLNN_SUCCESS && keyRopeAntiquantScaleOptional) {
        acl_set_error(FIA_V3 ": keyRopeAntiquantScaleOptional is given; attnops does not implement int8 rope keys.");
        st = ACLNN_ERR_PARAM_INVALID;
    }
    if (st != ACLNN_SUCCESS) return st;
    aclOpExecutor *e = acl_exec_new(FIA_V3, EXEC_FIA);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    e->call = call_fia;
    attnops_fia_args *a = &e->fia;
    st = parse_layout(inputLayout, a);
    if (st == ACLNN_SUCCESS) st = acl_exec_impl(FIA_V3, &a->impl);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        const struct {
            const aclTensor *t;
            const attnops_tensor **field;
        } inputs[EXEC_INPUTS] = {
            {query, &a->query}, {k, &a->key}, {v, &a->value}, {pseShiftOptional, &a->pse_shift},
            {attenMaskOptional, &a->atten_mask}, {deqScale1Optional, &a->dequant_scale1},
            {quantScale1Optional, &a->quant_scale1}, {deqScale2Optional, &a->dequant_scale2},
            {quantScale2Optional, &a->quant_scale2}, {quantOffset2Optional, &a->quant_offset2},
            {antiquantScaleOptional, &a->antiquant_scale}, {antiquantOffsetOptional, &a->antiquant_offset},
            {blockTableOptional, &a->block_table}, {queryPaddingSizeOptional, &a->query_padding_size},
            {kvPaddingSizeOptional, &a->kv_padding_size}, {keyAntiquantScaleOptional, &a->key_antiquant_scale},
            {keyAntiquantOffsetOptional, &a->key_antiquant_offset},
            {valueAntiquantScaleOptional, &a->value_antiquant_scale},
            {valueAntiquantOffsetOptional, &a->value_antiquant_offset},
            {keySharedPrefixOptional, &a->key_shared_prefix}, {valueSharedPrefixOptional, &a->value_shared_prefix},
            {queryRopeOptional, &a->query_rope}, {keyRopeOptional, &a->key_rope},
            {keyRopeAntiquantScaleOptional, NULL}};
        e->n_inputs = EXEC_INPUTS, e->n_outputs = 2;
        for (int i = 0; i < EXEC_INPUTS; i++) {
            const attnops_tensor *view = acl_exec_slot(e, &e->inputs[i], inputs[i].t);
            if (inputs[i].field) *inputs[i].field = view;
        }
        a->attention_out = acl_exec_slot(e, &e->outputs[0], attentionOut);
        a->softmax_lse = acl_exec_slot(e, &e->outputs[1], softmaxLse);
        if (!acl_exec_array(e, actualSeqLengthsOptional, &a->actual_seq_lengths) ||
            !acl_exec_array(e, actualSeqLengthsKvOptional, &a->actual_seq_lengths_kv) ||
            !acl_exec_array(e, actualSharedPrefixLenOptional, &a->actual_shared_prefix_len)) {
            acl_set_error(FIA_V3 ": out of memory.");
            st = ACLNN_ERR_RUNTIME_ERROR;
        }
    }
    if (st == ACLNN_SUCCESS) {
        a->num_heads = numHeads, a->scale_value = scaleValue, a->pre_tokens = preTokens;
        a->next_tokens = nextTokens, a->num_key_value_heads = numKeyValueHeads, a->sparse_mode = sparseMode;
        a->inner_precise = innerPrecise, a->block_size = blockSize, a->antiquant_mode = antiquantMode;
        a->softmax_lse_flag = softmaxLseFlag, a->key_antiquant_mode = keyAntiquantMode;
        a->value_antiquant_mode = valueAntiquantMode;
        a->deterministic = acl_deterministic() != 0;
        st = acl_status_from(attnops_fused_infer_attention_score_workspace_size(a, &bytes));
    }
    return acl_exec_finish_phase_one(e, st, bytes, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            const aclrtStream stream)
{
    return acl_exec_run(FIA_V3, EXEC_FIA, workspace, workspaceSize, executor, stream);
}
