/* KeyPool fast kernel.
 *
 * The projections are the op's cost (4 T H D flops against O(T D) for the
 * rest), so they run as tile GEMMs over all tokens of the call,
 *   key/gate[t][m] = sum_h X[t][h] W[m][h]     X [T][H], W = wk | gate [D][H],
 * packing whichever operand is smaller (plan_of): with more tokens than 2D
 * (prefill) W^T is packed once, [H][2D] (bf16 VNNI-2, or f32 for f16
 * activations, whose products are as exact in f32, and for bf16 ones where
 * libxsmm has no bf16 kernel), and tiles of NT token
 * rows are read in place: GEMMs M = NT, N = 2D, K = H; with few tokens
 * (decode) each tile of tokens is packed as X^T [H][tokens] and the W rows
 * are read in place: M = W rows, N = tokens, K = H.  K runs in chunks of KC.
 *
 * Numerics.  Each projection is rounded to the activation dtype at the
 * reference's rounding point; only the f32 accumulation order differs from
 * the reference's exact sum, so a projection lands one ulp away when its
 * sum lies that close to a midpoint.  LayerNorm is the reference's own
 * per-token function (double).  Pooling is the golden's f32 softmax,
 * vectorised (tile kernel group_pool), whose weights can likewise round
 * differently from the reference's exact ones near a midpoint.  Measured
 * over the KeyPool tests: 99.9 % of the outputs bit-identical to the
 * reference (tests/test_keypool.c asserts >= 99 %).
 *
 * Parallel: token tiles (split over W rows when there are fewer tiles than
 * threads, as in decode), then tokens (LayerNorm), then groups. */
#include <omp.h>

#include "cpu/kernels.h"
#include "cpu/kp_cpu.h"
#include "cpu/pack.h"
#include "cpu/tile_gemm.h"
#include "keypool/kp_problem.h"

enum { NT = 64, M_CHUNK = 64, KC = 256, W_ROWS = 16 };

typedef struct kp_plan {
    bool bf16;            /* VNNI bf16 GEMMs; else f32 (f16 activations) */
    bool weights_packed;  /* many tokens: W^T packed once, token rows the row-major operand */
    bool copy_operand;    /* the row-major operand (W or token rows) cannot be read in place */
    int64_t Hp;           /* K, padded to even for VNNI */
    int64_t tiles;        /* token tiles of NT */
    int64_t split;        /* work items per tile: W row ranges when tiles are fewer than threads */
    size_t rows_bytes, row0_bytes, w_bytes, ape_bytes, xt_tile_bytes, x_bytes, c_bytes, pool_bytes;
} kp_plan;

/* Tokens are tiled as one sequence of T rows when consecutive batches'
 * rows are evenly spaced (TH, or BSH with batches back to back), so that
 * decode's one token per batch still fills a tile; else per batch. */
static bool flat_tokens(const kp_problem *p) { return p->th || p->B <= 1 || p->hidden_sb == p->S * p->hidden.sr; }
static int64_t tile_batches(const kp_problem *p) { return flat_tokens(p) ? 1 : p->B; }
static int64_t tile_seq(const kp_problem *p) { return flat_tokens(p) ? p->T : p->S; }

static bool dense_rows(const kp_matrix *m, int64_t H) { return m->sc == 1 && m->sr >= H; }

/* Pack whichever operand is smaller: the weights (2D x H) when the call has
 * more tokens than 2D (prefill), else each tile of tokens (decode). */
