/* FlashAttention reference (spec sections 1.1, 1.2, 3, 4), written to read
 * like the math.  Per query row i of head h (kv head h / G) in batch b:
 *
 *   s[j]  = (q[i].k[j] + pse) * scale      (pse_type 1)
 *         =  q[i].k[j] * scale + pse       (pse_type 0, 2, 3)
 *   s[j]  = c tanh(q[i].k[j] scale / c) + bias   (softcap c > 0: bias = pse scale for
 *                                            pse_type 1, pse or the ALiBi term otherwise)
 *   s[j]  = -40000                          where masked(i, j)  (the golden's masked_fill)
 *   m     = max(max_j s[j], sink[h]);   l = sum_j exp(s[j] - m) + exp(sink[h] - m)
 *   P[j]  = exp(s[j] - m) / l;   o[i] = sum_j P[j] keep[j]/kp v[j]
 *   (sink: the attention sink's logit, -inf without one, so that its term
 *   is an added +0 and m the keys' maximum)
 *   (keep = the dropout mask of spec 5, all ones when keep_prob = 1)
 *
 * A fully masked row therefore gets uniform weights, unless the call uses
 * the sentinel behaviour (fa_mask_cfg.skip_invalid_rows): then a row whose
 * max is exactly -40000 gets o = 0, m = float lowest, l = float max.  In TND
 * the golden also zeroes masked entries of P after the softmax, so a fully
 * masked row keeps m = -40000, l = S2 but gets o = 0 and no gradient.
 *
 * Backward, from the given statistics m, l and attention_in o (as the CANN
 * kernel does); a row carrying the sentinel m contributes nothing:
 *
 *   P[j]  = exp(s[j] - m) / l;   dP[j] = dy[i].v[j] keep[j]/kp;   Drow = dy[i].o[i]
 *   dS[j] = P[j] (dP[j] - Drow)             (times 1 - tanh^2 of the cap under softcap)
 *   dq[i] = scale sum_j dS[j] k[j];  dk[j] += scale dS[j] q[i];  dv[j] += P[j] keep[j]/kp dy[i]
 *
 * A row with no keys (S2 = 0) gets the sentinels.
 *
 * impl BENCHMARK (p->chain_round) is the triple rule's benchmark chain: the
 * same computation with each small operator's result rounded to the I/O
 * dtype -- q.k, the biased and scaled score, s - m, exp, the row sum, P,
 * the dropped P, o, dy.v, Drow, dP - Drow, dS, scale dS and the summed
 * gradients -- as unfused operators in that dtype produce them.  R() is the
 * identity for the golden, so the golden's bits do not depend on it.
 *
 * FP8 inputs (spec 6) follow the golden's block structure, in double apart
 * from its quantisation points: q.k is de-quantised per (128-row, 128-key)
 * block, raw = (qf.kf) dsq[i] dsk[j]; the forward takes Pq = fp8(P keep/kp)
 * and o = sum_j Pq[j] vf[j] dsv[j]; the backward (fa_ref_backward_fp8_f64)
 * works on 128-row blocks so it can quantise dS per 128 x 128 tile.
 *
 * The double cores work on canonical arrays with every batch's rows stacked:
 * q [N1][T1][D], k [N2][T2][D], v [N2][T2][Dv], o, dy [N1][T1][Dv],
 * m, l [N1][T1]; batch b's rows start at canonical_q(b) / canonical_kv(b)
 * (b * S for the padded layouts, the cumulative length in TND). */
#include <math.h>
#include <string.h>

#include "fa/fa_dropout.h"
#include "fa/fa_fp8.h"
#include "fa/fa_mask.h"
#include "fa/fa_pse.h"
#include "ref/fa_ref.h"
#include "ref/ref_block.h"

/* The forward takes query rows fwd_rows() at a time against all keys (the
 * softmax needs whole rows), in three passes -- scores, exponentials, P and
 * O += P V -- the first and last a key chunk of REF_KC at a time, so the
 * block products run on cached rows; the backward takes keys REF_KC at a time
 * against every query row of the task, so that chunk's k, v, dk and dv stay
 * in cache.  Neither changes a sum's order (ref_block.h): dq's terms still
 * come in key order and dk's and dv's in query row order. */
