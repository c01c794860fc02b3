/* The FusedInferAttentionScore fast kernel: split-KV ("flash-decoding").
 *
 * Work items are (batch b, kv head n2, query block, key split).  A query
 * block holds up to FIA_MQ rows r = i G + g (query row i of the batch, query
 * head h = n2 G + g), so the G heads of a kv group and a few query rows share
 * each key and value row: a decode step (one row) reads the cache once per
 * kv group.  A key split is FIA_SPLIT keys (or all of them when the query
 * blocks alone give enough items), walked in tiles of FIA_KC keys read in
 * place from the contiguous or paged cache and widened to f32 in a small
 * per-thread buffer:
 *
 *   Qt [Dk][Mq]  (Dk = D + Dr: the rope columns after D)     per item
 *   Kc [KC][Dk], S^T [KC][Mq] = Kc . Qt,  S [Mq][KC] = scale S^T + pse, masked -FLT_MAX
 *   online softmax over the tiles (m, l, alpha), O [Mq][Dv] = alpha O + P . Vc [KC][Dv]
 *
 * Each item leaves its rows' (m, l, O) in the workspace; a second pass
 * merges the splits of every row in split order (O = sum_s e^(m_s - m) O_s /
 * sum_s e^(m_s - m) l_s, lse = m + ln l), in f32, and rounds the output once.
 * The split size depends on the problem only, never on the thread count, so
 * every thread count gives the same bits.  A row whose every key is masked,
 * a batch without keys and a padded query row give out 0 and lse +inf, as
 * the golden does. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu/fia_cpu.h"
#include "cpu/kernels.h"
#include "cpu/tile_gemm.h"

enum {
    FIA_MQ = 64,     /* query rows of a block (G heads x query rows) */
    FIA_KC = 128,    /* keys of a tile */
    FIA_SPLIT = 512, /* keys of a split when the query blocks alone are too few items */
    FIA_MIN_ITEMS = 64
};

/* The work decomposition, a function of the problem alone. */
typedef struct fia_plan {
    int64_t Mq, Dk;          /* rows of a query block; the score dim (D + Dr) */
    int64_t qblocks, splits; /* per (b, n2): query blocks (of the longest batch), key splits (of the capacity) */
    int64_t split_keys;
    int64_t items;
    tile_gemm qk, pv;
} fia_plan;

static fia_plan plan_of(const fia_problem *p)
{
    fia_plan pl;
    int64_t rows = 0, keys = 0;
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t l1 = fia_q_len(p, b), l2 = fia_kv_len(p, b);
        rows = l1 > rows ? l1 : rows;
        keys = l2 > keys ? l2 : keys;
    }
    pl.Dk = p->D + p->Dr;
    pl.Mq = rows * p->G < FIA_MQ ? (rows * p->G > 0 ? rows * p->G : 1) : FIA_MQ;
    pl.qblocks = (rows * p->G + pl.Mq - 1) / pl.Mq;
    const bool enough = p->B * p->N2 * pl.qblocks >= FIA_MIN_ITEMS;
    pl.split_keys = enough || keys <= FIA_SPLIT ? (keys > 0 ? (keys + FIA_KC - 1) / FIA_KC * FIA_KC : FIA_KC)
                                                : FIA_SPLIT;
    pl.splits = keys > 0 ? (keys + pl.split_keys - 1) / pl.split_keys : 0;
    pl.items = p->B * p->N2 * pl.qblocks * pl.splits;
    pl.qk = tile_gemm_make(TILE_GEMM_F32_NN, FIA_KC, (int)pl.Mq, (int)pl.Dk, (int)pl.Dk, (int)pl.Mq, (int)pl.Mq,
                           false);
    pl.pv = tile_gemm_make(TILE_GEMM_F32_NN, (int)pl.Mq, (int)p->Dv, FIA_KC, FIA_KC, (int)p->Dv, (int)p->Dv, true);
    return pl;
}

/* Per-thread scratch, in floats (run_item's buffers: Qt, Kc, S^T, S, Vc,
 * alpha, one widened query row and the per-channel dequantisation rows of
 * key and value; merge_row's accumulator fits in it),
 * and one item's partial result. */
