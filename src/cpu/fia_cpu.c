/* The FusedInferAttentionScore fast kernel: split-KV ("flash-decoding").
 *
 * The work is (batch b, kv head n2, query block, key split), each with its
 * own partial result.  A query block holds up to FIA_MQ rows r = i G + g
 * (query row i of the batch, query head h = n2 G + g), so the G heads of a
 * kv group and a few query rows share each key and value row: a decode step
 * (one row) reads the cache once per kv group.  The keys are cut into as
 * few splits as give FIA_MIN_ITEMS items, of at least FIA_MIN_SPLIT keys
 * (all of them when the query blocks alone give enough), walked in
 * tiles of FIA_KC keys read from the contiguous or paged cache.  A work item
 * of the tile GEMMs takes up to FIA_MAX_GROUP query blocks of one (b, n2,
 * split) and prepares each tile (copy, packs, widening) once for them all
 * (fewer when the thread count needs the items; no bit depends on it).  Two
 * ways through a tile:
 *
 *  - few rows (a block of <= FIA_DIRECT_ROWS, decode and short speculative
 *    steps): the fia kernels take Q [Mq][Dk] (Dk = D + Dr, the rope columns
 *    after D) and the tile's key and value rows where they are, widening
 *    each element in registers: S [Mq][KC] = Q . K^T, O += P . V.  A
 *    decode step is memory-bound (4 FLOPs per key element and query row),
 *    so nothing is copied.  int8 dequantisation is folded around them:
 *    per-channel key scales into Q (q' = q scale, plus q' . offset per row),
 *    a per-key scale and offset onto the row's score, per-channel value
 *    scales onto O once per item, a per-key value scale into P (its
 *    offset's share kept per row);
 *  - many rows (prompt blocks): tile GEMMs on per-thread copies of the tile.
 *    bf16 query, keys and values (rope columns bf16 too, no int8) where the
 *    GEMM library has the bf16 kind: the FlashAttention forward's bf16
 *    GEMMs, the tile's rows copied, never widened, and P rounded to bf16
 *    before P . V (to_bf16, as the FA forward and the NPU do), Dkp = Dk
 *    rounded up to even (a zero column: the kind takes k in pairs):
 *      Qt bf16 VNNI-2 [Dkp/2][Mq][2] (packed once per block), Kc bf16
 *      [KC][Dkp] (lda even), S^T [KC][Mq] = Kc . Qt; Pb bf16 [Mq][KC],
 *      Vc bf16 VNNI-2 [KC/2][Dv][2] (value rows interleaved in pairs),
 *      O += Pb . Vc.
 *    S^T = Kc . Qt rather than S = Q . K^T: Kc is a plain row copy of the
 *    (scattered, when paged) key rows, or no copy at all: the cache's rows
 *    themselves where a whole tile lies ss apart (contiguous, or in one
 *    block), ss even, without rope or pad column; the transposing pack
 *    falls on Q, once per block, and S^T turns into S (fa.transpose_scaled) as it
 *    is scaled.  (S = Q . K^T, FA's arrangement, packs K pair-transposed
 *    per tile: on a chunked prefill ~11 % slower with one block an item,
 *    ~3.5 % faster with eight.  The blocks an item takes follow the thread
 *    count and the arrangement may not (its bits would), so it is the one
 *    better where threads are many.)  Everything else (other dtypes, int8,
 *    no bf16 kind, an odd block size) widens (and dequantises) the tile to
 *    f32: Qt [Dk][Mq], Kc [KC][Dk], S^T = Kc . Qt, O += P . Vc [KC][Dv];
 *    bf16 operands there get P rounded to bf16 values (the bf16 kind's
 *    products, exact in f32, whatever the CPU: the FA forward's rule).
 *
 * Both: S = scale S (softcap: c tanh(scale S / c), the FA forward's vector
 * tanh) + pse + ALiBi, masked -FLT_MAX; online softmax over the tiles (m,
 * l, alpha).  Each block leaves its rows' (m, l, O) in the workspace; a
 * second pass merges the splits of every row in split order (O = sum_s
 * e^(m_s - m) O_s / sum_s e^(m_s - m) l_s, lse = m + ln l), in f32, and
 * rounds the output once.  The split size and every block's arithmetic
 * depend on the problem only, never on the thread count, so every thread
 * count gives the same bits.  A row
 * whose every key is masked, a batch without keys and a padded query row
 * give out 0 and lse +inf, as the golden does. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu/fia_cpu.h"
#include "cpu/kernels.h"
#include "cpu/pack.h"
#include "cpu/tile_gemm.h"

enum {
    FIA_KC = 128,    /* keys of a tile */
    FIA_MIN_SPLIT = 512, /* the fewest keys of a split (when the cache is split at all) */
    FIA_MIN_ITEMS = 64,  /* the partial results the splits aim at, for the threads to share */
    FIA_MAX_GROUP = 8, /* the most query blocks a tile-GEMM item takes (plan_of) */
    FIA_PF_BYTES = 4096 /* the rows a few-row kernel call takes, about (prefetch_chunk) */
};

/* The work decomposition, a function of the problem alone. */
typedef struct fia_plan {
    int64_t Mq, Dk;          /* rows of a query block; the score dim (D + Dr) */
    int64_t qblocks, splits; /* per (b, n2): query blocks (of the longest batch), key splits (of the capacity) */
    int64_t split_keys;
    int64_t items;           /* (b, n2, query block, split): the partial results */
    int64_t group, qgroups, tasks; /* query blocks per work item, their groups, the work items */
    bool few_rows; /* the few-row kernels on the cache in place; else the tile GEMMs */
    bool bf16;     /* the tile GEMMs on bf16 operands (bf16_tiles) */
    bool round_p;  /* P rounded to bf16 values for f32 tile GEMMs on bf16 operands */
    int64_t Dkp;   /* Dk, rounded up to even for the bf16 GEMMs */
    tile_gemm qk, pv;
    bool keys_in_place; /* qk_cache: S^T = K . Qt on a whole tile of cache rows ss apart (keys_in_cache) */
    tile_gemm qk_cache;
} fia_plan;

/* Whether a prompt block's tiles can run on the bf16 kind as they are:
 * bf16 query, keys and values (and rope columns), nothing to dequantise,
 * key rows with unit element stride (a row copy), and whole row pairs in a
 * paged block (an even block size: a tile's runs of rows in one block start
 * at even rows, so pack_rows_vnni interleaves pairs within a run). */
static bool bf16_operands(const fia_problem *p)
{
    const attnops_dtype bf = ATTNOPS_DTYPE_BF16;
    return p->q.dtype == bf && p->k.dtype == bf && p->v.dtype == bf && !p->kq.kind && !p->vq.kind &&
           (!p->Dr || (p->qr.dtype == bf && p->kr.dtype == bf));
}

