/* FlashAttention reference (spec sections 1.1, 1.2, 3, 4), written to read
 * like the math.  Per query row i of head h (kv head h / G) in batch b:
 *
 *   s[j]  = (q[i].k[j] + pse) * scale      (pse_type 1)
 *         =  q[i].k[j] * scale + pse       (pse_type 0, 2, 3)
 *   s[j]  = -40000                          where masked(i, j)  (the golden's masked_fill)
 *   m     = max_j s[j];   l = sum_j exp(s[j] - m)
 *   P[j]  = exp(s[j] - m) / l;   o[i] = sum_j P[j] v[j]
 *
 * A fully masked row therefore gets uniform weights, unless the call uses
 * the sentinel behaviour (fa_mask_cfg.skip_invalid_rows): then a row whose
 * max is exactly -40000 gets o = 0, m = float lowest, l = float max.
 *
 * Backward, from the given statistics m, l and attention_in o (as the CANN
 * kernel does); a row carrying the sentinel m contributes nothing:
 *
 *   P[j]  = exp(s[j] - m) / l;   dP[j] = dy[i].v[j];   Drow = dy[i].o[i]
 *   dS[j] = P[j] (dP[j] - Drow)
 *   dq[i] = scale sum_j dS[j] k[j];  dk[j] += scale dS[j] q[i];  dv[j] += P[j] dy[i]
 *
 * A row with no keys (S2 = 0) gets the sentinels. */
#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "fa/fa_mask.h"
#include "fa/fa_pse.h"
#include "ref/fa_ref.h"

static int thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* The score of (i, j) from q[i].k[j] (see the header comment). */
static double score(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i, int64_t j, double raw)
{
    if (fa_is_masked(p, band, b, h, i, j)) return FA_MASK_FILL;
    double bias = fa_pse_value(p, b, h, i, j, p->S1, p->S2);
    return p->pse.type == 1 ? (raw + bias) * p->scale : raw * p->scale + bias;
}

void fa_ref_forward_f64(const fa_problem *p, const double *q, const double *k, const double *v, double *o, double *m,
                        double *l, double *scratch)
{
    const int64_t S1 = p->S1, S2 = p->S2, D = p->D, Dv = p->Dv;
#pragma omp parallel for num_threads(p->threads) schedule(dynamic) collapse(2)
    for (int64_t b = 0; b < p->B; b++) {
        for (int64_t h = 0; h < p->N1; h++) {
            double *s = scratch + (size_t)thread_id() * (size_t)S2;
            const int64_t kv = b * p->N2 + h / p->G, qh = b * p->N1 + h;
            const double *kh = k + kv * S2 * D, *vh = v + kv * S2 * Dv;
            const fa_band band = fa_band_of(p, b, S1, S2);
            for (int64_t i = 0; i < S1; i++) {
                const double *qi = q + (qh * S1 + i) * D;
                double *oi = o + (qh * S1 + i) * Dv;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j < S2; j++) {
                    s[j] = score(p, &band, b, h, i, j, dot(qi, kh + j * D, D));
                    if (s[j] > mx) mx = s[j];
                }
                memset(oi, 0, (size_t)Dv * sizeof *oi);
                if (S2 == 0 || (p->mask.skip_invalid_rows && mx == FA_MASK_FILL)) { /* attends to nothing */
                    m[qh * S1 + i] = FA_INVALID_ROW_MAX;
                    l[qh * S1 + i] = FA_INVALID_ROW_SUM;
                    continue;
                }
                for (int64_t j = 0; j < S2; j++) sum += exp(s[j] - mx);
                for (int64_t j = 0; j < S2; j++) {
                    double pj = exp(s[j] - mx) / sum;
                    for (int64_t e = 0; e < Dv; e++) oi[e] += pj * vh[j * Dv + e];
                }
                m[qh * S1 + i] = mx;
                l[qh * S1 + i] = sum;
            }
        }
    }
}

