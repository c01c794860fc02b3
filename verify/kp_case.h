/* One KeyPool test problem: its tensors (with canaries), generated from a
 * seed the way the seed's precision test builds them (spec
 * keypool-attnres-pypto A.6), and one call through a chosen implementation.
 * Shared by tests/test_keypool.c and the harness (`attnops run` / `golden`). */
#ifndef ATTNOPS_KP_CASE_H
#define ATTNOPS_KP_CASE_H

#include "testutil.h"

#define KP_CASE_MAX_B 40

typedef struct kp_case_spec {
    bool th;          /* layout TH (hidden [T, H] + cu_seqlens); false: BSH [B, S, H], every len S */
    int B;
    int64_t len[KP_CASE_MAX_B], start[KP_CASE_MAX_B]; /* per batch: tokens, start_pos */
    int64_t cmp_ratio, block_size;
    bool scramble;    /* each batch's table row reversed */
    bool norm;        /* LayerNorm on K, with random weight and bias */
    int64_t H, D;
    attnops_dtype dtype;                /* bf16 or f16 */
    attnops_key_pool_capacity capacity; /* the harness's; the tests pick one per call */
    /* storage knobs of the tests (0 / false: dense) */
    int64_t cache_gap;  /* extra cache rows after each block: a non-contiguous dim 0 */
    int64_t col_stride; /* cache column stride (0 or 1: dense) */
    bool hidden_gap;    /* BSH: an unused token row after each batch (batches not evenly spaced) */
} kp_case_spec;

typedef struct kp_case {
    kp_case_spec spec;
    int64_t T, S, L, block_num;     /* tokens, BSH length, table columns, physical blocks */
    int64_t rows_per_block, cs, row_floats; /* cache storage: block_size + gap, column stride, floats per row */
    tu_tensor hidden, wk, gate, ape, cache, table, start, norm_w, norm_b, cu; /* absent: block NULL */
    attnops_tensor cache_view;      /* [block_num, block_size, 2D] over cache's storage */
    float *cache_initial;           /* the cache's storage before any call (the input cache) */
    int64_t valid_rows[KP_CASE_MAX_B]; /* n[b] of the last kp_case_run */
} kp_case;

/* The seed's construction (A.6), from `seed`: the table (max_blocks =
 * max(1, ceil(max(st + len) / block_size)), block_num = 1 + B max_blocks,
 * batch b owns blocks 1 + b max_blocks .. (b + 1) max_blocks, reversed when
 * scrambled, block 0 unused), then hidden randn, wk and gate_weight randn
 * * 0.02, ape randn * 0.1, the cache randn * 0.1 everywhere (random
 * "history"), norm weight and bias randn. */
void kp_case_init(kp_case *c, const kp_case_spec *spec, uint64_t seed);
void kp_case_free(kp_case *c);

/* The cache back to the input cache. */
void kp_case_restore_cache(kp_case *c);
/* The input cache as a view like cache_view (over cache_initial). */
attnops_tensor kp_case_input_cache(const kp_case *c);

/* The call's arguments over the case's tensors (pooled_key NULL). */
attnops_key_pool_args kp_case_args(const kp_case *c, attnops_key_pool_capacity cap, attnops_impl impl);

/* One call with `impl` on the input cache (restored first; the cache holds
 * the call's result afterwards) into a fresh pooled_key of capacity `cap`
 * poisoned with 0xC3, so rows the call does not write keep that.  Fills
 * c->valid_rows from attnops_key_pool_valid_rows.  Workspace, output and
 * cache canaries are TU_CHECKed.  *pooled: the output (tu_tensor_free it;
 * all zero when the call could not be set up). */
attnops_status kp_case_run(kp_case *c, attnops_key_pool_capacity cap, attnops_impl impl, int threads,
                           tu_tensor *pooled);

/* Which elements of a pooled_key of `shape` hold valid rows (the rest are
 * undefined in CURRENT capacity, zero in FIXED): rank 3 [B, rows, D],
 * batch b's first valid_rows[b] rows; rank 2 [rows, D] (TH, CURRENT), the
 * first sum(valid_rows) rows, batches packed back to back.  A malloc'ed
 * mask of 0 / 1 per element, or NULL when valid_rows does not fit the
 * shape. */
uint8_t *kp_valid_mask(const int64_t *valid_rows, int64_t B, int rank, const int64_t *shape);

#endif