static bool bf16_tiles(const fia_problem *p)
{
    return bf16_operands(p) && fia_row_contiguous(&p->k) && fia_row_contiguous(&p->v) &&
           (!p->Dr || fia_row_contiguous(&p->kr)) && (!p->paged || p->block_size % 2 == 0) &&
           tile_gemm_library_available(TILE_GEMM_BF16_NN_VNNI);
}

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
    /* As few splits as give FIA_MIN_ITEMS partial results: each split starts cold (its first tile's keys
     * not prefetched, its own partial to merge), and on a decode step (Zen 4, AVX2, 2 threads) splits of
     * 2048 keys rather than 512 ran 10-20 % faster. */
    const int64_t blocks = p->B * p->N2 * pl.qblocks;
    const int64_t want = blocks >= FIA_MIN_ITEMS ? 1 : (FIA_MIN_ITEMS + blocks - 1) / (blocks > 0 ? blocks : 1);
    const int64_t even = ((keys + want - 1) / want + FIA_KC - 1) / FIA_KC * FIA_KC;
    pl.split_keys = keys <= 0 ? FIA_KC : even > FIA_MIN_SPLIT ? even : FIA_MIN_SPLIT;
    pl.splits = keys > 0 ? (keys + pl.split_keys - 1) / pl.split_keys : 0;
    pl.items = p->B * p->N2 * pl.qblocks * pl.splits;
    pl.few_rows = pl.Mq <= FIA_DIRECT_ROWS && fia_row_contiguous(&p->k) && fia_row_contiguous(&p->v) &&
                  (!p->Dr || fia_row_contiguous(&p->kr));
    pl.bf16 = !pl.few_rows && bf16_tiles(p);
    pl.round_p = !pl.few_rows && !pl.bf16 && bf16_operands(p); /* FA's rule: the bf16 kind's products */
    pl.Dkp = pl.bf16 ? (pl.Dk + 1) / 2 * 2 : pl.Dk;
    /* Key rows ss apart are the bf16 GEMM's A as they are where their row stride is an even lda and no rope
     * or pad column joins them: no copy (copying cost a chunked prefill ~8 %). */
    pl.keys_in_place = pl.bf16 && !p->Dr && p->D % 2 == 0 && p->k.ss % 2 == 0 && p->k.ss <= INT32_MAX;
    /* A tile-GEMM work item takes up to FIA_MAX_GROUP query blocks of one (b, n2, split), preparing each tile's
     * keys and values (copied, packed, widened) once for all of them, while leaving ~4 items a thread.  Every
     * block's products are the same whatever the grouping, so the thread count it depends on changes no bit. */
    const int64_t per_thread = pl.items / (4 * (int64_t)(p->threads > 1 ? p->threads : 1));
    const int64_t most = pl.qblocks < FIA_MAX_GROUP ? pl.qblocks : FIA_MAX_GROUP;
    pl.group = pl.few_rows || per_thread < 1 ? 1 : per_thread > most ? most : per_thread;
    pl.qgroups = (pl.qblocks + pl.group - 1) / pl.group;
    pl.tasks = p->B * p->N2 * pl.qgroups * pl.splits;
    return pl;
}

/* The tile GEMMs of a plan, for the run alone (the workspace size and the few-row kernels need none: a
 * GEMM library's dispatch, a lookup each, was a tenth of a tiny decode call). */
static void plan_gemms(const fia_problem *p, fia_plan *pl)
{
    const tile_gemm_kind kind = pl->bf16 ? TILE_GEMM_BF16_NN_VNNI : TILE_GEMM_F32_NN;
    const int Mq = (int)pl->Mq, Dkp = (int)pl->Dkp, Dv = (int)p->Dv;
    pl->qk = tile_gemm_make(kind, FIA_KC, Mq, Dkp, Dkp, Mq, Mq, false); /* S^T = Kc . Qt */
    pl->pv = tile_gemm_make(kind, Mq, Dv, FIA_KC, FIA_KC, Dv, Dv, true);  /* O += P . Vc */
    if (pl->keys_in_place) pl->qk_cache = tile_gemm_make(kind, FIA_KC, Mq, Dkp, (int)p->k.ss, Mq, Mq, false);
}

/* Per-thread scratch (run_item's buffers, a query pack per block of the
 * item; merge_row's accumulator fits in it), and one block's partial result.  The bf16 tile GEMMs' Qt, Kc, Vc (the
 * *16 pointers) take the place of the f32 ones, in half the room, and add Pb. */
typedef struct fia_scratch {
    float *q;          /* Qt [Dk][Mq] (tile GEMMs) or Q [Mq][Dk] (few rows) */
    float *kc, *st, *s, *vc; /* Kc [KC][Dk], S^T [KC][Mq], S [Mq][KC], Vc [KC][Dv] */
    uint16_t *q16, *kc16, *vc16, *pb; /* bf16: Qt [Dkp/2][Mq][2], Kc [KC][Dkp], Vc [KC/2][Dv][2], Pb [Mq][KC] */
    float *alpha, *row;      /* [Mq], one widened query row [Dk] */
    const float *k_scale, *k_offset, *v_scale, *v_offset; /* the item's per-channel int8 rows [D], [Dv] */
    float *k_fix, *v_fix;    /* [Mq]: the folded key dequantisation's per-row term, the value offsets' share */
    float *key_scale, *key_offset; /* [KC]: a tile's per-key int8 pairs */
} fia_scratch;

/* The scratch pieces' sizes in floats, in carve order: Q, Kc, S^T, S, Vc,
 * Pb, then alpha, row, k_fix, v_fix, key_scale, key_offset.  bf16 pieces
 * are rounded up to 16 floats (S^T and S, KC Mq, are whole lines already),
 * so every operand of the bf16 GEMMs starts on a cache line. */
enum { FIA_SC_Q, FIA_SC_KC, FIA_SC_ST, FIA_SC_S, FIA_SC_VC, FIA_SC_PB, FIA_SC_REST, FIA_SC_COUNT };

static int64_t bf16_floats(int64_t n) { return (n + 31) / 32 * 16; }

/* One query block's pack: Qt (tile GEMMs) or Q (few rows), bf16 or f32. */
static int64_t q_floats(const fia_plan *pl) { return pl->bf16 ? bf16_floats(pl->Dkp * pl->Mq) : pl->Dk * pl->Mq; }

static void scratch_sizes(const fia_problem *p, const fia_plan *pl, int64_t sz[FIA_SC_COUNT])
{
    sz[FIA_SC_Q] = pl->group * q_floats(pl); /* a query pack per block of the item */
    sz[FIA_SC_KC] = pl->bf16 ? bf16_floats(FIA_KC * pl->Dkp) : FIA_KC * pl->Dk;
    sz[FIA_SC_ST] = sz[FIA_SC_S] = FIA_KC * pl->Mq;
    sz[FIA_SC_VC] = pl->bf16 ? bf16_floats(FIA_KC * p->Dv) : FIA_KC * p->Dv;
    sz[FIA_SC_PB] = pl->bf16 ? bf16_floats(pl->Mq * FIA_KC) : 0;
    sz[FIA_SC_REST] = 3 * pl->Mq + pl->Dk + 2 * FIA_KC;
}

