/* Fast FlashAttention backward (spec 1.2, 9): one sweep over (kv tile,
 * query tile) pairs that recomputes P from the saved softmax_max/sum and uses
 * Drow = rowsum(dy * attention_in), as the CANN kernel does.
 *
 * Work item = (kv head (b, n2), split s): the split owns a contiguous range of
 * kv tiles, so it owns dk/dv of those rows outright; it visits every query
 * tile of the G query heads and adds its dq contribution into its own fp32
 * partial [S1p][D].  Partials are summed in split order afterwards, so the
 * result never depends on scheduling.  The split count comes from the
 * parallelism (the thread count, or a fixed value when `deterministic`), not
 * from B*N: with B*N2 smaller than the thread count the kv range is split
 * and every core works (PyTorch's CPU backward idles there).  Under a mask
 * the splits are cut so that each gets about the same number of non-empty
 * (query tile, kv tile) pairs (counted once per batch from the effective
 * mask, which also picks 128- or 64-row query tiles, BQ below), and each
 * pair is classified once: empty pairs
 * are skipped, partial ones go through fa_scores_apply.  In TND every batch
 * uses its own lengths; buffers are sized for the longest.
 *
 * "bf16" below means bf16 operands in VNNI packs, used where libxsmm has a
 * bf16 kernel; elsewhere bf16 and f8 inputs take the fp32 layouts, with P
 * and dS rounded to bf16 values (f8 values) before the GEMMs that take them.
 *
 * Per query head, shared by the items of a wave ("q side"):
 *   fp32: Q [S1p][D], dY [S1p][Dv] (read in place when the input is fp32
 *         BNSD-dense and S1 % BQ == 0), drow, m, l [S1p]
 *   bf16: Q [S1p][Dp], Q^T tile-major [nq][D][BQ], dY [S1p][Dvp],
 *         dY^T tile-major [nq][Dv][BQ], drow, m, l
 * Per thread, for the current kv tile (BK rows):
 *   fp32: K^T [D][BK], V^T [Dv][BK], K [BK][D]
 *   bf16: K^T VNNI [Dp/2][BK][2], V^T VNNI [Dvp/2][BK][2], K VNNI [BK/2][D][2]
 *   S, dP fp32 [BQ][BK]; bf16: P and dS in VNNI [BQ/2][BK][2], dS [BQ][BK]
 *   dK, dV accumulators fp32: [BK][D], [BK][Dv]; bf16 transposed [D][BK], [Dv][BK]
 *
 * Per (query tile i, kv tile j), in row-major GEMMs:
 *   S = Q_i K_j^T;  dP = dY_i V_j^T;  P = exp(scale S - m)/l;  dS = P (dP - drow)
 *   (softcap: S capped, dS times 1 - tanh^2 of the cap, fa_scores.h)
 *   fp32: dV_j += P^T dY_i;  dK_j += dS^T Q_i   (libxsmm's transposed operand)
 *   bf16: dV_j^T += dY_i^T P;  dK_j^T += Q_i^T dS   (libxsmm has no transposed
 *         bf16 operand; this keeps P and dS conversions transpose-free)
 *   dQ_i += dS K_j                                   (scale applied at the end) */
#include <math.h>
#include <string.h>

#include <omp.h>

#include "cpu/fa_cpu.h"
#include "cpu/fa_scores.h"
#include "cpu/fa_tiles.h"
#include "cpu/isa.h"
#include "cpu/kernels.h"
#include "cpu/pack.h"
#include "cpu/tile_gemm.h"
#include "fa/fa_dropout.h"
#include "fa/fa_fp8.h"

typedef struct bwd_plan {
    fa_tiling t;
    bool q_zero_copy, dy_zero_copy; /* fp32 inputs read in place */
    int bq;             /* query tile rows: FA_BWD_BQ, or FA_BWD_BQ_NARROW (see narrow_tiles_pay), or fewer
                         * that cover S1 (tile_cover) */
    int bk;             /* kv tile rows: FA_BK, or fewer that cover S2, or FA_FP8_BLOCK under FP8 (dS is
                         * quantised per 128 keys) */
    int64_t nsplit, wave;
    size_t qside_bytes; /* per query head */
    size_t part_bytes;  /* per (query head, split) */
    size_t thread_bytes;
    size_t work_bytes;  /* count_tile_work's two arrays, [B][nk + 1] each */
    size_t total;
} bwd_plan;

/* Byte sizes of the pieces, in carve order (shared by planning and carving). */
enum { QS_Q, QS_QT, QS_DY, QS_DYT, QS_DROW, QS_M, QS_L, QS_ATTEND, QS_COUNT };
enum { TH_KT, TH_VT, TH_KN, TH_S, TH_DP, TH_PV, TH_DSV, TH_DSN, TH_DK, TH_DV, TH_BIAS, TH_MASKED, TH_KEEP, TH_FP8, TH_DTANH, TH_COUNT };

