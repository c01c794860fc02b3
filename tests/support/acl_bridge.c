/* FlashAttentionScore(Grad) through the aclnn entry points: see acl_bridge.h. */
#include "acl_bridge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FWD_NAME[] = {"aclnnFlashAttentionScore", "aclnnFlashAttentionScoreV2",
                                       "aclnnFlashAttentionVarLenScore", "aclnnFlashAttentionVarLenScoreV2"};
static const char *const BWD_NAME[] = {"aclnnFlashAttentionScoreGrad", "aclnnFlashAttentionScoreGradV2",
                                       "aclnnFlashAttentionUnpaddingScoreGrad",
                                       "aclnnFlashAttentionUnpaddingScoreGradV2"};

const char *aclb_entry_name(const aclb_call *c) { return (c->grad ? BWD_NAME : FWD_NAME)[c->entry]; }

/* ATTNOPS_ACL_IMPL and the deterministic option as c asks, for phase one
 * (which reads both); restored after it. */
typedef struct saved_options {
    char *impl;
    bool had_impl;
    int64_t deterministic;
} saved_options;

static saved_options options_set(const aclb_call *c)
{
    saved_options s = {NULL, false, 0};
    if (c->impl) {
        const char *old = getenv("ATTNOPS_ACL_IMPL");
        s.had_impl = old != NULL;
        s.impl = old ? strdup(old) : NULL;
        setenv("ATTNOPS_ACL_IMPL", c->impl, 1);
    }
    if (c->deterministic >= 0) {
        aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &s.deterministic);
        aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, c->deterministic);
    }
    return s;
}

static void options_restore(const aclb_call *c, saved_options *s)
{
    if (c->impl) {
        if (s->had_impl) setenv("ATTNOPS_ACL_IMPL", s->impl, 1);
        else unsetenv("ATTNOPS_ACL_IMPL");
        free(s->impl);
    }
    if (c->deterministic >= 0) aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, s->deterministic);
}

static aclnnStatus prepare_fwd(const aclb_call *c, char *layout, uint64_t *ws, aclOpExecutor **ex)
{
    switch (c->entry) {
    case ACLB_V1:
        return aclnnFlashAttentionScoreGetWorkspaceSize(
            c->query, c->key, c->value, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->prefix, c->scale,
            c->keep_prob, c->pre_tokens, c->next_tokens, c->head_num, layout, c->inner_precise, c->sparse_mode,
            c->softmax_max, c->softmax_sum, c->softmax_out, c->attention_out, ws, ex);
    case ACLB_V2:
        return aclnnFlashAttentionScoreV2GetWorkspaceSize(
            c->query, c->key, c->value, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->prefix, c->qstart,
            c->kvstart, c->scale, c->keep_prob, c->pre_tokens, c->next_tokens, c->head_num, layout, c->inner_precise,
            c->sparse_mode, c->pse_type, c->softmax_max, c->softmax_sum, c->softmax_out, c->attention_out, ws, ex);
    case ACLB_VARLEN:
        return aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
            c->query, c->key, c->value, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->prefix, c->qlen,
            c->kvlen, c->scale, c->keep_prob, c->pre_tokens, c->next_tokens, c->head_num, layout, c->inner_precise,
            c->sparse_mode, c->softmax_max, c->softmax_sum, c->softmax_out, c->attention_out, ws, ex);
    case ACLB_VARLEN_V2:
        return aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
            c->query, c->key, c->value, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->prefix, c->qlen,
            c->kvlen, c->qstart, c->kvstart, c->scale, c->keep_prob, c->pre_tokens, c->next_tokens, c->head_num,
            layout, c->inner_precise, c->sparse_mode, c->pse_type, c->softmax_max, c->softmax_sum, c->softmax_out,
            c->attention_out, ws, ex);
    }
    return ACLNN_ERR_INNER;
}

