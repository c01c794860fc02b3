/* Fast FlashAttention forward: the flash algorithm (online softmax) over
 * BQ x BK tiles; S1 x S2 is never materialised.  Each (query tile, key tile)
 * is classified by the mask once: empty tiles are skipped, full ones go
 * straight to the softmax, partial ones (and any with a bias) through
 * fa_scores_apply.  In TND each batch's own lengths bound its tiles.
 *
 * Shapes per kv head (b, n2), packed once per wave and shared by threads:
 *   K^T  fp32 [nk][D][BK]         or bf16 VNNI [nk][Dp/2][BK][2]
 *        (tile-major: a tile's rows are BK apart, not S2 apart, which
 *        would put every row of a tile in the same L1 set)
 *   V    fp32 [S2p][Dv]           or bf16 VNNI along S2 [S2p/2][Dv][2]
 * Per work item (b, n1, q tile), thread-private:
 *   Q    fp32 [BQ][D] / bf16 [BQ][Dp];  S fp32 [BQ][BK];  P bf16 [BQ][BK]
 *   O    fp32 [BQ][Dv];  m, l, alpha fp32 [BQ]
 * S2p = S2 rounded up to BK (padding columns are zero keys, excluded from the
 * softmax); Dp = D rounded up to even (bf16 pairs).  bf16 inputs use
 * bf16 x bf16 -> fp32 GEMMs with P rounded to bf16 (as the NPU does) where
 * libxsmm has a bf16 kernel, else fp32 packs and GEMMs with P rounded to
 * bf16 values (the same products); f16 and f32 inputs are widened to fp32
 * (exact) and use fp32 GEMMs. */
#include <math.h>
#include <string.h>

#include <omp.h>

#include "cpu/fa_cpu.h"
#include "cpu/fa_scores.h"
#include "cpu/fa_tiles.h"
#include "cpu/kernels.h"
#include "cpu/pack.h"
#include "cpu/tile_gemm.h"
#include "fa/fa_dropout.h"

typedef struct fwd_plan {
    fa_tiling t;
    size_t k_bytes, v_bytes;  /* per kv head */
    size_t thread_bytes;
    int64_t wave;             /* kv heads packed at once */
    size_t total;
} fwd_plan;

/* Per-thread scratch pieces, in carve order. */
enum { SC_Q, SC_S, SC_PB, SC_O, SC_M, SC_L, SC_ALPHA, SC_BIAS, SC_MASKED, SC_KEEP, SC_COUNT };

static void scratch_sizes(const fa_problem *p, const fa_tiling *t, size_t sz[SC_COUNT])
{
    const size_t e = t->bf16 ? 2 : 4, tile = (size_t)FA_FWD_BQ * FA_BK;
    sz[SC_Q] = (size_t)(FA_FWD_BQ * t->Dp) * e;
    sz[SC_S] = tile * 4;
    sz[SC_PB] = tile * 2;
    sz[SC_O] = (size_t)(FA_FWD_BQ * p->Dv) * 4;
    sz[SC_M] = sz[SC_L] = sz[SC_ALPHA] = (size_t)FA_FWD_BQ * 4;
    sz[SC_BIAS] = tile * 4;
    sz[SC_MASKED] = FA_BK;
    sz[SC_KEEP] = tile;
}

static fwd_plan make_plan(const fa_problem *p)
{
    fwd_plan pl;
    pl.t = fa_tiling_make(p, FA_FWD_BQ);
    const fa_tiling *t = &pl.t;
    const size_t e = t->bf16 ? 2 : 4;
    size_t sz[SC_COUNT];
    scratch_sizes(p, t, sz);
    pl.k_bytes = ao_align_up((size_t)(t->Dp * t->S2p) * e, 64);
    pl.v_bytes = ao_align_up((size_t)(t->S2p * p->Dv) * e, 64);
    pl.thread_bytes = fa_pieces_bytes(sz, SC_COUNT);
    pl.wave = fa_wave_heads(p->B * p->N2, pl.k_bytes + pl.v_bytes, p->threads);
    pl.total = (size_t)pl.wave * (pl.k_bytes + pl.v_bytes) + (size_t)p->threads * pl.thread_bytes;
    return pl;
}

size_t fa_cpu_fwd_workspace(const fa_problem *p) { return make_plan(p).total; }

typedef struct fwd_scratch {
    void *q;
    float *s;
    uint16_t *pb;
    float *o, *m, *l, *alpha, *bias;
    uint8_t *masked, *keep;
} fwd_scratch;

