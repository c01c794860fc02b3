/* The CANN compatibility layer (libattnops_acl): programs written against the
 * acl / aclnn API get the native attnops API's bits.
 *
 * Each case runs FlashAttentionScore and its grad twice on the same inputs:
 * through aclInit / aclrtMalloc / aclrtMemcpy / aclCreateTensor and the
 * two-phase aclnn calls, and through attnops_flash_attention_score(_grad)
 * directly, and requires identical output bytes.  Query is created with a
 * non-zero view offset into its device storage and padded (non-contiguous)
 * rows.  The fixed cases, then RANDOM_CASES random ones (random_case; the
 * draws follow ATTNOPS_TEST_SEED).  Then the error paths: executor reuse, NULL and invalid arguments
 * with their aclnn status and sentence, runtime misuse with CANN's aclError. */
#include <stdlib.h>
#include <string.h>

#include "acl_bridge.h"
#include "testutil.h"
#include "suite.h"

enum { RANDOM_CASES = 150 };

/* The atten_mask a case passes: none, the compressed 2048 x 2048 causal one
 * (modes 2, 3, 4, 7, 8), the 3072 x 2048 prefix one (mode 6), or random full
 * masks [S1, S2] / [B, 1, S1, S2] (modes 0, 1, 5). */
typedef enum { MASK_NONE, MASK_CAUSAL, MASK_PREFIX, MASK_SS, MASK_B1SS } mask_kind;

typedef struct acl_case {
    const char *name;
    aclb_entry entry;
    attnops_dtype dtype;
    const char *layout;
    int64_t B, N1, N2, S1, S2, D, Dv; /* TND: S1 / S2 unused, lengths below */
    int64_t nb, qlens[4], kvlens[4];  /* TND batches (cumulative lengths are built here) */
    int64_t sparse_mode, pre, next;
    int pse_type;          /* 2 / 3: generated ALiBi from slopes [N1]; 0 / 1 with pse_bnss: a [B,N1,S1,S2] bias */
    double keep_prob;
    int deterministic;
    mask_kind mask;
    bool pse_bnss, drop_mask; /* drop_mask: an explicit packed keep mask instead of the Philox stream */
    int64_t prefix[2];        /* modes 5 / 6 */
} acl_case;

/* A host tensor's contents in freshly aclrtMalloc'd storage, `lead` elements
 * into it, and the aclTensor viewing them with the host view's strides. */
typedef struct dev_tensor {
    void *storage;
    aclTensor *t;
    size_t lead_bytes, bytes;
} dev_tensor;

