/* FusedInferAttentionScoreV3 through CANN's aclnn entry point
 * (libattnops_acl): a host program written against aclnn gets the bytes of
 * attnops' own call.  Each case (verify/fia_case.h: decode over a paged
 * cache with GQA, a causal prompt with BNSD_BSND, an int8 cache per token,
 * MLA rope, TND over a paged cache) runs through
 * attnops_fused_infer_attention_score and through
 * aclnnFusedInferAttentionScoreV3GetWorkspaceSize / ...V3 on aclTensors over
 * the same memory with key and value in tensor lists, and the outputs must
 * match byte for byte.  Then: a repeatable executor re-pointed at a new
 * query equals a fresh call on it; the refusals (a list of two tensors, a
 * quantised output, keyRopeAntiquantScale, a NULL key list, a second run of a
 * single-use executor) give CANN's status and a sentence, and a refused call
 * writes nothing; a destroyed tensor list took its tensors with it. */
#include <stdlib.h>
#include <string.h>

#include "acl_fia_args.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "suite.h"

static aclnnStatus prepare(const acl_fia_args *c, const attnops_fia_args *a, const aclTensor *rope_scale,
                           const aclTensor *quant_scale2, uint64_t *ws, aclOpExecutor **ex)
{
    char layout[16];
    memcpy(layout, c->layout, sizeof layout);
    return aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
        c->q, c->key, c->value, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, quant_scale2, NULL, NULL,
        NULL, c->table, NULL, NULL, c->ks, c->ko, c->vs, c->vo, NULL, NULL, NULL, c->qr, c->kr, rope_scale,
        a->num_heads, a->scale_value, a->pre_tokens, a->next_tokens, layout, a->num_key_value_heads, a->sparse_mode,
        a->inner_precise, a->block_size, 0, a->softmax_lse_flag, a->key_antiquant_mode, a->value_antiquant_mode,
        c->out, c->lse, ws, ex);
}

static aclnnStatus run(aclOpExecutor *ex, uint64_t ws, aclrtStream stream)
{
    return acl_fia_run(aclnnFusedInferAttentionScoreV3, ex, ws, stream);
}

static const named_spec CASES[] = {
    {"decode bf16 GQA 4, paged 16", {.B = 2, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 300, .D = 64, .Dv = 64,
                                     .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BNSD, .block_size = 16,
                                     .nkv = 2, .kv_len = {300, 17}, TOKENS}},
    {"prompt f16 causal, BNSD_BSND", {.B = 2, .N1 = 4, .N2 = 2, .S1 = 9, .S2 = 40, .D = 32, .Dv = 32,
                                      .dtype = ATTNOPS_DTYPE_F16, .layout = ATTNOPS_LAYOUT_BNSD,
                                      .out_layout = ATTNOPS_LAYOUT_BSND, .nq = 2, .q_len = {9, 4}, .nkv = 2,
                                      .kv_len = {40, 20}, .sparse_mode = 3, TOKENS}},
    {"decode bf16 int8 per token, BSH paged 32", {.B = 2, .N1 = 4, .N2 = 2, .S1 = 1, .S2 = 100, .D = 16, .Dv = 16,
                                                  .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BSH,
                                                  .block_size = 32, .nkv = 2, .kv_len = {100, 33}, .int8_kv = true,
                                                  .key_mode = 1, .value_mode = 1, TOKENS}},
    {"decode bf16 MLA rope", {.B = 1, .N1 = 8, .N2 = 1, .S1 = 1, .S2 = 70, .D = 64, .Dv = 64, .Dr = 16,
                              .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BNSD, TOKENS}},
    {"TND f32 paged 8, causal", {.B = 2, .N1 = 4, .N2 = 1, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32,
                                 .layout = ATTNOPS_LAYOUT_TND, .block_size = 8, .nq = 2, .q_len = {3, 5}, .nkv = 2,
                                 .kv_len = {30, 5}, .S1 = 5, .S2 = 30, .sparse_mode = 3, TOKENS}},
};

static int run_cases(aclrtStream stream)
{
    int passed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const int before = tu_failures;
        fia_case c;
        fia_case_init(&c, &CASES[i].spec, 40 + i);
        TU_CHECK(fia_case_run(&c, ATTNOPS_IMPL_AUTO, 0) == ATTNOPS_SUCCESS, "%s: the native call", CASES[i].name);
        unsigned char *want = acl_fia_outputs_copy(&c);
        tu_tensor_poison(&c.out, 0xC3), tu_tensor_poison(&c.lse, 0xC3);
        acl_fia_args a;
        acl_fia_args_make(&a, &c.args, false);
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        aclnnStatus st = prepare(&a, &c.args, NULL, NULL, &ws, &ex);
        TU_CHECK(st == ACLNN_SUCCESS, "%s: GetWorkspaceSize %d: %s", CASES[i].name, st, aclGetRecentErrMsg());
        if (st == ACLNN_SUCCESS) {
            st = run(ex, ws, stream);
            TU_CHECK(st == ACLNN_SUCCESS, "%s: run %d: %s", CASES[i].name, st, aclGetRecentErrMsg());
            TU_CHECK(acl_fia_outputs_equal(&c, want), "%s: the aclnn outputs are not the native call's bytes",
                     CASES[i].name);
        }
        acl_fia_args_free(&a);
        free(want);
        fia_case_free(&c);
        passed += tu_failures == before;
    }
    return passed;
}