static fwd_scratch thread_scratch(const fwd_plan *pl, const fa_problem *p, char *base)
{
    size_t sz[SC_COUNT];
    char *c[SC_COUNT];
    scratch_sizes(p, &pl->t, sz);
    fa_pieces_carve(base, sz, SC_COUNT, c);
    return (fwd_scratch){c[SC_Q], (float *)c[SC_S], (uint16_t *)c[SC_PB], (float *)c[SC_O], (float *)c[SC_M],
                         (float *)c[SC_L], (float *)c[SC_ALPHA], (float *)c[SC_BIAS], (uint8_t *)c[SC_MASKED],
                         (uint8_t *)c[SC_KEEP]};
}

/* The GEMMs of one kv tile step, dispatched once per call, in a full and a
 * half size per side: a sequence's last query tile with at most BQ/2 rows,
 * or its last kv tile with at most BK/2 keys, runs the half-size GEMM.  Many
 * short (varlen) sequences would otherwise spend ~6 % per side on padding.
 * Per output element the products and their order are those of the full
 * tile (the keys left out would add P = 0 times a zero row), so results do
 * not change with the choice. */
typedef struct fwd_gemms {
    tile_gemm qk[2][2]; /* S = Q . K^T[:, tile]  (M=BQ, N=BK, K=D), [half rows][half keys] */
    tile_gemm pv[2][2]; /* O += P . V[tile, :]   (M=BQ, N=Dv, K=BK) */
} fwd_gemms;

static fwd_gemms make_gemms(const fa_problem *p, const fa_tiling *t)
{
    const tile_gemm_kind kind = t->bf16 ? TILE_GEMM_BF16_NN_VNNI : TILE_GEMM_F32_NN;
    const int Dk = (int)t->Dp, Dv = (int)p->Dv; /* Dp = D for fp32 tiles */
    fwd_gemms gm;
    for (int hr = 0; hr < 2; hr++)
        for (int hk = 0; hk < 2; hk++) {
            const int M = hr ? FA_FWD_BQ / 2 : FA_FWD_BQ, N = hk ? FA_BK / 2 : FA_BK;
            gm.qk[hr][hk] = tile_gemm_make(kind, M, N, Dk, Dk, FA_BK, FA_BK, false);
            gm.pv[hr][hk] = tile_gemm_make(kind, M, Dv, N, FA_BK, Dv, Dv, true);
        }
    return gm;
}

/* K^T and V of kv head (b, n2) into their packed forms (batch b's keys:
 * rows [first, first + S2) of the views). */
static void pack_kv_head(const fa_problem *p, const fa_tiling *t, int64_t b, int64_t n2, void *kbuf, void *vbuf)
{
    const int64_t first = fa_kv_first(p, b), end = first + fa_kv_len(p, b), S2p = (end - first + FA_BK - 1) / FA_BK * FA_BK;
    const size_t tile_bytes = (size_t)(t->Dp * FA_BK) * (t->bf16 ? 2 : 4);
    for (int64_t k0 = 0; k0 < S2p; k0 += FA_BK) {
        char *kt_buf = (char *)kbuf + (size_t)(k0 / FA_BK) * tile_bytes;
        if (t->bf16) pack_cols_vnni(&p->k, b, n2, first + k0, FA_BK, end, p->D, t->Dp, (uint16_t *)kt_buf, FA_BK);
        else pack_cols(PACK_F32, &p->k, b, n2, first + k0, FA_BK, end, p->D, kt_buf, FA_BK);
    }
    if (t->bf16) pack_rows_vnni(&p->v, b, n2, first, S2p, end, p->Dv, vbuf, p->Dv);
    else pack_rows(PACK_F32, &p->v, b, n2, first, S2p, end, p->Dv, vbuf, p->Dv);
}

/* Once the running maxima settle, every alpha is 1 and O needs no
 * rescaling (o * 1 = o exactly, so skipping it changes no bit). */
static bool all_ones(const float *alpha, int n)
{
    for (int r = 0; r < n; r++)
        if (alpha[r] != 1.0f) return false;
    return true;
}