static dev_tensor to_device(const tu_tensor *h, int64_t lead)
{
    dev_tensor d = {0};
    const size_t elem = attnops_dtype_size(h->view.dtype);
    d.lead_bytes = (size_t)lead * elem, d.bytes = h->data_bytes;
    TU_CHECK(aclrtMalloc(&d.storage, d.lead_bytes + d.bytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
    TU_CHECK(aclrtMemcpy((char *)d.storage + d.lead_bytes, d.bytes, h->view.data, d.bytes,
                         ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS, "aclrtMemcpy H2D");
    const int64_t storage = lead + (int64_t)(d.bytes / elem);
    d.t = aclCreateTensor(h->view.shape, (uint64_t)h->view.rank, aclb_dtype(h->view.dtype), h->view.strides, lead,
                          ACL_FORMAT_ND, &storage, 1, d.storage);
    TU_CHECK(d.t != NULL, "aclCreateTensor: %s", aclGetRecentErrMsg());
    return d;
}

static void free_device(dev_tensor *d)
{
    aclDestroyTensor(d->t);
    if (d->storage) aclrtFree(d->storage);
}

/* The device tensor's bytes equal the host tensor's. */
static bool same_bytes(const dev_tensor *d, const tu_tensor *h)
{
    unsigned char *back = malloc(d->bytes ? d->bytes : 1);
    aclrtMemcpy(back, d->bytes, (char *)d->storage + d->lead_bytes, d->bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    const bool same = memcmp(back, h->view.data, d->bytes) == 0;
    free(back);
    return same;
}

static void qkv_shape(const acl_case *c, int64_t n, int64_t s, int64_t d, int64_t t, int64_t shape[4], int *rank)
{
    const char *l = c->layout;
    if (!strcmp(l, "TND")) shape[0] = t, shape[1] = n, shape[2] = d, *rank = 3;
    else if (!strcmp(l, "BSH")) shape[0] = c->B, shape[1] = s, shape[2] = n * d, *rank = 3;
    else if (!strcmp(l, "SBH")) shape[0] = s, shape[1] = c->B, shape[2] = n * d, *rank = 3;
    else if (!strcmp(l, "BSND")) shape[0] = c->B, shape[1] = s, shape[2] = n, shape[3] = d, *rank = 4;
    else shape[0] = c->B, shape[1] = n, shape[2] = s, shape[3] = d, *rank = 4; /* BNSD */
}

/* One case's host inputs and the shapes of its q/k/v-like tensors (TND: the
 * cumulative lengths too). */
typedef struct host_problem {
    bool tnd, masked, alibi, prefixed;
    int64_t cq[4], ckv[4], T1, T2;
    int64_t qs[4], ks[4], vs[4], os[4], st[4];
    int rq, rk, rv, ro, rs;
    int64_t qstart, kvstart;
    tu_tensor q, k, v, dy, mask, slopes, pse, keep, prefix;
} host_problem;

/* The forward's and the backward's outputs. */
typedef struct fa_outputs {
    tu_tensor out, smax, ssum, dq, dk, dv;
} fa_outputs;

/* The atten_mask of c->mask; full masks draw from rng. */
static tu_tensor make_mask(const acl_case *c, const host_problem *h, tu_rng *rng)
{
    const int64_t S1 = h->tnd ? c->qlens[0] : c->S1, S2 = h->tnd ? c->kvlens[0] : c->S2; /* TND full masks: max lens */
    int64_t mask_shape[4] = {2048, 2048}, mask_rank = 2;
    if (c->mask == MASK_PREFIX) mask_shape[0] = 3072;
    if (c->mask == MASK_SS) mask_shape[0] = S1, mask_shape[1] = S2;
    if (c->mask == MASK_B1SS)
        mask_shape[0] = c->B, mask_shape[1] = 1, mask_shape[2] = S1, mask_shape[3] = S2, mask_rank = 4;
    tu_tensor mask = tu_tensor_new(ATTNOPS_DTYPE_U8, (int)mask_rank, mask_shape, 0);
    const int64_t cols = mask_shape[mask_rank - 1], rows = tu_numel(&mask.view) / cols;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            uint8_t bit = j > i;                                                   /* causal */
            if (c->mask == MASK_PREFIX && i >= 2048) bit = j >= 1024;              /* prefix rectangle */
            if (c->mask == MASK_SS || c->mask == MASK_B1SS) bit = tu_uniform(rng) < 0.3 && j > 0;
            ((uint8_t *)mask.view.data)[i * cols + j] = bit;
        }
    return mask;
}

/* The inputs of case c, drawn from rng (in this order: q, k, v, dy, the mask, pse). */
static void make_problem(const acl_case *c, tu_rng *rng, host_problem *h)
{
    memset(h, 0, sizeof *h);
    h->tnd = !strcmp(c->layout, "TND");
    for (int64_t b = 0; b < c->nb; b++)
        h->T1 += c->qlens[b], h->T2 += c->kvlens[b], h->cq[b] = h->T1, h->ckv[b] = h->T2;
    qkv_shape(c, c->N1, c->S1, c->D, h->T1, h->qs, &h->rq);
    qkv_shape(c, c->N2, c->S2, c->D, h->T2, h->ks, &h->rk);
    qkv_shape(c, c->N2, c->S2, c->Dv, h->T2, h->vs, &h->rv);
    qkv_shape(c, c->N1, c->S1, c->Dv, h->T1, h->os, &h->ro);
    h->rs = 4;
    if (h->tnd) h->st[0] = h->T1, h->st[1] = c->N1, h->st[2] = 8, h->rs = 3;
    else h->st[0] = c->B, h->st[1] = c->N1, h->st[2] = c->S1, h->st[3] = 8;

    h->q = tu_tensor_new(c->dtype, h->rq, h->qs, 3), h->k = tu_tensor_new(c->dtype, h->rk, h->ks, 0);
    h->v = tu_tensor_new(c->dtype, h->rv, h->vs, 0), h->dy = tu_tensor_new(c->dtype, h->ro, h->os, 0);
    tu_tensor_randn(&h->q, rng, 1.0), tu_tensor_randn(&h->k, rng, 1.0), tu_tensor_randn(&h->v, rng, 1.0);
    tu_tensor_randn(&h->dy, rng, 1.0);
    h->mask = make_mask(c, h, rng);
    const int64_t slope_shape[1] = {c->N1}, bnss[4] = {c->B, c->N1, c->S1, c->S2};
    h->slopes = tu_tensor_new(ATTNOPS_DTYPE_F32, 1, slope_shape, 0);
    attnops_alibi_slopes(c->N1, h->slopes.view.data);
    h->pse = tu_tensor_new(c->dtype, 4, bnss, 0);
    tu_tensor_randn(&h->pse, rng, 0.5);
    const int64_t keep_count = h->tnd ? 0 : c->B * c->N1 * c->S1 * c->S2, keep_bytes[1] = {(keep_count + 7) / 8 + 1};
    h->keep = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, keep_bytes, 0);
    if (c->drop_mask) {
        attnops_dropout_mask_args dm = {.seed = 7, .offset = 0, .keep_prob = c->keep_prob, .batch = c->B,
                                        .head_num = c->N1, .seq_q = c->S1, .seq_kv = c->S2, .bit_mask = &h->keep.view};
        TU_CHECK(attnops_dropout_mask(&dm) == ATTNOPS_SUCCESS, "dropout mask: %s", attnops_last_error());
    }
    const int64_t prefix_shape[1] = {c->B};
    h->prefix = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, prefix_shape, 0);
    for (int64_t b = 0; b < c->B && b < 2; b++) ((int64_t *)h->prefix.view.data)[b] = c->prefix[b];
    h->masked = c->mask != MASK_NONE, h->alibi = c->pse_type >= 2;
    h->prefixed = c->sparse_mode == 5 || c->sparse_mode == 6;
    h->qstart = 5, h->kvstart = 2;
}

/* Outputs of the problem's shapes. */
static fa_outputs new_outputs(const acl_case *c, const host_problem *h)
{
    return (fa_outputs){tu_tensor_new(c->dtype, h->ro, h->os, 0), tu_tensor_new(ATTNOPS_DTYPE_F32, h->rs, h->st, 0),
                        tu_tensor_new(ATTNOPS_DTYPE_F32, h->rs, h->st, 0), tu_tensor_new(c->dtype, h->rq, h->qs, 0),
                        tu_tensor_new(c->dtype, h->rk, h->ks, 0), tu_tensor_new(c->dtype, h->rv, h->vs, 0)};
}

/* The forward, then the backward on its results, through the native API. */
static void run_native(const acl_case *c, host_problem *h, fa_outputs *o)
{
    const int64_t nb = c->nb, one = 1;
    attnops_tensor tq = attnops_tensor_contiguous(h->cq, ATTNOPS_DTYPE_I64, 1, &nb),
                   tkv = attnops_tensor_contiguous(h->ckv, ATTNOPS_DTYPE_I64, 1, &nb);
    attnops_tensor tqs = attnops_tensor_contiguous(&h->qstart, ATTNOPS_DTYPE_I64, 1, &one),
                   tkvs = attnops_tensor_contiguous(&h->kvstart, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_fa_fwd_args f;
    attnops_fa_fwd_args_init(&f);
    attnops_fa_params *p = &f.p;
    p->query = &h->q.view, p->key = &h->k.view, p->value = &h->v.view;
    p->atten_mask = h->masked ? &h->mask.view : NULL;
    p->pse = h->alibi ? &h->slopes.view : (c->pse_bnss ? &h->pse.view : NULL);
    p->drop_mask = c->drop_mask ? &h->keep.view : NULL, p->prefix = h->prefixed ? &h->prefix.view : NULL;
    p->actual_seq_qlen = h->tnd ? &tq : NULL, p->actual_seq_kvlen = h->tnd ? &tkv : NULL;
    p->q_start_idx = h->alibi ? &tqs : NULL, p->kv_start_idx = h->alibi ? &tkvs : NULL;
    p->scale_value = 0.125, p->keep_prob = c->keep_prob, p->pre_tokens = c->pre, p->next_tokens = c->next;
    p->head_num = c->N1, p->input_layout = attnops_layout_from_string(c->layout);
    p->sparse_mode = c->sparse_mode, p->pse_type = c->pse_type, p->deterministic = c->deterministic;
    f.attention_out = &o->out.view, f.softmax_max = &o->smax.view, f.softmax_sum = &o->ssum.view;
    size_t ws_bytes = 0;
    TU_CHECK(attnops_flash_attention_score_workspace_size(&f, &ws_bytes) == ATTNOPS_SUCCESS, "%s native fwd: %s",
             c->name, attnops_last_error());
    void *ws = malloc(ws_bytes ? ws_bytes : 1);
    TU_CHECK(attnops_flash_attention_score(&f, ws, ws_bytes) == ATTNOPS_SUCCESS, "%s native fwd", c->name);
    free(ws);
    attnops_fa_bwd_args g;
    attnops_fa_bwd_args_init(&g);
    g.p = f.p, g.dy = &h->dy.view, g.attention_in = &o->out.view, g.softmax_max = &o->smax.view;
    g.softmax_sum = &o->ssum.view, g.dq = &o->dq.view, g.dk = &o->dk.view, g.dv = &o->dv.view;
    TU_CHECK(attnops_flash_attention_score_grad_workspace_size(&g, &ws_bytes) == ATTNOPS_SUCCESS, "%s native bwd: %s",
             c->name, attnops_last_error());
    ws = malloc(ws_bytes ? ws_bytes : 1);
    TU_CHECK(attnops_flash_attention_score_grad(&g, ws, ws_bytes) == ATTNOPS_SUCCESS, "%s native bwd", c->name);
    free(ws);
}

/* Both phases of the call on `stream`; after the forward's the stream is
 * synchronized, and a V1 executor, already run, must be refused. */
static void run_aclnn(const acl_case *c, aclb_call *call, aclrtStream stream)
{
    const bool fwd = !call->grad;
    const char *dir = fwd ? "fwd" : "bwd";
    uint64_t ws_size = 0;
    aclOpExecutor *ex = NULL;
    void *dws = NULL;
    aclnnStatus s1 = aclb_prepare(call, &ws_size, &ex);
    TU_CHECK(s1 == ACLNN_SUCCESS, "%s %s phase one: %d %s", c->name, dir, s1, aclGetRecentErrMsg());
    if (ws_size) aclrtMalloc(&dws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST);
    aclnnStatus s2 = aclb_run(call, dws, ws_size, ex, stream);
    TU_CHECK(s2 == ACLNN_SUCCESS, "%s %s run: %d %s", c->name, dir, s2, aclGetRecentErrMsg());
    if (fwd) TU_CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "aclrtSynchronizeStream");
    if (fwd && c->entry == ACLB_V1) /* an executor runs once */
        TU_CHECK(aclb_run(call, dws, ws_size, ex, stream) == ACLNN_ERR_PARAM_INVALID &&
                     strstr(aclGetRecentErrMsg(), "already run"), "%s: a reused executor must be refused", c->name);
    if (dws) aclrtFree(dws);
}

/* The same forward and backward through acl / aclnn; their outputs must be
 * the native ones byte for byte. */
static void run_through_acl(const acl_case *c, const host_problem *h, const fa_outputs *native)
{
    TU_CHECK(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, c->deterministic) == ACL_SUCCESS, "deterministic");
    aclrtStream stream = NULL;
    TU_CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");
    dev_tensor aq = to_device(&h->q, 7), ak = to_device(&h->k, 0), av = to_device(&h->v, 0),
               ady = to_device(&h->dy, 0), amask = to_device(&h->mask, 0), aslopes = to_device(&h->slopes, 0),
               apse = to_device(&h->pse, 0), akeep = to_device(&h->keep, 0);
    fa_outputs blank = new_outputs(c, h);
    dev_tensor aout = to_device(&blank.out, 0), amax = to_device(&blank.smax, 0), asum = to_device(&blank.ssum, 0),
               adq = to_device(&blank.dq, 0), adk = to_device(&blank.dk, 0), adv = to_device(&blank.dv, 0);
    aclIntArray *lq = aclCreateIntArray(h->cq, (uint64_t)c->nb), *lkv = aclCreateIntArray(h->ckv, (uint64_t)c->nb);
    aclIntArray *sq = aclCreateIntArray(&h->qstart, 1), *skv = aclCreateIntArray(&h->kvstart, 1);
    const aclTensor *m = h->masked ? amask.t : NULL, *pse = h->alibi ? aslopes.t : (c->pse_bnss ? apse.t : NULL);
    const aclTensor *dmask = c->drop_mask ? akeep.t : NULL;
    aclIntArray *pre_arr = h->prefixed ? aclCreateIntArray(h->prefix.view.data, (uint64_t)c->B) : NULL;
    /* one call description for both directions: each entry point takes the arguments it has */
    aclb_call call = {.entry = c->entry, .query = aq.t, .key = ak.t, .value = av.t, .pse = pse, .drop_mask = dmask,
                      .atten_mask = m, .prefix = pre_arr, .qlen = lq, .kvlen = lkv, .qstart = h->alibi ? sq : NULL,
                      .kvstart = h->alibi ? skv : NULL, .scale = 0.125, .keep_prob = c->keep_prob,
                      .pre_tokens = c->pre, .next_tokens = c->next, .head_num = c->N1, .sparse_mode = c->sparse_mode,
                      .pse_type = c->pse_type, .softmax_max = amax.t, .softmax_sum = asum.t, .attention_out = aout.t,
                      .deterministic = -1};
    snprintf(call.layout, sizeof call.layout, "%s", c->layout);
    run_aclnn(c, &call, stream);
    TU_CHECK(same_bytes(&aout, &native->out) && same_bytes(&amax, &native->smax) && same_bytes(&asum, &native->ssum),
             "%s: forward outputs through acl differ from the native API's", c->name);
    ((unsigned char *)aout.storage)[aout.lead_bytes] ^= 1; /* the check itself sees one flipped bit */
    TU_CHECK(!same_bytes(&aout, &native->out), "%s: same_bytes misses a flipped bit", c->name);
    ((unsigned char *)aout.storage)[aout.lead_bytes] ^= 1;

    call.grad = true, call.dy = ady.t, call.attention_in = aout.t, call.attention_out = NULL;
    call.dq = adq.t, call.dk = adk.t, call.dv = adv.t;
    run_aclnn(c, &call, stream);
    TU_CHECK(same_bytes(&adq, &native->dq) && same_bytes(&adk, &native->dk) && same_bytes(&adv, &native->dv),
             "%s: gradients through acl differ from the native API's", c->name);

    dev_tensor *all[] = {&aq, &ak, &av, &ady, &amask, &aslopes, &apse, &akeep, &aout, &amax, &asum, &adq, &adk, &adv};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free_device(all[i]);
    aclDestroyIntArray(lq), aclDestroyIntArray(lkv), aclDestroyIntArray(sq), aclDestroyIntArray(skv);
    aclDestroyIntArray(pre_arr);
    aclrtDestroyStream(stream);
    tu_tensor *host[] = {&blank.out, &blank.smax, &blank.ssum, &blank.dq, &blank.dk, &blank.dv};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) tu_tensor_free(host[i]);
    aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0);
}