void fa_ref_backward_f64(const fa_problem *p, const double *q, const double *k, const double *v, const double *o,
                         const double *dy, const double *m, const double *l, double *dq, double *dk, double *dv,
                         double *scratch)
{
    const int64_t S1 = p->S1, S2 = p->S2, D = p->D, Dv = p->Dv;
    /* One task per kv head: it owns dk/dv of that head and dq of its G query heads. */
#pragma omp parallel for num_threads(p->threads) schedule(dynamic) collapse(2)
    for (int64_t b = 0; b < p->B; b++) {
        for (int64_t n2 = 0; n2 < p->N2; n2++) {
            double *P = scratch + (size_t)thread_id() * 2 * (size_t)S2, *dS = P + S2;
            const int64_t kv = b * p->N2 + n2;
            const double *kh = k + kv * S2 * D, *vh = v + kv * S2 * Dv;
            double *dkh = dk + kv * S2 * D, *dvh = dv + kv * S2 * Dv;
            memset(dkh, 0, (size_t)(S2 * D) * sizeof *dkh);
            memset(dvh, 0, (size_t)(S2 * Dv) * sizeof *dvh);
            const fa_band band = fa_band_of(p, b, S1, S2);
            for (int64_t g = 0; g < p->G; g++) {
                const int64_t h = n2 * p->G + g, qh = b * p->N1 + h;
                for (int64_t i = 0; i < S1; i++) {
                    const int64_t row = qh * S1 + i;
                    const double *qi = q + row * D, *dyi = dy + row * Dv;
                    double *dqi = dq + row * D;
                    const double drow = dot(dyi, o + row * Dv, Dv);
                    const bool sentinel = m[row] == FA_INVALID_ROW_MAX; /* attends to nothing */
                    for (int64_t j = 0; j < S2; j++) {
                        double s = score(p, &band, b, h, i, j, dot(qi, kh + j * D, D));
                        P[j] = sentinel ? 0.0 : exp(s - m[row]) / l[row];
                        dS[j] = P[j] * (dot(dyi, vh + j * Dv, Dv) - drow);
                    }
                    memset(dqi, 0, (size_t)D * sizeof *dqi);
                    for (int64_t j = 0; j < S2; j++) {
                        for (int64_t d = 0; d < D; d++) {
                            dqi[d] += p->scale * dS[j] * kh[j * D + d];
                            dkh[j * D + d] += p->scale * dS[j] * qi[d];
                        }
                        for (int64_t e = 0; e < Dv; e++) dvh[j * Dv + e] += P[j] * dyi[e];
                    }
                }
            }
        }
    }
}

/* ---- glue between strided views and the contiguous double cores ---- */

static void gather(const fa_view *v, int64_t B, int64_t N, int64_t S, int64_t D, double *out)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++) *out++ = ao_load_f64(fa_at(v, b, n, s, d), v->dtype);
}

static void scatter(const fa_view *v, int64_t B, int64_t N, int64_t S, int64_t D, const double *in)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++) ao_store_f64(fa_at(v, b, n, s, d), v->dtype, *in++);
}

/* Statistics: one value per row, stored replicated 8 times. */
static void gather_stats(const fa_view *v, const fa_problem *p, double *out)
{
    gather(v, p->B, p->N1, p->S1, 1, out);
}

static void scatter_stats(const fa_view *v, const fa_problem *p, const double *in)
{
    for (int r = 0; r < 8; r++) {
        fa_view replica = *v;
        replica.data = fa_at(v, 0, 0, 0, r);
        scatter(&replica, p->B, p->N1, p->S1, 1, in);
    }
}

typedef struct ref_buffers {
    double *q, *k, *v, *o, *dy, *m, *l, *dq, *dk, *dv, *scratch;
} ref_buffers;

/* Carves the workspace; with ws == NULL it only measures.  Returns bytes. */
static size_t carve(const fa_problem *p, bool backward, void *ws, ref_buffers *b)
{
    const size_t nq = (size_t)(p->B * p->N1 * p->S1), nk = (size_t)(p->B * p->N2 * p->S2);
    const size_t sizes[] = {
        nq * p->D, nk * p->D, nk * p->Dv, nq * p->Dv, backward ? nq * p->Dv : 0, nq, nq,
        backward ? nq * p->D : 0, backward ? nk * p->D : 0, backward ? nk * p->Dv : 0,
        (size_t)p->threads * (size_t)p->S2 * (backward ? 2 : 1),
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
    gather(&p->q, p->B, p->N1, p->S1, p->D, b.q);
    gather(&p->k, p->B, p->N2, p->S2, p->D, b.k);
    gather(&p->v, p->B, p->N2, p->S2, p->Dv, b.v);
    fa_ref_forward_f64(p, b.q, b.k, b.v, b.o, b.m, b.l, b.scratch);
    scatter(&p->o, p->B, p->N1, p->S1, p->Dv, b.o);
    scatter_stats(&p->smax, p, b.m);
    scatter_stats(&p->ssum, p, b.l);
}

void fa_ref_bwd(const fa_problem *p, void *ws)
{
    ref_buffers b;
    carve(p, true, ws, &b);
    gather(&p->q, p->B, p->N1, p->S1, p->D, b.q);
    gather(&p->k, p->B, p->N2, p->S2, p->D, b.k);
    gather(&p->v, p->B, p->N2, p->S2, p->Dv, b.v);
    gather(&p->o, p->B, p->N1, p->S1, p->Dv, b.o);
    gather(&p->dy, p->B, p->N1, p->S1, p->Dv, b.dy);
    gather_stats(&p->smax, p, b.m);
    gather_stats(&p->ssum, p, b.l);
    fa_ref_backward_f64(p, b.q, b.k, b.v, b.o, b.dy, b.m, b.l, b.dq, b.dk, b.dv, b.scratch);
    scatter(&p->dq, p->B, p->N1, p->S1, p->D, b.dq);
    scatter(&p->dk, p->B, p->N2, p->S2, p->D, b.dk);
    scatter(&p->dv, p->B, p->N2, p->S2, p->Dv, b.dv);
}