static void qside_sizes(const fa_problem *p, const bwd_plan *pl, size_t sz[QS_COUNT])
{
    const fa_tiling *t = &pl->t;
    const size_t S1p = (size_t)t->S1p;
    memset(sz, 0, sizeof(size_t) * QS_COUNT);
    if (t->bf16) {
        sz[QS_Q] = S1p * (size_t)t->Dp * 2, sz[QS_QT] = S1p * (size_t)p->D * 2;
        sz[QS_DY] = S1p * (size_t)t->Dvp * 2, sz[QS_DYT] = S1p * (size_t)p->Dv * 2;
    } else {
        sz[QS_Q] = pl->q_zero_copy ? 0 : S1p * (size_t)p->D * 4;
        sz[QS_DY] = pl->dy_zero_copy ? 0 : S1p * (size_t)p->Dv * 4;
    }
    sz[QS_DROW] = sz[QS_M] = sz[QS_L] = S1p * 4;
    sz[QS_ATTEND] = (size_t)(t->S1p / FA_BWD_BQ_NARROW);
}

/* pack_qside's Drow takes this many rows at a time (S1p is a multiple of it) */
enum { DROW_ROWS = 8 };

static void thread_sizes(const fa_problem *p, const fa_tiling *t, int bk, size_t sz[TH_COUNT])
{
    const size_t e = t->bf16 ? 2 : 4, tile = (size_t)FA_BWD_BQ * bk; /* sized for the larger tile */
    const size_t drow_rows = (size_t)DROW_ROWS * (size_t)p->Dv; /* S and dP are pack_qside's row buffers */
    memset(sz, 0, sizeof(size_t) * TH_COUNT);
    sz[TH_KT] = (size_t)t->Dp * bk * e;
    sz[TH_VT] = (size_t)t->Dvp * bk * e;
    sz[TH_KN] = (size_t)bk * (size_t)p->D * e;
    sz[TH_S] = sz[TH_DP] = (tile > drow_rows ? tile : drow_rows) * 4;
    if (t->bf16) sz[TH_PV] = sz[TH_DSV] = sz[TH_DSN] = tile * 2;
    sz[TH_DK] = (size_t)bk * (size_t)p->D * 4;
    sz[TH_DV] = (size_t)bk * (size_t)p->Dv * 4;
    sz[TH_BIAS] = tile * 4;
    sz[TH_MASKED] = bk;
    sz[TH_KEEP] = p->keep_prob < 1.0 ? tile : 0;
    sz[TH_DTANH] = p->softcap > 0.0 ? tile * 4 : 0;
    if (p->fp8) { /* a block product before its scales: [Dv][bk], [D][bk] or [bq][D] */
        size_t most = (size_t)bk * (size_t)(p->D > p->Dv ? p->D : p->Dv);
        if ((size_t)FA_BWD_BQ * (size_t)p->D > most) most = (size_t)FA_BWD_BQ * (size_t)p->D;
        sz[TH_FP8] = most * 4;
    }
}

/* A tile of `most` rows, or where the sequence is shorter, of its length
 * rounded up to FA_BWD_TILE_STEP: one tile covers it either way, and the
 * GEMMs and the softmax gradient run on less padding.  The longest sequence
 * decides (TND), so the tiles, and the bits with them, follow the problem's
 * shape, never the thread count.  FP8 keeps its 128 x 128 tiles: dS is
 * quantised per such block. */
static int tile_cover(const fa_problem *p, int64_t len, int most)
{
    if (p->fp8) return most;
    const int64_t cover = len < 1 ? FA_BWD_TILE_STEP : (len + FA_BWD_TILE_STEP - 1) / FA_BWD_TILE_STEP * FA_BWD_TILE_STEP;
    return cover < most ? (int)cover : most;
}

/* fp32 rows stored densely (BNSD-like) can feed the GEMMs in place, when
 * whole query tiles of either size (narrow or not, chosen after planning)
 * end at S1.  Rows further apart would map a tile's rows onto the same cache
 * sets, so those are packed instead. */
static bool can_read_in_place(const fa_view *v, const fa_problem *p, int64_t cols)
{
    return !p->varlen && v->dtype == ATTNOPS_DTYPE_F32 && v->sd == 1 && v->ss == cols &&
           p->S1 % tile_cover(p, p->S1, FA_BWD_BQ) == 0 && p->S1 % tile_cover(p, p->S1, FA_BWD_BQ_NARROW) == 0;
}

/* Per batch b and kv tile kt, how many query tiles meet a non-empty part
 * of the effective mask, cumulated over kt: work[kt] for kt in [0, nk],
 * once for 64-row and once for 128-row query tiles (in 64-row units).  It
 * reads the mask elements of head 0, so a mode and the same mask given
 * explicitly in mode 1 plan alike (tile size and splits) and give identical
 * bits. */
static void count_tile_work(const fa_problem *p, int64_t b, int bk, int64_t *work64, int64_t *work128)
{
    const int64_t S1 = fa_q_len(p, b), S2 = fa_kv_len(p, b), nk = (S2 + bk - 1) / bk;
    const fa_band band = fa_band_of(p, b, S1, S2);
    work64[0] = work128[0] = 0;
    for (int64_t kt = 0; kt < nk; kt++) {
        const int64_t k0 = kt * bk, k1 = k0 + bk < S2 ? k0 + bk : S2;
        int64_t w64 = 0, w128 = 0;
        for (int64_t q0 = 0; q0 < S1; q0 += FA_BWD_BQ) {
            int live = 0;
            for (int64_t h0 = q0; h0 < q0 + FA_BWD_BQ && h0 < S1; h0 += FA_BWD_BQ_NARROW) {
                const int64_t h1 = h0 + FA_BWD_BQ_NARROW < S1 ? h0 + FA_BWD_BQ_NARROW : S1;
                live += !p->mask.rule.active || fa_classify_tile(p, &band, b, 0, h0, h1, k0, k1) != FA_TILE_EMPTY;
            }
            w64 += live, w128 += live ? FA_BWD_BQ / FA_BWD_BQ_NARROW : 0;
        }
        work64[kt + 1] = work64[kt] + w64, work128[kt + 1] = work128[kt] + w128;
    }
}