enum { REF_ROWS = 64, REF_KC = 128, REF_FWD_ROWS_MAX = 256 };

/* The forward's query rows per block: each block streams all of k and v
 * once, so more rows mean less of that traffic (at S2 = 8192, 256 rows ran
 * the forward 13 % faster than 64; 512 no faster), but its scores take rows x S2
 * doubles: at most 64 MiB of them, never fewer than REF_ROWS rows. */
static int64_t fwd_rows(const fa_problem *p)
{
    const int64_t fit = ((int64_t)64 << 20) / (8 * (p->S2 > 0 ? p->S2 : 1));
    return fit > REF_FWD_ROWS_MAX ? REF_FWD_ROWS_MAX : fit < REF_ROWS ? REF_ROWS : fit;
}

/* Each thread's part of the scratch. */
static size_t thread_scratch(const fa_problem *p, bool backward)
{
    if (!backward) return (size_t)fwd_rows(p) * ((size_t)p->S2 + REF_KC) + REF_KC / 8; /* scores, chunk, keep */
    if (p->fp8) return (2 * FA_FP8_BLOCK + 1) * (size_t)p->S2;                         /* P, dS, keep bytes */
    return 2 * REF_ROWS * REF_KC + REF_KC / 8;                                         /* P, dS, keep bytes */
}

/* The part every thread reads: the non-FP8 backward's dy.o of each query row. */
static size_t shared_scratch(const fa_problem *p, bool backward)
{
    return backward && !p->fp8 ? (size_t)(p->N1 * p->T1) : 0;
}

size_t fa_ref_scratch_doubles(const fa_problem *p, bool backward)
{
    return shared_scratch(p, backward) + (size_t)p->threads * thread_scratch(p, backward);
}

/* An intermediate of the benchmark chain rounded to the I/O dtype; the
 * golden keeps it exact. */
static double R(const fa_problem *p, double x)
{
    if (!p->chain_round) return x;
    uint64_t bits;
    ao_store_f64(&bits, p->chain_round, x);
    return ao_load_f64(&bits, p->chain_round);
}

static int64_t canonical_q(const fa_problem *p, int64_t b) { return p->varlen ? fa_q_first(p, b) : b * p->S1; }
static int64_t canonical_kv(const fa_problem *p, int64_t b) { return p->varlen ? fa_kv_first(p, b) : b * p->S2; }

/* The score of (i, j) from q[i].k[j] (see the header comment).  Under
 * softcap, *slope (may be NULL) gets d score / d (scale raw): 1 - t^2, or 0
 * where masked (the fill is a constant). */
static double score(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i, int64_t j,
                    int64_t S1, int64_t S2, double raw, double *slope)
{
    if (slope) *slope = 0.0;
    /* the inactive mask and the absent pse tested here: they are the common case, and a call each per element
     * costs as much as the element's arithmetic */
    if (p->mask.rule.active && fa_is_masked(p, band, b, h, i, j)) return FA_MASK_FILL;
    double bias = p->pse.kind == FA_PSE_NONE ? 0.0 : R(p, fa_pse_value(p, b, h, i, j, S1, S2));
    raw = R(p, raw);
    if (p->softcap > 0.0) { /* the capped q.k term, then every bias in the units of the score */
        const double t = R(p, tanh(R(p, R(p, raw * p->scale) / p->softcap)));
        if (slope) *slope = R(p, 1.0 - R(p, t * t));
        const double capped = R(p, p->softcap * t);
        return p->pse.type == 1 ? R(p, capped + R(p, bias * p->scale)) : R(p, capped + bias);
    }
    return p->pse.type == 1 ? R(p, R(p, raw + bias) * p->scale) : R(p, R(p, raw * p->scale) + bias);
}

/* True when score() is only the scaling: no mask, pse, FP8 or chain
 * rounding.  The element loops then take a path without calls per element
 * (the golden's time at S = 8192 was as much these loops as its products). */
static bool plain_scores(const fa_problem *p)
{
    return !p->mask.rule.active && p->pse.kind == FA_PSE_NONE && !p->fp8 && !p->chain_round && p->softcap == 0.0;
}

/* score() of a plain problem, the same operations: the absent bias is an
 * added +0 (which turns a -0 product into +0). */