/* One q tile of one query head against every kv tile. */
static void fwd_item(const fa_problem *p, const fa_tiling *t, const fwd_gemms *gm, const fa_kernels *kern,
                     const fa_dropout *drop, const fwd_scratch *sc, int64_t b, int64_t h, int64_t q0, const char *kbuf,
                     const char *vbuf)
{
    const fa_dropout_batch drop_at = drop->active ? fa_dropout_batch_of(p, drop, b) : (fa_dropout_batch){0};
    const size_t e = t->bf16 ? 2 : 4;
    const int64_t S1 = fa_q_len(p, b), S2 = fa_kv_len(p, b), first = fa_q_first(p, b);
    if (q0 >= S1) return; /* a short batch in TND */
    pack_rows(t->elem, &p->q, b, h, first + q0, FA_FWD_BQ, first + S1, p->D, sc->q, t->Dp);
    for (int r = 0; r < FA_FWD_BQ; r++) sc->m[r] = -INFINITY, sc->l[r] = 0.0f;
    memset(sc->o, 0, (size_t)(FA_FWD_BQ * p->Dv) * sizeof(float));
    const int rows = (int)(S1 - q0 < FA_FWD_BQ ? S1 - q0 : FA_FWD_BQ);
    const int half_rows = rows <= FA_FWD_BQ / 2, trows = half_rows ? FA_FWD_BQ / 2 : FA_FWD_BQ;
    const fa_band band = fa_band_of(p, b, S1, S2);
    /* Empty tiles may be skipped unless a row of this tile attends to
     * nothing and must still see every key's -40000 (uniform weights). */
    const bool may_skip = p->mask.skip_invalid_rows || fa_rows_attend(p, &band, b, h, q0, q0 + rows, S2);

    for (int64_t k0 = 0; k0 < S2; k0 += FA_BK) {
        const int valid = (int)(S2 - k0 < FA_BK ? S2 - k0 : FA_BK), half_keys = valid <= FA_BK / 2;
        const fa_tile_class cls =
            p->mask.rule.active ? fa_classify_tile(p, &band, b, h, q0, q0 + rows, k0, k0 + valid) : FA_TILE_FULL;
        if (cls == FA_TILE_EMPTY && may_skip) continue;
        const char *kt = kbuf + (size_t)(k0 * t->Dp) * e;                  /* tile k0 / BK of K^T */
        const char *vt = vbuf + (size_t)(k0 * p->Dv) * e;                  /* row k0 of V      */
        const fa_tile_pos pos = {b, h, q0, k0, rows, valid, S1, S2};
        fa_scores_prefetch(p, &pos);
        tile_gemm_run(&gm->qk[half_rows][half_keys], sc->q, kt, sc->s);
        float scale = (float)p->scale;
        if (fa_scores_needed(p, cls)) {
            fa_scores_apply(p, &band, &pos, cls, sc->s, FA_BK, sc->bias, sc->masked, NULL);
            scale = 1.0f;
        }
        kern->softmax_fwd(sc->s, trows, FA_BK, valid, scale, sc->m, sc->l, sc->alpha);
        if (drop->active) { /* l summed the undropped P; O takes P * keep / keep_prob */
            fa_dropout_tile(drop, &drop_at, h, q0, rows, k0, valid, sc->keep, FA_BK);
            kern->apply_keep(sc->s, sc->keep, rows, valid, FA_BK, drop->scale);
        }
        if (!all_ones(sc->alpha, trows)) kern->scale_rows(sc->o, trows, (int)p->Dv, sc->alpha);
        const tile_gemm *pv = &gm->pv[half_rows][half_keys];
        if (t->bf16) {
            kern->to_bf16(sc->s, trows, FA_BK, sc->pb, FA_BK, false);
            tile_gemm_run(pv, sc->pb, vt, sc->o);
        } else {
            if (t->round_p) kern->round_bf16(sc->s, trows * FA_BK); /* bf16 inputs on fp32 GEMMs */
            tile_gemm_run(pv, sc->s, vt, sc->o);
        }
    }

    const float sink = (float)attn_sink_of(&p->sink, h);
    for (int64_t r = 0; r < rows; r++) {
        float *o = sc->o + r * p->Dv;
        float mx = sc->m[r], sum = sc->l[r];
        sc->alpha[r] = 1.0f / sum; /* o /= l, applied below in one vector pass */
        /* A row that attends to nothing: no keys, or (sentinel behaviour) every
         * key masked, seen as a max of exactly -40000 or no tile at all. */
        if (S2 == 0 || (p->mask.skip_invalid_rows && (mx == (float)FA_MASK_FILL || mx == -INFINITY))) {
            mx = (float)FA_INVALID_ROW_MAX, sum = (float)FA_INVALID_ROW_SUM;
            memset(o, 0, (size_t)p->Dv * sizeof *o), sc->alpha[r] = 0.0f;
        } else {
            const bool dropped_row = p->varlen && mx == (float)FA_MASK_FILL; /* TND: masked P forced to 0 */
            if (p->sink.data) { /* the sink's logit joins the row's max and sum; o's terms rescale with the max */
                const float mx2 = sink > mx ? sink : mx, rescale = expf(mx - mx2);
                sum = sum * rescale + expf(sink - mx2), mx = mx2;
                sc->alpha[r] = rescale / sum;
            }
            if (dropped_row) sc->alpha[r] = 0.0f;
        }
        float *m_out = fa_stat(p, &p->smax, b, h, q0 + r), *l_out = fa_stat(p, &p->ssum, b, h, q0 + r);
        for (int k = 0; k < 8; k++) m_out[k * p->smax.sd] = mx, l_out[k * p->ssum.sd] = sum;
    }
    kern->scale_rows(sc->o, rows, (int)p->Dv, sc->alpha);
    unpack_rows(sc->o, p->Dv, 1.0f, &p->o, b, h, first + q0, FA_FWD_BQ, first + S1, p->Dv);
}

