/* A FusedInferAttentionScore case in CANN's terms (acl_fia_args.h). */
#include "acl_fia_args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_bridge.h"

aclTensor *acl_fia_wrap(const attnops_tensor *v)
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

void acl_fia_args_make(acl_fia_args *c, const attnops_fia_args *a, bool extra_key)
{
    memset(c, 0, sizeof *c);
    c->q = acl_fia_wrap(a->query), c->pse = acl_fia_wrap(a->pse_shift), c->mask = acl_fia_wrap(a->atten_mask);
    c->table = acl_fia_wrap(a->block_table), c->qr = acl_fia_wrap(a->query_rope), c->kr = acl_fia_wrap(a->key_rope);
    c->sink = acl_fia_wrap(a->learnable_sink);
    c->ks = acl_fia_wrap(a->key_antiquant_scale), c->ko = acl_fia_wrap(a->key_antiquant_offset);
    c->vs = acl_fia_wrap(a->value_antiquant_scale), c->vo = acl_fia_wrap(a->value_antiquant_offset);
    c->out = acl_fia_wrap(a->attention_out), c->lse = acl_fia_wrap(a->softmax_lse);
    c->key_tensor = acl_fia_wrap(a->key), c->value_tensor = acl_fia_wrap(a->value);
    const aclTensor *k[2] = {c->key_tensor, extra_key ? acl_fia_wrap(a->key) : NULL};
    const aclTensor *v[1] = {c->value_tensor};
    c->key = aclCreateTensorList(k, extra_key ? 2 : 1), c->value = aclCreateTensorList(v, 1);
    c->qlen = ints(a->actual_seq_lengths), c->kvlen = ints(a->actual_seq_lengths_kv);
    if (a->alibi_rule) { /* V5's pseType 2 / 3: pseShift carries the slopes */
        aclDestroyTensor(c->pse);
        c->pse = acl_fia_wrap(a->alibi_slopes);
        c->q_start = aclCreateIntArray(&a->alibi_q_start_idx, 1);
        c->kv_start = aclCreateIntArray(&a->alibi_kv_start_idx, 1);
    }
    const bool split = a->output_layout && a->output_layout != a->input_layout;
    snprintf(c->layout, sizeof c->layout, "%s%s%s", attnops_layout_name(a->input_layout), split ? "_" : "",
             split ? attnops_layout_name(a->output_layout) : "");
}

void acl_fia_args_free(acl_fia_args *c)
{
    aclTensor *all[] = {c->q,  c->pse, c->mask, c->table, c->ks,  c->ko,
                        c->vs, c->vo,  c->qr,   c->kr,    c->sink, c->out, c->lse};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) aclDestroyTensor(all[i]);
    aclDestroyTensorList(c->key), aclDestroyTensorList(c->value); /* and their tensors */
    aclDestroyIntArray(c->qlen), aclDestroyIntArray(c->kvlen);
    aclDestroyIntArray(c->q_start), aclDestroyIntArray(c->kv_start);
}

unsigned char *acl_fia_outputs_copy(const fia_case *c)
{
    unsigned char *b = malloc(c->out.data_bytes + c->lse.data_bytes);
    TU_CHECK(b != NULL, "out of memory");
    memcpy(b, c->out.view.data, c->out.data_bytes);
    memcpy(b + c->out.data_bytes, c->lse.view.data, c->lse.data_bytes);
    return b;
}

bool acl_fia_outputs_equal(const fia_case *c, const unsigned char *want)
{
    return !memcmp(c->out.view.data, want, c->out.data_bytes) &&
           !memcmp(c->lse.view.data, want + c->out.data_bytes, c->lse.data_bytes);
}

aclnnStatus acl_fia_run(acl_fia_run_fn entry, aclOpExecutor *ex, uint64_t ws, aclrtStream stream)
{
    void *w = NULL;
    if (ws) TU_CHECK(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc workspace");
    const aclnnStatus st = entry(w, ws, ex, stream);
    if (w) aclrtFree(w);
    return st;
}