static inline double plain_score(const fa_problem *p, double raw)
{
    return p->pse.type == 1 ? (raw + 0.0) * p->scale : raw * p->scale + 0.0;
}

/* q.k of query row i (head h) and key j, de-quantised under FP8. */
static double dequant(const fa_problem *p, int64_t b, int64_t h, int64_t i, int64_t j, double qk)
{
    if (!p->fp8) return qk;
    return qk * fa_fp8_dscale(&p->dsq, b, h, i) * fa_fp8_dscale(&p->dsk, b, h / p->G, j);
}

void fa_ref_forward_f64(const fa_problem *p, const double *q, const double *k, const double *v, double *o, double *m,
                        double *l, double *scratch)
{
    const int64_t D = p->D, Dv = p->Dv, T1 = p->T1, T2 = p->T2;
    const size_t per_thread = thread_scratch(p, false);
    const int64_t rows_max = fwd_rows(p);
#pragma omp parallel for num_threads(p->team) schedule(dynamic) collapse(2)
    for (int64_t b = 0; b < p->B; b++) {
        for (int64_t h = 0; h < p->N1; h++) {
            /* s: rows_max x S2 scores, then exponentials; chunk: the rows_max x REF_KC block a product
             * writes or reads, contiguous (rows of s are S2 apart, a stride at which they share L1 sets) */
            double *s = scratch + (size_t)ao_thread_id() * per_thread, *chunk = s + rows_max * p->S2;
            uint8_t *keep = (uint8_t *)(chunk + rows_max * REF_KC);
            const int64_t S1 = fa_q_len(p, b), S2 = fa_kv_len(p, b);
            const int64_t qrow = h * T1 + canonical_q(p, b), kvrow = (h / p->G) * T2 + canonical_kv(p, b);
            const fa_dropout drop = fa_dropout_for(p);
            const fa_dropout_batch drop_at = fa_dropout_batch_of(p, &drop, b);
            const double *kh = k + kvrow * D, *vh = v + kvrow * Dv;
            const fa_band band = fa_band_of(p, b, S1, S2);
            const bool plain = plain_scores(p);
            for (int64_t i0 = 0; i0 < S1; i0 += rows_max) {
                const int64_t rows = S1 - i0 < rows_max ? S1 - i0 : rows_max;
                double mx[REF_FWD_ROWS_MAX], sum[REF_FWD_ROWS_MAX];
                bool live[REF_FWD_ROWS_MAX];
                for (int64_t r = 0; r < rows; r++) mx[r] = -INFINITY;
                for (int64_t j0 = 0; j0 < S2; j0 += REF_KC) { /* scores and row maxima, a key chunk at a time */
                    const int64_t kc = S2 - j0 < REF_KC ? S2 - j0 : REF_KC;
                    ref_dot_block(rows, kc, D, q + (qrow + i0) * D, D, kh + j0 * D, D, chunk, kc);
                    for (int64_t r = 0; plain && r < rows; r++)
                        for (int64_t j = j0; j < j0 + kc; j++) {
                            double *x = s + r * S2 + j;
                            *x = plain_score(p, chunk[r * kc + j - j0]);
                            mx[r] = *x > mx[r] ? *x : mx[r];
                        }
                    for (int64_t r = 0; !plain && r < rows; r++) {
                        const int64_t i = i0 + r;
                        for (int64_t j = j0; j < j0 + kc; j++) {
                            double *x = s + r * S2 + j;
                            *x = score(p, &band, b, h, i, j, S1, S2, dequant(p, b, h, i, j, chunk[r * kc + j - j0]), NULL);
                            mx[r] = *x > mx[r] ? *x : mx[r];
                        }
                    }
                }
                const double sink = attn_sink_of(&p->sink, h);
                for (int64_t r = 0; r < rows; r++) { /* each row's exponentials and sum */
                    const int64_t row = qrow + i0 + r;
                    double *sr = s + r * S2;
                    memset(o + row * Dv, 0, (size_t)Dv * sizeof(double));
                    live[r] = false;
                    if (S2 == 0 || (p->mask.skip_invalid_rows && mx[r] == FA_MASK_FILL)) { /* attends to nothing */
                        m[row] = FA_INVALID_ROW_MAX, l[row] = FA_INVALID_ROW_SUM;
                        continue;
                    }
                    live[r] = !(p->varlen && mx[r] == FA_MASK_FILL); /* TND: masked P forced to 0 */
                    mx[r] = sink > mx[r] ? sink : mx[r];
                    sum[r] = 0.0;
                    for (int64_t j = 0; j < S2; j++) sr[j] = R(p, exp(R(p, sr[j] - mx[r]))), sum[r] += sr[j];
                    sum[r] = R(p, sum[r] + R(p, exp(R(p, sink - mx[r])))); /* the sink's term last */
                    m[row] = mx[r], l[row] = sum[r];
                }
                for (int64_t j0 = 0; j0 < S2; j0 += REF_KC) { /* P (dropped), then O += P V, a key chunk at a time */
                    const int64_t kc = S2 - j0 < REF_KC ? S2 - j0 : REF_KC;
                    for (int64_t r = 0; r < rows; r++) /* rows without attention: P = 0 */
                        if (!live[r]) memset(chunk + r * kc, 0, (size_t)kc * sizeof(double));
                    for (int64_t r = 0; plain && !drop.active && r < rows; r++) {
                        const double *sr = s + r * S2 + j0;
                        double *pr = chunk + r * kc;
                        for (int64_t c = 0; live[r] && c < kc; c++) pr[c] = sr[c] / sum[r];
                    }
                    for (int64_t r = 0; !(plain && !drop.active) && r < rows; r++) {
                        if (!live[r]) continue;
                        const int64_t i = i0 + r;
                        if (drop.active)
                            fa_dropout_row(&drop, fa_dropout_row_start(&drop_at, h, i), j0, kc, keep);
                        for (int64_t j = j0; j < j0 + kc; j++) {
                            double pj = R(p, s[r * S2 + j] / sum[r]);
                            if (drop.active) pj = R(p, pj * (keep[j - j0] ? drop.scale_f64 : 0.0));
                            if (p->fp8) pj = fa_fp8_round(pj, p->dtype) * fa_fp8_dscale(&p->dsv, b, h / p->G, j);
                            chunk[r * kc + j - j0] = pj;
                        }
                    }
                    ref_gemm_acc(rows, Dv, kc, chunk, kc, 1, vh + j0 * Dv, Dv, o + (qrow + i0) * Dv, Dv);
                }
                for (int64_t r = 0; p->chain_round && r < rows; r++)
                    for (int64_t e = 0; e < Dv; e++) o[(qrow + i0 + r) * Dv + e] = R(p, o[(qrow + i0 + r) * Dv + e]);
            }
        }
    }
}