static size_t scratch_floats(const fia_problem *p, const fia_plan *pl)
{
    return (size_t)(pl->Dk * pl->Mq + FIA_KC * pl->Dk + 2 * FIA_KC * pl->Mq + FIA_KC * p->Dv + pl->Mq + pl->Dk +
                    2 * (p->D + p->Dv));
}
static size_t partial_floats(const fia_problem *p, const fia_plan *pl) { return (size_t)(pl->Mq * (p->Dv + 3)); }

size_t fia_cpu_workspace(const fia_problem *p)
{
    const fia_plan pl = plan_of(p);
    const size_t floats = (size_t)p->threads * scratch_floats(p, &pl) + (size_t)pl.items * partial_floats(p, &pl);
    return floats * sizeof(float) + 64;
}

/* The per-channel (scale, offset) rows of kv head n2 as f32, read once per
 * work item rather than per key row (count each). */
static void channel_rows(const fia_quant *q, int64_t n2, int64_t count, float *scale, float *offset)
{
    for (int64_t d = 0; d < count; d++) {
        double sc, off;
        fia_dequant(q, 0, n2, 0, d, &sc, &off);
        scale[d] = (float)sc, offset[d] = (float)off;
    }
}

/* int8 key or value row (key position s of batch b, kv head n2) in f32,
 * dequantised: (x + offset) * scale, per channel (the item's rows) or one
 * pair for the row. */
static void dequant_row(const fia_quant *q, int64_t b, int64_t n2, int64_t s, int64_t count, const float *chan_scale,
                        const float *chan_offset, float *x)
{
    if (q->kind == FIA_QUANT_CHANNEL) {
        for (int64_t d = 0; d < count; d++) x[d] = (x[d] + chan_offset[d]) * chan_scale[d];
        return;
    }
    double scale, offset;
    fia_dequant(q, b, n2, s, 0, &scale, &offset);
    const float sc = (float)scale, off = (float)offset;
    for (int64_t d = 0; d < count; d++) x[d] = (x[d] + off) * sc;
}

/* Row `n` of `count` f32 values of a view at element offset `at`. */
static void widen(const fia_view *v, int64_t at, int64_t count, float *dst, const fa_kernels *k)
{
    const char *src = v->data + at * v->es;
    if (v->sd == 1 && v->dtype == ATTNOPS_DTYPE_F32) {
        memcpy(dst, src, (size_t)count * sizeof(float));
    } else if (v->sd == 1 && v->dtype == ATTNOPS_DTYPE_F16) {
        k->f16_to_f32((const uint16_t *)(const void *)src, (int)count, dst);
    } else if (v->sd == 1 && v->dtype == ATTNOPS_DTYPE_I8) {
        const int8_t *s = (const int8_t *)(const void *)src;
        for (int64_t d = 0; d < count; d++) dst[d] = (float)s[d];
    } else if (v->sd == 1 && v->dtype == ATTNOPS_DTYPE_BF16) {
        const uint16_t *s = (const uint16_t *)(const void *)src;
        for (int64_t d = 0; d < count; d++) { /* the shift and copy form vectorises; the union form did not */
            const uint32_t bits = (uint32_t)s[d] << 16;
            memcpy(dst + d, &bits, sizeof bits);
        }
    } else {
        for (int64_t d = 0; d < count; d++) dst[d] = ao_load_f32(src + d * v->sd * v->es, v->dtype);
    }
}

/* The item's place: batch, kv head, query block, key split. */
typedef struct fia_item {
    int64_t b, n2, qb, split, L1, L2, rows; /* rows: valid rows of the block */
} fia_item;

static fia_item item_of(const fia_problem *p, const fia_plan *pl, int64_t it)
{
    fia_item x;
    x.split = it % pl->splits, it /= pl->splits;
    x.qb = it % pl->qblocks, it /= pl->qblocks;
    x.n2 = it % p->N2, x.b = it / p->N2;
    x.L1 = fia_q_len(p, x.b), x.L2 = fia_kv_len(p, x.b);
    const int64_t first = x.qb * pl->Mq, all = x.L1 * p->G;
    x.rows = all - first < 0 ? 0 : all - first > pl->Mq ? pl->Mq : all - first;
    return x;
}

