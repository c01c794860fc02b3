#include "fia_case.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t fia_case_rows(const fia_case_spec *s)
{
    if (!s->nq) return s->S1;
    int64_t m = 0;
    for (int b = 0; b < s->B; b++) m = s->q_len[b] > m ? s->q_len[b] : m;
    return m;
}

int64_t fia_case_keys(const fia_case_spec *s)
{
    if (!s->nkv) return s->S2;
    int64_t m = 0;
    for (int b = 0; b < s->B; b++) m = s->kv_len[b] > m ? s->kv_len[b] : m;
    return m;
}

static int64_t sum(const int64_t *x, int n)
{
    int64_t t = 0;
    for (int i = 0; i < n; i++) t += x[i];
    return t;
}

/* A q-like (heads n, length s, head dim d) tensor of the layout; TND: s tokens. */
static tu_tensor qlike(const fia_case_spec *c, attnops_layout layout, int64_t n, int64_t s, int64_t d,
                       attnops_dtype dtype)
{
    int64_t sh[4];
    int rank = 4;
    switch (layout) {
    case ATTNOPS_LAYOUT_BSH: rank = 3, sh[0] = c->B, sh[1] = s, sh[2] = n * d; break;
    case ATTNOPS_LAYOUT_BSND: sh[0] = c->B, sh[1] = s, sh[2] = n, sh[3] = d; break;
    case ATTNOPS_LAYOUT_BNSD: sh[0] = c->B, sh[1] = n, sh[2] = s, sh[3] = d; break;
    default: rank = 3, sh[0] = s, sh[1] = n, sh[2] = d; break;
    }
    return tu_tensor_new(dtype, rank, sh, 0);
}

/* A paged cache of `blocks` blocks for head dim d: [blocks, bs, N2 d]
 * (BSH, BSND) or [blocks, N2, bs, d] (BNSD, TND). */
static tu_tensor paged(const fia_case_spec *c, int64_t blocks, int64_t d, attnops_dtype dtype)
{
    const bool rank4 = c->layout == ATTNOPS_LAYOUT_BNSD || c->layout == ATTNOPS_LAYOUT_TND;
    const int64_t s3[3] = {blocks, c->block_size, c->N2 * d}, s4[4] = {blocks, c->N2, c->block_size, d};
    return rank4 ? tu_tensor_new(dtype, 4, s4, 0) : tu_tensor_new(dtype, 3, s3, 0);
}

/* int8 values, uniform over [-128, 127]. */
static void fill_int8(tu_tensor *t, tu_rng *r)
{
    int8_t *x = t->view.data;
    for (int64_t i = 0; i < tu_numel(&t->view); i++) x[i] = (int8_t)((int)(tu_uniform(r) * 256.0) - 128);
}

/* An antiquant scale or offset of `mode` over `keys` positions: [1, N2, 1, D]
 * and [N2] in the query's dtype, [1, B, keys] and [B, N2, keys] in f32;
 * scales in [0.001, 0.021), offsets normal with deviation 8. */
static tu_tensor antiquant(const fia_case_spec *c, int64_t mode, int64_t keys, bool scale, tu_rng *r)
{
    const int64_t channel[4] = {1, c->N2, 1, c->D}, token[3] = {1, c->B, keys}, head[1] = {c->N2},
                  token_head[3] = {c->B, c->N2, keys};
    tu_tensor t = mode == 0   ? tu_tensor_new(c->dtype, 4, channel, 0)
                  : mode == 1 ? tu_tensor_new(ATTNOPS_DTYPE_F32, 3, token, 0)
                  : mode == 2 ? tu_tensor_new(c->dtype, 1, head, 0)
                              : tu_tensor_new(ATTNOPS_DTYPE_F32, 3, token_head, 0);
    const size_t es = attnops_dtype_size(t.view.dtype);
    for (int64_t i = 0; i < tu_numel(&t.view); i++)
        tu_store_f64((char *)t.view.data + i * (int64_t)es, t.view.dtype,
                     scale ? 0.001 + 0.02 * tu_uniform(r) : 8.0 * tu_randn(r));
    return t;
}

static tu_tensor lengths(const int64_t *x, int n, bool cumulative)
{
    const int64_t count = n;
    tu_tensor t = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, &count, 0);
    int64_t *v = t.view.data, run = 0;
    for (int i = 0; i < n; i++) v[i] = cumulative ? (run += x[i]) : x[i];
    return t;
}

/* The block table: batch b's used blocks are distinct ids from one shuffle
 * of all blocks (the last one spare, never used); unused columns 0. */