/* Case c through both APIs; 1 when no check failed. */
static int run_case(const acl_case *c, tu_rng *rng)
{
    const int failures = tu_failures;
    host_problem h;
    make_problem(c, rng, &h);
    fa_outputs native = new_outputs(c, &h);
    run_native(c, &h, &native);
    run_through_acl(c, &h, &native);
    tu_tensor *host[] = {&h.q, &h.k, &h.v, &h.dy, &h.mask, &h.slopes, &h.pse, &h.keep, &h.prefix, &native.out,
                         &native.smax, &native.ssum, &native.dq, &native.dk, &native.dv};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) tu_tensor_free(host[i]);
    return tu_failures == failures;
}

/* Bad requests get CANN's codes and a sentence; nothing runs. */
static int run_errors(void)
{
    const int failures = tu_failures;
    int64_t shape[4] = {1, 16, 2, 8}, strides[4] = {256, 16, 8, 1}, storage = 256;
    float *buf = NULL, *obuf = NULL, *mbuf = NULL, *sbuf = NULL; /* inputs (shared), output, the two stats */
    float **bufs[] = {&buf, &obuf, &mbuf, &sbuf};
    for (int i = 0; i < 4; i++)
        TU_CHECK(aclrtMalloc((void **)bufs[i], sizeof(float) * 256, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "malloc");
    aclTensor *t = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, &storage, 1, buf);
    aclTensor *o = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, &storage, 1, obuf);
    int64_t st_shape[4] = {1, 2, 16, 8}, st_strides[4] = {256, 128, 8, 1};
    aclTensor *sm = aclCreateTensor(st_shape, 4, ACL_FLOAT, st_strides, 0, ACL_FORMAT_ND, &storage, 1, mbuf);
    aclTensor *ss = aclCreateTensor(st_shape, 4, ACL_FLOAT, st_strides, 0, ACL_FORMAT_ND, &storage, 1, sbuf);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    char bsnd[] = "BSND", bad[] = "BSDN";
    aclnnStatus s = aclnnFlashAttentionScoreGetWorkspaceSize(NULL, t, t, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0, 65536,
                                                             65536, 2, bsnd, 0, 0, sm, ss, NULL, o, &ws, &ex);
    TU_CHECK(s == ACLNN_ERR_PARAM_NULLPTR && aclGetRecentErrMsg() && strstr(aclGetRecentErrMsg(), "query"),
             "NULL query: status %d, \"%s\"", s, aclGetRecentErrMsg());
    s = aclnnFlashAttentionScoreGetWorkspaceSize(t, t, t, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0, 65536, 65536, 2, bad,
                                                 0, 0, sm, ss, NULL, o, &ws, &ex);
    TU_CHECK(s == ACLNN_ERR_PARAM_INVALID && strstr(aclGetRecentErrMsg(), "inputLayout"),
             "bad layout: status %d, \"%s\"", s, aclGetRecentErrMsg());
    s = aclnnFlashAttentionScoreGetWorkspaceSize(t, t, t, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0, 65536, 65536, 3,
                                                 bsnd, 0, 0, sm, ss, NULL, o, &ws, &ex);
    TU_CHECK(s == ACLNN_ERR_PARAM_INVALID && strstr(aclGetRecentErrMsg(), "FlashAttentionScore"),
             "head_num 3 for 2 heads: status %d, \"%s\"", s, aclGetRecentErrMsg());
    s = aclnnFlashAttentionScoreGetWorkspaceSize(t, t, t, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0, 65536, 65536, 2,
                                                 bsnd, 0, 0, sm, ss, NULL, o, NULL, &ex);
    TU_CHECK(s == ACLNN_ERR_PARAM_NULLPTR, "NULL workspaceSize: status %d", s);
    /* a workspace smaller than asked: refused, and the executor is gone */
    s = aclnnFlashAttentionScoreGetWorkspaceSize(t, t, t, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0, 65536, 65536, 2,
                                                 bsnd, 0, 0, sm, ss, NULL, o, &ws, &ex);
    TU_CHECK(s == ACLNN_SUCCESS && ws > 0, "valid call: status %d (%s)", s, aclGetRecentErrMsg());
    TU_CHECK(aclnnFlashAttentionScore(NULL, ws - 1, ex, NULL) == ACLNN_ERR_PARAM_INVALID, "short workspace");
    TU_CHECK(aclnnFlashAttentionScore(NULL, ws, ex, NULL) == ACLNN_ERR_PARAM_INVALID, "executor gone after refusal");
    TU_CHECK(aclnnFlashAttentionScoreGrad(NULL, 0, NULL, NULL) == ACLNN_ERR_PARAM_NULLPTR, "NULL executor");
    int dummy_stream = 0;
    s = aclnnFlashAttentionScoreGetWorkspaceSize(t, t, t, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0, 65536, 65536, 2,
                                                 bsnd, 0, 0, sm, ss, NULL, o, &ws, &ex);
    TU_CHECK(aclnnFlashAttentionScore(NULL, ws, ex, &dummy_stream) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "stream"), "a stream not from aclrtCreateStream");

    /* runtime misuse: CANN's aclError codes */
    char small[4];
    TU_CHECK(aclrtMemcpy(small, sizeof small, buf, 8, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_ERROR_INVALID_PARAM &&
                 strstr(aclGetRecentErrMsg(), "destMax"), "memcpy past destMax");
    TU_CHECK(aclrtMemset(small, 2, 0, 4) == ACL_ERROR_INVALID_PARAM, "memset past maxCount");
    aclrtStream s_ok = NULL;
    TU_CHECK(aclrtCreateStream(&s_ok) == ACL_SUCCESS, "stream");
    small[0] = 9;
    TU_CHECK(aclrtMemsetAsync(small, sizeof small, 0, sizeof small, s_ok) == ACL_SUCCESS && small[0] == 0 &&
                 aclrtMemcpyAsync(small, sizeof small, "abc", 4, ACL_MEMCPY_HOST_TO_HOST, s_ok) == ACL_SUCCESS &&
                 small[2] == 'c', "the asynchronous copies run at once");
    TU_CHECK(aclrtMemcpyAsync(small, sizeof small, buf, 4, ACL_MEMCPY_DEVICE_TO_HOST, &dummy_stream) ==
                 ACL_ERROR_INVALID_PARAM, "an async copy on a foreign stream");
    TU_CHECK(aclrtDestroyStream(s_ok) == ACL_SUCCESS, "destroy stream");
    TU_CHECK(aclrtSetDevice(1) == ACL_ERROR_RT_INVALID_DEVICEID, "device 1");
    /* contexts: a new one is the thread's current one and carries its own deterministic option */
    aclrtContext ctx = NULL, now = NULL, dflt = NULL;
    int64_t det = -1, process = -1;
    TU_CHECK(aclrtGetCurrentContext(&dflt) == ACL_SUCCESS && dflt != NULL, "the default context");
    TU_CHECK(aclrtCreateContext(&ctx, 1) == ACL_ERROR_RT_INVALID_DEVICEID, "a context on device 1");
    TU_CHECK(aclrtCreateContext(&ctx, 0) == ACL_SUCCESS && aclrtGetCurrentContext(&now) == ACL_SUCCESS && now == ctx,
             "a created context becomes current");
    TU_CHECK(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1) == ACL_SUCCESS &&
                 aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &det) == ACL_SUCCESS && det == 1 &&
                 aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &process) == ACL_SUCCESS && process == 0,
             "the context's option (%lld) is its own, the process's (%lld) stays", (long long)det, (long long)process);
    TU_CHECK(aclrtDestroyContext(ctx) == ACL_SUCCESS && aclrtGetCurrentContext(&now) == ACL_SUCCESS && now == dflt &&
                 aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &det) == ACL_SUCCESS && det == 0,
             "destroying the current context returns the thread to the default one");
    TU_CHECK(aclrtDestroyContext(ctx) == ACL_ERROR_INVALID_PARAM && strstr(aclGetRecentErrMsg(), "context"),
             "a second aclrtDestroyContext");
    TU_CHECK(aclrtSetCurrentContext(&dummy_stream) == ACL_ERROR_INVALID_PARAM, "a foreign context");
    TU_CHECK(aclrtDestroyContext(dflt) == ACL_ERROR_INVALID_PARAM, "the default context cannot be destroyed");
    TU_CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "device 0");
    void *nothing = NULL;
    TU_CHECK(aclrtMalloc(&nothing, 0, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_INVALID_PARAM, "malloc 0 bytes");
    const int64_t past[1] = {300}, unit[1] = {1};
    TU_CHECK(aclCreateTensor(past, 1, ACL_FLOAT, unit, 0, ACL_FORMAT_ND, &storage, 1, buf) == NULL &&
                 strstr(aclGetRecentErrMsg(), "storage"), "a view past its storage");
    TU_CHECK(aclCreateTensor(shape, 4, ACL_FLOAT, strides, 1, ACL_FORMAT_ND, &storage, 1, buf) == NULL,
             "a view shifted past its storage by the offset");
    TU_CHECK(aclDestroyTensor(NULL) == ACLNN_SUCCESS && aclDestroyIntArray(NULL) == ACLNN_SUCCESS, "destroy NULL");
    /* frees and destroys of what this layer did not hand out, or took back already: refused, no crash */
    int64_t one_value = 1;
    aclIntArray *arr = aclCreateIntArray(&one_value, 1);
    TU_CHECK(aclDestroyIntArray(arr) == ACLNN_SUCCESS && aclDestroyIntArray(arr) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "destroyed already"), "a second aclDestroyIntArray");
    void *once = NULL;
    TU_CHECK(aclrtMalloc(&once, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS && aclrtFree(once) == ACL_SUCCESS &&
                 aclrtFree(once) == ACL_ERROR_INVALID_PARAM, "a second aclrtFree");
    TU_CHECK(aclrtFree(small) == ACL_ERROR_INVALID_PARAM, "aclrtFree of stack memory");
    TU_CHECK(aclrtDestroyStream(&dummy_stream) == ACL_ERROR_INVALID_PARAM, "destroying a foreign stream");
    for (int i = 0; i < 5000; i++) { /* churn: the handle table neither leaks nor loses live entries */
        void *tmp = NULL;
        if (aclrtMalloc(&tmp, 32, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS || aclrtFree(tmp) != ACL_SUCCESS) {
            TU_CHECK(false, "alloc / free churn at %d", i);
            break;
        }
    }
    TU_CHECK(aclInit(NULL) == ACL_ERROR_REPEAT_INITIALIZE, "aclInit twice");
    aclDestroyTensor(t), aclDestroyTensor(o), aclDestroyTensor(sm), aclDestroyTensor(ss);
    for (int i = 0; i < 4; i++) aclrtFree(*bufs[i]);
    return tu_failures == failures;
}

/* ---- reusable executors ------------------------------------------------------------
 * A forward executor made repeatable runs as prepared (twice) and with its
 * query re-pointed; a backward one with dy (index 3, after value), the
 * attention mask (index 7, after the pse, dropout and padding masks) and dq
 * re-pointed.  Each run must give the native API's bits for the tensors it
 * then points at.  Then the misuses. */
static attnops_status native_fa(const tu_tensor *q, const tu_tensor *k, const tu_tensor *v, const tu_tensor *mask,
                                const tu_tensor *dy, tu_tensor *out, tu_tensor *smax, tu_tensor *ssum, tu_tensor *dq,
                                tu_tensor *dk, tu_tensor *dv)
{
    attnops_fa_params p;
    attnops_fa_params_init(&p);
    p.query = &q->view, p.key = &k->view, p.value = &v->view, p.atten_mask = mask ? &mask->view : NULL;
    p.scale_value = 0.25, p.head_num = 2, p.input_layout = ATTNOPS_LAYOUT_BSND;
    size_t bytes = 0;
    attnops_status st;
    void *ws = NULL;
    if (!dy) {
        attnops_fa_fwd_args f;
        attnops_fa_fwd_args_init(&f);
        f.p = p, f.attention_out = &out->view, f.softmax_max = &smax->view, f.softmax_sum = &ssum->view;
        st = attnops_flash_attention_score_workspace_size(&f, &bytes);
        if (!st && (ws = malloc(bytes ? bytes : 1))) st = attnops_flash_attention_score(&f, ws, bytes);
    } else {
        attnops_fa_bwd_args g;
        attnops_fa_bwd_args_init(&g);
        g.p = p, g.dy = &dy->view, g.attention_in = &out->view, g.softmax_max = &smax->view;
        g.softmax_sum = &ssum->view, g.dq = &dq->view, g.dk = &dk->view, g.dv = &dv->view;
        st = attnops_flash_attention_score_grad_workspace_size(&g, &bytes);
        if (!st && (ws = malloc(bytes ? bytes : 1))) st = attnops_flash_attention_score_grad(&g, ws, bytes);
    }
    free(ws);
    return st;
}

static aclnnStatus run_with_workspace(const aclb_call *c, aclOpExecutor *ex, uint64_t ws)
{
    void *w = NULL;
    if (ws) aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST);
    const aclnnStatus st = aclb_run(c, w, ws, ex, NULL);
    if (w) aclrtFree(w);
    return st;
}