static size_t scratch_floats(const fia_problem *p, const fia_plan *pl)
{
    int64_t sz[FIA_SC_COUNT], n = 0;
    scratch_sizes(p, pl, sz);
    for (int i = 0; i < FIA_SC_COUNT; i++) n += sz[i];
    return (size_t)((n + 15) / 16 * 16); /* the next thread's pieces on a cache line too */
}

static fia_scratch scratch_at(float *ws, const fia_problem *p, const fia_plan *pl)
{
    int64_t sz[FIA_SC_COUNT];
    float *at[FIA_SC_COUNT];
    scratch_sizes(p, pl, sz);
    for (int i = 0; i < FIA_SC_COUNT; i++) at[i] = ws, ws += sz[i];
    fia_scratch w;
    w.q = at[FIA_SC_Q], w.kc = at[FIA_SC_KC], w.st = at[FIA_SC_ST], w.s = at[FIA_SC_S], w.vc = at[FIA_SC_VC];
    w.q16 = (uint16_t *)(void *)w.q, w.kc16 = (uint16_t *)(void *)w.kc, w.vc16 = (uint16_t *)(void *)w.vc;
    w.pb = (uint16_t *)(void *)at[FIA_SC_PB];
    w.alpha = at[FIA_SC_REST], w.row = w.alpha + pl->Mq;
    w.k_scale = w.k_offset = w.v_scale = w.v_offset = NULL; /* the call's channel table (run_item) */
    w.k_fix = w.row + pl->Dk, w.v_fix = w.k_fix + pl->Mq;
    w.key_scale = w.v_fix + pl->Mq, w.key_offset = w.key_scale + FIA_KC;
    return w;
}

static size_t partial_floats(const fia_problem *p, const fia_plan *pl) { return (size_t)(pl->Mq * (p->Dv + 3)); }

/* The per-channel int8 (scale, offset) rows of every kv head, once a call:
 * key scale [N2][D], key offset [N2][D], value scale [N2][Dv], value offset. */
static size_t channel_floats(const fia_problem *p) { return (size_t)(2 * p->N2 * (p->D + p->Dv)); }

size_t fia_cpu_workspace(const fia_problem *p)
{
    const fia_plan pl = plan_of(p);
    const size_t floats = (size_t)p->threads * scratch_floats(p, &pl) + (size_t)pl.items * partial_floats(p, &pl) +
                          channel_floats(p);
    return floats * sizeof(float) + 64;
}

/* The per-channel (scale, offset) rows of kv head n2 as f32, read once per
 * call rather than per item or key row (count each). */
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
    const bool run = fia_row_contiguous(v);
    if (run && v->dtype == ATTNOPS_DTYPE_F32) {
        memcpy(dst, src, (size_t)count * sizeof(float));
    } else if (run && v->dtype == ATTNOPS_DTYPE_F16) {
        k->f16_to_f32((const uint16_t *)(const void *)src, (int)count, dst);
    } else if (run && v->dtype == ATTNOPS_DTYPE_I8) {
        const int8_t *s = (const int8_t *)(const void *)src;
        for (int64_t d = 0; d < count; d++) dst[d] = (float)s[d];
    } else if (run && v->dtype == ATTNOPS_DTYPE_BF16) {
        const uint16_t *s = (const uint16_t *)(const void *)src;
        for (int64_t d = 0; d < count; d++) { /* the shift and copy form vectorises; the union form did not */
            const uint32_t bits = (uint32_t)s[d] << 16;
            memcpy(dst + d, &bits, sizeof bits);
        }
    } else {
        for (int64_t d = 0; d < count; d++) dst[d] = ao_load_f32(src + fia_d_at(v, d) * v->es, v->dtype);
    }
}

/* A query block's place: batch, kv head, query block, key split; and its
 * partial result's index (b, n2, qb, split), whatever the grouping. */
typedef struct fia_item {
    int64_t b, n2, qb, split, L1, L2, rows; /* rows: valid rows of the block */
    int64_t part;
} fia_item;

/* Block g of work item `task` (b, n2, query group, split). */
static fia_item item_of(const fia_problem *p, const fia_plan *pl, int64_t task, int64_t g)
{
    fia_item x;
    x.split = task % pl->splits, task /= pl->splits;
    x.qb = task % pl->qgroups * pl->group + g, task /= pl->qgroups;
    x.n2 = task % p->N2, x.b = task / p->N2;
    x.L1 = fia_q_len(p, x.b), x.L2 = fia_kv_len(p, x.b);
    const int64_t first = x.qb * pl->Mq, all = x.L1 * p->G;
    x.rows = all - first < 0 ? 0 : all - first > pl->Mq ? pl->Mq : all - first;
    x.part = ((x.b * p->N2 + x.n2) * pl->qblocks + x.qb) * pl->splits + x.split;
    return x;
}

/* The block's query rows: Qt [Dk][Mq] (row r = i G + g in column r) for the
 * tile GEMMs, Q [Mq][Dk] for the few-row kernels; rows past x->rows 0. */
static void pack_q(const fia_problem *p, const fia_plan *pl, const fia_item *x, const fia_scratch *w,
                   const fa_kernels *k)
{
    memset(w->q, 0, sizeof(float) * (size_t)(pl->Dk * pl->Mq));
    const int64_t row0 = fia_q_row0(p, x->b);
    for (int64_t r = 0; r < x->rows; r++) {
        const int64_t rr = x->qb * pl->Mq + r, i = rr / p->G, h = x->n2 * p->G + rr % p->G;
        float *dst = pl->few_rows ? w->q + r * pl->Dk : w->row;
        widen(&p->q, fia_q_at(&p->q, x->b, h, row0 + i), p->D, dst, k);
        if (p->Dr) widen(&p->qr, fia_q_at(&p->qr, x->b, h, row0 + i), p->Dr, dst + p->D, k);
        for (int64_t d = 0; !pl->few_rows && d < pl->Dk; d++) w->q[d * pl->Mq + r] = w->row[d];
    }
}

/* The block's query rows for the bf16 tile GEMMs: Qt in VNNI-2 form,
 * element (d, r) at ((d/2) Mq + r) 2 + d%2 (the rope columns after D, the
 * pad column of an odd Dk and rows past x->rows zero): the bf16 values as
 * they are, as the FA forward packs them. */
static void pack_q_vnni(const fia_problem *p, const fia_plan *pl, const fia_item *x, uint16_t *qt)
{
    memset(qt, 0, sizeof(uint16_t) * (size_t)(pl->Dkp * pl->Mq));
    const int64_t row0 = fia_q_row0(p, x->b);
    for (int64_t r = 0; r < x->rows; r++) {
        const int64_t rr = x->qb * pl->Mq + r, i = rr / p->G, h = x->n2 * p->G + rr % p->G;
        for (int64_t d = 0; d < pl->Dk; d++) {
            const fia_view *v = d < p->D ? &p->q : &p->qr;
            const int64_t dd = d < p->D ? d : d - p->D;
            const uint16_t *src = (const uint16_t *)(const void *)v->data + fia_q_at(v, x->b, h, row0 + i);
            qt[((d / 2) * pl->Mq + r) * 2 + d % 2] = src[dd * v->sd];
        }
    }
}

