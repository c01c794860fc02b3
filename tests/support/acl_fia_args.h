/* A FusedInferAttentionScore case (verify/fia_case.h) in CANN's terms, for
 * the aclnn tests of the family (test_acl_fia, test_acl_fia_versions):
 * aclTensors over the case's own memory (the poison and canaries see every
 * write the acl path makes), key and value in lists of one tensor, the
 * length lists as aclIntArrays, the layout as CANN's string. */
#ifndef ATTNOPS_TESTS_ACL_FIA_ARGS_H
#define ATTNOPS_TESTS_ACL_FIA_ARGS_H

#include <stdbool.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "fia_case.h"

typedef struct acl_fia_args {
    aclTensor *q, *pse, *mask, *table, *ks, *ko, *vs, *vo, *qr, *kr, *sink, *out, *lse;
    aclTensorList *key, *value;          /* own their tensors */
    aclTensor *key_tensor, *value_tensor; /* the lists' first tensors */
    aclIntArray *qlen, *kvlen;
    aclIntArray *q_start, *kv_start; /* CANN's inner ALiBi (pseType 2 / 3): pse is then the slopes */
    char layout[16];
} acl_fia_args;

/* An aclTensor over view v's own memory (NULL for NULL). */
aclTensor *acl_fia_wrap(const attnops_tensor *v);
/* The case's arguments; `extra_key` puts a second tensor in the key list. */
void acl_fia_args_make(acl_fia_args *c, const attnops_fia_args *a, bool extra_key);
void acl_fia_args_free(acl_fia_args *c);

/* The outputs' bytes (attention_out then softmax_lse), and whether the case's outputs still hold them. */
unsigned char *acl_fia_outputs_copy(const fia_case *c);
bool acl_fia_outputs_equal(const fia_case *c, const unsigned char *want);

/* A case of the tests' tables, and the attributes most of them share (every
 * token, the lse asked for). */
typedef struct named_spec {
    const char *name;
    fia_case_spec spec;
} named_spec;
#define TOKENS .pre_tokens = 2147483647, .next_tokens = 2147483647, .lse = true

/* Phase two of an entry (aclnnFusedInferAttentionScoreV3, ...) with a workspace of ws bytes. */
typedef aclnnStatus (*acl_fia_run_fn)(void *workspace, uint64_t workspace_size, aclOpExecutor *executor,
                                      aclrtStream stream);
aclnnStatus acl_fia_run(acl_fia_run_fn entry, aclOpExecutor *ex, uint64_t ws, aclrtStream stream);

#endif