/* 128-row query tiles run the GEMMs faster, but under a narrow band each
 * one spans 128 rows' worth of extra key columns, and short (varlen)
 * sequences pad to 128 rows.  Switch to 64 rows when that waste exceeds 4 %
 * of the 64-row tiling's work: band 512: ~10 %, band 1024: ~6 %, the bench's
 * 32 varlen sequences of 160..861: ~6 % (measured here: 64-row tiles were
 * as fast or faster on all three, bf16 varlen 0.76 -> 0.82 of the dense
 * rate); causal (~2 %) and band 2048 (~3 %) keep 128. */
static bool narrow_tiles_pay(const fa_problem *p, const int64_t *work64, const int64_t *work128, int64_t stride)
{
    if (p->fp8) return false; /* dS is quantised per 128 x 128 tile: the query tile must be 128 */
    int64_t w64 = 0, w128 = 0;
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t nk = (fa_kv_len(p, b) + FA_BK - 1) / FA_BK;
        w64 += work64[b * stride + nk], w128 += work128[b * stride + nk];
    }
    return w128 * 100 > w64 * 104;
}

/* Sizes are planned for the larger query tile, so the workspace size never
 * depends on the mask's contents. */
static bwd_plan make_plan(const fa_problem *p)
{
    bwd_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.t = fa_tiling_make(p, FA_BWD_BQ);
    pl.bq = FA_BWD_BQ; /* until fa_cpu_bwd has counted the work */
    pl.bk = p->fp8 ? FA_FP8_BLOCK : tile_cover(p, p->S2, FA_BK);
    const fa_tiling *t = &pl.t;
    pl.q_zero_copy = !t->bf16 && can_read_in_place(&p->q, p, p->D);
    pl.dy_zero_copy = !t->bf16 && can_read_in_place(&p->dy, p, p->Dv);

    size_t qs[QS_COUNT], th[TH_COUNT];
    qside_sizes(p, &pl, qs);
    thread_sizes(p, t, pl.bk, th);
    pl.qside_bytes = fa_pieces_bytes(qs, QS_COUNT);
    pl.part_bytes = ao_align_up((size_t)(t->S1p * p->D) * 4, 64);
    pl.thread_bytes = fa_pieces_bytes(th, TH_COUNT);

    /* Two items per unit of parallelism when there are too few kv heads,
     * within the pack budget and never more splits than kv tiles. */
    const int64_t par = p->deterministic ? FA_DETERMINISTIC_PARALLELISM : p->threads;
    const int64_t heads = p->B * p->N2;
    pl.nsplit = 1;
    if (heads < 2 * par) pl.nsplit = (2 * par + heads - 1) / heads;
    if (pl.nsplit > t->nk) pl.nsplit = t->nk > 0 ? t->nk : 1;
    while (pl.nsplit > 1 && (size_t)(p->G * pl.nsplit) * pl.part_bytes > FA_PACK_BUDGET_BYTES / 2) pl.nsplit--;

    const size_t per_kv_head = (size_t)p->G * (pl.qside_bytes + (size_t)pl.nsplit * pl.part_bytes);
    pl.wave = fa_wave_heads(heads, per_kv_head, p->threads);
    pl.work_bytes = ao_align_up((size_t)(p->B * (t->nk + 1)) * sizeof(int64_t), 64);
    pl.total = (size_t)pl.wave * per_kv_head + (size_t)p->threads * pl.thread_bytes + 2 * pl.work_bytes;
    return pl;
}

size_t fa_cpu_bwd_workspace(const fa_problem *p) { return make_plan(p).total; }

/* The q side of one query head: where each piece lives and its leading dim. */
typedef struct qside {
    const void *q, *qt, *dy, *dyt; /* qt, dyt: bf16 only */
    int64_t ldq, lddy;
    float *drow, *m, *l;
    uint8_t *attend; /* [nq]: every row of the query tile attends to some key */
} qside;

static qside qside_at(const fa_problem *p, const bwd_plan *pl, char *base, int64_t b, int64_t h)
{
    size_t sz[QS_COUNT];
    char *ptr[QS_COUNT];
    qside_sizes(p, pl, sz);
    fa_pieces_carve(base, sz, QS_COUNT, ptr);
    qside qs = {ptr[QS_Q], ptr[QS_QT], ptr[QS_DY], ptr[QS_DYT], pl->t.bf16 ? pl->t.Dp : p->D,
                pl->t.bf16 ? pl->t.Dvp : p->Dv, (float *)ptr[QS_DROW], (float *)ptr[QS_M], (float *)ptr[QS_L],
                (uint8_t *)ptr[QS_ATTEND]};
    if (pl->q_zero_copy) qs.q = fa_at(&p->q, b, h, 0, 0), qs.ldq = p->q.ss;
    if (pl->dy_zero_copy) qs.dy = fa_at(&p->dy, b, h, 0, 0), qs.lddy = p->dy.ss;
    return qs;
}