static int run_repeatable(void)
{
    const int failures = tu_failures;
    const int64_t qkv[4] = {1, 16, 2, 8}, st[4] = {1, 2, 16, 8};
    tu_rng rng = tu_rng_make(21);
    const int64_t ss[2] = {16, 16};
    enum { Q, Q2, K, V, DY, DY2, OUT, SMAX, SSUM, DQ, DK, DV, MASK, MASK2, N_HOST };
    tu_tensor h[N_HOST], want[N_HOST];
    for (int i = 0; i < N_HOST; i++) {
        const bool stat = i == SMAX || i == SSUM, mask = i >= MASK;
        const attnops_dtype dt = mask ? ATTNOPS_DTYPE_U8 : ATTNOPS_DTYPE_F32;
        h[i] = tu_tensor_new(dt, mask ? 2 : 4, mask ? ss : stat ? st : qkv, 0);
        want[i] = tu_tensor_new(dt, mask ? 2 : 4, mask ? ss : stat ? st : qkv, 0);
        if (i < OUT) tu_tensor_randn(&h[i], &rng, 1.0);
    }
    for (int i = 0; i < 16 * 16; i++) /* MASK: nothing masked; MASK2: the upper triangle */
        ((uint8_t *)h[MASK].view.data)[i] = 0, ((uint8_t *)h[MASK2].view.data)[i] = i % 16 > i / 16;
    dev_tensor d[N_HOST];
    for (int i = 0; i < N_HOST; i++) d[i] = to_device(&h[i], 0);
    aclb_call c = {.entry = ACLB_V1, .query = d[Q].t, .key = d[K].t, .value = d[V].t, .softmax_max = d[SMAX].t,
                   .softmax_sum = d[SSUM].t, .attention_out = d[OUT].t, .scale = 0.25, .keep_prob = 1.0,
                   .pre_tokens = 2147483647, .next_tokens = 2147483647, .head_num = 2, .pse_type = 1,
                   .layout = "BSND", .deterministic = -1};
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    TU_CHECK(aclb_prepare(&c, &ws, &ex) == ACLNN_SUCCESS && aclSetAclOpExecutorRepeatable(ex) == ACLNN_SUCCESS,
             "a repeatable forward executor: %s", aclGetRecentErrMsg());
    /* run 1 and 2: as prepared */
    TU_CHECK(native_fa(&h[Q], &h[K], &h[V], NULL, NULL, &want[OUT], &want[SMAX], &want[SSUM], NULL, NULL, NULL) == 0,
             "native forward");
    for (int run = 0; run < 2; run++)
        TU_CHECK(run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS && same_bytes(&d[OUT], &want[OUT]) &&
                     same_bytes(&d[SMAX], &want[SMAX]), "repeatable forward, run %d: %s", run + 1,
                 aclGetRecentErrMsg());
    /* run 3: query re-pointed at Q2 */
    TU_CHECK(aclSetInputTensorAddr(ex, 0, d[Q].t, d[Q2].storage) == ACLNN_SUCCESS, "aclSetInputTensorAddr");
    TU_CHECK(native_fa(&h[Q2], &h[K], &h[V], NULL, NULL, &want[OUT], &want[SMAX], &want[SSUM], NULL, NULL, NULL) ==
                 0, "native forward on q2");
    TU_CHECK(run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS && same_bytes(&d[OUT], &want[OUT]),
             "the run after aclSetInputTensorAddr reads the new query");
    /* misuses: index past the inputs, an input that was NULL, NULL arguments */
    aclnnStatus s = aclSetInputTensorAddr(ex, 7, d[Q].t, d[Q2].storage);
    TU_CHECK(s == ACLNN_ERR_PARAM_INVALID && strstr(aclGetRecentErrMsg(), "index 7"), "input index 7: %d", s);
    s = aclSetInputTensorAddr(ex, 3, d[Q].t, d[Q2].storage);
    TU_CHECK(s == ACLNN_ERR_PARAM_INVALID && strstr(aclGetRecentErrMsg(), "was NULL"), "the NULL realShift: %d", s);
    s = aclSetOutputTensorAddr(ex, 4, d[OUT].t, d[DQ].storage);
    TU_CHECK(s == ACLNN_ERR_PARAM_INVALID && strstr(aclGetRecentErrMsg(), "out of range"), "output index 4: %d", s);
    TU_CHECK(aclSetInputTensorAddr(NULL, 0, d[Q].t, NULL) == ACLNN_ERR_INNER_NULLPTR &&
                 aclSetAclOpExecutorRepeatable(NULL) == ACLNN_ERR_INNER_NULLPTR &&
                 aclDestroyAclOpExecutor(NULL) == ACLNN_ERR_INNER_NULLPTR, "NULL executors: 561103");
    TU_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "aclDestroyAclOpExecutor");
    TU_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_ERR_PARAM_INVALID && run_with_workspace(&c, ex, ws) ==
                 ACLNN_ERR_PARAM_INVALID, "a destroyed executor: neither destroyed again nor run");

    /* the backward: dy is input 3, the attention mask input 7; dq re-pointed as output 0 */
    c.query = d[Q2].t, c.grad = true, c.dy = d[DY].t, c.attention_in = d[OUT].t, c.attention_out = NULL;
    c.atten_mask = d[MASK].t, c.dq = d[DQ].t, c.dk = d[DK].t, c.dv = d[DV].t, ex = NULL;
    TU_CHECK(aclb_prepare(&c, &ws, &ex) == ACLNN_SUCCESS && aclSetAclOpExecutorRepeatable(ex) == ACLNN_SUCCESS,
             "a repeatable backward executor: %s", aclGetRecentErrMsg());
    TU_CHECK(aclSetInputTensorAddr(ex, 3, d[DY].t, d[DY2].storage) == ACLNN_SUCCESS &&
                 aclSetInputTensorAddr(ex, 7, d[MASK].t, d[MASK2].storage) == ACLNN_SUCCESS &&
                 aclSetOutputTensorAddr(ex, 0, d[DQ].t, d[Q].storage) == ACLNN_SUCCESS,
             "re-pointing dy, the mask and dq: %s", aclGetRecentErrMsg());
    TU_CHECK(native_fa(&h[Q2], &h[K], &h[V], &h[MASK2], &h[DY2], &want[OUT], &want[SMAX], &want[SSUM], &want[DQ],
                       &want[DK], &want[DV]) == 0, "native backward on dy2 and mask2");
    dev_tensor dq_moved = d[Q]; /* dq now lives where the first query was */
    TU_CHECK(run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS && same_bytes(&dq_moved, &want[DQ]) &&
                 same_bytes(&d[DK], &want[DK]) && same_bytes(&d[DV], &want[DV]),
             "the backward after re-pointing dy, the mask and dq: %s", aclGetRecentErrMsg());
    TU_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroy the backward executor");
    /* a single-use executor cannot be made repeatable once it ran, nor re-pointed before */
    c.grad = false, c.query = d[Q2].t, c.attention_out = d[OUT].t, c.atten_mask = NULL, ex = NULL;
    TU_CHECK(aclb_prepare(&c, &ws, &ex) == ACLNN_SUCCESS, "a single-use executor");
    TU_CHECK(aclSetInputTensorAddr(ex, 0, d[Q2].t, d[Q2].storage) == ACLNN_ERR_PARAM_INVALID &&
                 strstr(aclGetRecentErrMsg(), "repeatable"), "re-pointing a single-use executor");
    TU_CHECK(run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS && aclSetAclOpExecutorRepeatable(ex) ==
                 ACLNN_ERR_PARAM_INVALID, "a single-use executor that ran cannot become repeatable");
    for (int i = 0; i < N_HOST; i++) free_device(&d[i]), tu_tensor_free(&h[i]), tu_tensor_free(&want[i]);
    return tu_failures == failures;
}

