/* KeyPool fast kernel.
 *
 * The projections are the op's cost (4 T H D flops against O(T D) for the
 * rest), so they run as tile GEMMs over all tokens of the call:
 *   C[m][t] = sum_h W[m][h] X[t][h]       W = wk or gate_weight [D][H]
 * with W as the row-major operand (read in place when it is dense bf16 with
 * an even H, else packed once) and a tile of NT tokens as the packed
 * operand X^T [H][NT] (bf16 VNNI-2; f32 for f16 activations, whose products
 * are exact in f32 as bf16's are).  Shapes per GEMM: M = D, N = NT, K = H.
 * Each C is rounded to the activation dtype into the workspace rows
 * key/gate [T][D], exactly the reference's rounding point; only the f32
 * accumulation order differs from the reference's exact sum, so a
 * projection can land one ulp of the dtype away from the reference's when
 * its sum lies that close to a rounding midpoint.  LayerNorm and the group
 * pooling then run the reference's own per-token and per-channel
 * functions (double between the rounding points): given the same
 * projections the fast kernel's outputs and cache are the reference's bit
 * for bit.  Parallel: token tiles (split over D rows when there are fewer
 * tiles than threads, as in decode), then tokens, then groups. */
#include <omp.h>

#include "cpu/kp_cpu.h"
#include "cpu/pack.h"
#include "cpu/tile_gemm.h"
#include "keypool/kp_problem.h"
#include "ref/kp_ref.h"

enum { NT = 64, M_CHUNK = 64 };

typedef struct kp_plan {
    bool bf16;         /* VNNI bf16 GEMMs; else f32 (f16 activations) */
    bool pack_w;       /* W is copied into the workspace */
    int64_t Hp;        /* K, padded to even for VNNI */
    int64_t tiles;     /* token tiles */
    int64_t split;     /* work items per tile (M chunks per weight when tiles are few) */
    size_t rows_bytes, row0_bytes, w_bytes, xt_bytes, c_bytes;
} kp_plan;

static int64_t tile_batches(const kp_problem *p) { return p->th ? 1 : p->B; }
static int64_t tile_seq(const kp_problem *p) { return p->th ? p->T : p->S; }

static kp_plan plan_of(const kp_problem *p)
{
    kp_plan q = {0};
    q.bf16 = p->dtype == ATTNOPS_DTYPE_BF16;
    q.Hp = q.bf16 ? (p->H + 1) / 2 * 2 : p->H;
    q.pack_w = !q.bf16 || (p->H & 1) || p->wk.sc != 1 || p->gate.sc != 1 || p->wk.sr < p->H || p->gate.sr < p->H;
    const int64_t per_batch = (tile_seq(p) + NT - 1) / NT;
    q.tiles = tile_batches(p) * per_batch;
    const int64_t chunks = 2 * ((p->D + M_CHUNK - 1) / M_CHUNK);
    q.split = q.tiles >= p->threads ? 1 : chunks;
    const size_t es = q.bf16 ? 2 : 4;
    q.rows_bytes = ao_align_up((size_t)(p->T * p->D) * sizeof(float), 64);
    q.row0_bytes = ao_align_up((size_t)(p->B + 1) * sizeof(int64_t), 64);
    q.w_bytes = q.pack_w ? ao_align_up((size_t)(2 * p->D * q.Hp) * es, 64) : 0;
    q.xt_bytes = ao_align_up((size_t)(q.Hp * NT) * es, 64);
    q.c_bytes = ao_align_up((size_t)(p->D * NT) * sizeof(float), 64);
    return q;
}

size_t kp_cpu_workspace(const kp_problem *p)
{
    const kp_plan q = plan_of(p);
    return 2 * q.rows_bytes + 2 * q.row0_bytes + q.w_bytes + (size_t)p->threads * (q.xt_bytes + q.c_bytes);
}

/* W as an [s][d] = [m][h] view for the packers. */
static fa_view weight_view(const kp_matrix *w)
{
    return (fa_view){w->data, w->dtype, w->esize, 0, 0, w->sr, w->sc};
}

/* Token rows as [b][s][h] views: BSH per batch, TH one sequence of T. */
static fa_view hidden_view(const kp_problem *p)
{
    return (fa_view){p->hidden.data, p->dtype, p->hidden.esize, p->hidden_sb, 0, p->hidden.sr, p->hidden.sc};
}

/* One work item: token tile `tile`, weight rows [m0, m1) of the 2D
 * stacked rows (wk rows, then gate rows). */