/* The keys [j0, j0 + kc) query row i drops, -FLT_MAX in its scores (any
 * set where one is kept): a sparse mode's band in two runs, a user mask key
 * by key (a call per key cost a prompt as much as its scores' other work). */
static void mask_row(const fia_problem *p, const fia_item *x, int64_t i, int64_t j0, int64_t kc, float *row,
                     float *any)
{
    int64_t lo, hi;
    if (!fia_kept_band(p, x->b, i, x->L1, x->L2, &lo, &hi)) { /* a user mask: key by key, the band's rule once */
        const attn_band band = attn_band_of(&p->rule, x->b, x->L1, x->L2);
        for (int64_t c = 0; c < kc; c++) {
            if (fia_kept(p, &band, x->b, i, j0 + c)) *any = 1.0f;
            else row[c] = -FLT_MAX;
        }
        return;
    }
    const int64_t first = lo - j0 < 0 ? 0 : lo - j0 > kc ? kc : lo - j0;       /* the kept columns [first, end) */
    const int64_t end = hi + 1 - j0 < first ? first : hi + 1 - j0 > kc ? kc : hi + 1 - j0;
    for (int64_t c = 0; c < first; c++) row[c] = -FLT_MAX;
    for (int64_t c = end; c < kc; c++) row[c] = -FLT_MAX;
    if (first < end) *any = 1.0f;
}

/* S [Mq][ld] from the raw scores (element (r, c) at raw[r raw_r + c raw_c];
 * raw may be s): scale (and the cap), pse, ALiBi, mask (-FLT_MAX); any[r]
 * set where a key is kept. */
static void scores(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                   const float *raw, int64_t raw_r, int64_t raw_c, float *s, int64_t ld, float *any,
                   const fa_kernels *k)
{
    const bool all_kept = p->mask == FIA_MASK_NONE && !p->rule.active;
    const float scale = p->softcap > 0.0 ? 1.0f : (float)p->scale; /* the cap's kernel scales */
    if (raw_r == 1) k->transpose_scaled(raw, (int)raw_c, (int)pl->Mq, (int)kc, scale, s, (int)ld);
    else
        for (int64_t r = 0; r < pl->Mq; r++) {
            float *row = s + r * ld;
            for (int64_t c = 0; c < kc; c++) row[c] = scale * raw[r * raw_r + c];
        }
    if (p->softcap > 0.0) /* before the biases (flash-attn's order) */
        k->softcap(s, (int)x->rows, (int)kc, (int)ld, (float)(p->scale / p->softcap), (float)p->softcap, NULL);
    for (int64_t r = 0; r < x->rows; r++) {
        float *row = s + r * ld;
        const int64_t rr = x->qb * pl->Mq + r, i = rr / p->G, h = x->n2 * p->G + rr % p->G;
        for (int64_t c = 0; p->pse && c < kc; c++)
            row[c] += ao_load_f32(p->pse + (x->b * p->pse_sb + h * p->pse_sh + i * p->pse_si + (j0 + c) * p->pse_sj) *
                                      (int64_t)attnops_dtype_size(p->pse_dtype), p->pse_dtype);
        if (p->alibi) /* -slope g(|j0 + c - (i + shift)|): the kernel's one-row form, its scale 1 */
            k->add_alibi(row, 1, (int)kc, (int)ld, 1.0f, p->alibi[x->b * p->alibi_sb + h * p->alibi_sh],
                         (float)(j0 - i - fia_alibi_shift(p, x->L1, x->L2)), p->alibi_sqrt);
        if (all_kept) any[r] = 1.0f;
        else mask_row(p, x, i, j0, kc, row, any + r);
    }
}

/* The item's (m, l, any, O): Mq each, then Mq x Dv. */
typedef struct fia_partial {
    float *m, *l, *any, *o;
} fia_partial;

/* A tile for the f32 tile GEMMs: the keys and values widened and
 * dequantised into Kc, Vc (the tail of a last tile zero: padding scores, P
 * there is 0). */
static void widen_tile(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                       const fia_scratch *w, const fa_kernels *k)
{
    const int64_t kv0 = fia_kv_row0(p, x->b);
    for (int64_t c = 0; c < kc; c++) {
        float *kr = w->kc + c * pl->Dk;
        widen(&p->k, fia_kv_at(p, &p->k, x->b, x->n2, kv0, j0 + c), p->D, kr, k);
        if (p->kq.kind) dequant_row(&p->kq, x->b, x->n2, j0 + c, p->D, w->k_scale, w->k_offset, kr);
        if (p->Dr) widen(&p->kr, fia_kv_at(p, &p->kr, x->b, x->n2, kv0, j0 + c), p->Dr, kr + p->D, k);
        widen(&p->v, fia_kv_at(p, &p->v, x->b, x->n2, kv0, j0 + c), p->Dv, w->vc + c * p->Dv, k);
        if (p->vq.kind) dequant_row(&p->vq, x->b, x->n2, j0 + c, p->Dv, w->v_scale, w->v_offset, w->vc + c * p->Dv);
    }
    memset(w->kc + kc * pl->Dk, 0, sizeof(float) * (size_t)((FIA_KC - kc) * pl->Dk));
    memset(w->vc + kc * p->Dv, 0, sizeof(float) * (size_t)((FIA_KC - kc) * p->Dv));
}

/* Kc [KC][Dkp] bf16 for the bf16 tile GEMMs: the tile's key rows (and
 * rope columns) copied as they are; the pad column and the rows past kc
 * zero (their scores are never read, but a NaN there must not reach S^T). */
static void copy_keys_bf16(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                           uint16_t *kc16)
{
    const int64_t kv0 = fia_kv_row0(p, x->b);
    for (int64_t c = 0; c < kc; c++) {
        uint16_t *dst = kc16 + c * pl->Dkp;
        memcpy(dst, p->k.data + fia_kv_at(p, &p->k, x->b, x->n2, kv0, j0 + c) * p->k.es, (size_t)p->D * 2);
        if (p->Dr)
            memcpy(dst + p->D, p->kr.data + fia_kv_at(p, &p->kr, x->b, x->n2, kv0, j0 + c) * p->kr.es,
                   (size_t)p->Dr * 2);
        if (pl->Dkp > pl->Dk) dst[pl->Dk] = 0;
    }
    memset(kc16 + kc * pl->Dkp, 0, sizeof(uint16_t) * (size_t)((FIA_KC - kc) * pl->Dkp));
}

/* Vc [KC/2][Dv][2] bf16: the tile's value rows interleaved in pairs by
 * pack_rows_vnni, once per run of rows that are ss apart in the cache (the
 * whole tile when contiguous, the part in one block when paged; runs start
 * at even rows, bf16_tiles); rows past kc zero (P there is 0, and 0 times a
 * stale NaN would not be). */