/* dq, dk, dv (three device tensors in a row) into the host tensors. */
static void copy_grads_back(const dev_tensor *dev, tu_tensor *host)
{
    for (int g = 0; g < 3; g++)
        aclrtMemcpy(host[g].view.data, host[g].data_bytes, dev[g].storage, dev[g].bytes, ACL_MEMCPY_DEVICE_TO_HOST);
}

/* The backward's pseShift is input 4: re-pointed on a repeatable executor,
 * the run reads the new pse, bit for bit what an executor made on it gives
 * (and not what the old pse gives). */
static int run_repointed_pse(void)
{
    const int failures = tu_failures;
    const int64_t qkv[4] = {1, 16, 2, 8}, st[4] = {1, 2, 16, 8}, bnss[4] = {1, 2, 16, 16};
    tu_rng rng = tu_rng_make(22);
    enum { Q, K, V, DY, PSE, PSE2, OUT, SMAX, SSUM, DQ, DK, DV, N_HOST };
    tu_tensor h[N_HOST], got[3];
    for (int i = 0; i < N_HOST; i++) {
        h[i] = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, i == SMAX || i == SSUM ? st : i == PSE || i == PSE2 ? bnss : qkv, 0);
        if (i < OUT) tu_tensor_randn(&h[i], &rng, 1.0);
    }
    dev_tensor d[N_HOST];
    for (int i = 0; i < N_HOST; i++) d[i] = to_device(&h[i], 0);
    aclb_call c = {.entry = ACLB_V1, .query = d[Q].t, .key = d[K].t, .value = d[V].t, .pse = d[PSE].t,
                   .softmax_max = d[SMAX].t, .softmax_sum = d[SSUM].t, .attention_out = d[OUT].t, .scale = 0.25,
                   .keep_prob = 1.0, .pre_tokens = 2147483647, .next_tokens = 2147483647, .head_num = 2,
                   .pse_type = 1, .layout = "BSND", .deterministic = -1};
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    TU_CHECK(aclb_prepare(&c, &ws, &ex) == ACLNN_SUCCESS && run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS,
             "the forward with pse: %s", aclGetRecentErrMsg());
    c.grad = true, c.dy = d[DY].t, c.attention_in = d[OUT].t, c.attention_out = NULL;
    c.dq = d[DQ].t, c.dk = d[DK].t, c.dv = d[DV].t, ex = NULL;
    TU_CHECK(aclb_prepare(&c, &ws, &ex) == ACLNN_SUCCESS && aclSetAclOpExecutorRepeatable(ex) == ACLNN_SUCCESS,
             "a repeatable backward executor with pse: %s", aclGetRecentErrMsg());
    TU_CHECK(run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS, "the backward on pse: %s", aclGetRecentErrMsg());
    for (int g = 0; g < 3; g++) got[g] = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, qkv, 0);
    copy_grads_back(&d[DQ], got);
    const aclnnStatus s = aclSetInputTensorAddr(ex, 4, d[PSE].t, d[PSE2].storage);
    TU_CHECK(s == ACLNN_SUCCESS, "aclSetInputTensorAddr(executor, 4 = pseShift): %d, %s", s, aclGetRecentErrMsg());
    TU_CHECK(run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS, "the backward after re-pointing pseShift: %s",
             aclGetRecentErrMsg());
    TU_CHECK(!same_bytes(&d[DQ], &got[0]), "the re-pointed backward's dq is the old pse's: pse2 was not read");
    copy_grads_back(&d[DQ], got);
    TU_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroy the backward executor");
    c.pse = d[PSE2].t, ex = NULL;
    TU_CHECK(aclb_prepare(&c, &ws, &ex) == ACLNN_SUCCESS && run_with_workspace(&c, ex, ws) == ACLNN_SUCCESS,
             "a backward executor made on pse2: %s", aclGetRecentErrMsg());
    TU_CHECK(same_bytes(&d[DQ], &got[0]) && same_bytes(&d[DK], &got[1]) && same_bytes(&d[DV], &got[2]),
             "the re-pointed backward equals a backward made on pse2, bit for bit");
    for (int g = 0; g < 3; g++) tu_tensor_free(&got[g]);
    for (int i = 0; i < N_HOST; i++) free_device(&d[i]), tu_tensor_free(&h[i]);
    return tu_failures == failures;
}