/* One task of the backward: kv head n2 of batch b, which owns dk/dv of that
 * head (zeroed here) and dq of its G query heads. */
typedef struct kv_task {
    int64_t S1, S2;
    const double *kh, *vh;
    double *dkh, *dvh;
    fa_band band;
    fa_dropout drop;
    fa_dropout_batch drop_at;
} kv_task;

static kv_task kv_task_begin(const fa_problem *p, const double *k, const double *v, double *dk, double *dv,
                             int64_t b, int64_t n2)
{
    kv_task t;
    t.drop = fa_dropout_for(p);
    t.drop_at = fa_dropout_batch_of(p, &t.drop, b);
    t.S1 = fa_q_len(p, b), t.S2 = fa_kv_len(p, b);
    const int64_t kvrow = n2 * p->T2 + canonical_kv(p, b);
    t.kh = k + kvrow * p->D, t.vh = v + kvrow * p->Dv;
    t.dkh = dk + kvrow * p->D, t.dvh = dv + kvrow * p->Dv;
    memset(t.dkh, 0, (size_t)(t.S2 * p->D) * sizeof(double));
    memset(t.dvh, 0, (size_t)(t.S2 * p->Dv) * sizeof(double));
    t.band = fa_band_of(p, b, t.S1, t.S2);
    return t;
}

/* The dropout keep bytes of query row i of head h against the task's keys. */
static void task_keep_row(const fa_problem *p, const kv_task *t, int64_t b, int64_t h, int64_t i, uint8_t *keep)
{
    if (t->drop.active)
        fa_dropout_row(&t->drop, fa_dropout_row_start(&t->drop_at, h, i), 0, t->S2, keep);
}