static void pack_values_vnni(const fia_problem *p, const fia_item *x, int64_t j0, int64_t kc, uint16_t *vc16)
{
    const int64_t kv0 = fia_kv_row0(p, x->b);
    for (int64_t c = 0; c < kc;) {
        const int64_t in_block = p->paged ? p->block_size - (j0 + c) % p->block_size : kc - c;
        const int64_t valid = in_block < kc - c ? in_block : kc - c;
        const int64_t rows = c + valid == kc ? FIA_KC - c : valid; /* the last run takes the zero tail */
        const fa_view v = {(char *)(uintptr_t)(p->v.data + fia_kv_at(p, &p->v, x->b, x->n2, kv0, j0 + c) * p->v.es),
                           p->v.dtype, p->v.es, 0, 0, p->v.ss, p->v.sd};
        pack_rows_vnni(&v, 0, 0, 0, rows, valid, p->Dv, vc16 + c * p->Dv, p->Dv);
        c += valid;
    }
}

/* The tile's key rows in the cache, when they are a whole tile of rows ss
 * apart (contiguous, or in one block) and qk_cache takes them; else NULL. */
static const void *keys_in_cache(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc)
{
    if (!pl->keys_in_place || kc < FIA_KC || (p->paged && j0 % p->block_size + FIA_KC > p->block_size)) return NULL;
    return p->k.data + fia_kv_at(p, &p->k, x->b, x->n2, fia_kv_row0(p, x->b), j0) * p->k.es;
}

/* A tile for the tile GEMMs, once for all the item's query blocks: Vc
 * packed or widened; returns the key rows S^T = K . Qt takes (the cache's
 * own, or their copy Kc), *qk the GEMM that takes them. */
static const void *prepare_tile(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                                const fia_scratch *w, const tile_gemm **qk, const fa_kernels *k)
{
    *qk = &pl->qk;
    if (!pl->bf16) {
        widen_tile(p, pl, x, j0, kc, w, k);
        return w->kc;
    }
    pack_values_vnni(p, x, j0, kc, w->vc16);
    const void *keys = keys_in_cache(p, pl, x, j0, kc);
    if (keys) {
        *qk = &pl->qk_cache;
        return keys;
    }
    copy_keys_bf16(p, pl, x, j0, kc, w->kc16);
    return w->kc16;
}

/* One query block's scores on a prepared tile: S^T = K . Qt (w: the
 * block's query pack), then S; returns S's place. */
static float *tile_scores(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                          const fia_scratch *w, const void *keys, const tile_gemm *qk, float *any,
                          const fa_kernels *k)
{
    tile_gemm_run(qk, keys, pl->bf16 ? (const void *)w->q16 : (const void *)w->q, w->st);
    scores(p, pl, x, j0, kc, w->st, 1, pl->Mq, w->s, FIA_KC, any, k);
    return w->s;
}

/* O += P . Vc through the tile GEMMs: P rounded to bf16 first where the
 * operands are bf16 (to_bf16 into Pb for the bf16 kind; to bf16 values in
 * place for the f32 one), as the FA forward does. */
static void gemm_pv(const fia_plan *pl, const fia_scratch *w, float *s, float *o, const fa_kernels *k)
{
    if (pl->bf16) {
        k->to_bf16(s, (int)pl->Mq, FIA_KC, w->pb, FIA_KC, false);
        tile_gemm_run(&pl->pv, w->pb, w->vc16, o);
        return;
    }
    if (pl->round_p) k->round_bf16(s, (int)(pl->Mq * FIA_KC));
    tile_gemm_run(&pl->pv, s, w->vc, o);
}

/* Where row c of a key-like view's tile is. */
static void tile_rows(const fia_problem *p, const fia_view *v, const fia_item *x, int64_t j0, int64_t kc,
                      const void **rows)
{
    const int64_t kv0 = fia_kv_row0(p, x->b), step = v->ss * v->es;
    for (int64_t c = 0; c < kc;) { /* a run of rows ss apart: the tile, or its part in one block */
        const char *first = v->data + fia_kv_at(p, v, x->b, x->n2, kv0, j0 + c) * v->es;
        const int64_t left = p->paged ? p->block_size - (j0 + c) % p->block_size : kc - c;
        const int64_t run = left < kc - c ? left : kc - c;
        for (int64_t i = 0; i < run; i++) rows[c + i] = first + i * step;
        c += run;
    }
}

/* The per-key int8 scale and offset of the tile's keys (scale 1, offset 0 without). */
static void key_params(const fia_quant *q, const fia_item *x, int64_t j0, int64_t kc, float *scale, float *offset)
{
    for (int64_t c = 0; c < kc; c++) {
        double sc, off;
        fia_dequant(q, x->b, x->n2, j0 + c, 0, &sc, &off);
        scale[c] = (float)sc, offset[c] = (float)off;
    }
}

/* The few-row kernels' query block: per-channel int8 key scales folded into
 * Q (q' = q scale over the D columns) with k_fix[r] = q' . offset; a per-key
 * one needs k_fix[r] = sum_d q (s = scale_c (q . k + offset_c sum q)).
 * q' stays f32 (rounding it to bf16 for bf16 dot products would add an
 * error of bf16's unit roundoff to every score, above the scores' f32
 * contract); a per-key scale leaves a bf16 query's own values, which meet
 * int8 keys on bf16 dot products where the ISA has them. */
static void fold_key_quant(const fia_problem *p, const fia_plan *pl, const fia_scratch *w)
{
    for (int64_t r = 0; p->kq.kind && r < pl->Mq; r++) {
        float *q = w->q + r * pl->Dk, fix = 0.0f;
        for (int64_t d = 0; d < p->D; d++) {
            if (p->kq.kind == FIA_QUANT_CHANNEL) q[d] *= w->k_scale[d], fix += q[d] * w->k_offset[d];
            else fix += q[d];
        }
        w->k_fix[r] = fix;
    }
}

/* Keys a few-row kernel call takes: ~FIA_PF_BYTES of key and value rows,
 * each call asking for the rows that come next (`ahead`).  Measured on
 * Zen 4 (decode, 4096 keys, 2 threads): calls of whole tiles without
 * prefetching read the cache at ~50 % of the copy bandwidth on AVX2 and
 * ~65 % on AVX-512, the memory and the FMAs taking turns; 4 KiB calls
 * (16 bf16 rows of 128), each preceded by its prefetches, gave 1.2x to
 * 1.5x; the kernels asking key by key instead, another 1.05x to 1.25x
 * (the prefetches asked all at once had stalled the core); 16 KiB calls
 * did no better. */
static int64_t prefetch_chunk(const fia_problem *p)
{
    const int64_t kb = p->D * p->k.es, vb = p->Dv * p->v.es, row = kb > vb ? kb : vb;
    const int64_t keys = FIA_PF_BYTES / (row > 0 ? row : 1);
    return keys < 4 ? 4 : keys > 32 ? 32 : keys;
}

/* Asks for rows [c0, c0 + n) of a tile (into L2) at once, where no kernel
 * call goes by to ask for them key by key (its `ahead`). */