/* ---- the aclnn layer's own argument rules -----------------------------------------
 * (Every rule of the library, made through the aclnn entry points, is
 * fa_validation_acl's: test_fa_validation --through-acl.)  One valid BSND
 * f32 problem (B 1, S 16, N 2, D 8) and one change per row; phase one must
 * return the row's status with a sentence naming the argument, hand out no
 * executor and leave the output untouched. */
typedef enum { ROW_LAYOUT_UNKNOWN, ROW_LAYOUT_NULL, ROW_INT8_QUERY, ROW_IMPL, ROW_NULL_EXECUTOR, ROWS } row;

static int run_validation_table(void)
{
    const int failures = tu_failures;
    static const struct {
        const char *what, *needle;
        aclnnStatus status;
    } want[ROWS] = {
        [ROW_LAYOUT_UNKNOWN] = {"unknown layout", "inputLayout is \"BDSN\"", ACLNN_ERR_PARAM_INVALID},
        [ROW_LAYOUT_NULL] = {"NULL layout", "inputLayout is NULL", ACLNN_ERR_PARAM_NULLPTR},
        [ROW_INT8_QUERY] = {"an aclDataType attnops has no type for", "dtype", ACLNN_ERR_PARAM_INVALID},
        [ROW_IMPL] = {"ATTNOPS_ACL_IMPL=gpu", "ATTNOPS_ACL_IMPL is \"gpu\"", ACLNN_ERR_PARAM_INVALID},
        [ROW_NULL_EXECUTOR] = {"NULL executor pointer", "executor is NULL", ACLNN_ERR_PARAM_NULLPTR},
    };
    const int64_t qkv[4] = {1, 16, 2, 8}, st[4] = {1, 2, 16, 8};
    tu_rng rng = tu_rng_make(11);
    tu_tensor q = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, qkv, 0), out = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, qkv, 0),
              smax = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, st, 0), ssum = tu_tensor_new(ATTNOPS_DTYPE_F32, 4, st, 0);
    tu_tensor_randn(&q, &rng, 1.0);
    dev_tensor aq = to_device(&q, 0), aout = to_device(&out, 0), amax = to_device(&smax, 0),
               asum = to_device(&ssum, 0);
    const int64_t strides[4] = {256, 16, 8, 1}, storage = 256;
    aclTensor *q8 = aclCreateTensor(qkv, 4, ACL_INT8, strides, 0, ACL_FORMAT_ND, &storage, 1, aq.storage);
    const aclb_call base = {.entry = ACLB_V2, .query = aq.t, .key = aq.t, .value = aq.t, .softmax_max = amax.t,
                            .softmax_sum = asum.t, .attention_out = aout.t, .scale = 1.0, .keep_prob = 1.0,
                            .pre_tokens = 65536, .next_tokens = 65536, .head_num = 2, .pse_type = 1,
                            .layout = "BSND", .deterministic = -1};
    for (int r = 0; r < ROWS; r++) {
        aclrtMemset(aout.storage, aout.bytes, 0x5A, aout.bytes);
        aclb_call c = base;
        uint64_t ws = 0;
        aclOpExecutor *ex = NULL;
        aclnnStatus s;
        if (r == ROW_LAYOUT_NULL) { /* the bridge always passes a layout */
            s = aclnnFlashAttentionScoreGetWorkspaceSize(aq.t, aq.t, aq.t, NULL, NULL, NULL, NULL, NULL, 1.0, 1.0,
                                                         65536, 65536, 2, NULL, 0, 0, amax.t, asum.t, NULL, aout.t,
                                                         &ws, &ex);
        } else {
            if (r == ROW_LAYOUT_UNKNOWN) snprintf(c.layout, sizeof c.layout, "BDSN");
            if (r == ROW_INT8_QUERY) c.query = q8;
            if (r == ROW_IMPL) c.impl = "gpu";
            s = aclb_prepare(&c, &ws, r == ROW_NULL_EXECUTOR ? NULL : &ex);
        }
        const char *msg = aclGetRecentErrMsg();
        TU_CHECK(s == want[r].status && msg && strstr(msg, want[r].needle) && msg[strlen(msg) - 1] == '.',
                 "%s: status %d (want %d), \"%s\" (want \"%s\")", want[r].what, s, want[r].status, msg ? msg : "",
                 want[r].needle);
        TU_CHECK(ex == NULL, "%s: an executor was handed out on failure", want[r].what);
        unsigned char *back = malloc(aout.bytes);
        aclrtMemcpy(back, aout.bytes, aout.storage, aout.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
        bool untouched = true;
        for (size_t i = 0; i < aout.bytes; i++) untouched &= back[i] == 0x5A;
        free(back);
        TU_CHECK(untouched, "%s: an output was written", want[r].what);
    }
    /* the base row itself is valid (so each failing row fails for its one change) */
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    TU_CHECK(aclb_prepare(&base, &ws, &ex) == ACLNN_SUCCESS && ex, "the base row must be valid: %s",
             aclGetRecentErrMsg());
    void *dws = NULL;
    if (ws) aclrtMalloc(&dws, ws, ACL_MEM_MALLOC_HUGE_FIRST);
    TU_CHECK(aclb_run(&base, dws, ws, ex, NULL) == ACLNN_SUCCESS, "the base row runs");
    if (dws) aclrtFree(dws);
    aclDestroyTensor(q8);
    dev_tensor *all[] = {&aq, &aout, &amax, &asum};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free_device(all[i]);
    tu_tensor *host[] = {&q, &out, &smax, &ssum};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) tu_tensor_free(host[i]);
    return tu_failures == failures;
}