/* A repeatable executor, its query re-pointed (input 0) at a second query:
 * the native call's bytes on that query. */
static int run_repointed(aclrtStream stream)
{
    const int before = tu_failures;
    fia_case c, c2;
    fia_case_init(&c, &CASES[0].spec, 50);
    fia_case_init(&c2, &CASES[0].spec, 51); /* same shapes, new data */
    TU_CHECK(fia_case_run(&c2, ATTNOPS_IMPL_AUTO, 0) == ATTNOPS_SUCCESS, "native on the second inputs");
    acl_fia_args a;
    acl_fia_args_make(&a, &c.args, false);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    TU_CHECK(prepare(&a, &c.args, NULL, NULL, &ws, &ex) == ACLNN_SUCCESS && aclSetAclOpExecutorRepeatable(ex) == 0,
             "repeatable executor: %s", aclGetRecentErrMsg());
    TU_CHECK(run(ex, ws, stream) == ACLNN_SUCCESS, "first run");
    /* the second case's key and value are the same shapes: point the first case's at c2's data too */
    memcpy(c.k.view.data, c2.k.view.data, c2.k.data_bytes), memcpy(c.v.view.data, c2.v.view.data, c2.v.data_bytes);
    memcpy(c.table.view.data, c2.table.view.data, c2.table.data_bytes);
    TU_CHECK(aclSetInputTensorAddr(ex, 0, a.q, c2.q.view.data) == ACLNN_SUCCESS, "re-point the query: %s",
             aclGetRecentErrMsg());
    TU_CHECK(run(ex, ws, stream) == ACLNN_SUCCESS, "second run: %s", aclGetRecentErrMsg());
    unsigned char *want = acl_fia_outputs_copy(&c2);
    TU_CHECK(acl_fia_outputs_equal(&c, want), "a re-pointed repeatable executor does not give the native bytes");
    TU_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "aclDestroyAclOpExecutor");
    free(want);
    acl_fia_args_free(&a);
    fia_case_free(&c), fia_case_free(&c2);
    return tu_failures == before;
}

/* Refused calls: status, sentence, outputs untouched. */
static int run_errors(aclrtStream stream)
{
    const int before = tu_failures;
    fia_case c;
    fia_case_init(&c, &CASES[0].spec, 60);
    tu_tensor_poison(&c.out, 0xC3), tu_tensor_poison(&c.lse, 0xC3);
    unsigned char *poisoned = acl_fia_outputs_copy(&c);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    acl_fia_args two;
    acl_fia_args_make(&two, &c.args, true);
    TU_CHECK(prepare(&two, &c.args, NULL, NULL, &ws, &ex) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "key holds 2 tensors"),
             "a key list of two: %s", aclGetRecentErrMsg());
    acl_fia_args_free(&two);

    acl_fia_args a;
    acl_fia_args_make(&a, &c.args, false);
    const int64_t one = 1;
    const float unit = 1.0f;
    aclTensor *quant_scale2 = aclCreateTensor(&one, 1, ACL_FLOAT, &one, 0, ACL_FORMAT_ND, &one, 1, (void *)&unit);
    TU_CHECK(prepare(&a, &c.args, NULL, quant_scale2, &ws, &ex) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "quant_scale2"),
             "a quantised output: %s", aclGetRecentErrMsg());
    aclDestroyTensor(quant_scale2);
    TU_CHECK(prepare(&a, &c.args, a.kr ? a.kr : a.q, NULL, &ws, &ex) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "keyRopeAntiquantScaleOptional"),
             "keyRopeAntiquantScale: %s", aclGetRecentErrMsg());
    aclTensorList *key = a.key;
    a.key = NULL;
    TU_CHECK(prepare(&a, &c.args, NULL, NULL, &ws, &ex) == ACLNN_ERR_PARAM_NULLPTR &&
                 strstr(aclGetRecentErrMsg(), "key"),
             "a NULL key list: %s", aclGetRecentErrMsg());
    a.key = key;
    TU_CHECK(acl_fia_outputs_equal(&c, poisoned), "a refused call wrote its outputs");
    TU_CHECK(prepare(&a, &c.args, NULL, NULL, &ws, &ex) == ACLNN_SUCCESS && run(ex, ws, stream) == ACLNN_SUCCESS,
             "the valid call: %s", aclGetRecentErrMsg());
    TU_CHECK(run(ex, ws, stream) == ACLNN_ERR_PARAM_INVALID && strstr(aclGetRecentErrMsg(), "already run"),
             "a second run of a single-use executor: %s", aclGetRecentErrMsg());
    aclTensor *listed = a.value_tensor;
    acl_fia_args_free(&a);
    TU_CHECK(aclDestroyTensor(listed) == ACLNN_ERR_PARAM_INVALID, "aclDestroyTensorList left its tensor alive");
    free(poisoned);
    fia_case_free(&c);
    return tu_failures == before;
}

int main(void)
{
    TU_CHECK(aclInit(NULL) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS, "aclInit / aclrtSetDevice");
    aclrtStream stream = NULL;
    TU_CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");
    int passed = run_cases(stream);
    passed += run_repointed(stream);
    passed += run_errors(stream);
    TU_CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS, "aclrtDestroyStream");
    TU_CHECK(aclrtResetDevice(0) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS, "aclFinalize");
    return tu_finish("test_acl_fia", passed);
}