static void prefetch_rows(const void *const *rows, int64_t c0, int64_t n, int64_t bytes)
{
    for (int64_t c = c0; c < c0 + n; c++) fia_prefetch_row(rows[c], (int)bytes);
}

/* One tile through the few-row kernels on the cache in place: S = Q . K^T
 * (int8 keys dequantised through k_fix and the key's own pair), the rope
 * columns added, then scores(); S's rows ld apart (direct_ld). */
static float *direct_scores(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                            int64_t ld, const fia_scratch *w, float *any, const cpu_kernel_set *ks)
{
    const fia_kernels *fk = &ks->fia;
    const void *rows[FIA_KC], *values[FIA_KC];
    float *s = w->s;
    tile_rows(p, &p->k, x, j0, kc, rows);
    tile_rows(p, &p->v, x, j0, kc, values);
    const int64_t chunk = prefetch_chunk(p);
    for (int64_t c0 = 0; c0 < kc; c0 += chunk) {
        const int64_t n = kc - c0 < chunk ? kc - c0 : chunk;
        /* the tile's next keys: the split's first tile had no earlier tile to fetch them (on later tiles
         * they are on their way already and these prefetches are redundant, but cheap) */
        if (c0 + n < kc) prefetch_rows(rows, c0 + n, kc - (c0 + n) < chunk ? kc - (c0 + n) : chunk, p->D * p->k.es);
        fk->dot_rows(w->q, (int)pl->Mq, (int)pl->Dk, rows + c0, p->k.dtype, (int)p->D, (int)n, s + c0, (int)ld, false,
                     values + c0, (int)(p->Dv * p->v.es));
    }
    if (p->kq.kind == FIA_QUANT_CHANNEL) {
        for (int64_t r = 0; r < pl->Mq; r++)
            for (int64_t c = 0; c < kc; c++) s[r * ld + c] += w->k_fix[r];
    } else if (p->kq.kind) {
        float *scale = w->key_scale, *offset = w->key_offset;
        key_params(&p->kq, x, j0, kc, scale, offset);
        for (int64_t r = 0; r < pl->Mq; r++)
            for (int64_t c = 0; c < kc; c++)
                s[r * ld + c] = scale[c] * (s[r * ld + c] + offset[c] * w->k_fix[r]);
    }
    if (p->Dr) {
        tile_rows(p, &p->kr, x, j0, kc, rows);
        fk->dot_rows(w->q + p->D, (int)pl->Mq, (int)pl->Dk, rows, p->kr.dtype, (int)p->Dr, (int)kc, s, (int)ld, true,
                     NULL, 0);
    }
    scores(p, pl, x, j0, kc, s, ld, 1, s, ld, any, &ks->fa);
    return s;
}

/* O += P . V over the tile's value rows in place; a per-key int8 value
 * scale goes into P, its offset's share (sum_c p_c scale_c offset_c, scaled
 * by alpha as O is) into v_fix. */
static void direct_pv(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t j0, int64_t kc,
                      int64_t ld, const fia_scratch *w, float *o, const fia_kernels *fk)
{
    const void *rows[FIA_KC];
    if (p->vq.kind && p->vq.kind != FIA_QUANT_CHANNEL) {
        float *scale = w->key_scale, *offset = w->key_offset;
        key_params(&p->vq, x, j0, kc, scale, offset);
        for (int64_t r = 0; r < pl->Mq; r++) {
            float *pr = w->s + r * ld, fix = w->v_fix[r] * w->alpha[r];
            for (int64_t c = 0; c < kc; c++) pr[c] *= scale[c], fix += pr[c] * offset[c];
            w->v_fix[r] = fix;
        }
    }
    const void *keys[FIA_KC];
    const int64_t next = x->L2 - (j0 + kc) < FIA_KC ? x->L2 - (j0 + kc) : FIA_KC; /* the next tile's keys */
    tile_rows(p, &p->v, x, j0, kc, rows);
    if (next > 0) tile_rows(p, &p->k, x, j0 + kc, next, keys);
    const int64_t chunk = prefetch_chunk(p);
    for (int64_t c0 = 0; c0 < kc; c0 += chunk) {
        const int64_t n = kc - c0 < chunk ? kc - c0 : chunk;
        const bool ahead = next - c0 >= n; /* a next key for each of the call's */
        if (!ahead && c0 < next) prefetch_rows(keys, c0, next - c0, p->D * p->k.es);
        fk->axpy_rows(w->s + c0, (int)pl->Mq, (int)ld, rows + c0, p->v.dtype, (int)p->Dv, (int)n, o, (int)p->Dv,
                      p->q.dtype == ATTNOPS_DTYPE_BF16, ahead ? keys + c0 : NULL, (int)(p->D * p->k.es));
    }
}

/* The few-row path's value dequantisation of the item's O: per channel
 * O = scale (O + offset l) (l = sum_c p_c), per key O += v_fix. */
static void finish_values(const fia_problem *p, const fia_plan *pl, const fia_scratch *w, const fia_partial *part)
{
    for (int64_t r = 0; p->vq.kind && r < pl->Mq; r++) {
        float *o = part->o + r * p->Dv;
        for (int64_t d = 0; d < p->Dv; d++)
            o[d] = p->vq.kind == FIA_QUANT_CHANNEL ? w->v_scale[d] * (o[d] + w->v_offset[d] * part->l[r])
                                                   : o[d] + w->v_fix[r];
    }
}

/* Once the running maxima settle, every alpha is 1 and O needs no
 * rescaling (o * 1 = o exactly: skipping it changes no bit; the FA
 * forward's rule). */
static bool all_ones(const float *alpha, int64_t n)
{
    for (int64_t r = 0; r < n; r++)
        if (alpha[r] != 1.0f) return false;
    return true;
}

/* A block's partial result in the workspace, cleared: m -inf, l 0, no key
 * kept, O 0. */
static fia_partial partial_at(const fia_problem *p, const fia_plan *pl, float *partials, const fia_item *x)
{
    float *out = partials + (size_t)x->part * partial_floats(p, pl);
    const fia_partial part = {out, out + pl->Mq, out + 2 * pl->Mq, out + 3 * pl->Mq};
    for (int64_t r = 0; r < pl->Mq; r++) part.m[r] = -INFINITY, part.l[r] = 0.0f, part.any[r] = 0.0f;
    memset(part.o, 0, sizeof(float) * (size_t)(pl->Mq * p->Dv));
    return part;
}

/* The block's keys [*begin, *end): its split of the batch's keys. */
static void split_range(const fia_plan *pl, const fia_item *x, int64_t *begin, int64_t *end)
{
    *begin = x->split * pl->split_keys;
    *end = *begin + pl->split_keys < x->L2 ? *begin + pl->split_keys : x->L2;
}

/* The keys [*lo, *hi] some row of the block keeps (all of them under a user
 * mask): the sparse modes' bands move right with the row, so the first row's
 * start and the last row's end bound them.  Tiles outside it are all masked
 * for every row of the block and are skipped: a tile of -FLT_MAX scores
 * adds nothing (a kept key after it rescales its sums by 0), so skipping it
 * changes no row's result; a causal prompt does half the work. */