/* Random calls over the space the fixed cases sample: every entry point,
 * layout, dtype, GQA, sparse mode with its mask, pse type, dropout (stream
 * or explicit mask), deterministic mode -- drawn valid by construction, so a
 * refusal fails the test like a differing bit.  `name` receives the draw. */
static acl_case random_case(tu_rng *r, char *name, size_t name_size)
{
    static const char *padded_layouts[] = {"BNSD", "BSND", "BSH", "SBH"};
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16};
    static const double keeps[] = {1.0, 1.0, 0.9, 0.6};
    const int64_t pick2[] = {1, 2}, dims[] = {16, 24, 40};
    acl_case c = {.name = name, .pse_type = 1};
    c.entry = (aclb_entry)(tu_next(r) % 4);
    const bool tnd = c.entry == ACLB_VARLEN || c.entry == ACLB_VARLEN_V2, v2 = c.entry == ACLB_V2 || c.entry == ACLB_VARLEN_V2;
    c.dtype = dtypes[tu_next(r) % 3];
    c.layout = tnd ? "TND" : padded_layouts[tu_next(r) % 4];
    c.N2 = tu_pick(r, pick2, 2), c.N1 = c.N2 * tu_pick(r, pick2, 2);
    c.D = tu_pick(r, dims, 3), c.Dv = tu_next(r) % 2 ? c.D : 16;
    c.deterministic = (int)(tu_next(r) % 2);
    c.keep_prob = keeps[tu_next(r) % 4];
    c.pre = c.next = 2147483647;
    /* sparse mode and its mask: padded 0-6, TND 0-4, 7, 8 */
    static const int64_t padded_modes[] = {0, 0, 1, 2, 3, 4, 5, 6}, tnd_modes[] = {0, 0, 1, 2, 3, 4, 7, 8};
    c.sparse_mode = tnd ? tnd_modes[tu_next(r) % 8] : padded_modes[tu_next(r) % 8];
    const int64_t mode = c.sparse_mode;
    const bool causal_modes = mode >= 2 && mode != 5 && mode != 6;
    if (mode == 0) c.mask = tu_next(r) % 2 ? MASK_NONE : (tnd || tu_next(r) % 2 ? MASK_SS : MASK_B1SS);
    else if (mode == 1) c.mask = tnd || tu_next(r) % 2 ? MASK_SS : MASK_B1SS;
    else if (mode == 5) c.mask = MASK_B1SS;
    else if (mode == 6) c.mask = MASK_PREFIX;
    else c.mask = MASK_CAUSAL;
    if (mode == 2 || mode == 3 || mode >= 7) c.next = 0;
    if (mode == 4) c.pre = 1 + (int64_t)(tu_next(r) % 24), c.next = (int64_t)(tu_next(r) % 24);
    /* pse: V1 entries have pse_type 1 (a [B, N1, S1, S2] bias, padded only); V2 entries 0-3 */
    const bool alibi_ok = !(tnd && (mode == 7 || mode == 8));
    if (v2) c.pse_type = (int)(tu_next(r) % 4);
    if ((c.pse_type >= 2 && !alibi_ok) || (c.pse_type == 0 && tnd)) c.pse_type = 1;
    if (c.pse_type < 2) c.pse_bnss = !tnd && (c.pse_type == 0 || tu_next(r) % 3 == 0); /* type 0 needs a tensor */
    const bool any_pse = c.pse_type >= 2 || c.pse_bnss;
    /* lengths: TND batch 0 the longest (the full masks are [max S1, max S2]); causal TND modes on equal lengths */
    if (tnd) {
        c.nb = 1 + (int64_t)(tu_next(r) % 3), c.B = c.nb;
        for (int64_t b = 0; b < c.nb; b++) {
            c.qlens[b] = (any_pse ? 1 : 0) + (int64_t)(tu_next(r) % 36);
            c.kvlens[b] = causal_modes ? c.qlens[b] : (any_pse ? 1 : 0) + (int64_t)(tu_next(r) % 36);
        }
        c.qlens[0] = c.kvlens[0] = 40;
    } else {
        c.B = tu_pick(r, pick2, 2);
        c.S1 = 1 + (int64_t)(tu_next(r) % 64), c.S2 = 1 + (int64_t)(tu_next(r) % 64);
        const int64_t lo = c.S2 > c.S1 ? c.S2 - c.S1 : 0;
        for (int64_t b = 0; b < 2; b++) c.prefix[b] = lo + (int64_t)(tu_next(r) % (uint64_t)(c.S2 - lo + 1));
        c.drop_mask = c.keep_prob < 1.0 && tu_next(r) % 3 == 0;
    }
    snprintf(name, name_size, "random %s %s %s N%lld/%lld D%lld/%lld S%lld/%lld nb%lld mode %lld (%lld, %lld) "
             "pse_type %d%s keep %g%s det %d", c.entry == ACLB_V1 ? "v1" : c.entry == ACLB_V2 ? "v2" : c.entry == ACLB_VARLEN ?
             "varlen" : "varlen v2", attnops_dtype_name(c.dtype), c.layout, (long long)c.N1, (long long)c.N2,
             (long long)c.D, (long long)c.Dv, (long long)c.S1, (long long)c.S2, (long long)c.nb, (long long)mode,
             (long long)c.pre, (long long)c.next, c.pse_type, c.pse_bnss ? " bnss" : "", c.keep_prob,
             c.drop_mask ? " drop_mask" : "", c.deterministic);
    return c;
}