static void project(const kp_problem *p, const kp_plan *q, int64_t tile, int64_t m0, int64_t m1, const void *wpack,
                    void *xt, float *c, float *key_ws, float *gate_ws)
{
    const int64_t per_batch = (tile_seq(p) + NT - 1) / NT, b = tile / per_batch, s0 = tile % per_batch * NT;
    const int64_t S = tile_seq(p), rows = S - s0 < NT ? S - s0 : NT;
    const fa_view x = hidden_view(p);
    if (q->bf16) pack_cols_vnni(&x, b, 0, s0, NT, S, p->H, q->Hp, xt, NT);
    else pack_cols(PACK_F32, &x, b, 0, s0, NT, S, p->H, xt, NT);
    const size_t es = q->bf16 ? 2 : 4;
    for (int64_t m = m0; m < m1;) {
        const bool is_gate = m >= p->D;
        const int64_t row = is_gate ? m - p->D : m, end = is_gate ? m1 : (m1 < p->D ? m1 : p->D);
        const int64_t M = end - m;
        const kp_matrix *w = is_gate ? &p->gate : &p->wk;
        const char *A = q->pack_w ? (const char *)wpack + (size_t)((is_gate ? p->D : 0) + row) * (size_t)q->Hp * es
                                  : kp_at(w, row, 0);
        const int64_t lda = q->pack_w ? q->Hp : w->sr;
        const tile_gemm g = tile_gemm_make(q->bf16 ? TILE_GEMM_BF16_NN_VNNI : TILE_GEMM_F32_NN, (int)M, NT,
                                           (int)q->Hp, (int)lda, NT, NT, false);
        tile_gemm_run(&g, A, xt, c);
        float *dst = is_gate ? gate_ws : key_ws;
        const int64_t t0 = (p->th ? 0 : b * p->S) + s0;
        for (int64_t i = 0; i < M; i++)
            for (int64_t t = 0; t < rows; t++)
                dst[(t0 + t) * p->D + row + i] = kp_round_to_dtype(p->dtype, c[i * NT + t]);
        m = end;
    }
}

void kp_cpu_run(const kp_problem *p, void *workspace)
{
    const kp_plan q = plan_of(p);
    char *ws = workspace;
    float *key_ws = (float *)ws, *gate_ws = (float *)(ws + q.rows_bytes);
    int64_t *row0 = (int64_t *)(ws + 2 * q.rows_bytes), *groups = (int64_t *)(ws + 2 * q.rows_bytes + q.row0_bytes);
    char *wpack = ws + 2 * q.rows_bytes + 2 * q.row0_bytes, *scratch = wpack + q.w_bytes;
    const int64_t D = p->D, items = q.tiles * q.split, span = (2 * D + q.split - 1) / q.split;

#pragma omp parallel num_threads(p->threads)
    {
        const int tid = omp_get_thread_num();
        void *xt = scratch + (size_t)tid * (q.xt_bytes + q.c_bytes);
        float *c = (float *)((char *)xt + q.xt_bytes);
        if (q.pack_w) {
            const fa_view wk = weight_view(&p->wk), gate = weight_view(&p->gate);
            const size_t es = q.bf16 ? 2 : 4;
#pragma omp for schedule(static)
            for (int64_t m = 0; m < 2 * D; m++)
                pack_rows(q.bf16 ? PACK_BF16 : PACK_F32, m < D ? &wk : &gate, 0, 0, m % D, 1, D, p->H,
                          wpack + (size_t)m * (size_t)q.Hp * es, q.Hp);
        }
#pragma omp for schedule(dynamic)
        for (int64_t item = 0; item < items; item++) {
            const int64_t m0 = item % q.split * span, m1 = m0 + span < 2 * D ? m0 + span : 2 * D;
            if (m0 < m1) project(p, &q, item / q.split, m0, m1, wpack, xt, c, key_ws, gate_ws);
        }
        if (p->layer_norm) {
#pragma omp for schedule(static)
            for (int64_t t = 0; t < p->T; t++) kp_ref_layer_norm(p, key_ws + t * D);
        }
#pragma omp single
        {
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
            int64_t stride[128];
            for (int64_t r = 0; r < p->R; r++)
                stride[r] = kp_group_row(p, b, (first + g) * p->R + r, key_ws, gate_ws, &key[r], &gate[r]);
            char *out = kp_out_row(p, b, row0[b], g);
            for (int64_t d = 0; d < D; d++)
                ao_store_f64(out + d * p->out.sc * p->out.esize, p->dtype,
                             kp_ref_pool_channel(p, d, key, gate, stride));
        }
    }
}
