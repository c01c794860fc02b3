/* FlashAttentionScore(Grad) through CANN's aclnn entry points, for tests
 * (links libattnops_acl).
 *
 * aclb_call is one aclnn call in CANN's terms: the entry point and its
 * arguments.  aclb_prepare / aclb_run are its two phases, each one switch
 * over the eight entry points, so a test states the parameter order once.
 *
 * aclb_from_fwd / aclb_from_bwd translate a native argument struct into
 * such a call: aclTensors over the same memory (the test's poison and
 * canaries see every write the acl path makes), aclIntArrays of the int
 * lists, the V2 entry only when the call needs pse_type or start indices,
 * the VarLen / Unpadding entries on request.  What CANN's parameter lists
 * cannot carry (an FP8 de-scale, MLA rope inputs, a dropout block, ...) is
 * not translated: the call is refused with a sentence saying so. */
#ifndef ATTNOPS_TESTS_ACL_BRIDGE_H
#define ATTNOPS_TESTS_ACL_BRIDGE_H

#include <stdbool.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "attnops.h"

/* The forward's Score / ScoreV2 / VarLenScore / VarLenScoreV2, and the
 * backward's ScoreGrad / ScoreGradV2 / UnpaddingScoreGrad / ...V2. */
typedef enum aclb_entry { ACLB_V1, ACLB_V2, ACLB_VARLEN, ACLB_VARLEN_V2 } aclb_entry;

#define ACLB_MAX_TENSORS 20
#define ACLB_MAX_ARRAYS 5

typedef struct aclb_call {
    bool grad;
    aclb_entry entry;
    const aclTensor *query, *key, *value, *dy, *pse, *drop_mask, *padding_mask, *atten_mask;
    const aclTensor *softmax_max, *softmax_sum, *softmax_in, *attention_in; /* attention_in: the grad's */
    const aclTensor *softmax_out, *attention_out;                           /* the forward's outputs */
    const aclTensor *dq, *dk, *dv, *dpse;
    const aclIntArray *prefix, *qlen, *kvlen, *qstart, *kvstart;
    double scale, keep_prob;
    int64_t pre_tokens, next_tokens, head_num, inner_precise, sparse_mode, pse_type;
    char layout[8];
    /* Set by aclb_from_*: ATTNOPS_ACL_IMPL and the deterministic option
     * for phase one (NULL / -1: as they are), and what aclb_release frees. */
    const char *impl;
    int64_t deterministic;
    aclTensor *owned_tensors[ACLB_MAX_TENSORS];
    aclIntArray *owned_arrays[ACLB_MAX_ARRAYS];
    int n_tensors, n_arrays;
    bool failed; /* an object could not be created */
} aclb_call;

/* attnops' dtype as an aclDataType (ACL_DT_UNDEFINED for none). */
aclDataType aclb_dtype(attnops_dtype dtype);
/* "aclnnFlashAttentionScoreV2", ...: the entry point c calls. */
const char *aclb_entry_name(const aclb_call *c);
/* Phase one (aclnn...GetWorkspaceSize); workspace_size and executor are
 * passed as given (NULL included). */
aclnnStatus aclb_prepare(const aclb_call *c, uint64_t *workspace_size, aclOpExecutor **executor);
/* Phase two of c's entry point. */
aclnnStatus aclb_run(const aclb_call *c, void *workspace, uint64_t workspace_size, aclOpExecutor *executor,
                     aclrtStream stream);

/* NULL with *c filled, or (nothing created) a sentence naming what of the
 * native call the aclnn entry points cannot carry. */
const char *aclb_from_fwd(aclb_call *c, const attnops_fa_fwd_args *args, bool varlen);
const char *aclb_from_bwd(aclb_call *c, const attnops_fa_bwd_args *args, bool varlen);
/* Destroys what aclb_from_* created. */
void aclb_release(aclb_call *c);

#endif