static void make_table(fia_case *c, tu_rng *r, int64_t blocks, int64_t cols)
{
    const fia_case_spec *s = &c->spec;
    const int64_t shape[2] = {s->B, cols};
    c->table = tu_tensor_new(ATTNOPS_DTYPE_I32, 2, shape, 0);
    int32_t *t = c->table.view.data;
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)blocks);
    for (int64_t i = 0; i < blocks; i++) perm[i] = i;
    for (int64_t i = blocks - 1; i > 0; i--) {
        const int64_t j = (int64_t)(tu_uniform(r) * (double)(i + 1)), x = perm[i];
        perm[i] = perm[j], perm[j] = x;
    }
    int64_t next = 0;
    for (int b = 0; b < s->B; b++) {
        const int64_t len = s->nkv ? s->kv_len[b] : s->S2, used = (len + s->block_size - 1) / s->block_size;
        for (int64_t col = 0; col < cols; col++) t[b * cols + col] = col < used ? (int32_t)perm[next++] : 0;
    }
    free(perm);
}

static void make_mask(fia_case *c, tu_rng *r, int64_t rows, int64_t keys)
{
    const fia_case_spec *s = &c->spec;
    if (s->sparse_mode >= 2) {
        const int64_t shape[2] = {2048, 2048};
        c->mask = tu_tensor_new(ATTNOPS_DTYPE_BOOL, 2, shape, 0);
        uint8_t *m = c->mask.view.data;
        for (int64_t i = 0; i < 2048 * 2048; i++) m[i] = i % 2048 > i / 2048;
        return;
    }
    const int64_t shape[4] = {s->B, 1, rows, keys};
    c->mask = tu_tensor_new(ATTNOPS_DTYPE_BOOL, 4, shape, 0);
    uint8_t *m = c->mask.view.data;
    for (int64_t i = 0; i < tu_numel(&c->mask.view); i++) m[i] = tu_uniform(r) < 0.3;
}

