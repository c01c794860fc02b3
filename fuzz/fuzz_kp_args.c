/* KeyPool's argument space (docs/RELIABILITY.md, "Fuzzing"): layouts BSH / TH, batch
 * lengths and start positions, cmp_ratio, block sizes and tables (with
 * out-of-range blocks), dtypes, the optional LayerNorm and the reserved
 * inputs, capacities -- each tensor sometimes perturbed or NULL -- on tiny
 * data.  The contract of fz_check_status holds, and on failure the
 * in-place state_cache is untouched too. */
#include "fuzz_input.h"

enum { MAXB = 4 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size, 0x2545F4914F6CDD1Dull ^ size};
    fz_pool pool = {.n = 0};
    attnops_key_pool_args a;
    attnops_key_pool_args_init(&a);
    const bool th = fz_u8(&f) & 1;
    const int64_t B = fz_range(&f, th ? 0 : 1, MAXB), H = fz_range(&f, 1, 48), D = fz_range(&f, 1, 24);
    static const int64_t ratios[] = {4, 2, 8, 16, 128, 3};
    a.cmp_ratio = fz_pick_i64(&f, ratios, 6);
    const int64_t block = fz_range(&f, 1, 8), S = fz_range(&f, 0, 12);
    int64_t len[MAXB], start[MAXB + 1], cu[MAXB + 1] = {0}, T = 0, need = 1;
    for (int64_t b = 0; b < B; b++) {
        len[b] = th ? fz_range(&f, 0, 12) : S;
        start[b] = fz_one_in(&f, 20) ? fz_range(&f, -3, 3) : fz_range(&f, 0, 20);
        T += len[b], cu[b + 1] = T;
        const int64_t blocks = (start[b] + len[b] + block - 1) / block;
        need = blocks > need ? blocks : need;
    }
    const int64_t more = fz_range(&f, 0, 1), fewer = fz_one_in(&f, 16) ? 1 : 0;
    const int64_t L = need + more - fewer, nblocks = 1 + B * (L > 0 ? L : 1);
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_F32};
    const attnops_dtype dt = dtypes[fz_range(&f, 0, fz_one_in(&f, 8) ? 2 : 1)];
    int64_t shape[3] = {B, S, H};
    if (th) shape[0] = T, shape[1] = H;
    a.hidden_states = fz_tensor_new(&f, &pool, dt, th ? 2 : 3, shape, true);
    const int64_t w[2] = {D, H}, ape[2] = {a.cmp_ratio > 0 && a.cmp_ratio < 256 ? a.cmp_ratio : 1, D};
    a.wk = fz_tensor_new(&f, &pool, dt, 2, w, true);
    a.gate_weight = fz_tensor_new(&f, &pool, dt, 2, w, true);
    a.ape = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 2, ape, true);
    const int64_t table_shape[2] = {B, L > 0 ? L : 0}, one[1] = {B}, cu_shape[1] = {B + 1}, d1[1] = {D};
    const attnops_tensor *table = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_I32, 2, table_shape, true);
    if (table && table->dtype == ATTNOPS_DTYPE_I32 && table->rank == 2 && table->strides[0] >= 0 && table->strides[1] >= 0)
        for (int64_t b = 0; b < table->shape[0] && b < B; b++)
            for (int64_t l = 0; l < table->shape[1] && l < L; l++) {
                const int32_t v = (int32_t)(fz_one_in(&f, 30) ? fz_range(&f, -2, (int64_t)nblocks + 2) : 1 + b * L + l);
                memcpy((int32_t *)table->data + b * table->strides[0] + l * table->strides[1], &v, 4);
            }
    a.cache_block_table = table;
    const attnops_tensor *sp = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_I32, 1, one, true);
    if (sp && sp->dtype == ATTNOPS_DTYPE_I32 && sp->rank == 1 && sp->strides[0] >= 0)
        for (int64_t b = 0; b < sp->shape[0] && b < B; b++) {
            const int32_t v = (int32_t)start[b];
            memcpy((int32_t *)sp->data + b * sp->strides[0], &v, 4);
        }
    a.start_pos = sp;
    if (th || fz_one_in(&f, 20)) {
        const attnops_tensor *c = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_I32, 1, cu_shape, true);
        if (c && c->dtype == ATTNOPS_DTYPE_I32 && c->rank == 1 && c->strides[0] >= 0)
            for (int64_t b = 0; b < c->shape[0] && b <= B; b++) {
                const int32_t v = (int32_t)(fz_one_in(&f, 30) ? fz_range(&f, -2, T + 3) : cu[b]);
                memcpy((int32_t *)c->data + b * c->strides[0], &v, 4);
            }
        a.cu_seqlens = c;
    }
    if (fz_one_in(&f, 3)) {
        a.norm_weight = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 1, d1, true);
        a.norm_bias = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 1, d1, true);
    }
    if (fz_one_in(&f, 40)) a.cos = a.sin = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 1, d1, true);
    if (fz_one_in(&f, 40)) a.seqused = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_I32, 1, one, true);
    static const double eps[] = {1e-6, 1e-5, 0.1};
    a.norm_eps = fz_pick_f64(&f, eps, 3);
    a.rotary_mode = fz_range(&f, 0, fz_one_in(&f, 20) ? 3 : 1);
    a.capacity = (attnops_key_pool_capacity)fz_range(&f, 0, fz_one_in(&f, 20) ? 3 : 1);
    a.impl = (attnops_impl)fz_range(&f, 0, fz_one_in(&f, 20) ? 5 : 2);
    const int64_t fewest = fz_one_in(&f, 20) ? -1 : 0, most = fz_one_in(&f, 8) ? 2 : 1;
    a.num_threads = (int32_t)fz_range(&f, fewest, most);
    const int64_t cache_shape[3] = {nblocks, block, 2 * D};
    a.state_cache = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 3, cache_shape, true);
    int32_t rank = 0;
    int64_t out_shape[ATTNOPS_MAX_RANK] = {0};
    if (attnops_key_pool_output_shape(&a, &rank, out_shape) != ATTNOPS_SUCCESS) rank = th ? 2 : 3;
    const int first_output = pool.n;
    a.pooled_key = fz_tensor_new(&f, &pool, dt, rank, out_shape, true);
    if (!pool.too_big) {
        fz_poison(&pool, first_output);
        const fz_tensor *cache = NULL;
        for (int i = 0; i < pool.n; i++)
            if (&pool.t[i].view == a.state_cache) cache = &pool.t[i];
        unsigned char *before = cache ? malloc(cache->bytes) : NULL;
        if (cache) memcpy(before, cache->mem, cache->bytes);
        attnops_status st;
        bool skipped;
        FZ_TWO_PHASE(attnops_key_pool_workspace_size, attnops_key_pool, &a, st, skipped);
        if (!skipped) fz_check_status("KeyPool", st, &pool, first_output);
        if (!skipped && st != ATTNOPS_SUCCESS && cache && memcmp(before, cache->mem, cache->bytes))
            fprintf(stderr, "KeyPool failed (%s) but changed state_cache\n", attnops_last_error()), abort();
        free(before);
    }
    fz_pool_free(&pool);
    return 0;
}