static kp_plan plan_of(const kp_problem *p)
{
    kp_plan q = {0};
    /* bf16 GEMMs where libxsmm has them; else bf16 widens to f32 as f16 does (exact products either way) */
    q.bf16 = p->dtype == ATTNOPS_DTYPE_BF16 && tile_gemm_library_available(TILE_GEMM_BF16_NN_VNNI);
    q.Hp = q.bf16 ? (p->H + 1) / 2 * 2 : p->H;
    q.weights_packed = p->T > 2 * p->D;
    const bool in_place_ok = q.bf16 && !(p->H & 1);
    q.copy_operand = !in_place_ok || (q.weights_packed ? !dense_rows(&p->hidden, p->H)
                                                       : !dense_rows(&p->wk, p->H) || !dense_rows(&p->gate, p->H));
    q.tiles = tile_batches(p) * ((tile_seq(p) + NT - 1) / NT);
    q.split = q.weights_packed || q.tiles >= p->threads ? 1 : 2 * ((p->D + M_CHUNK - 1) / M_CHUNK);
    const size_t es = q.bf16 ? 2 : 4;
    q.rows_bytes = ao_align_up((size_t)(p->T * p->D) * sizeof(float), 64);
    q.row0_bytes = ao_align_up((size_t)(p->B + 1) * sizeof(int64_t), 64);
    q.w_bytes = q.weights_packed || q.copy_operand ? ao_align_up((size_t)(2 * p->D * q.Hp) * es, 64) : 0;
    /* token tiles: packed once for every W row range (tokens-packed plan), or
     * one tile per thread when the rows cannot be read in place */
    q.xt_tile_bytes = q.weights_packed ? 0 : ao_align_up((size_t)(q.Hp * NT) * es, 64);
    q.x_bytes = q.weights_packed && q.copy_operand ? ao_align_up((size_t)(q.Hp * NT) * es, 64) : 0;
    q.c_bytes = ao_align_up((size_t)(2 * p->D * NT) * sizeof(float), 64);
    q.ape_bytes = ao_align_up((size_t)(p->R * p->D) * sizeof(float), 64);
    /* a group's pooled row, and its cache rows when their columns are strided */
    q.pool_bytes = ao_align_up((size_t)(p->D + (p->cache_sc != 1 ? p->R * 2 * p->D : 0)) * sizeof(float), 64);
    return q;
}

size_t kp_cpu_workspace(const kp_problem *p)
{
    const kp_plan q = plan_of(p);
    return 2 * q.rows_bytes + 2 * q.row0_bytes + q.w_bytes + q.ape_bytes + (size_t)q.tiles * q.xt_tile_bytes +
           (size_t)p->threads * (q.x_bytes + q.c_bytes + q.pool_bytes);
}

/* W as an [s][d] = [m][h] view for the packers. */
static fa_view weight_view(const kp_matrix *w)
{
    return (fa_view){w->data, w->dtype, w->esize, 0, 0, w->sr, w->sc};
}

/* Token rows as [b][s][h] views (see flat_tokens). */
static fa_view hidden_view(const kp_problem *p)
{
    return (fa_view){p->hidden.data, p->dtype, p->hidden.esize, flat_tokens(p) ? 0 : p->hidden_sb, 0, p->hidden.sr,
                     p->hidden.sc};
}

/* The dtype rounding of an f32 projection (the same value the reference
 * rounds, when the sums agree). */
static inline float round_to_dtype(attnops_dtype dt, float v)
{
    return dt == ATTNOPS_DTYPE_BF16 ? ao_bf16_to_f32(ao_f32_to_bf16(v)) : attnops_f16_to_f32(attnops_f32_to_f16(v));
}

/* C[M][N] = A[M][K] . B[K][N]: A row-major (lda), B the packed operand
 * (bf16 VNNI-2 [K/2][ldb][2] or f32 [K][ldb]); K in chunks of KC so both
 * chunks stay in L1/L2 (one K = 4096 pass would stream B from L2 for every
 * few rows of A). */
static void gemm_chunked_k(bool bf16, int64_t M, int64_t N, int64_t K, const char *A, int64_t lda, const char *B,
                           int64_t ldb, float *C, int64_t ldc)
{
    const size_t es = bf16 ? 2 : 4;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t kc = K - k0 < KC ? K - k0 : KC;
        const tile_gemm g = tile_gemm_make(bf16 ? TILE_GEMM_BF16_NN_VNNI : TILE_GEMM_F32_NN, (int)M, (int)N, (int)kc,
                                           (int)lda, (int)ldb, (int)ldc, k0 > 0);
        tile_gemm_run(&g, A + (size_t)k0 * es, B + (size_t)(k0 * ldb) * es, C);
    }
}

/* Weights W = [wk; gate] as the packed operand W^T [Hp][2D] (rows
 * [r0, r0 + rows) of one weight per call), for the weights_packed plan. */
static void pack_weights_t(const kp_problem *p, const kp_plan *q, bool gate, int64_t r0, int64_t rows, char *dst)
{
    const fa_view w = weight_view(gate ? &p->gate : &p->wk);
    const int64_t col = (gate ? p->D : 0) + r0;
    if (q->bf16) pack_cols_vnni(&w, 0, 0, r0, rows, p->D, p->H, q->Hp, (uint16_t *)dst + 2 * col, 2 * p->D);
    else pack_cols(PACK_F32, &w, 0, 0, r0, rows, p->D, p->H, (float *)dst + col, 2 * p->D);
}