void fia_case_init(fia_case *c, const fia_case_spec *spec, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->spec = *spec;
    const fia_case_spec *s = &c->spec;
    tu_rng r = tu_rng_make(seed);
    const bool tnd = s->layout == ATTNOPS_LAYOUT_TND;
    const int64_t T1 = tnd ? sum(s->q_len, s->nq) : s->S1, T2 = tnd ? sum(s->kv_len, s->nkv) : s->S2;
    const int64_t rows = tnd ? fia_case_rows(s) : s->S1;
    const attnops_dtype kv_dtype = s->int8_kv ? ATTNOPS_DTYPE_I8 : s->dtype;
    c->q = qlike(s, s->layout, s->N1, T1, s->D, s->dtype);
    if (s->Dr) c->qr = qlike(s, s->layout, s->N1, T1, s->Dr, s->dtype);
    int64_t keys = s->S2; /* the mask's and pse's key extent: the capacity when paged */
    if (s->block_size) {
        const int64_t cols = (s->S2 + s->block_size - 1) / s->block_size;
        int64_t blocks = 1;
        for (int b = 0; b < s->B; b++) blocks += ((s->nkv ? s->kv_len[b] : s->S2) + s->block_size - 1) / s->block_size;
        c->k = paged(s, blocks, s->D, kv_dtype), c->v = paged(s, blocks, s->Dv, kv_dtype);
        if (s->Dr) c->kr = paged(s, blocks, s->Dr, s->dtype);
        make_table(c, &r, blocks, cols);
        keys = cols * s->block_size;
    } else {
        c->k = qlike(s, s->layout, s->N2, T2, s->D, kv_dtype), c->v = qlike(s, s->layout, s->N2, T2, s->Dv, kv_dtype);
        if (s->Dr) c->kr = qlike(s, s->layout, s->N2, T2, s->Dr, s->dtype);
    }
    tu_tensor *filled[] = {&c->q, &c->qr, &c->k, &c->v, &c->kr};
    for (size_t i = 0; i < sizeof filled / sizeof filled[0]; i++)
        if (filled[i]->block && filled[i]->view.dtype == ATTNOPS_DTYPE_I8) fill_int8(filled[i], &r);
        else if (filled[i]->block) tu_tensor_randn(filled[i], &r, 1.0);
    if (s->int8_kv) {
        c->k_scale = antiquant(s, s->key_mode, keys, true, &r);
        c->k_offset = antiquant(s, s->key_mode, keys, false, &r);
        c->v_scale = antiquant(s, s->value_mode, keys, true, &r);
        c->v_offset = antiquant(s, s->value_mode, keys, false, &r);
    }
    if (s->nq) c->q_len = lengths(s->q_len, s->nq, tnd);
    if (s->nkv) {
        c->kv_len = lengths(s->kv_len, s->nkv, tnd && !s->block_size);
    } else if (s->block_size) { /* a paged cache needs the lengths: every batch full */
        int64_t full[FIA_CASE_MAX_B];
        for (int b = 0; b < s->B; b++) full[b] = s->S2;
        c->kv_len = lengths(full, s->B, false);
    }
    if (s->mask || s->sparse_mode >= 1) make_mask(c, &r, rows, keys);
    if (s->pse) {
        const int64_t shape[4] = {s->B, s->N1, rows, keys};
        c->pse = tu_tensor_new(s->dtype, 4, shape, 0);
        tu_tensor_randn(&c->pse, &r, 1.0);
    }
    if (s->alibi) {
        const int64_t shape[2] = {s->B, s->N1};
        c->slopes = s->alibi == 1 ? tu_tensor_new(ATTNOPS_DTYPE_F32, 1, shape + 1, 0)
                                  : tu_tensor_new(ATTNOPS_DTYPE_F32, 2, shape, 0);
        float *x = c->slopes.view.data;
        attnops_alibi_slopes(s->N1, x);
        for (int64_t e = s->N1; e < tu_numel(&c->slopes.view); e++)
            x[e] = x[e % s->N1] * (1.0f + 0.5f * (float)(e / s->N1));
    }
    if (s->sink) {
        c->sink = tu_tensor_new(s->sink, 1, &s->N1, 0);
        tu_tensor_randn(&c->sink, &r, 2.0);
    }
    const attnops_layout out_layout = s->out_layout ? s->out_layout : s->layout;
    c->out = qlike(s, out_layout, s->N1, T1, s->Dv, s->dtype);
    const int64_t lb[4] = {s->B, s->N1, s->S1, 1}, lt[3] = {T1, s->N1, 1}, one = 1;
    c->lse = !s->lse ? tu_tensor_new(ATTNOPS_DTYPE_F32, 1, &one, 0)
             : tnd   ? tu_tensor_new(ATTNOPS_DTYPE_F32, 3, lt, 0)
                     : tu_tensor_new(ATTNOPS_DTYPE_F32, 4, lb, 0);

    attnops_fia_args *a = &c->args;
    attnops_fia_args_init(a);
    a->query = &c->q.view, a->key = &c->k.view, a->value = &c->v.view;
    if (s->Dr) a->query_rope = &c->qr.view, a->key_rope = &c->kr.view;
    if (c->table.block) a->block_table = &c->table.view, a->block_size = s->block_size;
    if (c->q_len.block) a->actual_seq_lengths = &c->q_len.view;
    if (c->kv_len.block) a->actual_seq_lengths_kv = &c->kv_len.view;
    if (c->mask.block) a->atten_mask = &c->mask.view;
    if (c->pse.block) a->pse_shift = &c->pse.view;
    if (c->slopes.block) a->alibi_slopes = &c->slopes.view;
    a->alibi_rule = s->alibi_rule, a->alibi_q_start_idx = s->alibi_q_start, a->alibi_kv_start_idx = s->alibi_kv_start;
    if (c->sink.block) a->learnable_sink = &c->sink.view;
    a->softcap = s->softcap;
    if (s->int8_kv) {
        a->key_antiquant_scale = &c->k_scale.view, a->key_antiquant_offset = &c->k_offset.view;
        a->value_antiquant_scale = &c->v_scale.view, a->value_antiquant_offset = &c->v_offset.view;
        a->key_antiquant_mode = s->key_mode, a->value_antiquant_mode = s->value_mode;
    }
    a->num_heads = s->N1, a->num_key_value_heads = s->N2;
    a->scale_value = s->scale > 0 ? s->scale : 1.0 / sqrt((double)(s->D + s->Dr));
    a->pre_tokens = s->pre_tokens, a->next_tokens = s->next_tokens, a->sparse_mode = s->sparse_mode;
    a->input_layout = s->layout, a->output_layout = out_layout;
    a->softmax_lse_flag = s->lse;
    a->attention_out = &c->out.view, a->softmax_lse = &c->lse.view;
}

void fia_case_free(fia_case *c)
{
    tu_tensor *all[] = {&c->q,    &c->k,        &c->v,   &c->qr,      &c->kr,       &c->table,
                        &c->q_len, &c->kv_len,  &c->mask, &c->pse,    &c->out,      &c->lse,
                        &c->k_scale, &c->k_offset, &c->v_scale, &c->v_offset, &c->slopes, &c->sink};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tu_tensor_free(all[i]);
}

static attnops_status run_fia(const void *a, void *ws, size_t n)
{
    return attnops_fused_infer_attention_score(a, ws, n);
}

attnops_status fia_case_run(fia_case *c, attnops_impl impl, int threads)
{
    tu_tensor_poison(&c->out, 0xC3), tu_tensor_poison(&c->lse, 0xC3);
    c->args.impl = impl, c->args.num_threads = threads;
    size_t bytes = 0;
    attnops_status st = attnops_fused_infer_attention_score_workspace_size(&c->args, &bytes);
    if (st == ATTNOPS_SUCCESS) st = tu_run_with_workspace(run_fia, &c->args, bytes, "fused_infer_attention_score");
    TU_CHECK(tu_canaries_ok(&c->out, "attention_out") && tu_canaries_ok(&c->lse, "softmax_lse"),
             "FusedInferAttentionScore wrote outside its outputs");
    return st;
}