static void kept_keys(const fia_problem *p, const fia_plan *pl, const fia_item *x, int64_t *lo, int64_t *hi)
{
    const int64_t first = x->qb * pl->Mq / p->G, last = (x->qb * pl->Mq + x->rows - 1) / p->G;
    int64_t unused;
    *lo = 0, *hi = x->L2 - 1;
    if (!x->rows || !fia_kept_band(p, x->b, first, x->L1, x->L2, lo, &unused)) return;
    fia_kept_band(p, x->b, last, x->L1, x->L2, &unused, hi);
    *lo = *lo < 0 ? 0 : *lo;
    *hi = *hi > x->L2 - 1 ? x->L2 - 1 : *hi;
}

/* The split's keys [*begin, *end) cut to the tiles that touch [lo, hi]
 * (tiles keep their places: whole FIA_KC steps from the split's start). */
static void cut_to_kept(int64_t lo, int64_t hi, int64_t *begin, int64_t *end)
{
    if (lo > *begin) *begin += (lo - *begin) / FIA_KC * FIA_KC;
    if (hi + 1 < *end) *end = hi + 1;
}

/* One online-softmax step of a block on a tile's scores s (rows ld apart;
 * the kernel zeroes each row's columns [kc, ld)): P, (m, l), O rescaled. */
static void softmax_step(const fia_problem *p, const fia_plan *pl, const fia_partial *part, float *s, int64_t kc,
                         int64_t ld, float *alpha, const fa_kernels *k)
{
    k->softmax_fwd(s, (int)pl->Mq, (int)ld, (int)kc, 1.0f, part->m, part->l, alpha);
    if (!all_ones(alpha, pl->Mq)) k->scale_rows(part->o, (int)pl->Mq, (int)p->Dv, alpha);
}

/* The row stride of a few-row tile's S: its keys rounded up to a cache
 * line, not FIA_KC.  Nothing reads S past the tile's keys here (the GEMM
 * path's P . V takes whole FIA_KC rows), and the softmax exponentiates and
 * zeroes every column up to the stride: a short tile (a 16-key call) spent
 * 7/8 of its softmax on the padding.  The zero columns add nothing to the
 * row sums, so no bit changes. */
static int64_t direct_ld(int64_t kc) { return (kc + 15) / 16 * 16; }

/* A few-row block through the fia kernels on the cache in place. */
static void run_direct(const fia_problem *p, const fia_plan *pl, const fia_item *x, fia_scratch *w,
                       const fia_partial *part, const cpu_kernel_set *ks)
{
    int64_t j_begin, j_end, lo, hi;
    split_range(pl, x, &j_begin, &j_end);
    kept_keys(p, pl, x, &lo, &hi);
    cut_to_kept(lo, hi, &j_begin, &j_end);
    if (x->rows == 0 || j_begin >= j_end) return;
    pack_q(p, pl, x, w, &ks->fa);
    fold_key_quant(p, pl, w);
    memset(w->v_fix, 0, sizeof(float) * (size_t)pl->Mq);
    for (int64_t j0 = j_begin; j0 < j_end; j0 += FIA_KC) {
        const int64_t kc = j_end - j0 < FIA_KC ? j_end - j0 : FIA_KC;
        const int64_t ld = direct_ld(kc);
        float *s = direct_scores(p, pl, x, j0, kc, ld, w, part->any, ks);
        softmax_step(p, pl, part, s, kc, ld, w->alpha, &ks->fa);
        direct_pv(p, pl, x, j0, kc, ld, w, part->o, &ks->fia);
    }
    finish_values(p, pl, w, part);
}

/* The scratch of block g of an item: its own query pack. */
static fia_scratch block_scratch(const fia_scratch *w, const fia_plan *pl, int64_t g)
{
    fia_scratch b = *w;
    b.q = w->q + g * q_floats(pl), b.q16 = (uint16_t *)(void *)b.q;
    return b;
}

/* Work item `task` (b, n2, up to `group` query blocks, split): each block's
 * partial result into the workspace.  The tile GEMMs prepare every tile
 * once for all the blocks; the few-row kernels take one block. */
static void run_item(const fia_problem *p, const fia_plan *pl, int64_t task, float *ws, const float *channels,
                     float *partials, const cpu_kernel_set *ks)
{
    fia_scratch w = scratch_at(ws, p, pl);
    fia_item x[FIA_MAX_GROUP];
    fia_partial part[FIA_MAX_GROUP];
    const int64_t first = task / pl->splits % pl->qgroups * pl->group;
    const int64_t n = pl->qblocks - first < pl->group ? pl->qblocks - first : pl->group;
    if (n < 1) return; /* never: a task's group has a block */
    for (int64_t g = 0; g < n; g++) x[g] = item_of(p, pl, task, g), part[g] = partial_at(p, pl, partials, &x[g]);
    w.k_scale = channels + x[0].n2 * p->D, w.k_offset = w.k_scale + p->N2 * p->D;
    w.v_scale = channels + 2 * p->N2 * p->D + x[0].n2 * p->Dv, w.v_offset = w.v_scale + p->N2 * p->Dv;
    if (pl->few_rows) {
        run_direct(p, pl, &x[0], &w, &part[0], ks);
        return;
    }
    int64_t j_begin, j_end, lo[FIA_MAX_GROUP], hi[FIA_MAX_GROUP];
    split_range(pl, &x[0], &j_begin, &j_end);
    for (int64_t g = 0; g < n; g++) kept_keys(p, pl, &x[g], &lo[g], &hi[g]);
    int64_t last = n - 1; /* the last block with rows (block 0 holds rows if any does) */
    while (last > 0 && !x[last].rows) last--;
    cut_to_kept(lo[0], hi[last], &j_begin, &j_end);
    for (int64_t g = 0; g < n && j_begin < j_end; g++) {
        const fia_scratch wg = block_scratch(&w, pl, g);
        if (x[g].rows && pl->bf16) pack_q_vnni(p, pl, &x[g], wg.q16);
        else if (x[g].rows) pack_q(p, pl, &x[g], &wg, &ks->fa);
    }
    for (int64_t j0 = j_begin; j0 < j_end && x[0].rows; j0 += FIA_KC) { /* block 0 holds rows if any does */
        const int64_t kc = j_end - j0 < FIA_KC ? j_end - j0 : FIA_KC;
        const tile_gemm *qk;
        const void *keys = prepare_tile(p, pl, &x[0], j0, kc, &w, &qk, &ks->fa);
        for (int64_t g = 0; g < n && x[g].rows; g++) {
            if (j0 > hi[g] || j0 + kc <= lo[g]) continue; /* every row of the block drops the tile */
            const fia_scratch wg = block_scratch(&w, pl, g);
            float *s = tile_scores(p, pl, &x[g], j0, kc, &wg, keys, qk, part[g].any, &ks->fa);
            softmax_step(p, pl, &part[g], s, kc, FIA_KC, w.alpha, &ks->fa);
            gemm_pv(pl, &w, s, part[g].o, &ks->fa);
        }
    }
}