void fa_ref_backward_f64(const fa_problem *p, const double *q, const double *k, const double *v, const double *o,
                         const double *dy, const double *m, const double *l, double *dq, double *dk, double *dv,
                         double *scratch)
{
    const int64_t D = p->D, Dv = p->Dv, T1 = p->T1;
    const size_t per_thread = thread_scratch(p, true);
    /* drow = dy.o of every query row, which every kv chunk uses */
    double *drows = scratch;
    scratch += shared_scratch(p, true);
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t S1 = fa_q_len(p, b);
#pragma omp parallel for num_threads(p->team) collapse(2) schedule(static)
        for (int64_t h = 0; h < p->N1; h++)
            for (int64_t i = 0; i < S1; i++) {
                const int64_t row = h * T1 + canonical_q(p, b) + i;
                drows[row] = R(p, ref_dot(dy + row * Dv, o + row * Dv, Dv));
            }
    }
    /* One task per kv head: it owns dk/dv of that head and dq of its G query heads. */
#pragma omp parallel for num_threads(p->team) schedule(dynamic) collapse(2)
    for (int64_t b = 0; b < p->B; b++) {
        for (int64_t n2 = 0; n2 < p->N2; n2++) {
            /* P and G = scale dS of REF_ROWS query rows x REF_KC keys, one row's keep bytes */
            double *P = scratch + (size_t)ao_thread_id() * per_thread, *G = P + REF_ROWS * REF_KC;
            uint8_t *keep = (uint8_t *)(G + REF_ROWS * REF_KC);
            const kv_task t = kv_task_begin(p, k, v, dk, dv, b, n2);
            const bool plain = plain_scores(p);
            for (int64_t g = 0; g < p->G; g++)
                memset(dq + ((n2 * p->G + g) * T1 + canonical_q(p, b)) * D, 0, (size_t)(t.S1 * D) * sizeof(double));
            for (int64_t j0 = 0; j0 < t.S2; j0 += REF_KC) {
                const int64_t kc = t.S2 - j0 < REF_KC ? t.S2 - j0 : REF_KC;
                const double *kc_k = t.kh + j0 * D, *kc_v = t.vh + j0 * Dv;
                for (int64_t g = 0; g < p->G; g++) {
                    const int64_t h = n2 * p->G + g, qrow = h * T1 + canonical_q(p, b);
                    for (int64_t i0 = 0; i0 < t.S1; i0 += REF_ROWS) {
                        const int64_t rows = t.S1 - i0 < REF_ROWS ? t.S1 - i0 : REF_ROWS;
                        const double *qb = q + (qrow + i0) * D, *dyb = dy + (qrow + i0) * Dv;
                        ref_dot_block(rows, kc, D, qb, D, kc_k, D, P, kc);   /* q.k, becomes P */
                        ref_dot_block(rows, kc, Dv, dyb, Dv, kc_v, Dv, G, kc); /* dy.v, becomes G */
                        for (int64_t r = 0; r < rows; r++) {
                            const int64_t i = i0 + r, row = qrow + i;
                            const double drow = drows[row];
                            /* Rows with the sentinel, or TND rows with every key masked: P = 0. */
                            const bool no_p = m[row] == FA_INVALID_ROW_MAX || (p->varlen && m[row] == FA_MASK_FILL);
                            if (plain && !t.drop.active && !no_p) { /* the loop below, without calls */
                                double *Pr = P + r * kc, *Gr = G + r * kc;
                                for (int64_t c = 0; c < kc; c++) Pr[c] = exp(plain_score(p, Pr[c]) - m[row]);
                                for (int64_t c = 0; c < kc; c++) {
                                    const double pj = Pr[c] / l[row];
                                    Gr[c] = p->scale * (pj * (Gr[c] - drow));
                                    Pr[c] = pj;
                                }
                                continue;
                            }
                            if (t.drop.active)
                                fa_dropout_row(&t.drop, fa_dropout_row_start(&t.drop_at, h, i), j0, kc,
                                               keep);
                            for (int64_t c = 0; c < kc; c++) {
                                const int64_t j = j0 + c;
                                double slope;
                                const double s = score(p, &t.band, b, h, i, j, t.S1, t.S2, P[r * kc + c], &slope);
                                const double kept = t.drop.active ? (keep[c] ? t.drop.scale_f64 : 0.0) : 1.0;
                                const double pj = no_p ? 0.0 : R(p, R(p, exp(R(p, s - m[row]))) / l[row]);
                                const double dp = R(p, R(p, G[r * kc + c]) * kept);
                                const double ds = R(p, pj * R(p, dp - drow));
                                G[r * kc + c] = R(p, p->scale * (p->softcap > 0.0 ? R(p, ds * slope) : ds));
                                P[r * kc + c] = R(p, pj * kept); /* dv takes the dropped P */
                            }
                        }
                        ref_gemm_acc(rows, D, kc, G, kc, 1, kc_k, D, dq + (qrow + i0) * D, D);
                        ref_gemm_acc(kc, D, rows, G, 1, kc, qb, D, t.dkh + j0 * D, D);
                        ref_gemm_acc(kc, Dv, rows, P, 1, kc, dyb, Dv, t.dvh + j0 * Dv, Dv);
                    }
                }
            }
            for (int64_t g = 0; p->chain_round && g < p->G; g++) {
                double *dqh = dq + ((n2 * p->G + g) * T1 + canonical_q(p, b)) * D;
                for (int64_t x = 0; x < t.S1 * D; x++) dqh[x] = R(p, dqh[x]);
            }
            for (int64_t x = 0; p->chain_round && x < t.S2 * D; x++) t.dkh[x] = R(p, t.dkh[x]);
            for (int64_t x = 0; p->chain_round && x < t.S2 * Dv; x++) t.dvh[x] = R(p, t.dvh[x]);
        }
    }
}