/* Qt [Dk][Mq]: row r = i G + g of the block in column r, the rope columns after D. */
static void pack_q(const fia_problem *p, const fia_plan *pl, const fia_item *x, float *qt, float *row,
                   const fa_kernels *k)
{
    memset(qt, 0, sizeof(float) * (size_t)(pl->Dk * pl->Mq));
    const int64_t row0 = fia_q_row0(p, x->b);
    for (int64_t r = 0; r < x->rows; r++) {
        const int64_t rr = x->qb * pl->Mq + r, i = rr / p->G, h = x->n2 * p->G + rr % p->G;
        widen(&p->q, fia_q_at(&p->q, x->b, h, row0 + i), p->D, row, k);
        if (p->Dr) widen(&p->qr, fia_q_at(&p->qr, x->b, h, row0 + i), p->Dr, row + p->D, k);
        for (int64_t d = 0; d < pl->Dk; d++) qt[d * pl->Mq + r] = row[d];
    }
}

/* S [Mq][KC] from S^T: scale, pse, mask (-FLT_MAX); any[r] set where a key is kept. */
static void scores(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                   const float *st, float *s, float *any)
{
    const bool all_kept = p->mask == FIA_MASK_NONE && (p->decode || p->sparse_mode <= 1);
    const float scale = (float)p->scale;
    for (int64_t r = 0; r < pl->Mq; r++) {
        float *row = s + r * FIA_KC;
        const int64_t rr = x->qb * pl->Mq + r, i = rr / p->G, h = x->n2 * p->G + rr % p->G;
        for (int64_t c = 0; c < kc; c++) row[c] = scale * st[c * pl->Mq + r];
        if (r >= x->rows) continue;
        for (int64_t c = 0; p->pse && c < kc; c++)
            row[c] += ao_load_f32(p->pse + (x->b * p->pse_sb + h * p->pse_sh + i * p->pse_si + (j0 + c) * p->pse_sj) *
                                      (int64_t)attnops_dtype_size(p->pse_dtype), p->pse_dtype);
        for (int64_t c = 0; c < kc; c++) {
            if (all_kept || fia_kept(p, x->b, i, j0 + c, x->L1, x->L2)) any[r] = 1.0f;
            else row[c] = -FLT_MAX;
        }
    }
}

/* One item: its (m, l, any, O) into `out` (Mq each, then Mq x Dv). */
static void run_item(const fia_problem *p, const fia_plan *pl, const fia_item *x, float *ws, float *out,
                     const fa_kernels *k)
{
    float *qt = ws, *kc_buf = qt + pl->Dk * pl->Mq, *st = kc_buf + FIA_KC * pl->Dk, *s = st + FIA_KC * pl->Mq;
    float *vc = s + FIA_KC * pl->Mq, *alpha = vc + FIA_KC * p->Dv, *row = alpha + pl->Mq;
    float *k_scale = row + pl->Dk, *k_offset = k_scale + p->D, *v_scale = k_offset + p->D, *v_offset = v_scale + p->Dv;
    float *m = out, *l = m + pl->Mq, *any = l + pl->Mq, *o = any + pl->Mq;
    for (int64_t r = 0; r < pl->Mq; r++) m[r] = -INFINITY, l[r] = 0.0f, any[r] = 0.0f;
    memset(o, 0, sizeof(float) * (size_t)(pl->Mq * p->Dv));
    const int64_t j_begin = x->split * pl->split_keys, j_end = j_begin + pl->split_keys < x->L2
                                                                  ? j_begin + pl->split_keys : x->L2;
    if (x->rows == 0 || j_begin >= j_end) return;
    pack_q(p, pl, x, qt, row, k);
    if (p->kq.kind == FIA_QUANT_CHANNEL) channel_rows(&p->kq, x->n2, p->D, k_scale, k_offset);
    if (p->vq.kind == FIA_QUANT_CHANNEL) channel_rows(&p->vq, x->n2, p->Dv, v_scale, v_offset);
    const int64_t kv0 = fia_kv_row0(p, x->b);
    for (int64_t j0 = j_begin; j0 < j_end; j0 += FIA_KC) {
        const int64_t kc = j_end - j0 < FIA_KC ? j_end - j0 : FIA_KC;
        for (int64_t c = 0; c < kc; c++) {
            float *kr = kc_buf + c * pl->Dk;
            widen(&p->k, fia_kv_at(p, &p->k, x->b, x->n2, kv0, j0 + c), p->D, kr, k);
            if (p->kq.kind) dequant_row(&p->kq, x->b, x->n2, j0 + c, p->D, k_scale, k_offset, kr);
            if (p->Dr) widen(&p->kr, fia_kv_at(p, &p->kr, x->b, x->n2, kv0, j0 + c), p->Dr, kr + p->D, k);
            widen(&p->v, fia_kv_at(p, &p->v, x->b, x->n2, kv0, j0 + c), p->Dv, vc + c * p->Dv, k);
            if (p->vq.kind) dequant_row(&p->vq, x->b, x->n2, j0 + c, p->Dv, v_scale, v_offset, vc + c * p->Dv);
        }
        /* the tail of a last tile: zero rows (their scores are padding, P there is 0) */
        memset(kc_buf + kc * pl->Dk, 0, sizeof(float) * (size_t)((FIA_KC - kc) * pl->Dk));
        memset(vc + kc * p->Dv, 0, sizeof(float) * (size_t)((FIA_KC - kc) * p->Dv));
        tile_gemm_run(&pl->qk, kc_buf, qt, st);
        scores(p, pl, x, j0, kc, st, s, any);
        k->softmax_fwd(s, (int)pl->Mq, FIA_KC, (int)kc, 1.0f, m, l, alpha);
        k->scale_rows(o, (int)pl->Mq, (int)p->Dv, alpha);
        tile_gemm_run(&pl->pv, s, vc, o);
    }
}