/* Row (b, h, query row i) from the splits' partials, rounded once. */
static void merge_row(const fia_problem *p, const fia_plan *pl, const float *partials, int64_t b, int64_t h,
                      int64_t i, float *acc, const cpu_kernel_set *ks)
{
    const int64_t n2 = h / p->G, rr = i * p->G + h % p->G, qb = rr / pl->Mq, r = rr % pl->Mq;
    const size_t stride = partial_floats(p, pl);
    const float *first = partials + (size_t)(((b * p->N2 + n2) * pl->qblocks + qb) * pl->splits) * stride;
    float mx = -INFINITY;
    int64_t kept = 0, last = 0;
    for (int64_t s = 0; s < pl->splits; s++) {
        const float *part = first + (size_t)s * stride;
        if (part[2 * pl->Mq + r] == 0.0f) continue; /* no key of the split kept */
        kept++, last = s;
        mx = part[r] > mx ? part[r] : mx;
    }
    /* One split kept (every row of a short call): 0 + 1 o is o, so the row is divided in place (the one
     * difference: an o of -0, an underflowed product, stays -0 where the sum made it +0). */
    const float *sum = acc, *one = first + (size_t)last * stride;
    float l = 0.0f;
    if (kept == 1) {
        sum = one + 3 * pl->Mq + r * p->Dv, l = one[pl->Mq + r];
    } else {
        for (int64_t d = 0; d < p->Dv; d++) acc[d] = 0.0f;
        for (int64_t s = 0; kept && s < pl->splits; s++) {
            const float *part = first + (size_t)s * stride;
            if (part[2 * pl->Mq + r] == 0.0f) continue;
            /* expf(0) is 1 exactly: the split holding the maximum needs no call */
            const float w = part[r] == mx ? 1.0f : expf(part[r] - mx), *o = part + 3 * pl->Mq + r * p->Dv;
            l += w * part[pl->Mq + r];
            for (int64_t d = 0; d < p->Dv; d++) acc[d] += w * o[d];
        }
    }
    /* The sink's logit joins the row's softmax: the keys' terms are divided by l + e^(sink - mx) (= l' /
     * e^(mx - mx'), mx' = max(mx, sink), l' the sum over mx'); without keys the row is the sink's alone. */
    float div = l;
    if (p->sink.data) {
        const float sink = (float)attn_sink_of(&p->sink, h), mx2 = sink > mx ? sink : mx;
        if (kept) div = l + expf(sink - mx), l = l * expf(mx - mx2) + expf(sink - mx2);
        else l = 1.0f;
        mx = mx2;
    }
    const int64_t row = fia_q_row0(p, b) + i, oa = fia_q_at(&p->out, b, h, row);
    char *dst = (char *)p->out.data;
    if (kept && p->out.sd == 1) /* the row's division and rounding in vectors, the same bits (element by
                                 * element it cost 48 us a call on 1 thread, a third of a 128-key step) */
        ks->ar.store_div(dst + oa * p->out.es, p->out.dtype, sum, div, (int)p->Dv);
    else
        for (int64_t d = 0; d < p->Dv; d++)
            ao_store_f32(dst + (oa + d * p->out.sd) * p->out.es, p->out.dtype, kept ? sum[d] / div : 0.0f);
    if (p->lse && p->lse_flag) /* logf if wanted */
        fia_write_lse(p, b, h, row, kept || p->sink.data ? mx + logf(l) : INFINITY);
    if (p->row_stats) p->row_stats(p->row_stats_ctx, b, h, i, mx, l);
}

/* Kv head n2's per-channel int8 rows into the call's channel table. */
static void channel_head(const fia_problem *p, float *channels, int64_t n2)
{
    float *k = channels + n2 * p->D, *v = channels + 2 * p->N2 * p->D + n2 * p->Dv;
    if (p->kq.kind == FIA_QUANT_CHANNEL) channel_rows(&p->kq, n2, p->D, k, k + p->N2 * p->D);
    if (p->vq.kind == FIA_QUANT_CHANNEL) channel_rows(&p->vq, n2, p->Dv, v, v + p->N2 * p->Dv);
}

/* Query head bh = (b, h): its rows merged from the splits, its padded rows emptied. */
static void merge_head(const fia_problem *p, const fia_plan *pl, const float *partials, int64_t bh, float *acc,
                       const cpu_kernel_set *ks)
{
    const int64_t b = bh / p->N1, h = bh % p->N1, L1 = fia_q_len(p, b);
    const int64_t padded_rows = p->layout == ATTNOPS_LAYOUT_TND ? 0 : p->S1;
    for (int64_t i = 0; i < L1; i++) merge_row(p, pl, partials, b, h, i, acc, ks);
    for (int64_t i = L1; i < padded_rows; i++) fia_empty_row(p, b, h, i);
}

void fia_cpu_run(const fia_problem *p, void *workspace)
{
    const cpu_kernel_set *ks = cpu_kernels();
    fia_plan pl = plan_of(p);
    if (!pl.few_rows) plan_gemms(p, &pl);
    float *base = (float *)ao_align_up((size_t)workspace, 64);
    float *partials = base + (size_t)p->threads * scratch_floats(p, &pl);
    float *channels = partials + (size_t)pl.items * partial_floats(p, &pl);
    /* No more threads than the widest pass has pieces of work.  With one, the passes run here, in the same
     * order: a parallel region of one thread still costs ~1.5 us (libgomp's barriers, one per pass, wake
     * their futex with a system call each), a third of a tiny call.  The team size changes no bit. */
    const int64_t quant_heads = p->kq.kind == FIA_QUANT_CHANNEL || p->vq.kind == FIA_QUANT_CHANNEL ? p->N2 : 0;
    int64_t widest = pl.tasks > p->B * p->N1 ? pl.tasks : p->B * p->N1;
    widest = quant_heads > widest ? quant_heads : widest;
    const int team = widest < p->team ? (int)widest : p->team;
    if (team <= 1) {
        for (int64_t n2 = 0; n2 < quant_heads; n2++) channel_head(p, channels, n2);
        for (int64_t task = 0; task < pl.tasks; task++) run_item(p, &pl, task, base, channels, partials, ks);
        for (int64_t bh = 0; bh < p->B * p->N1; bh++) merge_head(p, &pl, partials, bh, base, ks);
        return;
    }
#pragma omp parallel num_threads(team)
    {
        float *ws = base + (size_t)ao_thread_id() * scratch_floats(p, &pl);
#pragma omp for schedule(static)
        for (int64_t n2 = 0; n2 < quant_heads; n2++) channel_head(p, channels, n2);
#pragma omp for schedule(dynamic)
        for (int64_t task = 0; task < pl.tasks; task++) run_item(p, &pl, task, ws, channels, partials, ks);
#pragma omp for schedule(static)
        for (int64_t bh = 0; bh < p->B * p->N1; bh++) merge_head(p, &pl, partials, bh, ws, ks);
    }
}