/* The FP8 backward (spec 6, the golden's is_flash branch), per 128-row
 * block r of one query head, with Pq = fp8(P keep/kp) and the tile scales
 * sds(r, t) = FP8_MAX / max|dS| over the block's rows and key block t:
 *   dv[j] += sum_i Pq[i][j] dyf[i] dsdy[i]
 *   dP    = (dyf[i].vf[j]) dsdy[i] dsv[j] keep/kp;  Drow = sum_d o[i][d] dyf[i][d] dsdy[i]
 *   dS    = P (dP - Drow);  dSq = fp8(dS sds);  ids = 1 / sds (0 when sds = 0)
 *   dq[i] += scale dSq ids dsk[j] kf[j];  dk[j] += scale dSq ids dsq[i] qf[i]
 * scratch per thread: P and dS of a block, 2 * 128 * S2 doubles, + S2 bytes. */
void fa_ref_backward_fp8_f64(const fa_problem *p, const double *q, const double *k, const double *v, const double *o,
                             const double *dy, const double *m, const double *l, double *dq, double *dk, double *dv,
                             double *scratch)
{
    const int64_t D = p->D, Dv = p->Dv, T1 = p->T1, R = FA_FP8_BLOCK;
    const double fp8_max = fa_fp8_max(p->dtype);
#pragma omp parallel for num_threads(p->team) schedule(dynamic) collapse(2)
    for (int64_t b = 0; b < p->B; b++) {
        for (int64_t n2 = 0; n2 < p->N2; n2++) {
            double *P = scratch + (size_t)ao_thread_id() * thread_scratch(p, true), *dS = P + R * p->S2;
            uint8_t *keep = (uint8_t *)(dS + R * p->S2);
            const kv_task t = kv_task_begin(p, k, v, dk, dv, b, n2);
            for (int64_t g = 0; g < p->G; g++) {
                const int64_t h = n2 * p->G + g, qrow = h * T1 + canonical_q(p, b);
                for (int64_t i0 = 0; i0 < t.S1; i0 += R) {
                    const int64_t rows = t.S1 - i0 < R ? t.S1 - i0 : R;
                    const double dsq = fa_fp8_dscale(&p->dsq, b, h, i0), dsdy = fa_fp8_dscale(&p->dsdy, b, h, i0);
                    for (int64_t r = 0; r < rows; r++) { /* P, dS and dv of the block's rows */
                        const int64_t i = i0 + r, row = qrow + i;
                        const double *qi = q + row * D, *dyi = dy + row * Dv;
                        double drow = 0.0;
                        for (int64_t e = 0; e < Dv; e++) drow += o[row * Dv + e] * (dyi[e] * dsdy);
                        const bool no_p = m[row] == FA_INVALID_ROW_MAX;
                        task_keep_row(p, &t, b, h, i, keep);
                        for (int64_t j = 0; j < t.S2; j++) {
                            const double raw = dequant(p, b, h, i, j, ref_dot(qi, t.kh + j * D, D));
                            const double s = score(p, &t.band, b, h, i, j, t.S1, t.S2, raw, NULL); /* no softcap with FP8 */
                            const double kept = t.drop.active ? (keep[j] ? t.drop.scale_f64 : 0.0) : 1.0;
                            const double pj = no_p ? 0.0 : exp(s - m[row]) / l[row];
                            const double dsv = fa_fp8_dscale(&p->dsv, b, n2, j);
                            const double dp = ref_dot(dyi, t.vh + j * Dv, Dv) * dsdy * dsv * kept;
                            P[r * t.S2 + j] = pj;
                            dS[r * t.S2 + j] = pj * (dp - drow);
                            const double pq = fa_fp8_round(pj * kept, p->dtype) * dsdy;
                            for (int64_t e = 0; e < Dv; e++) t.dvh[j * Dv + e] += pq * dyi[e];
                        }
                    }
                    for (int64_t j0 = 0; j0 < t.S2; j0 += R) { /* one 128 x 128 tile of dS */
                        const int64_t cols = t.S2 - j0 < R ? t.S2 - j0 : R;
                        double mx = 0.0;
                        for (int64_t r = 0; r < rows; r++)
                            for (int64_t c = 0; c < cols; c++) mx = fmax(mx, fabs(dS[r * t.S2 + j0 + c]));
                        const double sds = mx < FA_FP8_EPSILON ? 0.0 : fp8_max / mx, ids = sds == 0.0 ? 0.0 : 1.0 / sds;
                        const double dsk = fa_fp8_dscale(&p->dsk, b, n2, j0);
                        for (int64_t r = 0; r < rows; r++) {
                            const int64_t row = qrow + i0 + r;
                            const double *qi = q + row * D;
                            double *dqi = dq + row * D;
                            if (j0 == 0) memset(dqi, 0, (size_t)D * sizeof *dqi);
                            for (int64_t c = 0; c < cols; c++) {
                                const int64_t j = j0 + c;
                                const double dsq_ = fa_fp8_round(dS[r * t.S2 + j] * sds, p->dtype) * ids * p->scale;
                                for (int64_t d = 0; d < D; d++) {
                                    dqi[d] += dsq_ * dsk * t.kh[j * D + d];
                                    t.dkh[j * D + d] += dsq_ * dsq * qi[d];
                                }
                            }
                        }
                    }
                    if (t.S2 == 0)
                        memset(dq + (qrow + i0) * D, 0, (size_t)(rows * D) * sizeof(double)); /* adjacent rows */
                }
            }
        }
    }
}