/* Item `it` of wave w0: query tile q0 of query head h.  Last query tiles
 * first: under causal masks they carry the most work. */
static void wave_item(const fa_problem *p, const fwd_plan *pl, const fwd_gemms *gm, const fa_kernels *kern,
                      const fa_dropout *drop, const fwd_scratch *sc, const char *packs, int64_t w0, int64_t it)
{
    const fa_tiling *t = &pl->t;
    const int64_t items_per_head = p->G * t->nq, i = it / items_per_head, rest = it % items_per_head;
    const int64_t b = (w0 + i) / p->N2, n2 = (w0 + i) % p->N2;
    const int64_t h = n2 * p->G + rest / t->nq, q0 = (t->nq - 1 - rest % t->nq) * FA_FWD_BQ;
    const char *kb = packs + (size_t)i * (pl->k_bytes + pl->v_bytes);
    fwd_item(p, t, gm, kern, drop, sc, b, h, q0, kb, kb + pl->k_bytes);
}

static void wave_pack(const fa_problem *p, const fwd_plan *pl, char *packs, int64_t w0, int64_t i)
{
    char *kb = packs + (size_t)i * (pl->k_bytes + pl->v_bytes);
    pack_kv_head(p, &pl->t, (w0 + i) / p->N2, (w0 + i) % p->N2, kb, kb + pl->k_bytes);
}

void fa_cpu_fwd(const fa_problem *p, void *ws)
{
    const fwd_plan pl = make_plan(p);
    const fa_tiling *t = &pl.t;
    const fwd_gemms gm = make_gemms(p, t);
    const fa_kernels *kern = &cpu_kernels()->fa;
    fa_dropout drop = fa_dropout_for(p);
    drop.stream = kern->philox_bytes, drop.blocks = kern->philox_blocks;
    char *packs = ws, *threads_base = packs + (size_t)pl.wave * (pl.k_bytes + pl.v_bytes);
    const int64_t heads = p->B * p->N2, items_per_head = p->G * t->nq;
    /* No more threads than the first (the widest) wave has items; with one, the passes run here: a parallel
     * region of one thread still costs ~0.4 us a barrier (libgomp wakes its futex with a system call).  The
     * team size changes no bit. */
    const int64_t widest = (heads < pl.wave ? heads : pl.wave) * items_per_head;
    const int team = widest < p->team ? (int)widest : p->team;
    if (team <= 1) {
        const fwd_scratch sc = thread_scratch(&pl, p, threads_base);
        for (int64_t w0 = 0; w0 < heads; w0 += pl.wave) {
            const int64_t nw = heads - w0 < pl.wave ? heads - w0 : pl.wave;
            for (int64_t i = 0; i < nw; i++) wave_pack(p, &pl, packs, w0, i);
            for (int64_t it = 0; it < nw * items_per_head; it++) wave_item(p, &pl, &gm, kern, &drop, &sc, packs, w0, it);
        }
        return;
    }
#pragma omp parallel num_threads(team)
    {
        const fwd_scratch sc = thread_scratch(&pl, p, threads_base + (size_t)omp_get_thread_num() * pl.thread_bytes);
        for (int64_t w0 = 0; w0 < heads; w0 += pl.wave) {
            const int64_t nw = heads - w0 < pl.wave ? heads - w0 : pl.wave;
#pragma omp for schedule(dynamic)
            for (int64_t i = 0; i < nw; i++) wave_pack(p, &pl, packs, w0, i);
#pragma omp for schedule(dynamic)
            for (int64_t it = 0; it < nw * items_per_head; it++) wave_item(p, &pl, &gm, kern, &drop, &sc, packs, w0, it);
        }
    }
}