int main(void)
{
    tu_rng rng = tu_rng_make(tu_suite_seed());
#define PADDED(B_, N1_, N2_, S1_, S2_, D_, Dv_) .B = B_, .N1 = N1_, .N2 = N2_, .S1 = S1_, .S2 = S2_, .D = D_, .Dv = Dv_
#define ALL_TOKENS .pre = 2147483647, .next = 2147483647
#define CAUSAL_TOKENS .pre = 2147483647, .next = 0
    const acl_case cases[] = {
        {"v1 bf16 BSND GQA causal3", ACLB_V1, ATTNOPS_DTYPE_BF16, "BSND", PADDED(2, 4, 2, 70, 90, 40, 24), .sparse_mode = 3,
         CAUSAL_TOKENS, .pse_type = 1, .keep_prob = 1.0, .mask = MASK_CAUSAL},
        {"v1 f32 BSH dropout", ACLB_V1, ATTNOPS_DTYPE_F32, "BSH", PADDED(1, 2, 2, 50, 60, 32, 32), ALL_TOKENS,
         .pse_type = 1, .keep_prob = 0.9},
        {"v1 f16 SBH band deterministic", ACLB_V1, ATTNOPS_DTYPE_F16, "SBH", PADDED(2, 2, 1, 64, 64, 16, 16),
         .sparse_mode = 4, .pre = 20, .next = 10, .pse_type = 1, .keep_prob = 1.0, .deterministic = 1,
         .mask = MASK_CAUSAL},
        {"v2 f32 BNSD alibi3", ACLB_V2, ATTNOPS_DTYPE_F32, "BNSD", PADDED(1, 4, 4, 40, 56, 32, 32), ALL_TOKENS,
         .pse_type = 3, .keep_prob = 1.0},
        {"v1 f32 BSND explicit mask1", ACLB_V1, ATTNOPS_DTYPE_F32, "BSND", PADDED(2, 2, 2, 40, 48, 16, 16),
         .sparse_mode = 1, ALL_TOKENS, .pse_type = 1, .keep_prob = 1.0, .mask = MASK_B1SS},
        {"v1 bf16 BNSD mask0 band", ACLB_V1, ATTNOPS_DTYPE_BF16, "BNSD", PADDED(1, 2, 1, 48, 48, 16, 16), .pre = 64,
         .next = 64, .pse_type = 1, .keep_prob = 1.0, .mask = MASK_SS},
        {"v1 f32 BSND causal2 pse1 bnss", ACLB_V1, ATTNOPS_DTYPE_F32, "BSND", PADDED(2, 2, 2, 40, 56, 16, 16),
         .sparse_mode = 2, CAUSAL_TOKENS, .pse_type = 1, .keep_prob = 1.0, .mask = MASK_CAUSAL, .pse_bnss = true},
        {"v2 f16 BSND pse0 bnss", ACLB_V2, ATTNOPS_DTYPE_F16, "BSND", PADDED(1, 2, 2, 32, 40, 16, 16), ALL_TOKENS,
         .pse_type = 0, .keep_prob = 1.0, .pse_bnss = true},
        {"v1 f32 BSND prefix5", ACLB_V1, ATTNOPS_DTYPE_F32, "BSND", PADDED(2, 2, 2, 40, 56, 16, 16), .sparse_mode = 5,
         ALL_TOKENS, .pse_type = 1, .keep_prob = 1.0, .mask = MASK_B1SS, .prefix = {20, 50}},
        {"v1 f32 BSND prefix6", ACLB_V1, ATTNOPS_DTYPE_F32, "BSND", PADDED(2, 2, 2, 40, 56, 16, 16), .sparse_mode = 6,
         ALL_TOKENS, .pse_type = 1, .keep_prob = 1.0, .mask = MASK_PREFIX, .prefix = {20, 50}},
        {"v1 bf16 BSND drop_mask", ACLB_V1, ATTNOPS_DTYPE_BF16, "BSND", PADDED(1, 2, 2, 40, 40, 16, 16), ALL_TOKENS,
         .pse_type = 1, .keep_prob = 0.8, .drop_mask = true},
        {"varlen f32 TND causal4", ACLB_VARLEN, ATTNOPS_DTYPE_F32, "TND", .B = 3, .N1 = 2, .N2 = 1, .D = 24, .Dv = 24,
         .nb = 3, .qlens = {30, 0, 17}, .kvlens = {40, 0, 17}, .sparse_mode = 4, CAUSAL_TOKENS, .pse_type = 1,
         .keep_prob = 1.0, .mask = MASK_CAUSAL},
        {"varlen v2 bf16 TND alibi2", ACLB_VARLEN_V2, ATTNOPS_DTYPE_BF16, "TND", .B = 2, .N1 = 2, .N2 = 2, .D = 16,
         .Dv = 16, .nb = 2, .qlens = {20, 33}, .kvlens = {20, 33}, ALL_TOKENS, .pse_type = 2, .keep_prob = 1.0},
        {"varlen f32 TND mode7", ACLB_VARLEN, ATTNOPS_DTYPE_F32, "TND", .B = 3, .N1 = 2, .N2 = 2, .D = 16, .Dv = 16,
         .nb = 3, .qlens = {20, 30, 24}, .kvlens = {30, 30, 24}, .sparse_mode = 7, CAUSAL_TOKENS, .pse_type = 1,
         .keep_prob = 1.0, .mask = MASK_CAUSAL},
        {"varlen f32 TND mode8", ACLB_VARLEN, ATTNOPS_DTYPE_F32, "TND", .B = 3, .N1 = 2, .N2 = 2, .D = 16, .Dv = 16,
         .nb = 3, .qlens = {30, 20, 24}, .kvlens = {30, 30, 24}, .sparse_mode = 8, CAUSAL_TOKENS, .pse_type = 1,
         .keep_prob = 1.0, .mask = MASK_CAUSAL},
        {"varlen f32 TND mode1 mask", ACLB_VARLEN, ATTNOPS_DTYPE_F32, "TND", .B = 2, .N1 = 2, .N2 = 2, .D = 16,
         .Dv = 16, .nb = 2, .qlens = {24, 10}, .kvlens = {30, 12}, .sparse_mode = 1, ALL_TOKENS, .pse_type = 1,
         .keep_prob = 1.0, .mask = MASK_SS},
    };
#undef PADDED
#undef ALL_TOKENS
#undef CAUSAL_TOKENS
    TU_CHECK(aclInit(NULL) == ACL_SUCCESS, "aclInit");
    TU_CHECK(aclrtSetDevice(0) == ACL_SUCCESS, "aclrtSetDevice");
    int passed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) passed += run_case(&cases[i], &rng);
    tu_rng draws = tu_rng_make(tu_suite_seed() + 1);
    for (int i = 0; i < RANDOM_CASES; i++) {
        char name[320];
        const acl_case c = random_case(&draws, name, sizeof name);
        passed += run_case(&c, &rng);
    }
    passed += run_errors();
    passed += run_validation_table();
    passed += run_repeatable();
    passed += run_repointed_pse();
    TU_CHECK(aclrtResetDevice(0) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS, "aclFinalize");
    return tu_finish("test_acl", passed);
}
