#include "kp_case.h"

#include <stdlib.h>
#include <string.h>

static int64_t max_end(const kp_case_spec *s)
{
    int64_t m = 0;
    for (int b = 0; b < s->B; b++) m = s->start[b] + s->len[b] > m ? s->start[b] + s->len[b] : m;
    return m;
}

void kp_case_init(kp_case *c, const kp_case_spec *s, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->spec = *s;
    tu_rng r = tu_rng_make(seed);
    c->S = s->len[0];
    for (int b = 0; b < s->B; b++) c->T += s->len[b];
    const int64_t blocks = (max_end(s) + s->block_size - 1) / s->block_size;
    c->L = blocks > 1 ? blocks : 1;
    c->block_num = 1 + s->B * c->L;
    c->rows_per_block = s->block_size + s->cache_gap;
    c->cs = s->col_stride > 1 ? s->col_stride : 1;
    c->row_floats = 2 * s->D * c->cs;
    /* The seed's table: batch b owns blocks 1 + b L .. (b + 1) L, reversed when scrambled; block 0 unused. */
    const int64_t tshape[2] = {s->B, c->L};
    c->table = tu_tensor_new(ATTNOPS_DTYPE_I32, 2, tshape, 0);
    for (int b = 0; b < s->B; b++)
        for (int64_t l = 0; l < c->L; l++)
            ((int32_t *)c->table.view.data)[b * c->L + l] = (int32_t)(1 + b * c->L + (s->scramble ? c->L - 1 - l : l));
    const int64_t hshape[3] = {s->B, c->S + s->hidden_gap, s->H}, thshape[2] = {c->T, s->H};
    c->hidden = s->th ? tu_tensor_new(s->dtype, 2, thshape, 0) : tu_tensor_new(s->dtype, 3, hshape, 0);
    tu_tensor_randn(&c->hidden, &r, 1.0);
    if (!s->th) c->hidden.view.shape[1] = c->S; /* the gap row stays outside the view */
    const int64_t wshape[2] = {s->D, s->H}, ashape[2] = {s->cmp_ratio, s->D}, nshape[1] = {s->D};
    c->wk = tu_tensor_new(s->dtype, 2, wshape, 0);
    tu_tensor_randn(&c->wk, &r, 0.02);
    c->gate = tu_tensor_new(s->dtype, 2, wshape, 0);
    tu_tensor_randn(&c->gate, &r, 0.02);
    c->ape = tu_tensor_new(ATTNOPS_DTYPE_F32, 2, ashape, 0);
    tu_tensor_randn(&c->ape, &r, 0.1);
    /* Random "history" everywhere, gap rows included. */
    const int64_t cshape[3] = {c->block_num, c->rows_per_block, c->row_floats};
    c->cache = tu_tensor_new(ATTNOPS_DTYPE_F32, 3, cshape, 0);
    tu_tensor_randn(&c->cache, &r, 0.1);
    c->cache_view = c->cache.view;
    c->cache_view.shape[1] = s->block_size;
    c->cache_view.shape[2] = 2 * s->D, c->cache_view.strides[2] = c->cs;
    c->cache_initial = malloc(c->cache.data_bytes);
    memcpy(c->cache_initial, c->cache.view.data, c->cache.data_bytes);
    if (s->norm) {
        c->norm_w = tu_tensor_new(ATTNOPS_DTYPE_F32, 1, nshape, 0);
        tu_tensor_randn(&c->norm_w, &r, 1.0);
        c->norm_b = tu_tensor_new(ATTNOPS_DTYPE_F32, 1, nshape, 0);
        tu_tensor_randn(&c->norm_b, &r, 1.0);
    }
    const int64_t bshape[1] = {s->B}, cushape[1] = {s->B + 1};
    c->start = tu_tensor_new(ATTNOPS_DTYPE_I32, 1, bshape, 0);
    for (int b = 0; b < s->B; b++) ((int32_t *)c->start.view.data)[b] = (int32_t)s->start[b];
    if (s->th) {
        c->cu = tu_tensor_new(ATTNOPS_DTYPE_I32, 1, cushape, 0);
        int32_t *cu = c->cu.view.data;
        cu[0] = 0;
        for (int b = 0; b < s->B; b++) cu[b + 1] = cu[b] + (int32_t)s->len[b];
    }
}

