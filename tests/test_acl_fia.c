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

#include "acl_bridge.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "fia_case.h"
#include "suite.h"

/* An aclTensor over view v's own memory (NULL for NULL). */
static aclTensor *wrap(const attnops_tensor *v)
{
    if (!v) return NULL;
    int64_t last = 0;
    for (int i = 0; i < v->rank; i++)
        if (v->shape[i] > 0) last += (v->shape[i] - 1) * v->strides[i];
    const int64_t storage = last + 1;
    aclTensor *t = aclCreateTensor(v->shape, (uint64_t)v->rank, aclb_dtype(v->dtype), v->strides, 0, ACL_FORMAT_ND,
                                   &storage, 1, v->data);
    TU_CHECK(t != NULL, "aclCreateTensor: %s", aclGetRecentErrMsg());
    return t;
}

static aclIntArray *ints(const attnops_tensor *v)
{
    return v ? aclCreateIntArray((const int64_t *)v->data, (uint64_t)v->shape[0]) : NULL;
}

/* A native argument struct in CANN's terms; `extra_key` adds a second tensor to the key list. */
typedef struct acl_args {
    aclTensor *q, *pse, *mask, *table, *ks, *ko, *vs, *vo, *qr, *kr, *out, *lse, *quant_scale2;
    aclTensorList *key, *value;
    aclTensor *value_tensor; /* the value list's (the list owns it) */
    aclIntArray *qlen, *kvlen;
    char layout[16];
} acl_args;

static void acl_args_make(acl_args *c, const attnops_fia_args *a, bool extra_key)
{
    memset(c, 0, sizeof *c);
    c->q = wrap(a->query), c->pse = wrap(a->pse_shift), c->mask = wrap(a->atten_mask);
    c->table = wrap(a->block_table), c->qr = wrap(a->query_rope), c->kr = wrap(a->key_rope);
    c->ks = wrap(a->key_antiquant_scale), c->ko = wrap(a->key_antiquant_offset);
    c->vs = wrap(a->value_antiquant_scale), c->vo = wrap(a->value_antiquant_offset);
    c->out = wrap(a->attention_out), c->lse = wrap(a->softmax_lse);
    const aclTensor *k[2] = {wrap(a->key), extra_key ? wrap(a->key) : NULL};
    c->value_tensor = wrap(a->value);
    const aclTensor *v[1] = {c->value_tensor};
    c->key = aclCreateTensorList(k, extra_key ? 2 : 1), c->value = aclCreateTensorList(v, 1);
    c->qlen = ints(a->actual_seq_lengths), c->kvlen = ints(a->actual_seq_lengths_kv);
    const bool split = a->output_layout && a->output_layout != a->input_layout;
    snprintf(c->layout, sizeof c->layout, "%s%s%s", attnops_layout_name(a->input_layout), split ? "_" : "",
             split ? attnops_layout_name(a->output_layout) : "");
}

static void acl_args_free(acl_args *c)
{
    aclTensor *all[] = {c->q, c->pse, c->mask, c->table, c->ks, c->ko, c->vs, c->vo, c->qr, c->kr, c->out, c->lse,
                        c->quant_scale2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) aclDestroyTensor(all[i]);
    aclDestroyTensorList(c->key), aclDestroyTensorList(c->value); /* and their tensors */
    aclDestroyIntArray(c->qlen), aclDestroyIntArray(c->kvlen);
}

static aclnnStatus prepare(const acl_args *c, const attnops_fia_args *a, const aclTensor *rope_scale, uint64_t *ws,
                           aclOpExecutor **ex)
{
    char layout[16];
    memcpy(layout, c->layout, sizeof layout);
    return aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
        c->q, c->key, c->value, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, c->quant_scale2, NULL, NULL,
        NULL, c->table, NULL, NULL, c->ks, c->ko, c->vs, c->vo, NULL, NULL, NULL, c->qr, c->kr, rope_scale,
        a->num_heads, a->scale_value, a->pre_tokens, a->next_tokens, layout, a->num_key_value_heads, a->sparse_mode,
        a->inner_precise, a->block_size, 0, a->softmax_lse_flag, a->key_antiquant_mode, a->value_antiquant_mode,
        c->out, c->lse, ws, ex);
}