static void pack_qside(const fa_problem *p, const bwd_plan *pl, const qside *qs, int64_t b, int64_t h,
                       float *row_a, float *row_b)
{
    const fa_tiling *t = &pl->t;
    const int bq = pl->bq;
    const int64_t S1 = fa_q_len(p, b), S2 = fa_kv_len(p, b), first = fa_q_first(p, b), end = first + S1;
    const int64_t S1p = (S1 + bq - 1) / bq * bq; /* this batch's rows only (TND batches are shorter) */
    if (t->bf16) {
        for (int64_t q0 = 0; q0 < S1p; q0 += bq) {
            pack_cols(PACK_BF16, &p->q, b, h, first + q0, bq, end, p->D, (uint16_t *)qs->qt + q0 * p->D, bq);
            pack_cols(PACK_BF16, &p->dy, b, h, first + q0, bq, end, p->Dv, (uint16_t *)qs->dyt + q0 * p->Dv, bq);
        }
    }
    if (!pl->q_zero_copy) pack_rows(t->elem, &p->q, b, h, first, S1p, end, p->D, (void *)qs->q, t->Dp);
    if (!pl->dy_zero_copy) pack_rows(t->elem, &p->dy, b, h, first, S1p, end, p->Dv, (void *)qs->dy, t->Dvp);
    const fa_band band = fa_band_of(p, b, S1, S2);
    for (int64_t q0 = 0; q0 < S1p; q0 += bq)
        qs->attend[q0 / bq] = q0 >= S1 || fa_rows_attend(p, &band, b, h, q0, q0 + bq < S1 ? q0 + bq : S1, S2);
    /* Drow = rowsum(dy * o), DROW_ROWS rows at a time: each row still sums
     * in column order, the golden's, but the rows' sums are independent
     * chains that overlap (a row at a time waited on every add: ~0.5 us of
     * a 16 x 16 problem's 3). */
    for (int64_t i0 = 0; i0 < S1p; i0 += DROW_ROWS) {
        float dsdy[DROW_ROWS], d[DROW_ROWS];
        pack_rows(PACK_F32, &p->dy, b, h, first + i0, DROW_ROWS, end, p->Dv, row_a, p->Dv);
        pack_rows(PACK_F32, &p->o, b, h, first + i0, DROW_ROWS, end, p->Dv, row_b, p->Dv);
        for (int r = 0; r < DROW_ROWS; r++) /* FP8: dy de-quantised first, Drow = sum o (dyf dsdy) */
            dsdy[r] = p->fp8 && i0 + r < S1 ? (float)fa_fp8_dscale(&p->dsdy, b, h, i0 + r) : 1.0f, d[r] = 0.0f;
        for (int64_t e = 0; e < p->Dv; e++)
            for (int r = 0; r < DROW_ROWS; r++) d[r] += row_b[r * p->Dv + e] * (row_a[r * p->Dv + e] * dsdy[r]);
        for (int r = 0; r < DROW_ROWS; r++) {
            /* Padding rows, rows carrying the invalid-row sentinel, and TND
             * rows with every key masked (their P is forced to 0): m = +inf
             * makes P = exp(-inf) = 0, so they contribute nothing. */
            const int64_t i = i0 + r;
            const float m = i < S1 ? *fa_stat(p, &p->smax, b, h, i) : 0.0f;
            if (i >= S1 || m == (float)FA_INVALID_ROW_MAX || (p->varlen && m == (float)FA_MASK_FILL)) {
                qs->drow[i] = 0.0f, qs->m[i] = INFINITY, qs->l[i] = 1.0f;
                continue;
            }
            qs->drow[i] = d[r];
            qs->m[i] = m;
            qs->l[i] = *fa_stat(p, &p->ssum, b, h, i);
        }
    }
}

typedef struct bwd_gemms {
    tile_gemm qk, dov, dv, dk, dq;
} bwd_gemms;

static bwd_gemms make_gemms(const fa_problem *p, const bwd_plan *pl)
{
    const fa_tiling *t = &pl->t;
    const int D = (int)p->D, Dv = (int)p->Dv, bq = pl->bq, bk = pl->bk;
    if (t->bf16) {
        const tile_gemm_kind k = TILE_GEMM_BF16_NN_VNNI;
        return (bwd_gemms){
            tile_gemm_make(k, bq, bk, (int)t->Dp, (int)t->Dp, bk, bk, false),
            tile_gemm_make(k, bq, bk, (int)t->Dvp, (int)t->Dvp, bk, bk, false),
            tile_gemm_make(k, Dv, bk, bq, bq, bk, bk, !p->fp8), /* FP8: into a temporary, then scaled */
            tile_gemm_make(k, D, bk, bq, bq, bk, bk, !p->fp8),
            tile_gemm_make(k, bq, D, bk, bk, D, D, !p->fp8)};
    }
    const int ldq = pl->q_zero_copy ? (int)p->q.ss : D, lddy = pl->dy_zero_copy ? (int)p->dy.ss : Dv;
    return (bwd_gemms){
        tile_gemm_make(TILE_GEMM_F32_NN, bq, bk, D, ldq, bk, bk, false),
        tile_gemm_make(TILE_GEMM_F32_NN, bq, bk, Dv, lddy, bk, bk, false),
        tile_gemm_make(TILE_GEMM_F32_TN, bk, Dv, bq, bk, lddy, Dv, !p->fp8),
        tile_gemm_make(TILE_GEMM_F32_TN, bk, D, bq, bk, ldq, D, !p->fp8),
        tile_gemm_make(TILE_GEMM_F32_NN, bq, D, bk, bk, D, D, !p->fp8)};
}

