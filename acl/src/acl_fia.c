/* The FusedInferAttentionScore family's shared first phase (acl_fia.h) and
 * the aclnn FusedInferAttentionScoreV3 entry points, through the shared
 * executors (acl_exec.c): acl_fia_prepare fills an attnops_fia_args from an
 * entry's fia_call and validates through the library's workspace query, so
 * a failure carries the library's sentence, after the entry's name, with
 * CANN's status (161003, a request attnops does not implement -- a quantised
 * query or output, padding sizes, a shared prefix -- as 161002).  key and
 * value are lists of one tensor.  V3's tensor indices for
 * aclSetInputTensorAddr: query 0, key 1, value 2, then the optional tensors
 * in signature order (pseShift 3, attenMask 4, deqScale1 5 .. quantOffset2
 * 9, antiquantScale 10, antiquantOffset 11, blockTable 12, queryPaddingSize
 * 13, kvPaddingSize 14, keyAntiquantScale 15 .. valueAntiquantOffset 18,
 * keySharedPrefix 19, valueSharedPrefix 20, queryRope 21, keyRope 22,
 * keyRopeAntiquantScale 23); for aclSetOutputTensorAddr attentionOut 0,
 * softmaxLse 1. */
#include <stdio.h>
#include <string.h>

#include "acl_fia.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"

#define FIA_V3 "aclnnFusedInferAttentionScoreV3"

static attnops_status call_fia(const aclOpExecutor *e, void *ws, size_t n)
{
    return attnops_fused_infer_attention_score(&e->fia, ws, n);
}

/* The library's field for a tensor input; NULL for the inputs attnops does not implement (LEFT_OUT). */
static const attnops_tensor **field_of(attnops_fia_args *a, fia_tensor id)
{
    switch (id) {
    case FIA_QUERY: return &a->query;
    case FIA_KEY: return &a->key;
    case FIA_VALUE: return &a->value;
    case FIA_PSE_SHIFT: return &a->pse_shift;
    case FIA_ATTEN_MASK: return &a->atten_mask;
    case FIA_DEQ_SCALE1: return &a->dequant_scale1;
    case FIA_QUANT_SCALE1: return &a->quant_scale1;
    case FIA_DEQ_SCALE2: return &a->dequant_scale2;
    case FIA_QUANT_SCALE2: return &a->quant_scale2;
    case FIA_QUANT_OFFSET2: return &a->quant_offset2;
    case FIA_ANTIQUANT_SCALE: return &a->antiquant_scale;
    case FIA_ANTIQUANT_OFFSET: return &a->antiquant_offset;
    case FIA_BLOCK_TABLE: return &a->block_table;
    case FIA_QUERY_PADDING_SIZE: return &a->query_padding_size;
    case FIA_KV_PADDING_SIZE: return &a->kv_padding_size;
    case FIA_KEY_ANTIQUANT_SCALE: return &a->key_antiquant_scale;
    case FIA_KEY_ANTIQUANT_OFFSET: return &a->key_antiquant_offset;
    case FIA_VALUE_ANTIQUANT_SCALE: return &a->value_antiquant_scale;
    case FIA_VALUE_ANTIQUANT_OFFSET: return &a->value_antiquant_offset;
    case FIA_KEY_SHARED_PREFIX: return &a->key_shared_prefix;
    case FIA_VALUE_SHARED_PREFIX: return &a->value_shared_prefix;
    case FIA_QUERY_ROPE: return &a->query_rope;
    case FIA_KEY_ROPE: return &a->key_rope;
    case FIA_LEARNABLE_SINK: return &a->learnable_sink;
    default: return NULL;
    }
}

/* The inputs of the family that attnops_fia_args has no field for: refused by name when given. */
static const struct {
    fia_tensor id;
    const char *name, *what;
} LEFT_OUT[] = {
    {FIA_KEY_ROPE_ANTIQUANT_SCALE, "keyRopeAntiquantScaleOptional", "int8 rope keys"},
    {FIA_DEQUANT_SCALE_QUERY, "dequantScaleQueryOptional", "a quantised query"},
};