/* ---- glue between strided views and the canonical double arrays ---- */

typedef enum side { SIDE_Q, SIDE_KV } side;

/* Visits every (n, row, d) of a q-side or kv-side tensor: the canonical
 * index and the element in the view.  Rows in parallel: at S = 8192 the
 * conversions of the glue were a second of serial time per call. */
static void transfer(const fa_problem *p, const fa_view *v, side sd, int64_t N, int64_t D, double *canon, bool load)
{
    const int64_t T = sd == SIDE_Q ? p->T1 : p->T2;
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t len = sd == SIDE_Q ? fa_q_len(p, b) : fa_kv_len(p, b);
        const int64_t first = sd == SIDE_Q ? fa_q_first(p, b) : fa_kv_first(p, b);
        const int64_t crow = sd == SIDE_Q ? canonical_q(p, b) : canonical_kv(p, b);
#pragma omp parallel for num_threads(p->team) collapse(2) schedule(static)
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < len; s++) {
                double *x = canon + (n * T + crow + s) * D;
                const char *at = fa_at(v, b, n, first + s, 0);
                const int64_t step = v->sd * v->esize;
                for (int64_t d = 0; d < D; d++, at += step) {
                    if (load) x[d] = ao_load_f64(at, v->dtype);
                    else ao_store_f64((char *)at, v->dtype, x[d]);
                }
            }
    }
}