typedef struct bwd_ctx {
    const fa_problem *p;
    const bwd_plan *pl;
    const bwd_gemms *gm;
    const fa_kernels *kern;
    fa_dropout drop;
    const int64_t *work; /* the chosen tiling's cumulative tile work, [B][nk + 1] */
} bwd_ctx;

/* Rows [k0, k0 + BK) of batch b's keys (global rows from `first`, ending at `end`). */
static void pack_kv_tile(const bwd_ctx *c, int64_t b, int64_t n2, int64_t k0, int64_t end, char **th)
{
    const fa_problem *p = c->p;
    const fa_tiling *t = &c->pl->t;
    const int bk = c->pl->bk;
    if (t->bf16) {
        pack_cols_vnni(&p->k, b, n2, k0, bk, end, p->D, t->Dp, (uint16_t *)th[TH_KT], bk);
        pack_cols_vnni(&p->v, b, n2, k0, bk, end, p->Dv, t->Dvp, (uint16_t *)th[TH_VT], bk);
        pack_rows_vnni(&p->k, b, n2, k0, bk, end, p->D, (uint16_t *)th[TH_KN], p->D);
    } else {
        pack_cols(PACK_F32, &p->k, b, n2, k0, bk, end, p->D, th[TH_KT], bk);
        pack_cols(PACK_F32, &p->v, b, n2, k0, bk, end, p->Dv, th[TH_VT], bk);
        pack_rows(PACK_F32, &p->k, b, n2, k0, bk, end, p->D, th[TH_KN], p->D);
    }
}

/* ---- FP8 (spec 6) ---- */

/* dS of one 128 x 128 tile quantised in place, dS = fp8(dS sds) with
 * sds = FP8_MAX / max|dS| (0 below FA_FP8_EPSILON); returns ids = 1 / sds
 * (0 when sds is 0).  Rows and columns past S are 0 and do not change the max. */
static float quantise_ds(const fa_kernels *kern, float *ds, int n, attnops_dtype fp8)
{
    const ao_f8_format f = ao_f8_format_of(fp8);
    const float mx = kern->abs_max(ds, n);
    const float sds = mx < (float)FA_FP8_EPSILON ? 0.0f : (float)fa_fp8_max(fp8) / mx;
    kern->fp8_round(ds, n, sds, &f);
    return sds == 0.0f ? 0.0f : 1.0f / sds;
}