static aclnnStatus prepare_bwd(const aclb_call *c, char *layout, uint64_t *ws, aclOpExecutor **ex)
{
    switch (c->entry) {
    case ACLB_V1:
        return aclnnFlashAttentionScoreGradGetWorkspaceSize(
            c->query, c->key, c->value, c->dy, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->softmax_max,
            c->softmax_sum, c->softmax_in, c->attention_in, c->prefix, c->scale, c->keep_prob, c->pre_tokens,
            c->next_tokens, c->head_num, layout, c->inner_precise, c->sparse_mode, c->dq, c->dk, c->dv, c->dpse, ws,
            ex);
    case ACLB_V2:
        return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
            c->query, c->key, c->value, c->dy, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->softmax_max,
            c->softmax_sum, c->softmax_in, c->attention_in, c->prefix, c->qstart, c->kvstart, c->scale, c->keep_prob,
            c->pre_tokens, c->next_tokens, c->head_num, layout, c->inner_precise, c->sparse_mode, c->pse_type, c->dq,
            c->dk, c->dv, c->dpse, ws, ex);
    case ACLB_VARLEN:
        return aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
            c->query, c->key, c->value, c->dy, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->softmax_max,
            c->softmax_sum, c->softmax_in, c->attention_in, c->prefix, c->qlen, c->kvlen, c->scale, c->keep_prob,
            c->pre_tokens, c->next_tokens, c->head_num, layout, c->inner_precise, c->sparse_mode, c->dq, c->dk, c->dv,
            c->dpse, ws, ex);
    case ACLB_VARLEN_V2:
        return aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
            c->query, c->key, c->value, c->dy, c->pse, c->drop_mask, c->padding_mask, c->atten_mask, c->softmax_max,
            c->softmax_sum, c->softmax_in, c->attention_in, c->prefix, c->qlen, c->kvlen, c->qstart, c->kvstart,
            c->scale, c->keep_prob, c->pre_tokens, c->next_tokens, c->head_num, layout, c->inner_precise,
            c->sparse_mode, c->pse_type, c->dq, c->dk, c->dv, c->dpse, ws, ex);
    }
    return ACLNN_ERR_INNER;
}

aclnnStatus aclb_prepare(const aclb_call *c, uint64_t *workspace_size, aclOpExecutor **executor)
{
    char layout[sizeof c->layout]; /* the entry points take a non-const char * */
    memcpy(layout, c->layout, sizeof layout);
    saved_options saved = options_set(c);
    const aclnnStatus st = c->grad ? prepare_bwd(c, layout, workspace_size, executor)
                                   : prepare_fwd(c, layout, workspace_size, executor);
    options_restore(c, &saved);
    return st;
}

aclnnStatus aclb_run(const aclb_call *c, void *workspace, uint64_t workspace_size, aclOpExecutor *executor,
                     aclrtStream stream)
{
    typedef aclnnStatus (*run_fn)(void *, uint64_t, aclOpExecutor *, const aclrtStream);
    static const run_fn FWD[] = {aclnnFlashAttentionScore, aclnnFlashAttentionScoreV2, aclnnFlashAttentionVarLenScore,
                                 aclnnFlashAttentionVarLenScoreV2};
    static const run_fn BWD[] = {aclnnFlashAttentionScoreGrad, aclnnFlashAttentionScoreGradV2,
                                 aclnnFlashAttentionUnpaddingScoreGrad, aclnnFlashAttentionUnpaddingScoreGradV2};
    return (c->grad ? BWD : FWD)[c->entry](workspace, workspace_size, executor, stream);
}

/* ---- from a native call ---- */
aclDataType aclb_dtype(attnops_dtype d)
{
    switch (d) {
    case ATTNOPS_DTYPE_F32: return ACL_FLOAT;
    case ATTNOPS_DTYPE_F16: return ACL_FLOAT16;
    case ATTNOPS_DTYPE_BF16: return ACL_BF16;
    case ATTNOPS_DTYPE_F8_E4M3FN: return ACL_FLOAT8_E4M3FN;
    case ATTNOPS_DTYPE_F8_E5M2: return ACL_FLOAT8_E5M2;
    case ATTNOPS_DTYPE_U8: return ACL_UINT8;
    case ATTNOPS_DTYPE_BOOL: return ACL_BOOL;
    case ATTNOPS_DTYPE_I32: return ACL_INT32;
    case ATTNOPS_DTYPE_I64: return ACL_INT64;
    case ATTNOPS_DTYPE_I8: return ACL_INT8;
    case ATTNOPS_DTYPE_UNSET: case ATTNOPS_DTYPE_COUNT: break;
    }
    return ACL_DT_UNDEFINED;
}

/* Why view v cannot be an aclTensor, or NULL. */
static const char *tensor_gap(const attnops_tensor *v)
{
    if (!v) return NULL;
    if (aclb_dtype(v->dtype) == ACL_DT_UNDEFINED) return "a dtype aclDataType does not name";
    if (v->rank < 0 || v->rank > ATTNOPS_MAX_RANK) return "a rank aclCreateTensor refuses";
    for (int i = 0; i < v->rank; i++)
        if (v->strides[i] < 0 || v->shape[i] < 0) return "a negative stride or size (aclCreateTensor refuses them)";
    return NULL;
}

/* Why int list v cannot be an aclIntArray (an int64 list), or NULL. */
static const char *list_gap(const attnops_tensor *v)
{
    if (!v) return NULL;
    if (v->dtype != ATTNOPS_DTYPE_I64 && v->dtype != ATTNOPS_DTYPE_I32) return "an int list that is not i64 or i32";
    if (v->rank != 1 || (v->shape[0] > 1 && v->strides[0] != 1) || (v->shape[0] > 0 && !v->data))
        return "an int list that is not one contiguous row of values";
    return NULL;
}

