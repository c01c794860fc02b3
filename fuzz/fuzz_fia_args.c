/* FusedInferAttentionScore's argument space (docs/RELIABILITY.md, "Fuzzing"):
 * layouts (BNSD_BSND included), decode and prompt, GQA, per-batch and TND
 * lengths (sometimes out of range or not cumulative), paged caches of rank
 * 3 and 4 with block tables holding out-of-range ids, masks and sparse
 * modes, pse_shift, rope, int8 key/value with antiquant parameters of every
 * mode, softcap and ALiBi slopes (the attnops extensions), the refused
 * inputs -- each tensor sometimes perturbed or NULL -- on tiny data.  The
 * contract of fz_check_status holds (a failure writes nothing, a success
 * writes finite outputs). */
#include "fuzz_input.h"

enum { MAXB = 3 };

static const attnops_layout LAYOUTS[] = {ATTNOPS_LAYOUT_BSH, ATTNOPS_LAYOUT_BSND, ATTNOPS_LAYOUT_BNSD,
                                         ATTNOPS_LAYOUT_TND, ATTNOPS_LAYOUT_SBH};

/* A q-like tensor of the layout: heads n, length s (TND: tokens), head dim d. */
static const attnops_tensor *qlike(fz *f, fz_pool *pool, attnops_dtype dt, attnops_layout l, int64_t B, int64_t n,
                                   int64_t s, int64_t d)
{
    int64_t sh[4] = {B, s, n, d};
    int rank = 4;
    if (l == ATTNOPS_LAYOUT_BSH) rank = 3, sh[2] = n * d;
    else if (l == ATTNOPS_LAYOUT_BNSD) sh[1] = n, sh[2] = s;
    else if (l == ATTNOPS_LAYOUT_TND) rank = 3, sh[0] = s, sh[1] = n, sh[2] = d;
    return fz_tensor_new(f, pool, dt, rank, sh, true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size, 0x9E3779B97F4A7C15ull ^ size};
    fz_pool pool = {.n = 0};
    attnops_fia_args a;
    attnops_fia_args_init(&a);
    const attnops_layout layout = LAYOUTS[fz_range(&f, 0, fz_one_in(&f, 16) ? 4 : 3)];
    const bool tnd = layout == ATTNOPS_LAYOUT_TND, paged = fz_one_in(&f, 2), int8 = fz_one_in(&f, 4);
    const int64_t B = fz_range(&f, tnd ? 1 : 0, MAXB), N2 = fz_range(&f, 1, 3), G = fz_range(&f, 1, 3);
    const int64_t D = fz_range(&f, 1, 12), S1 = fz_one_in(&f, 2) ? 1 : fz_range(&f, 1, 9), S2 = fz_range(&f, 0, 20);
    const int64_t bs = fz_range(&f, 1, 8), cols = (S2 + bs - 1) / bs + fz_range(&f, 0, 1);
    static const attnops_dtype floats[] = {ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F32};
    const attnops_dtype dt = floats[fz_range(&f, 0, 2)], kvdt = int8 ? ATTNOPS_DTYPE_I8 : dt;
    int64_t lq[MAXB], lkv[MAXB], T1 = 0, T2 = 0;
    for (int64_t b = 0; b < B; b++) {
        lq[b] = fz_one_in(&f, 20) ? fz_range(&f, -2, S1 + 2) : fz_range(&f, 0, S1);
        lkv[b] = fz_one_in(&f, 20) ? fz_range(&f, -2, S2 + 2) : fz_range(&f, 0, S2);
        T1 += lq[b] > 0 ? lq[b] : 0, T2 += lkv[b] > 0 ? lkv[b] : 0;
    }
    a.input_layout = layout;
    if (layout == ATTNOPS_LAYOUT_BNSD && fz_one_in(&f, 4)) a.output_layout = ATTNOPS_LAYOUT_BSND;
    a.num_heads = fz_one_in(&f, 30) ? fz_range(&f, -1, 9) : N2 * G;
    a.num_key_value_heads = fz_one_in(&f, 3) ? 0 : fz_one_in(&f, 30) ? fz_range(&f, -1, 4) : N2;
    a.query = qlike(&f, &pool, dt, layout, B, N2 * G, tnd ? T1 : S1, D);
    int64_t blocks = 1;
    if (paged) {
        blocks = B * cols + 1;
        const int rank = (int)fz_range(&f, 3, 5); /* BnBsH, BnNBsD, NZ (c0 = 32 bytes, sometimes not) */
        const int64_t c0 = fz_one_in(&f, 10) ? fz_range(&f, 1, 33) : 32 / (int64_t)attnops_dtype_size(kvdt);
        const int64_t s3[3] = {blocks, bs, N2 * D}, s4[4] = {blocks, N2, bs, D},
                      s5[5] = {blocks, N2, c0 > 0 ? (D + c0 - 1) / c0 : 1, bs, c0};
        const int64_t *shape = rank == 3 ? s3 : rank == 4 ? s4 : s5;
        a.key = fz_tensor_new(&f, &pool, kvdt, rank, shape, true);
        a.value = fz_tensor_new(&f, &pool, kvdt, rank, shape, true);
        const int64_t ts[2] = {B, cols};
        const attnops_tensor *t = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_I32, 2, ts, true);
        if (t && t->dtype == ATTNOPS_DTYPE_I32 && t->rank == 2 && t->strides[0] >= 0 && t->strides[1] >= 0)
            for (int64_t b = 0; b < t->shape[0] && b < B; b++)
                for (int64_t c = 0; c < t->shape[1] && c < cols; c++) {
                    const int32_t id = (int32_t)(fz_one_in(&f, 30) ? fz_range(&f, -2, blocks + 2) : 1 + b * cols + c);
                    memcpy((int32_t *)t->data + b * t->strides[0] + c * t->strides[1], &id, 4);
                }
        a.block_table = t, a.block_size = fz_one_in(&f, 20) ? fz_range(&f, -1, 9) : bs;
    } else {
        a.key = qlike(&f, &pool, kvdt, layout, B, N2, tnd ? T2 : S2, D);
        a.value = qlike(&f, &pool, kvdt, layout, B, N2, tnd ? T2 : S2, D);
    }
    int64_t cq[MAXB], ckv[MAXB], run_q = 0, run_kv = 0;
    for (int64_t b = 0; b < B; b++) run_q += lq[b], cq[b] = tnd ? run_q : lq[b];
    for (int64_t b = 0; b < B; b++) run_kv += lkv[b], ckv[b] = tnd && !paged ? run_kv : lkv[b];
    if (tnd || fz_one_in(&f, 2)) a.actual_seq_lengths = fz_ints(&f, &pool, cq, B);
    if (tnd || paged || fz_one_in(&f, 2)) a.actual_seq_lengths_kv = fz_ints(&f, &pool, ckv, B);
    a.sparse_mode = fz_one_in(&f, 20) ? fz_range(&f, -1, 9) : fz_range(&f, 0, 4);
    static const int64_t tokens[] = {2147483647, 0, 3, -2, 1};
    a.pre_tokens = fz_pick_i64(&f, tokens, 5), a.next_tokens = fz_pick_i64(&f, tokens, 5);
    const int64_t keys = paged ? cols * bs : S2;
    if (fz_one_in(&f, 2)) {
        const int64_t tile[2] = {2048, 2048}, user[4] = {B, 1, S1 == 1 ? 1 : S1, keys + fz_range(&f, 0, 2)};
        a.atten_mask = a.sparse_mode >= 2 && fz_one_in(&f, 2)
                           ? fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_BOOL, 2, tile, true)
                           : fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_BOOL, 4, user, true);
    }
    if (fz_one_in(&f, 6)) {
        const int64_t ps[4] = {fz_one_in(&f, 2) ? 1 : B, N2 * G, S1, keys};
        a.pse_shift = fz_tensor_new(&f, &pool, dt, 4, ps, true);
    }
    if (fz_one_in(&f, 8)) {
        const int64_t dr = fz_range(&f, 1, 4);
        a.query_rope = qlike(&f, &pool, dt, layout, B, N2 * G, tnd ? T1 : S1, dr);
        a.key_rope = paged ? a.key : qlike(&f, &pool, dt, layout, B, N2, tnd ? T2 : S2, dr);
    }
    if (int8 || fz_one_in(&f, 30)) { /* antiquant parameters of a drawn mode, sometimes of the wrong shape */
        const int64_t mode = fz_range(&f, 0, 3);
        const int64_t shapes[4][3] = {{N2, D, 0}, {B, keys, 0}, {N2, 0, 0}, {B, N2, keys}};
        const int ranks[4] = {2, 2, 1, 3};
        const attnops_dtype sdt = mode == 1 || mode == 3 ? ATTNOPS_DTYPE_F32 : dt;
        if (fz_one_in(&f, 6)) {
            const int64_t cs[3] = {2, mode ? B : N2, mode ? keys : D};
            a.antiquant_scale = fz_tensor_new(&f, &pool, sdt, 3, cs, true);
            if (fz_one_in(&f, 2)) a.antiquant_offset = fz_tensor_new(&f, &pool, sdt, 3, cs, true);
            a.antiquant_mode = mode > 1 ? fz_range(&f, 0, 2) : mode;
        } else {
            a.key_antiquant_scale = fz_tensor_new(&f, &pool, sdt, ranks[mode], shapes[mode], true);
            a.value_antiquant_scale = fz_tensor_new(&f, &pool, sdt, ranks[mode], shapes[mode], true);
            if (fz_one_in(&f, 2)) {
                a.key_antiquant_offset = fz_tensor_new(&f, &pool, sdt, ranks[mode], shapes[mode], true);
                a.value_antiquant_offset = fz_tensor_new(&f, &pool, sdt, ranks[mode], shapes[mode], true);
            }
            a.key_antiquant_mode = a.value_antiquant_mode = fz_one_in(&f, 20) ? fz_range(&f, -1, 6) : mode;
        }
    }
    if (fz_one_in(&f, 40)) a.quant_scale2 = a.query; /* refused by name */
    static const double scales[] = {0.25, 1.0, 0.125};
    a.scale_value = fz_pick_f64(&f, scales, 3);
    a.inner_precise = fz_range(&f, 0, fz_one_in(&f, 20) ? 5 : 1);
    a.softmax_lse_flag = fz_one_in(&f, 2);
    a.impl = (attnops_impl)fz_range(&f, 0, fz_one_in(&f, 20) ? 4 : 2);
    a.num_threads = (int32_t)fz_range(&f, fz_one_in(&f, 20) ? -1 : 0, fz_one_in(&f, 8) ? 2 : 1);
    if (fz_one_in(&f, 4)) { /* the attnops extensions: a cap (edges included), ALiBi slopes [N1] or [B, N1] */
        static const double caps[] = {0.5, 30.0, 0.0};
        a.softcap = fz_pick_f64(&f, caps, 3);
        const int64_t bn[2] = {B, N2 * G}, rank = fz_range(&f, 0, 2);
        if (rank) a.alibi_slopes = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, (int)rank, bn + 2 - rank, true);
        if (fz_one_in(&f, 2)) { /* CANN's rule (pseType 2 / 3; 1 refused), starts past the 2^20 bound at times */
            a.alibi_rule = (int32_t)fz_range(&f, 1, 3);
            a.alibi_q_start_idx = fz_range(&f, -5, 40);
            a.alibi_kv_start_idx = fz_one_in(&f, 20) ? (1 << 20) + 64 : fz_range(&f, -5, 40);
        }
    }
    if (fz_one_in(&f, 4)) { /* attention sinks: [N1] of f32 / f16 / bf16 (or another dtype, shape) */
        static const attnops_dtype sink_dt[] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16};
        const int64_t n1 = fz_one_in(&f, 20) ? fz_range(&f, 0, 9) : N2 * G;
        a.learnable_sink = fz_tensor_new(&f, &pool, sink_dt[fz_range(&f, 0, 2)], 1, &n1, true);
    }
    const int first_output = pool.n;
    const attnops_layout out_layout = a.output_layout ? a.output_layout : layout;
    a.attention_out = qlike(&f, &pool, dt, out_layout, B, N2 * G, tnd ? T1 : S1, D);
    const int64_t lb[4] = {B, N2 * G, S1, 1}, lt[3] = {T1, N2 * G, 1};
    a.softmax_lse = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, tnd ? 3 : 4, tnd ? lt : lb, true);
    if (!pool.too_big) {
        fz_poison(&pool, first_output);
        attnops_status st;
        bool skipped;
        FZ_TWO_PHASE(attnops_fused_infer_attention_score_workspace_size, attnops_fused_infer_attention_score, &a, st,
                     skipped);
        if (!skipped) fz_check_status("FusedInferAttentionScore", st, &pool, first_output);
        if (st == ATTNOPS_SUCCESS) {
            attnops_output_shape out, lse;
            st = attnops_fused_infer_attention_score_output_shapes(&a, &out, &lse);
            fz_check_output_shape("FusedInferAttentionScore", "attention_out", st, &out, a.attention_out, a.query);
            if (a.softmax_lse_flag)
                fz_check_output_shape("FusedInferAttentionScore", "softmax_lse", st, &lse, a.softmax_lse, a.query);
        }
    }
    fz_pool_free(&pool);
    return 0;
}