/* One (query tile, kv tile) step of head (b, h); pos gives the tile. */
static void step(const bwd_ctx *c, const qside *qs, const fa_band *band, const fa_tile_pos *pos,
                 const fa_dropout_batch *drop_at, char **th, float *dq_part)
{
    const fa_problem *p = c->p;
    const bwd_gemms *gm = c->gm;
    const bool bf16 = c->pl->t.bf16;
    const int bq = c->pl->bq, bk = c->pl->bk;
    const int64_t q0 = pos->q0;
    const fa_tile_class cls = p->mask.rule.active
                                  ? fa_classify_tile(p, band, pos->b, pos->h, q0, q0 + pos->rows, pos->k0,
                                                     pos->k0 + pos->cols)
                                  : FA_TILE_FULL;
    /* An empty tile adds nothing unless one of its rows attends to nothing
     * and has uniform weights over every key (no sentinel behaviour). */
    if (cls == FA_TILE_EMPTY && (p->mask.skip_invalid_rows || qs->attend[q0 / bq])) return;
    float *S = (float *)th[TH_S], *dP = (float *)th[TH_DP];
    fa_scores_prefetch(p, pos);
    const char *q_i = (const char *)qs->q + (size_t)(q0 * qs->ldq) * (bf16 ? 2 : 4);
    const char *dy_i = (const char *)qs->dy + (size_t)(q0 * qs->lddy) * (bf16 ? 2 : 4);
    tile_gemm_run(&gm->qk, q_i, th[TH_KT], S);
    tile_gemm_run(&gm->dov, dy_i, th[TH_VT], dP);
    float dsq = 1.0f, dsk = 1.0f, dsdy = 1.0f; /* FP8 block de-quantisation factors */
    if (p->fp8) {
        const int64_t n2 = pos->h / p->G;
        dsq = (float)fa_fp8_dscale(&p->dsq, pos->b, pos->h, q0), dsk = (float)fa_fp8_dscale(&p->dsk, pos->b, n2, pos->k0);
        dsdy = (float)fa_fp8_dscale(&p->dsdy, pos->b, pos->h, q0);
        /* de-quantised per (row block, column block), in the golden's order (x a) b */
        c->kern->scale2(S, S, bq * bk, dsq, dsk, false);
        c->kern->scale2(dP, dP, bq * bk, dsdy, (float)fa_fp8_dscale(&p->dsv, pos->b, n2, pos->k0), false);
    }
    float scale = (float)p->scale;
    if (fa_scores_needed(p, cls)) {
        fa_scores_apply(p, band, pos, cls, S, bk, (float *)th[TH_BIAS], (uint8_t *)th[TH_MASKED],
                        p->softcap > 0.0 ? (float *)th[TH_DTANH] : NULL);
        scale = 1.0f;
    }
    uint8_t *keep = (uint8_t *)th[TH_KEEP];
    if (c->drop.active) { /* dS takes dP * keep / keep_prob; dV takes P * keep / keep_prob */
        fa_dropout_tile(&c->drop, drop_at, pos->h, q0, pos->rows, pos->k0, pos->cols, keep, bk);
        c->kern->apply_keep(dP, keep, pos->rows, pos->cols, bk, c->drop.scale);
    }
    c->kern->softmax_bwd(S, dP, bq, bk, pos->cols, scale, qs->m + q0, qs->l + q0, qs->drow + q0);
    if (p->softcap > 0.0) c->kern->softcap_grad(dP, (const float *)th[TH_DTANH], pos->rows, pos->cols, bk);
    if (c->drop.active) c->kern->apply_keep(S, keep, pos->rows, pos->cols, bk, c->drop.scale);
    float *dq_i = dq_part + q0 * p->D;
    float ids = 1.0f; /* FP8: Pq = fp8(P keep / kp); dSq = fp8(dS sds); every product scaled after its GEMM */
    if (p->fp8) {
        const ao_f8_format f = ao_f8_format_of(p->dtype);
        c->kern->fp8_round(S, bq * bk, 1.0f, &f);
        ids = quantise_ds(c->kern, dP, bq * bk, p->dtype);
    }
    if (p->fp8 && bf16) {
        const uint16_t *qt_i = (const uint16_t *)qs->qt + q0 * p->D, *dyt_i = (const uint16_t *)qs->dyt + q0 * p->Dv;
        float *tmp = (float *)th[TH_FP8];
        c->kern->to_bf16(S, bq, bk, (uint16_t *)th[TH_PV], bk, true); /* f8 values are exact in bf16 */
        c->kern->to_bf16(dP, bq, bk, (uint16_t *)th[TH_DSV], bk, true);
        c->kern->to_bf16(dP, bq, bk, (uint16_t *)th[TH_DSN], bk, false);
        tile_gemm_run(&gm->dv, dyt_i, th[TH_PV], tmp);
        c->kern->scale2((float *)th[TH_DV], tmp, (int)p->Dv * bk, dsdy, 1.0f, true);
        tile_gemm_run(&gm->dk, qt_i, th[TH_DSV], tmp);
        c->kern->scale2((float *)th[TH_DK], tmp, (int)p->D * bk, ids, dsq, true);
        tile_gemm_run(&gm->dq, th[TH_DSN], th[TH_KN], tmp);
        c->kern->scale2(dq_i, tmp, bq * (int)p->D, ids, dsk, true);
    } else if (bf16) {
        const uint16_t *qt_i = (const uint16_t *)qs->qt + q0 * p->D, *dyt_i = (const uint16_t *)qs->dyt + q0 * p->Dv;
        c->kern->to_bf16(S, bq, bk, (uint16_t *)th[TH_PV], bk, true);
        c->kern->to_bf16(dP, bq, bk, (uint16_t *)th[TH_DSV], bk, true);
        c->kern->to_bf16(dP, bq, bk, (uint16_t *)th[TH_DSN], bk, false);
        tile_gemm_run(&gm->dv, dyt_i, th[TH_PV], (float *)th[TH_DV]);
        tile_gemm_run(&gm->dk, qt_i, th[TH_DSV], (float *)th[TH_DK]);
        tile_gemm_run(&gm->dq, th[TH_DSN], th[TH_KN], dq_i);
    } else if (p->fp8) { /* fp32 packs: the products of the VNNI branch above, accumulated untransposed */
        float *tmp = (float *)th[TH_FP8];
        tile_gemm_run(&gm->dv, S, dy_i, tmp);
        c->kern->scale2((float *)th[TH_DV], tmp, (int)p->Dv * bk, dsdy, 1.0f, true);
        tile_gemm_run(&gm->dk, dP, q_i, tmp);
        c->kern->scale2((float *)th[TH_DK], tmp, (int)p->D * bk, ids, dsq, true);
        tile_gemm_run(&gm->dq, dP, th[TH_KN], tmp);
        c->kern->scale2(dq_i, tmp, bq * (int)p->D, ids, dsk, true);
    } else {
        if (c->pl->t.round_p) { /* bf16 inputs on fp32 GEMMs: P and dS as the bf16 GEMMs take them */
            c->kern->round_bf16(S, bq * bk);
            c->kern->round_bf16(dP, bq * bk);
        }
        tile_gemm_run(&gm->dv, S, dy_i, (float *)th[TH_DV]);
        tile_gemm_run(&gm->dk, dP, q_i, (float *)th[TH_DK]);
        tile_gemm_run(&gm->dq, dP, th[TH_KN], dq_i);
    }
}

/* Where a wave keeps the q sides and dq partials of its query heads. */
typedef struct wave_store {
    char *qsides, *parts;
} wave_store;

static qside wave_qside(const bwd_ctx *c, const wave_store *w, int64_t i, int64_t g, int64_t b, int64_t h)
{
    return qside_at(c->p, c->pl, w->qsides + ((size_t)i * (size_t)c->p->G + (size_t)g) * c->pl->qside_bytes, b, h);
}