/* Statistics: one value per row, stored replicated 8 times. */
static void transfer_stats(const fa_problem *p, const fa_view *v, double *canon, bool load)
{
    for (int64_t b = 0; b < p->B; b++)
#pragma omp parallel for num_threads(p->team) collapse(2) schedule(static)
        for (int64_t n = 0; n < p->N1; n++)
            for (int64_t s = 0; s < fa_q_len(p, b); s++) {
                double *x = canon + n * p->T1 + canonical_q(p, b) + s;
                float *at = fa_stat(p, v, b, n, s);
                if (load) *x = at[0];
                else for (int r = 0; r < 8; r++) at[r * v->sd] = (float)*x;
            }
}

typedef struct ref_buffers {
    double *q, *k, *v, *o, *dy, *m, *l, *dq, *dk, *dv, *scratch;
} ref_buffers;

/* Carves the workspace; with ws == NULL it only measures.  Returns bytes. */
static size_t carve(const fa_problem *p, bool backward, void *ws, ref_buffers *b)
{
    const size_t nq = (size_t)(p->N1 * p->T1), nk = (size_t)(p->N2 * p->T2);
    const size_t sizes[] = {
        nq * p->D, nk * p->D, nk * p->Dv, nq * p->Dv, backward ? nq * p->Dv : 0, nq, nq,
        backward ? nq * p->D : 0, backward ? nk * p->D : 0, backward ? nk * p->Dv : 0,
        fa_ref_scratch_doubles(p, backward),
    };
    double **slots[] = {&b->q, &b->k, &b->v, &b->o, &b->dy, &b->m, &b->l, &b->dq, &b->dk, &b->dv, &b->scratch};
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *slots[i] = ws ? (double *)((char *)ws + off) : NULL;
        off += ao_align_up(sizes[i] * sizeof(double), 64);
    }
    return off;
}

size_t fa_ref_fwd_workspace(const fa_problem *p)
{
    ref_buffers b;
    return carve(p, false, NULL, &b);
}

size_t fa_ref_bwd_workspace(const fa_problem *p)
{
    ref_buffers b;
    return carve(p, true, NULL, &b);
}

void fa_ref_fwd(const fa_problem *p, void *ws)
{
    ref_buffers b;
    carve(p, false, ws, &b);
    transfer(p, &p->q, SIDE_Q, p->N1, p->D, b.q, true);
    transfer(p, &p->k, SIDE_KV, p->N2, p->D, b.k, true);
    transfer(p, &p->v, SIDE_KV, p->N2, p->Dv, b.v, true);
    fa_ref_forward_f64(p, b.q, b.k, b.v, b.o, b.m, b.l, b.scratch);
    transfer(p, &p->o, SIDE_Q, p->N1, p->Dv, b.o, false);
    transfer_stats(p, &p->smax, b.m, false);
    transfer_stats(p, &p->ssum, b.l, false);
}

void fa_ref_bwd(const fa_problem *p, void *ws)
{
    ref_buffers b;
    carve(p, true, ws, &b);
    transfer(p, &p->q, SIDE_Q, p->N1, p->D, b.q, true);
    transfer(p, &p->k, SIDE_KV, p->N2, p->D, b.k, true);
    transfer(p, &p->v, SIDE_KV, p->N2, p->Dv, b.v, true);
    transfer(p, &p->o, SIDE_Q, p->N1, p->Dv, b.o, true);
    transfer(p, &p->dy, SIDE_Q, p->N1, p->Dv, b.dy, true);
    transfer_stats(p, &p->smax, b.m, true);
    transfer_stats(p, &p->ssum, b.l, true);
    (p->fp8 ? fa_ref_backward_fp8_f64 : fa_ref_backward_f64)(p, b.q, b.k, b.v, b.o, b.dy, b.m, b.l, b.dq, b.dk, b.dv,
                                                             b.scratch);
    transfer(p, &p->dq, SIDE_Q, p->N1, p->D, b.dq, false);
    transfer(p, &p->dk, SIDE_KV, p->N2, p->D, b.dk, false);
    transfer(p, &p->dv, SIDE_KV, p->N2, p->Dv, b.dv, false);
}