/* Weights as the row-major operand [2D][Hp], for the token-packed plan. */
static void pack_weights(const kp_problem *p, const kp_plan *q, bool gate, int64_t r0, int64_t rows, char *dst)
{
    const fa_view w = weight_view(gate ? &p->gate : &p->wk);
    const size_t es = q->bf16 ? 2 : 4;
    pack_rows(q->bf16 ? PACK_BF16 : PACK_F32, &w, 0, 0, r0, rows, p->D, p->H,
              dst + (size_t)((gate ? p->D : 0) + r0) * (size_t)q->Hp * es, q->Hp);
}

static void tile_of(const kp_problem *p, int64_t tile, int64_t *b, int64_t *s0, int64_t *rows, int64_t *t0)
{
    const int64_t per_batch = (tile_seq(p) + NT - 1) / NT, S = tile_seq(p);
    *b = tile / per_batch, *s0 = tile % per_batch * NT;
    *rows = S - *s0 < NT ? S - *s0 : NT;
    *t0 = (flat_tokens(p) ? 0 : *b * p->S) + *s0;
}

/* Weights packed: C[t][0..2D) = X[t] . W^T for one tile of tokens. */
static void project_rows(const kp_problem *p, const kp_plan *q, int64_t tile, const char *wt, char *xbuf, float *c,
                         float *key_ws, float *gate_ws)
{
    int64_t b, s0, rows, t0;
    tile_of(p, tile, &b, &s0, &rows, &t0);
    const fa_view x = hidden_view(p);
    const char *A = xbuf;
    int64_t lda = q->Hp;
    if (q->copy_operand) pack_rows(q->bf16 ? PACK_BF16 : PACK_F32, &x, b, 0, s0, rows, tile_seq(p), p->H, xbuf, q->Hp);
    else A = fa_at(&x, b, 0, s0, 0), lda = p->hidden.sr;
    const int64_t D = p->D;
    gemm_chunked_k(q->bf16, rows, 2 * D, q->Hp, A, lda, wt, 2 * D, c, 2 * D);
    for (int64_t t = 0; t < rows; t++)
        for (int64_t d = 0; d < D; d++) {
            key_ws[(t0 + t) * D + d] = round_to_dtype(p->dtype, c[t * 2 * D + d]);
            gate_ws[(t0 + t) * D + d] = round_to_dtype(p->dtype, c[t * 2 * D + D + d]);
        }
}

/* Tokens packed: one tile as X^T [Hp][rows] (N = the tile's tokens, no
 * padding: decode's 32 tokens are not 64). */
static void pack_tokens_t(const kp_problem *p, const kp_plan *q, int64_t tile, char *xt)
{
    int64_t b, s0, rows, t0;
    tile_of(p, tile, &b, &s0, &rows, &t0);
    const fa_view x = hidden_view(p);
    if (q->bf16) pack_cols_vnni(&x, b, 0, s0, rows, tile_seq(p), p->H, q->Hp, (uint16_t *)xt, rows);
    else pack_cols(PACK_F32, &x, b, 0, s0, rows, tile_seq(p), p->H, xt, rows);
}

/* Tokens packed: C[m][t] = W[m] . X[t] for W rows [m0, m1) of [wk; gate]
 * (in place or packed in wrows) and one packed tile of tokens. */
static void project_cols(const kp_problem *p, const kp_plan *q, int64_t tile, int64_t m0, int64_t m1,
                         const char *wrows, const char *xt, float *c, float *key_ws, float *gate_ws)
{
    int64_t b, s0, rows, t0;
    tile_of(p, tile, &b, &s0, &rows, &t0);
    const size_t es = q->bf16 ? 2 : 4;
    for (int64_t m = m0; m < m1;) {
        const bool is_gate = m >= p->D;
        const int64_t row = is_gate ? m - p->D : m, end = is_gate ? m1 : (m1 < p->D ? m1 : p->D), M = end - m;
        const kp_matrix *w = is_gate ? &p->gate : &p->wk;
        const char *A = q->copy_operand ? wrows + (size_t)m * (size_t)q->Hp * es : kp_at(w, row, 0);
        gemm_chunked_k(q->bf16, M, rows, q->Hp, A, q->copy_operand ? q->Hp : w->sr, xt, rows, c, rows);
        float *dst = is_gate ? gate_ws : key_ws;
        for (int64_t i = 0; i < M; i++)
            for (int64_t t = 0; t < rows; t++)
                dst[(t0 + t) * p->D + row + i] = round_to_dtype(p->dtype, c[i * rows + t]);
        m = end;
    }
}