/* The one tensor of a key or value list (or the tensor itself, kv_tensors). */
static aclnnStatus kv_tensor(const fia_call *c, const char *name, const aclTensorList *l, fia_tensor id,
                             const aclTensor **t)
{
    *t = c->t[id];
    if (c->kv_tensors) return ACLNN_SUCCESS;
    if (!l) {
        acl_set_error("%s: %s is NULL.", c->op, name);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (!acl_handle_live(ACL_HANDLE_TENSOR_LIST, (uintptr_t)l)) {
        acl_set_error("%s: %s (%p) is not a list made by aclCreateTensorList.", c->op, name, (const void *)l);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (l->size != 1) {
        acl_set_error("%s: %s holds %llu tensors; attnops takes a list of one tensor (a tensor per batch is not "
                      "supported).", c->op, name, (unsigned long long)l->size);
        return ACLNN_ERR_PARAM_INVALID;
    }
    *t = l->values[0];
    return ACLNN_SUCCESS;
}

/* The arguments of the call that attnops does not implement, refused by name. */
static aclnnStatus check_left_out(const fia_call *c)
{
    for (size_t i = 0; i < sizeof LEFT_OUT / sizeof LEFT_OUT[0]; i++)
        if (c->t[LEFT_OUT[i].id]) {
            acl_set_error("%s: %s is given; attnops does not implement %s.", c->op, LEFT_OUT[i].name,
                          LEFT_OUT[i].what);
            return ACLNN_ERR_PARAM_INVALID;
        }
    if (c->query_quant_mode != 0) {
        acl_set_error("%s: queryQuantMode is %lld; attnops does not implement a quantised query (only 0).", c->op,
                      (long long)c->query_quant_mode);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (c->pse_type != 0 && c->pse_type != 2 && c->pse_type != 3) {
        acl_set_error("%s: pseType is %lld; it must be 0, 2 or 3 (1 is not an inference mode).", c->op,
                      (long long)c->pse_type);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (c->pse_type != 0 && !c->t[FIA_PSE_SHIFT]) {
        acl_set_error("%s: pseType is %lld but pseShiftOptional is NULL; pseType 2 and 3 take the ALiBi slopes "
                      "there (f32 [numHeads]).", c->op, (long long)c->pse_type);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

/* "BNSD" or "BNSD_BSND" (input, then output layout). */
static aclnnStatus parse_layout(const fia_call *c, attnops_fia_args *a)
{
    const char *layout = c->layout;
    if (!layout) {
        acl_set_error("%s: inputLayout is NULL.", c->op);
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    const char *under = strchr(layout, '_');
    char in[8] = "";
    const size_t n = under ? (size_t)(under - layout) : strlen(layout);
    if (n < sizeof in) memcpy(in, layout, n), in[n] = '\0';
    a->input_layout = attnops_layout_from_string(in);
    a->output_layout = under ? attnops_layout_from_string(under + 1) : ATTNOPS_LAYOUT_UNSET;
    if (a->input_layout == ATTNOPS_LAYOUT_UNSET || (under && a->output_layout == ATTNOPS_LAYOUT_UNSET)) {
        acl_set_error("%s: inputLayout is \"%s\"; it must be BSH, BSND, BNSD, TND or BNSD_BSND.", c->op, layout);
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (c->branch == FIA_BRANCH_DECODE && (under || a->input_layout == ATTNOPS_LAYOUT_TND)) {
        acl_set_error("%s: inputLayout is \"%s\"; IncreFlashAttention takes BSH, BSND or BNSD.", c->op, layout);
        return ACLNN_ERR_PARAM_INVALID;
    }
    return ACLNN_SUCCESS;
}

/* The query's S (rows per batch) in a padded layout; 0 where the shape does not say (the library's checks then
 * speak). */
static int64_t query_rows(const aclTensor *q, attnops_layout layout)
{
    const int axis = layout == ATTNOPS_LAYOUT_BNSD ? 2 : 1;
    return q && layout != ATTNOPS_LAYOUT_TND && q->view.rank > axis ? q->view.shape[axis] : 0;
}

/* IncreFlashAttention is the decode step: one query row per batch. */
static aclnnStatus check_decode(const fia_call *c, attnops_layout layout)
{
    const int64_t rows = query_rows(c->t[FIA_QUERY], layout);
    if (rows <= 1) return ACLNN_SUCCESS;
    acl_set_error("%s: query's S is %lld; IncreFlashAttention takes one query row per batch (S = 1): longer "
                  "queries go through aclnnPromptFlashAttention or aclnnFusedInferAttentionScore.", c->op,
                  (long long)rows);
    return ACLNN_ERR_PARAM_INVALID;
}

/* PromptFlashAttention is CANN's prompt kernel, which applies the mask, sparseMode and the query lengths to a
 * one-row query too; attnops runs a query of one row per batch on its decode branch, which does not: such a
 * query is refused where they would matter. */
static aclnnStatus check_prompt(const fia_call *c, attnops_layout layout)
{
    bool one_row = query_rows(c->t[FIA_QUERY], layout) == 1;
    if (layout == ATTNOPS_LAYOUT_TND && c->q_lens && c->q_lens->size) { /* cumulative: one row per batch */
        int64_t longest = 0;
        for (uint64_t b = 0; b < c->q_lens->size; b++) {
            const int64_t n = c->q_lens->values[b] - (b ? c->q_lens->values[b - 1] : 0);
            longest = n > longest ? n : longest;
        }
        one_row = longest == 1;
    }
    if (!one_row) return ACLNN_SUCCESS;
    char what[64] = "";
    if (c->t[FIA_ATTEN_MASK]) snprintf(what, sizeof what, "attenMask is given");
    else if (c->sparse_mode != 0) snprintf(what, sizeof what, "sparseMode is %lld", (long long)c->sparse_mode);
    for (uint64_t b = 0; !*what && layout != ATTNOPS_LAYOUT_TND && c->q_lens && b < c->q_lens->size; b++)
        if (c->q_lens->values[b] != 1)
            snprintf(what, sizeof what, "actualSeqLengths[%llu] is %lld", (unsigned long long)b,
                     (long long)c->q_lens->values[b]);
    if (!*what) return ACLNN_SUCCESS;
    acl_set_error("%s: the query has one row per batch and %s; attnops runs such a query on its decode branch, which "
                  "does not apply it as CANN's prompt kernel does.", c->op, what);
    return ACLNN_ERR_PARAM_INVALID;
}

/* A start index as CANN's tiling reads it: the array's first value, 0 when absent or empty. */
static int64_t first_or_zero(const aclIntArray *a)
{
    return a && a->size ? a->values[0] : 0;
}

/* The executor's copies of the call's tensors and arrays, in the entry's signature order. */
static aclnnStatus fill_tensors(aclOpExecutor *e, const fia_call *c, const aclTensor *key, const aclTensor *value)
{
    attnops_fia_args *a = &e->fia;
    e->n_inputs = c->n_order, e->n_outputs = c->no_lse ? 1 : 2;
    for (int i = 0; i < c->n_order; i++) {
        const fia_tensor id = c->order[i];
        const aclTensor *t = id == FIA_KEY ? key : id == FIA_VALUE ? value : c->t[id];
        /* pseType 2 / 3: pseShift holds the ALiBi slopes */
        const attnops_tensor **field = id == FIA_PSE_SHIFT && c->pse_type != 0 ? &a->alibi_slopes : field_of(a, id);
        if (id == FIA_PSE_SHIFT && c->pse_reserved)
            e->inputs[i] = (exec_slot){NULL, 0, 0, t != NULL}; /* reserved: not read */
        else if (field)
            *field = acl_exec_slot(e, &e->inputs[i], t);
    }
    a->attention_out = acl_exec_slot(e, &e->outputs[0], c->attention_out);
    if (!c->no_lse) a->softmax_lse = acl_exec_slot(e, &e->outputs[1], c->softmax_lse);
    if (!acl_exec_array(e, c->q_lens, &a->actual_seq_lengths) ||
        !acl_exec_array(e, c->kv_lens, &a->actual_seq_lengths_kv) ||
        !acl_exec_array(e, c->prefix_lens, &a->actual_shared_prefix_len)) {
        acl_set_error("%s: out of memory.", c->op);
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    return ACLNN_SUCCESS;
}

aclnnStatus acl_fia_prepare(const fia_call *c, uint64_t *workspace_size, aclOpExecutor **executor)
{
    aclnnStatus st = acl_exec_check_phase_one(c->op, workspace_size, executor);
    const aclTensor *k = NULL, *v = NULL;
    if (st == ACLNN_SUCCESS) st = kv_tensor(c, "key", c->key, FIA_KEY, &k);
    if (st == ACLNN_SUCCESS) st = kv_tensor(c, "value", c->value, FIA_VALUE, &v);
    if (st == ACLNN_SUCCESS) st = check_left_out(c);
    if (st != ACLNN_SUCCESS) return st;
    aclOpExecutor *e = acl_exec_new(c->op, EXEC_FIA);
    if (!e) return ACLNN_ERR_RUNTIME_ERROR;
    e->call = call_fia;
    attnops_fia_args *a = &e->fia;
    st = parse_layout(c, a);
    if (st == ACLNN_SUCCESS && c->branch == FIA_BRANCH_DECODE) st = check_decode(c, a->input_layout);
    if (st == ACLNN_SUCCESS && c->branch == FIA_BRANCH_PROMPT) st = check_prompt(c, a->input_layout);
    if (st == ACLNN_SUCCESS) st = acl_exec_impl(c->op, &a->impl);
    if (st == ACLNN_SUCCESS) st = fill_tensors(e, c, k, v);
    size_t bytes = 0;
    if (st == ACLNN_SUCCESS) {
        a->num_heads = c->num_heads, a->scale_value = c->scale_value, a->pre_tokens = c->pre_tokens;
        a->next_tokens = c->next_tokens, a->num_key_value_heads = c->num_key_value_heads;
        a->sparse_mode = c->sparse_mode, a->inner_precise = c->inner_precise, a->block_size = c->block_size;
        a->antiquant_mode = c->antiquant_mode, a->softmax_lse_flag = c->softmax_lse_flag;
        a->key_antiquant_mode = c->key_antiquant_mode, a->value_antiquant_mode = c->value_antiquant_mode;
        a->alibi_rule = (int32_t)c->pse_type; /* CANN's pseType values are the library's rules */
        a->alibi_q_start_idx = first_or_zero(c->q_start), a->alibi_kv_start_idx = first_or_zero(c->kv_start);
        a->deterministic = acl_deterministic() != 0;
        st = acl_status_from(attnops_fused_infer_attention_score_workspace_size(a, &bytes));
        if (st != ACLNN_SUCCESS) acl_set_error("%s: %s", c->op, attnops_last_error());
    }
    return acl_exec_finish_phase_one(e, st, bytes, workspace_size, executor);
}

/* ---- V3 -------------------------------------------------------------------------------- */
static const fia_tensor V3_ORDER[] = {FIA_V3_TENSORS};

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
    const fia_call c = {
        .op = FIA_V3, .order = V3_ORDER, .n_order = FIA_COUNT(V3_ORDER), .key = key, .value = value,
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
              [FIA_KEY_ROPE_ANTIQUANT_SCALE] = keyRopeAntiquantScaleOptional},
        .q_lens = actualSeqLengthsOptional, .kv_lens = actualSeqLengthsKvOptional,
        .prefix_lens = actualSharedPrefixLenOptional, .num_heads = numHeads, .scale_value = scaleValue,
        .pre_tokens = preTokens, .next_tokens = nextTokens, .layout = inputLayout,
        .num_key_value_heads = numKeyValueHeads, .sparse_mode = sparseMode, .inner_precise = innerPrecise,
        .block_size = blockSize, .antiquant_mode = antiquantMode, .softmax_lse_flag = softmaxLseFlag,
        .key_antiquant_mode = keyAntiquantMode, .value_antiquant_mode = valueAntiquantMode,
        .attention_out = attentionOut, .softmax_lse = softmaxLse};
    return acl_fia_prepare(&c, workspaceSize, executor);
}

aclnnStatus aclnnFusedInferAttentionScoreV3(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                            const aclrtStream stream)
{
    return acl_exec_run(FIA_V3, EXEC_FIA, workspace, workspaceSize, executor, stream);
}