/* The aclTensor over view v's own memory: storage from v->data to its last element. */
static const aclTensor *tensor_of(aclb_call *c, const attnops_tensor *v)
{
    if (!v) return NULL;
    int64_t last = 0;
    bool empty = false;
    for (int i = 0; i < v->rank; i++) {
        if (v->shape[i] == 0) empty = true;
        else last += (v->shape[i] - 1) * v->strides[i];
    }
    const int64_t storage = empty ? 0 : last + 1;
    aclTensor *t = aclCreateTensor(v->shape, (uint64_t)v->rank, aclb_dtype(v->dtype), v->strides, 0, ACL_FORMAT_ND,
                                   &storage, 1, v->data);
    if (t) c->owned_tensors[c->n_tensors++] = t;
    else c->failed = true;
    return t;
}

/* The int list v's values (i64 or i32) as an aclIntArray. */
static const aclIntArray *array_of(aclb_call *c, const attnops_tensor *v)
{
    if (!v) return NULL;
    const int64_t n = v->shape[0];
    int64_t *values = malloc(sizeof *values * (size_t)(n ? n : 1));
    if (!values) {
        c->failed = true;
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        values[i] = v->dtype == ATTNOPS_DTYPE_I64 ? ((const int64_t *)v->data)[i] : ((const int32_t *)v->data)[i];
    aclIntArray *a = aclCreateIntArray(values, (uint64_t)n);
    free(values);
    if (a) c->owned_arrays[c->n_arrays++] = a;
    else c->failed = true;
    return a;
}

/* What of p the aclnn parameter lists cannot carry, or NULL. */
static const char *params_gap(const attnops_fa_params *p, bool varlen, char *buf, size_t size)
{
    attnops_fa_params d;
    attnops_fa_params_init(&d);
    const char *what = NULL;
    if (p->input_layout <= ATTNOPS_LAYOUT_UNSET || p->input_layout > ATTNOPS_LAYOUT_TND)
        what = "an input_layout that is no layout (inputLayout is a string)";
    else if (p->impl != ATTNOPS_IMPL_AUTO && p->impl != ATTNOPS_IMPL_REFERENCE)
        what = "an impl other than auto or reference (ATTNOPS_ACL_IMPL is cpu or reference)";
    else if (p->out_dtype != d.out_dtype) what = "out_dtype";
    else if (p->query_rope || p->key_rope) what = "MLA rope inputs";
    else if (p->d_scale_q || p->d_scale_k || p->d_scale_v || p->d_scale_dy || p->d_scale_o) what = "FP8 de-scales";
    else if (p->dropout_seq_qlen || p->dropout_seq_kvlen || p->dropout_q_start || p->dropout_kv_start ||
             p->dropout_head_num || p->dropout_head_start)
        what = "a dropout block";
    else if (p->seed != d.seed || p->offset != d.offset) what = "a dropout seed or offset";
    else if (p->softmax_in_layout != d.softmax_in_layout) what = "softmax_in_layout";
    else if (p->softcap != d.softcap) what = "softcap (an attnops extension)";
    else if (p->sink) what = "attention sinks";
    else if (!varlen && (p->actual_seq_qlen || p->actual_seq_kvlen))
        what = "actual_seq_qlen / actual_seq_kvlen (only the VarLen / Unpadding entry points take them)";
    else {
        const attnops_tensor *views[] = {p->query, p->key, p->value, p->pse, p->drop_mask, p->padding_mask,
                                         p->atten_mask};
        for (size_t i = 0; i < sizeof views / sizeof *views && !what; i++) what = tensor_gap(views[i]);
        const attnops_tensor *lists[] = {p->prefix, p->actual_seq_qlen, p->actual_seq_kvlen, p->q_start_idx,
                                         p->kv_start_idx};
        for (size_t i = 0; i < sizeof lists / sizeof *lists && !what; i++) what = list_gap(lists[i]);
    }
    if (!what) return NULL;
    snprintf(buf, size, "the aclnn entry points cannot carry %s", what);
    return buf;
}

/* The attributes and inputs both directions share. */
static void fill_common(aclb_call *c, const attnops_fa_params *p, bool varlen)
{
    const bool v2 = p->pse_type != 1 || p->q_start_idx || p->kv_start_idx;
    c->entry = varlen ? (v2 ? ACLB_VARLEN_V2 : ACLB_VARLEN) : (v2 ? ACLB_V2 : ACLB_V1);
    c->query = tensor_of(c, p->query), c->key = tensor_of(c, p->key), c->value = tensor_of(c, p->value);
    c->pse = tensor_of(c, p->pse), c->drop_mask = tensor_of(c, p->drop_mask);
    c->padding_mask = tensor_of(c, p->padding_mask), c->atten_mask = tensor_of(c, p->atten_mask);
    c->prefix = array_of(c, p->prefix), c->qlen = array_of(c, p->actual_seq_qlen);
    c->kvlen = array_of(c, p->actual_seq_kvlen), c->qstart = array_of(c, p->q_start_idx);
    c->kvstart = array_of(c, p->kv_start_idx);
    c->scale = p->scale_value, c->keep_prob = p->keep_prob;
    c->pre_tokens = p->pre_tokens, c->next_tokens = p->next_tokens, c->head_num = p->head_num;
    c->inner_precise = p->inner_precise, c->sparse_mode = p->sparse_mode, c->pse_type = p->pse_type;
    snprintf(c->layout, sizeof c->layout, "%s", attnops_layout_name(p->input_layout));
    c->impl = p->impl == ATTNOPS_IMPL_REFERENCE ? "reference" : "cpu";
    c->deterministic = p->deterministic;
}

static const char *outputs_gap(const attnops_tensor *const *v, size_t n)
{
    const char *what = NULL;
    for (size_t i = 0; i < n && !what; i++) what = tensor_gap(v[i]);
    return what;
}

/* NULL, or (everything released) the sentence of an aclCreateTensor / aclCreateIntArray that failed. */
static const char *creation_failure(aclb_call *c, char *buf, size_t size)
{
    if (!c->failed) return NULL;
    snprintf(buf, size, "creating the acl objects failed: %s", aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "?");
    aclb_release(c);
    return buf;
}

const char *aclb_from_fwd(aclb_call *c, const attnops_fa_fwd_args *a, bool varlen)
{
    static char why[160];
    memset(c, 0, sizeof *c);
    if (!a) return "the aclnn entry points have no argument struct to pass as NULL";
    const char *gap = params_gap(&a->p, varlen, why, sizeof why);
    const attnops_tensor *outs[] = {a->softmax_max, a->softmax_sum, a->softmax_out, a->attention_out};
    const char *out_gap = gap ? NULL : outputs_gap(outs, 4);
    if (out_gap) snprintf(why, sizeof why, "the aclnn entry points cannot carry %s", out_gap), gap = why;
    if (gap) return gap;
    fill_common(c, &a->p, varlen);
    c->softmax_max = tensor_of(c, a->softmax_max), c->softmax_sum = tensor_of(c, a->softmax_sum);
    c->softmax_out = tensor_of(c, a->softmax_out), c->attention_out = tensor_of(c, a->attention_out);
    return creation_failure(c, why, sizeof why);
}

const char *aclb_from_bwd(aclb_call *c, const attnops_fa_bwd_args *a, bool varlen)
{
    static char why[160];
    memset(c, 0, sizeof *c);
    if (!a) return "the aclnn entry points have no argument struct to pass as NULL";
    const char *gap = params_gap(&a->p, varlen, why, sizeof why);
    if (!gap && (a->dq_rope || a->dk_rope)) gap = "the aclnn entry points cannot carry MLA rope gradients";
    if (!gap && a->dsink) gap = "the aclnn entry points cannot carry attention sinks' gradients";
    /* CANN ignores softmaxInOptional, and so does libattnops_acl: a native call with one is refused, an aclnn
     * call with one is not -- a documented difference (docs/ACL.md), not a rule to check through aclnn. */
    if (!gap && a->softmax_in) gap = "softmax_in (the aclnn entry points ignore softmaxInOptional)";
    const attnops_tensor *outs[] = {a->dy, a->attention_in, a->softmax_max, a->softmax_sum, a->dq, a->dk, a->dv,
                                    a->dpse};
    const char *out_gap = gap ? NULL : outputs_gap(outs, 8);
    if (out_gap) snprintf(why, sizeof why, "the aclnn entry points cannot carry %s", out_gap), gap = why;
    if (gap) return gap;
    fill_common(c, &a->p, varlen);
    c->grad = true;
    c->dy = tensor_of(c, a->dy), c->attention_in = tensor_of(c, a->attention_in);
    c->softmax_max = tensor_of(c, a->softmax_max), c->softmax_sum = tensor_of(c, a->softmax_sum);
    c->dq = tensor_of(c, a->dq), c->dk = tensor_of(c, a->dk), c->dv = tensor_of(c, a->dv);
    c->dpse = tensor_of(c, a->dpse);
    return creation_failure(c, why, sizeof why);
}

void aclb_release(aclb_call *c)
{
    for (int i = 0; i < c->n_tensors; i++) aclDestroyTensor(c->owned_tensors[i]);
    for (int i = 0; i < c->n_arrays; i++) aclDestroyIntArray(c->owned_arrays[i]);
    c->n_tensors = c->n_arrays = 0;
}