void kp_cpu_run(const kp_problem *p, void *workspace)
{
    const kp_plan q = plan_of(p);
    char *ws = workspace;
    float *key_ws = (float *)ws, *gate_ws = (float *)(ws + q.rows_bytes);
    int64_t *row0 = (int64_t *)(ws + 2 * q.rows_bytes), *groups = (int64_t *)(ws + 2 * q.rows_bytes + q.row0_bytes);
    char *wpack = ws + 2 * q.rows_bytes + 2 * q.row0_bytes;
    float *ape = (float *)(wpack + q.w_bytes);
    char *xt_tiles = (char *)ape + q.ape_bytes, *scratch = xt_tiles + (size_t)q.tiles * q.xt_tile_bytes;
    const kp_kernels *kern = &cpu_kernels()->kp;
    const int64_t D = p->D, items = q.tiles * q.split, span = (2 * D + q.split - 1) / q.split;
    const int64_t w_pieces = 2 * ((D + W_ROWS - 1) / W_ROWS);

#pragma omp parallel num_threads(p->team)
    {
        const int tid = omp_get_thread_num();
        char *xbuf = scratch + (size_t)tid * (q.x_bytes + q.c_bytes + q.pool_bytes);
        float *c = (float *)(xbuf + q.x_bytes), *pooled = (float *)((char *)c + q.c_bytes), *dense_rows = pooled + D;
        if (q.w_bytes) {
#pragma omp for schedule(static)
            for (int64_t piece = 0; piece < w_pieces; piece++) {
                const bool gate = piece >= w_pieces / 2;
                const int64_t r0 = piece % (w_pieces / 2) * W_ROWS, rows = D - r0 < W_ROWS ? D - r0 : W_ROWS;
                if (q.weights_packed) pack_weights_t(p, &q, gate, r0, rows, wpack);
                else pack_weights(p, &q, gate, r0, rows, wpack);
            }
        }
        if (!q.weights_packed) {
#pragma omp for schedule(static)
            for (int64_t tile = 0; tile < q.tiles; tile++)
                pack_tokens_t(p, &q, tile, xt_tiles + tile * q.xt_tile_bytes);
        }
#pragma omp for schedule(dynamic)
        for (int64_t item = 0; item < items; item++) {
            if (q.weights_packed) {
                project_rows(p, &q, item, wpack, xbuf, c, key_ws, gate_ws);
                continue;
            }
            const int64_t m0 = item % q.split * span, m1 = m0 + span < 2 * D ? m0 + span : 2 * D;
            const int64_t tile = item / q.split;
            const char *xt = xt_tiles + tile * q.xt_tile_bytes;
            if (m0 < m1) project_cols(p, &q, tile, m0, m1, wpack, xt, c, key_ws, gate_ws);
        }
        if (p->layer_norm) {
#pragma omp for schedule(static)
            for (int64_t t = 0; t < p->T; t++) kp_layer_norm(p, key_ws + t * D);
        }
#pragma omp single
        {
            for (int64_t r = 0; r < p->R; r++)
                for (int64_t d = 0; d < D; d++) ape[r * D + d] = *(const float *)kp_at(&p->ape, r, d);
            kp_write_tails(p, key_ws, gate_ws);
            kp_zero_unused_rows(p);
            kp_out_row0(p, row0);
            groups[0] = 0;
            for (int64_t b = 0; b < p->B; b++) groups[b + 1] = groups[b] + kp_valid_rows(p, b);
        }
        /* Groups of all batches in one list (decode: one group per batch). */
#pragma omp for schedule(dynamic, 4)
        for (int64_t idx = 0; idx < groups[p->B]; idx++) {
            int64_t b = 0;
            while (groups[b + 1] <= idx) b++;
            const int64_t g = idx - groups[b], first = kp_first_group(p, b);
            const float *key[128], *gate[128];
            for (int64_t r = 0; r < p->R; r++)
                if (kp_group_row(p, b, (first + g) * p->R + r, key_ws, gate_ws, &key[r], &gate[r]) != 1) {
                    float *dense = dense_rows + r * 2 * D; /* a cache row with strided columns */
                    for (int64_t d = 0; d < D; d++)
                        dense[d] = key[r][d * p->cache_sc], dense[D + d] = gate[r][d * p->cache_sc];
                    key[r] = dense, gate[r] = dense + D;
                }
            kern->group_pool(key, gate, ape, (int)p->R, (int)D, p->dtype == ATTNOPS_DTYPE_BF16, pooled);
            char *out = kp_out_row(p, b, row0[b], g);
            for (int64_t d = 0; d < D; d++) ao_store_f32(out + d * p->out.sc * p->out.esize, p->dtype, pooled[d]);
        }
    }
}
