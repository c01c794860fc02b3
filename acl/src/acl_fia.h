/* The FusedInferAttentionScore family's shared first phase (acl_fia.c).
 * Every aclnn entry of the family -- FusedInferAttentionScore V1..V4,
 * IncreFlashAttention V1..V4 (acl_ifa.c), PromptFlashAttention V1..V3
 * (acl_pfa.c) -- maps its parameter list onto one fia_call; acl_fia_prepare
 * turns that into an attnops_fia_args, validates it through the library's
 * workspace query and hands out the executor.  Phase two of every entry is
 * acl_exec_run(op, EXEC_FIA, ...). */
#ifndef ATTNOPS_ACL_FIA_H
#define ATTNOPS_ACL_FIA_H

#include "acl_internal.h"

/* Every tensor input of the family (V4's list, the superset). */
typedef enum {
    FIA_QUERY, FIA_KEY, FIA_VALUE, FIA_PSE_SHIFT, FIA_ATTEN_MASK, FIA_DEQ_SCALE1, FIA_QUANT_SCALE1, FIA_DEQ_SCALE2,
    FIA_QUANT_SCALE2, FIA_QUANT_OFFSET2, FIA_ANTIQUANT_SCALE, FIA_ANTIQUANT_OFFSET, FIA_BLOCK_TABLE,
    FIA_QUERY_PADDING_SIZE, FIA_KV_PADDING_SIZE, FIA_KEY_ANTIQUANT_SCALE, FIA_KEY_ANTIQUANT_OFFSET,
    FIA_VALUE_ANTIQUANT_SCALE, FIA_VALUE_ANTIQUANT_OFFSET, FIA_KEY_SHARED_PREFIX, FIA_VALUE_SHARED_PREFIX,
    FIA_QUERY_ROPE, FIA_KEY_ROPE, FIA_KEY_ROPE_ANTIQUANT_SCALE, FIA_DEQUANT_SCALE_QUERY, FIA_LEARNABLE_SINK,
    FIA_TENSORS
} fia_tensor;

/* The tensor inputs of FusedInferAttentionScore V1, V2 (the separate antiquant pairs and the shared prefix added)
 * and V3 (the rope inputs added), in signature order. */
#define FIA_V1_TENSORS                                                                                               \
    FIA_QUERY, FIA_KEY, FIA_VALUE, FIA_PSE_SHIFT, FIA_ATTEN_MASK, FIA_DEQ_SCALE1, FIA_QUANT_SCALE1, FIA_DEQ_SCALE2,  \
        FIA_QUANT_SCALE2, FIA_QUANT_OFFSET2, FIA_ANTIQUANT_SCALE, FIA_ANTIQUANT_OFFSET, FIA_BLOCK_TABLE,            \
        FIA_QUERY_PADDING_SIZE, FIA_KV_PADDING_SIZE
#define FIA_V2_TENSORS                                                                                               \
    FIA_V1_TENSORS, FIA_KEY_ANTIQUANT_SCALE, FIA_KEY_ANTIQUANT_OFFSET, FIA_VALUE_ANTIQUANT_SCALE,                    \
        FIA_VALUE_ANTIQUANT_OFFSET, FIA_KEY_SHARED_PREFIX, FIA_VALUE_SHARED_PREFIX
#define FIA_V3_TENSORS FIA_V2_TENSORS, FIA_QUERY_ROPE, FIA_KEY_ROPE, FIA_KEY_ROPE_ANTIQUANT_SCALE

/* Which of CANN's branches an entry is: FusedInferAttentionScore routes by
 * the query's rows; IncreFlashAttention is the decode step only (S1 = 1);
 * PromptFlashAttention is the prompt kernel. */
typedef enum { FIA_BRANCH_ANY, FIA_BRANCH_DECODE, FIA_BRANCH_PROMPT } fia_branch;

typedef struct fia_call {
    const char *op;          /* the entry's name, first word of every sentence */
    fia_branch branch;
    const fia_tensor *order; /* the entry's tensor inputs in signature order: aclSetInputTensorAddr's indices */
    int n_order;
    const aclTensor *t[FIA_TENSORS]; /* NULL: absent, or not in the entry's list */
    /* key and value: lists of one tensor (FusedInferAttentionScore, IncreFlashAttention), or
     * kv_tensors and t[FIA_KEY] / t[FIA_VALUE] (PromptFlashAttention) */
    const aclTensorList *key, *value;
    bool kv_tensors;
    bool pse_reserved; /* the entry's pseShift is reserved (CANN passes NULL on): accepted, not read */
    const aclIntArray *q_lens, *kv_lens, *prefix_lens;
    int64_t num_heads;
    double scale_value;
    int64_t pre_tokens, next_tokens;
    const char *layout;
    int64_t num_key_value_heads, sparse_mode, inner_precise, block_size, antiquant_mode;
    bool softmax_lse_flag;
    int64_t key_antiquant_mode, value_antiquant_mode, query_quant_mode;
    /* V5's: 0, pseShift added after the scale; 2 / 3, pseShift is the ALiBi slopes and the start indices' first
     * values shift the distance (the library's alibi_rule) */
    int64_t pse_type;
    const aclIntArray *q_start, *kv_start;
    const aclTensor *attention_out, *softmax_lse;
    bool no_lse; /* the entry has no softmaxLse output (IncreFlashAttention, PromptFlashAttention) */
} fia_call;

/* pre_tokens and next_tokens for entries that have none (FusedInferAttentionScore's default; a decode step does
 * not read them). */
#define FIA_ALL_TOKENS 2147483647
#define FIA_COUNT(order) ((int)(sizeof(order) / sizeof((order)[0])))

aclnnStatus acl_fia_prepare(const fia_call *c, uint64_t *workspace_size, aclOpExecutor **executor);

#endif