/* Row (b, h, query row i) from the splits' partials, rounded once. */
static void merge_row(const fia_problem *p, const fia_plan *pl, const float *partials, int64_t b, int64_t h,
                      int64_t i, float *acc)
{
    const int64_t n2 = h / p->G, rr = i * p->G + h % p->G, qb = rr / pl->Mq, r = rr % pl->Mq;
    const size_t stride = partial_floats(p, pl);
    const float *first = partials + (size_t)(((b * p->N2 + n2) * pl->qblocks + qb) * pl->splits) * stride;
    float mx = -INFINITY;
    bool kept = false;
    for (int64_t s = 0; s < pl->splits; s++) {
        const float *part = first + (size_t)s * stride;
        if (part[2 * pl->Mq + r] == 0.0f) continue; /* no key of the split kept */
        kept = true;
        mx = part[r] > mx ? part[r] : mx;
    }
    for (int64_t d = 0; d < p->Dv; d++) acc[d] = 0.0f;
    float l = 0.0f;
    for (int64_t s = 0; kept && s < pl->splits; s++) {
        const float *part = first + (size_t)s * stride;
        if (part[2 * pl->Mq + r] == 0.0f) continue;
        const float w = expf(part[r] - mx), *o = part + 3 * pl->Mq + r * p->Dv;
        l += w * part[pl->Mq + r];
        for (int64_t d = 0; d < p->Dv; d++) acc[d] += w * o[d];
    }
    const int64_t row = fia_q_row0(p, b) + i, oa = fia_q_at(&p->out, b, h, row);
    char *dst = (char *)p->out.data;
    for (int64_t d = 0; d < p->Dv; d++)
        ao_store_f32(dst + (oa + d * p->out.sd) * p->out.es, p->out.dtype, kept ? acc[d] / l : 0.0f);
    fia_write_lse(p, b, h, row, kept ? mx + logf(l) : INFINITY);
}

void fia_cpu_run(const fia_problem *p, void *workspace)
{
    const fa_kernels *k = &cpu_kernels()->fa;
    const fia_plan pl = plan_of(p);
    float *base = (float *)ao_align_up((size_t)workspace, 64);
    float *partials = base + (size_t)p->threads * scratch_floats(p, &pl);
    const int64_t padded_rows = p->layout == ATTNOPS_LAYOUT_TND ? 0 : p->S1;
#pragma omp parallel num_threads(p->team)
    {
        float *ws = base + (size_t)ao_thread_id() * scratch_floats(p, &pl);
#pragma omp for schedule(dynamic)
        for (int64_t it = 0; it < pl.items; it++) {
            const fia_item x = item_of(p, &pl, it);
            run_item(p, &pl, &x, ws, partials + (size_t)it * partial_floats(p, &pl), k);
        }
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < p->B * p->N1; bh++) {
            const int64_t b = bh / p->N1, h = bh % p->N1, L1 = fia_q_len(p, b);
            for (int64_t i = 0; i < L1; i++) merge_row(p, &pl, partials, b, h, i, ws);
            for (int64_t i = L1; i < padded_rows; i++) fia_empty_row(p, b, h, i);
        }
    }
}