static float *wave_part(const bwd_ctx *c, const wave_store *w, int64_t i, int64_t g, int64_t s)
{
    size_t k = ((size_t)i * (size_t)c->p->G + (size_t)g) * (size_t)c->pl->nsplit + (size_t)s;
    return (float *)(w->parts + k * c->pl->part_bytes);
}

/* Split s of a batch's kv tiles: [*kt0, *kt1), cut so that every split
 * gets about the same number of non-empty (query tile, kv tile) pairs
 * (causal and band masks leave some kv tiles little work); work is the
 * batch's cumulative count from count_tile_work. */
static void split_range(int64_t nsplit, const int64_t *work, int64_t nk, int64_t s, int64_t *kt0, int64_t *kt1)
{
    const int64_t total = work[nk];
    *kt0 = 0;
    if (s > 0) while (*kt0 < nk && work[*kt0] * nsplit < total * s) ++*kt0;
    *kt1 = *kt0;
    if (s + 1 < nsplit) while (*kt1 < nk && work[*kt1] * nsplit < total * (s + 1)) ++*kt1;
    else *kt1 = nk;
}

/* Wave slot i = kv head (b, n2), split s of nsplit. */
static void item(const bwd_ctx *c, const wave_store *w, int64_t i, int64_t b, int64_t n2, int64_t s, char **th)
{
    const fa_problem *p = c->p;
    const fa_tiling *t = &c->pl->t;
    const int bq = c->pl->bq, bk = c->pl->bk;
    const int64_t S1 = fa_q_len(p, b), S2 = fa_kv_len(p, b), first = fa_kv_first(p, b), end = first + S2;
    const fa_band band = fa_band_of(p, b, S1, S2);
    const fa_dropout_batch drop_at = c->drop.active ? fa_dropout_batch_of(p, &c->drop, b) : (fa_dropout_batch){0};
    int64_t kt0, kt1;
    split_range(c->pl->nsplit, c->work + b * (t->nk + 1), (S2 + bk - 1) / bk, s, &kt0, &kt1);
    const int64_t S1p = (S1 + bq - 1) / bq * bq;
    for (int64_t g = 0; g < p->G; g++) memset(wave_part(c, w, i, g, s), 0, (size_t)(S1p * p->D) * sizeof(float));
    for (int64_t kt = kt0; kt < kt1; kt++) {
        const int64_t k0 = kt * bk;
        const int valid = (int)(S2 - k0 < bk ? S2 - k0 : bk);
        pack_kv_tile(c, b, n2, first + k0, end, th);
        memset(th[TH_DK], 0, (size_t)(bk * p->D) * sizeof(float));
        memset(th[TH_DV], 0, (size_t)(bk * p->Dv) * sizeof(float));
        const int64_t nq = (S1 + bq - 1) / bq;
        for (int64_t g = 0; g < p->G; g++) {
            const qside qs = wave_qside(c, w, i, g, b, n2 * p->G + g);
            float *part = wave_part(c, w, i, g, s);
            for (int64_t qt = 0; qt < nq; qt++) {
                const int64_t q0 = qt * bq;
                const fa_tile_pos pos = {b, n2 * p->G + g, q0, k0, (int)(S1 - q0 < bq ? S1 - q0 : bq), valid, S1, S2};
                step(c, &qs, &band, &pos, &drop_at, th, part);
            }
        }
        if (t->bf16) { /* accumulated transposed: [D][BK], [Dv][BK] */
            unpack_cols((float *)th[TH_DK], bk, (float)p->scale, &p->dk, b, n2, first + k0, bk, end, p->D);
            unpack_cols((float *)th[TH_DV], bk, 1.0f, &p->dv, b, n2, first + k0, bk, end, p->Dv);
        } else {
            unpack_rows((float *)th[TH_DK], p->D, (float)p->scale, &p->dk, b, n2, first + k0, bk, end, p->D);
            unpack_rows((float *)th[TH_DV], p->Dv, 1.0f, &p->dv, b, n2, first + k0, bk, end, p->Dv);
        }
    }
}

/* The three passes of wave w0 (nw kv heads), each over its x: pack the q
 * sides, run the items, sum each query tile's dq partials in split order. */
static void wave_qside_pass(const bwd_ctx *c, const wave_store *w, int64_t w0, int64_t x, char **th)
{
    const fa_problem *p = c->p;
    const int64_t i = x / p->G, g = x % p->G, b = (w0 + i) / p->N2, h = ((w0 + i) % p->N2) * p->G + g;
    const qside qs = wave_qside(c, w, i, g, b, h);
    pack_qside(p, c->pl, &qs, b, h, (float *)th[TH_S], (float *)th[TH_DP]);
}

static void wave_item_pass(const bwd_ctx *c, const wave_store *w, int64_t w0, int64_t x, char **th)
{
    const int64_t i = x / c->pl->nsplit, s = x % c->pl->nsplit;
    item(c, w, i, (w0 + i) / c->p->N2, (w0 + i) % c->p->N2, s, th);
}

