/* Tile sizes and padded extents shared by the forward and backward drivers. */
#ifndef ATTNOPS_FA_TILES_H
#define ATTNOPS_FA_TILES_H

#include "cpu/pack.h"
#include "cpu/tile_gemm.h"
#include "fa/fa_problem.h"

/* Tiles: 64 keys, and 128 query rows in the backward (64 on ISAs whose
 * tuning says so, isa.h: AVX2), 64 in the forward.
 * Measured on AVX-512 (one core, S = 2048, D = 128): a 128-row query tile lifts
 * the bf16 backward from ~66 % to ~75 % of the bf16 GEMM peak (three of its
 * five GEMMs reduce over the query rows, and 64 is short for libxsmm); 256
 * gains nothing more; 128 keys lose ~15 % (the S and dP tiles leave L1).
 * The forward reduces only over keys and is as fast with 64 rows, which pad
 * short (varlen) sequences and narrow bands half as much; the backward drops
 * to 64 rows when narrow bands or short sequences make the padding cost
 * more than the GEMMs gain (fa_bwd.c, narrow_tiles_pay).
 * A sequence shorter than the backward's tile gets one tile of its own
 * length rounded up to FA_BWD_TILE_STEP (fa_bwd.c, tile_cover): a tiny
 * problem ran its five GEMMs and its softmax gradient on 64 x 64 tiles of
 * mostly padding (S1 = S2 = 16: 11.2 -> 3.0 us a call). */
#define FA_BWD_BQ 128
#define FA_BWD_BQ_NARROW 64 /* the backward's choice under narrow bands */
#define FA_FWD_BQ 64
#define FA_BK 64
#define FA_BWD_TILE_STEP 16 /* an AVX-512 vector of fp32; even, as VNNI pairs need */

/* Memory the drivers may spend on per-head packs shared across threads. */
#define FA_PACK_BUDGET_BYTES ((size_t)64 << 20)

/* The parallelism the deterministic backward partitions its work for,
 * whatever the thread count, so results do not depend on it. */
#define FA_DETERMINISTIC_PARALLELISM 4

typedef struct fa_tiling {
    bool round_p;         /* P and dS rounded to bf16 before their GEMMs (bf16 or f8 inputs) */
    bool bf16;            /* bf16 GEMM operands in VNNI packs: round_p where libxsmm has a bf16
                           * kernel; else the inputs widen to fp32 packs (exact) and fp32 GEMMs
                           * take the rounded P and dS, the same products */
    pack_elem elem;       /* the matching tile element type                   */
    int64_t Dp, Dvp;      /* head dims rounded up to even for bf16 pairs      */
    int64_t S1p, S2p;     /* sequence lengths rounded up to the tile          */
    int64_t nq, nk;       /* tile counts                                      */
} fa_tiling;

static inline fa_tiling fa_tiling_make(const fa_problem *p, int64_t bq)
{
    fa_tiling t;
    t.round_p = p->dtype == ATTNOPS_DTYPE_BF16 || p->fp8; /* f8 values are exact in bf16 */
    t.bf16 = t.round_p && tile_gemm_library_available(TILE_GEMM_BF16_NN_VNNI);
    t.elem = t.bf16 ? PACK_BF16 : PACK_F32;
    t.Dp = t.bf16 ? (p->D + 1) / 2 * 2 : p->D;
    t.Dvp = t.bf16 ? (p->Dv + 1) / 2 * 2 : p->Dv;
    t.nq = (p->S1 + bq - 1) / bq;
    t.nk = (p->S2 + FA_BK - 1) / FA_BK;
    t.S1p = t.nq * bq;
    t.S2p = t.nk * FA_BK;
    return t;
}

/* How many heads of `bytes_per_head` packs to process at once: as many as
 * fit the budget (at least one), rounded down to a multiple of the thread
 * count so that a wave's equal-sized items keep every thread busy. */
static inline int64_t fa_wave_heads(int64_t heads, size_t bytes_per_head, int threads)
{
    int64_t w = bytes_per_head ? (int64_t)(FA_PACK_BUDGET_BYTES / bytes_per_head) : heads;
    if (w >= heads) return heads;
    if (w > threads) w -= w % threads;
    return w < 1 ? 1 : w;
}

/* Scratch laid out as consecutive 64-byte-aligned pieces: the size of all
 * of them, and each one's address from a base. */
static inline size_t fa_pieces_bytes(const size_t *sizes, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += ao_align_up(sizes[i], 64);
    return total;
}

static inline void fa_pieces_carve(char *base, const size_t *sizes, int n, char **out)
{
    for (int i = 0; i < n; i++) out[i] = base, base += ao_align_up(sizes[i], 64);
}

#endif