void kp_case_free(kp_case *c)
{
    tu_tensor *all[] = {&c->hidden, &c->wk, &c->gate, &c->ape, &c->cache, &c->table, &c->start, &c->norm_w,
                        &c->norm_b, &c->cu};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]->block) tu_tensor_free(all[i]);
    free(c->cache_initial);
    c->cache_initial = NULL;
}

void kp_case_restore_cache(kp_case *c) { memcpy(c->cache.view.data, c->cache_initial, c->cache.data_bytes); }

attnops_tensor kp_case_input_cache(const kp_case *c)
{
    attnops_tensor v = c->cache_view; /* cache_view starts where the storage does */
    v.data = c->cache_initial;
    return v;
}

attnops_key_pool_args kp_case_args(const kp_case *c, attnops_key_pool_capacity cap, attnops_impl impl)
{
    attnops_key_pool_args a;
    attnops_key_pool_args_init(&a);
    a.hidden_states = &c->hidden.view, a.wk = &c->wk.view, a.gate_weight = &c->gate.view, a.ape = &c->ape.view;
    a.state_cache = &c->cache_view, a.cache_block_table = &c->table.view, a.start_pos = &c->start.view;
    if (c->spec.norm) a.norm_weight = &c->norm_w.view, a.norm_bias = &c->norm_b.view;
    if (c->spec.th) a.cu_seqlens = &c->cu.view;
    a.cmp_ratio = c->spec.cmp_ratio;
    a.capacity = cap;
    a.impl = impl;
    return a;
}

static attnops_status run_key_pool(const void *a, void *ws, size_t n) { return attnops_key_pool(a, ws, n); }

attnops_status kp_case_run(kp_case *c, attnops_key_pool_capacity cap, attnops_impl impl, int threads,
                           tu_tensor *pooled)
{
    memset(pooled, 0, sizeof *pooled);
    kp_case_restore_cache(c);
    attnops_key_pool_args a = kp_case_args(c, cap, impl);
    a.num_threads = threads;
    int32_t rank;
    int64_t shape[3];
    size_t bytes = 0;
    attnops_status st = attnops_key_pool_output_shape(&a, &rank, shape);
    if (st == ATTNOPS_SUCCESS) st = attnops_key_pool_valid_rows(&a, c->valid_rows);
    if (st != ATTNOPS_SUCCESS) return st;
    *pooled = tu_tensor_new(c->spec.dtype, rank, shape, 0);
    tu_tensor_poison(pooled, 0xC3);
    a.pooled_key = &pooled->view;
    st = attnops_key_pool_workspace_size(&a, &bytes);
    if (st == ATTNOPS_SUCCESS) st = tu_run_with_workspace(run_key_pool, &a, bytes, "key_pool");
    TU_CHECK(tu_canaries_ok(pooled, "pooled_key") && tu_canaries_ok(&c->cache, "state_cache"),
             "key_pool wrote outside pooled_key or state_cache");
    return st;
}

uint8_t *kp_valid_mask(const int64_t *valid_rows, int64_t B, int rank, const int64_t *shape)
{
    if (rank != 2 && !(rank == 3 && shape[0] == B)) return NULL;
    const int64_t rows = shape[rank - 2], D = shape[rank - 1], numel = (rank == 3 ? B : 1) * rows * D;
    uint8_t *mask = calloc((size_t)numel + 1, 1);
    int64_t packed = 0; /* TH: the rows before batch b */
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = valid_rows[b], row0 = rank == 2 ? packed : b * rows;
        if (n < 0 || (rank == 3 ? n : packed + n) > rows) return free(mask), NULL;
        memset(mask + row0 * D, 1, (size_t)(n * D));
        packed += n;
    }
    return mask;
}