/* dq = scale * (sum of the split partials, in split order). */
static void wave_dq_pass(const bwd_ctx *c, const wave_store *w, int64_t w0, int64_t x)
{
    const fa_problem *p = c->p;
    const int64_t bq = c->pl->bq, nq = (p->S1 + bq - 1) / bq, G = p->G;
    const int64_t i = x / (G * nq), g = (x / nq) % G, q0 = (x % nq) * bq;
    const int64_t b = (w0 + i) / p->N2, h = ((w0 + i) % p->N2) * G + g;
    if (q0 >= fa_q_len(p, b)) return; /* past a short TND batch */
    float *acc = wave_part(c, w, i, g, 0) + q0 * p->D;
    for (int64_t s = 1; s < c->pl->nsplit; s++) {
        const float *add = wave_part(c, w, i, g, s) + q0 * p->D;
        for (int64_t e = 0; e < bq * p->D; e++) acc[e] += add[e];
    }
    const int64_t qf = fa_q_first(p, b);
    unpack_rows(acc, p->D, (float)p->scale, &p->dq, b, h, qf + q0, bq, qf + fa_q_len(p, b), p->D);
}

void fa_cpu_bwd(const fa_problem *p, void *ws)
{
    bwd_plan pl = make_plan(p);
    const int64_t stride = pl.t.nk + 1;
    int64_t *work64 = (int64_t *)((char *)ws + pl.total - 2 * pl.work_bytes);
    int64_t *work128 = (int64_t *)((char *)work64 + pl.work_bytes);
    /* A parallel region of one thread, or with one piece of work, runs here
     * instead: each still costs ~0.4 us a barrier (libgomp wakes the barrier's
     * futex with a system call), ~2 us of a tiny call.  The team size changes no bit. */
    if (p->team > 1 && p->B > 1) {
#pragma omp parallel for num_threads(p->team) schedule(dynamic)
        for (int64_t b = 0; b < p->B; b++) count_tile_work(p, b, pl.bk, work64 + b * stride, work128 + b * stride);
    } else {
        for (int64_t b = 0; b < p->B; b++) count_tile_work(p, b, pl.bk, work64 + b * stride, work128 + b * stride);
    }
    /* FP8 quantises dS per 128 x 128 tile; otherwise the ISA's choice, or 64
     * rows where a narrow band or short sequences make 128 waste work */
    const bool narrow = !p->fp8 && (cpu_tuning_selected()->fa_bwd_query_rows == FA_BWD_BQ_NARROW ||
                                    narrow_tiles_pay(p, work64, work128, stride));
    pl.bq = tile_cover(p, p->S1, narrow ? FA_BWD_BQ_NARROW : FA_BWD_BQ);
    const bwd_gemms gm = make_gemms(p, &pl);
    bwd_ctx c = {p, &pl, &gm, &cpu_kernels()->fa, fa_dropout_for(p), narrow ? work64 : work128};
    c.drop.stream = c.kern->philox_bytes, c.drop.blocks = c.kern->philox_blocks;
    const fa_tiling *t = &pl.t;
    const int64_t heads = p->B * p->N2, G = p->G, nq = (p->S1 + pl.bq - 1) / pl.bq; /* the longest batch's */
    const wave_store w = {ws, (char *)ws + (size_t)pl.wave * (size_t)G * pl.qside_bytes};
    char *threads_base = w.parts + (size_t)pl.wave * (size_t)G * (size_t)pl.nsplit * pl.part_bytes;
    size_t th_sz[TH_COUNT];
    thread_sizes(p, t, pl.bk, th_sz);

    /* no more threads than the first (the widest) wave's widest pass has pieces */
    const int64_t first = heads < pl.wave ? heads : pl.wave;
    const int64_t widest = first * (pl.nsplit > G * nq ? pl.nsplit : G * nq);
    const int team = widest < p->team ? (int)widest : p->team;
    if (team <= 1) {
        char *th[TH_COUNT];
        fa_pieces_carve(threads_base, th_sz, TH_COUNT, th);
        for (int64_t w0 = 0; w0 < heads; w0 += pl.wave) {
            const int64_t nw = heads - w0 < pl.wave ? heads - w0 : pl.wave;
            for (int64_t x = 0; x < nw * G; x++) wave_qside_pass(&c, &w, w0, x, th);
            for (int64_t x = 0; x < nw * pl.nsplit; x++) wave_item_pass(&c, &w, w0, x, th);
            for (int64_t x = 0; x < nw * G * nq; x++) wave_dq_pass(&c, &w, w0, x);
        }
        return;
    }
#pragma omp parallel num_threads(team)
    {
        char *th[TH_COUNT];
        fa_pieces_carve(threads_base + (size_t)omp_get_thread_num() * pl.thread_bytes, th_sz, TH_COUNT, th);
        for (int64_t w0 = 0; w0 < heads; w0 += pl.wave) {
            const int64_t nw = heads - w0 < pl.wave ? heads - w0 : pl.wave;
#pragma omp for schedule(dynamic)
            for (int64_t x = 0; x < nw * G; x++) wave_qside_pass(&c, &w, w0, x, th);
#pragma omp for schedule(dynamic)
            for (int64_t x = 0; x < nw * pl.nsplit; x++) wave_item_pass(&c, &w, w0, x, th);
#pragma omp for schedule(dynamic, 4)
            for (int64_t x = 0; x < nw * G * nq; x++) wave_dq_pass(&c, &w, w0, x);
        }
    }
}