static aclnnStatus run(aclOpExecutor *ex, uint64_t ws, aclrtStream stream)
{
    void *w = NULL;
    if (ws) TU_CHECK(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc workspace");
    const aclnnStatus st = aclnnFusedInferAttentionScoreV3(w, ws, ex, stream);
    if (w) aclrtFree(w);
    return st;
}

/* The outputs' bytes (attention_out then softmax_lse). */
static unsigned char *outputs_copy(const fia_case *c)
{
    unsigned char *b = malloc(c->out.data_bytes + c->lse.data_bytes);
    memcpy(b, c->out.view.data, c->out.data_bytes);
    memcpy(b + c->out.data_bytes, c->lse.view.data, c->lse.data_bytes);
    return b;
}

static bool outputs_equal(const fia_case *c, const unsigned char *want)
{
    return !memcmp(c->out.view.data, want, c->out.data_bytes) &&
           !memcmp(c->lse.view.data, want + c->out.data_bytes, c->lse.data_bytes);
}

typedef struct named_spec {
    const char *name;
    fia_case_spec spec;
} named_spec;

#define TOKENS .pre_tokens = 2147483647, .next_tokens = 2147483647, .lse = true
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
        unsigned char *want = outputs_copy(&c);
        tu_tensor_poison(&c.out, 0xC3), tu_tensor_poison(&c.lse, 0xC3);
        acl_args a;
        acl_args_make(&a, &c.args, false);
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        aclnnStatus st = prepare(&a, &c.args, NULL, &ws, &ex);
        TU_CHECK(st == ACLNN_SUCCESS, "%s: GetWorkspaceSize %d: %s", CASES[i].name, st, aclGetRecentErrMsg());
        if (st == ACLNN_SUCCESS) {
            st = run(ex, ws, stream);
            TU_CHECK(st == ACLNN_SUCCESS, "%s: run %d: %s", CASES[i].name, st, aclGetRecentErrMsg());
            TU_CHECK(outputs_equal(&c, want), "%s: the aclnn outputs are not the native call's bytes", CASES[i].name);
        }
        acl_args_free(&a);
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
    acl_args a;
    acl_args_make(&a, &c.args, false);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    TU_CHECK(prepare(&a, &c.args, NULL, &ws, &ex) == ACLNN_SUCCESS && aclSetAclOpExecutorRepeatable(ex) == 0,
             "repeatable executor: %s", aclGetRecentErrMsg());
    TU_CHECK(run(ex, ws, stream) == ACLNN_SUCCESS, "first run");
    /* the second case's key and value are the same shapes: point the first case's at c2's data too */
    memcpy(c.k.view.data, c2.k.view.data, c2.k.data_bytes), memcpy(c.v.view.data, c2.v.view.data, c2.v.data_bytes);
    memcpy(c.table.view.data, c2.table.view.data, c2.table.data_bytes);
    TU_CHECK(aclSetInputTensorAddr(ex, 0, a.q, c2.q.view.data) == ACLNN_SUCCESS, "re-point the query: %s",
             aclGetRecentErrMsg());
    TU_CHECK(run(ex, ws, stream) == ACLNN_SUCCESS, "second run: %s", aclGetRecentErrMsg());
    unsigned char *want = outputs_copy(&c2);
    TU_CHECK(outputs_equal(&c, want), "a re-pointed repeatable executor does not give the native bytes");
    TU_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "aclDestroyAclOpExecutor");
    free(want);
    acl_args_free(&a);
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
    unsigned char *poisoned = outputs_copy(&c);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    acl_args two;
    acl_args_make(&two, &c.args, true);
    TU_CHECK(prepare(&two, &c.args, NULL, &ws, &ex) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "key holds 2 tensors"),
             "a key list of two: %s", aclGetRecentErrMsg());
    acl_args_free(&two);

    acl_args a;
    acl_args_make(&a, &c.args, false);
    const int64_t one = 1;
    const float unit = 1.0f;
    a.quant_scale2 = aclCreateTensor(&one, 1, ACL_FLOAT, &one, 0, ACL_FORMAT_ND, &one, 1, (void *)&unit);
    TU_CHECK(prepare(&a, &c.args, NULL, &ws, &ex) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "quant_scale2"),
             "a quantised output: %s", aclGetRecentErrMsg());
    aclDestroyTensor(a.quant_scale2), a.quant_scale2 = NULL;
    TU_CHECK(prepare(&a, &c.args, a.kr ? a.kr : a.q, &ws, &ex) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "keyRopeAntiquantScaleOptional"),
             "keyRopeAntiquantScale: %s", aclGetRecentErrMsg());
    aclTensorList *key = a.key;
    a.key = NULL;
    TU_CHECK(prepare(&a, &c.args, NULL, &ws, &ex) == ACLNN_ERR_PARAM_NULLPTR && strstr(aclGetRecentErrMsg(), "key"),
             "a NULL key list: %s", aclGetRecentErrMsg());
    a.key = key;
    TU_CHECK(outputs_equal(&c, poisoned), "a refused call wrote its outputs");
    TU_CHECK(prepare(&a, &c.args, NULL, &ws, &ex) == ACLNN_SUCCESS && run(ex, ws, stream) == ACLNN_SUCCESS,
             "the valid call: %s", aclGetRecentErrMsg());
    TU_CHECK(run(ex, ws, stream) == ACLNN_ERR_PARAM_INVALID && strstr(aclGetRecentErrMsg(), "already run"),
             "a second run of a single-use executor: %s", aclGetRecentErrMsg());
    aclTensor *listed = a.value_tensor;
    acl_args_free(&a);
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
