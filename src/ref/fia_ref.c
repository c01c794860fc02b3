/* The FusedInferAttentionScore golden: per batch b, query head h (kv head
 * n2 = h / G) and query row i, the scores of every kept key in double,
 * their softmax and the weighted sum of the values, each output rounded
 * once.  O(S2 + Dv) doubles per thread; no tiling.
 *
 *   q [.., N1, S1, D] (+ query_rope Dr), k [.., N2, S2, D] (+ key_rope Dr),
 *   v [.., N2, S2, Dv], out [.., N1, S1, Dv], lse [B, N1, S1, 1] f32 (TND
 *   [T1, N1, 1]); layouts and the paged cache through fia_problem.h.
 *
 *   S[j] = scale (q . k_j + q_rope . k_rope_j) + pse[b|0][h][i][j]   (kept j)
 *   (softcap c > 0: the scaled term is c tanh(term / c) before the biases; ALiBi adds
 *   -slope[b|.][h] |i + L2 - L1 - j|, the attnops extensions)
 *   (int8 k and v dequantised first: (x + offset) scale, fia_dequant)
 *   out  = sum_j exp(S[j] - m) v_j / sum_j exp(S[j] - m),  lse = m + ln sum_j exp(S[j] - m)
 * A row with no kept key (and a query row past the batch's length) gives
 * out 0 and lse +inf. */
#include <math.h>

#include "fia/fia_problem.h"
#include "ref/fia_ref.h"

size_t fia_ref_workspace(const fia_problem *p)
{
    return (size_t)p->threads * (size_t)(p->S2 + p->Dv) * sizeof(double);
}

/* Element d of a key or value row at `at` (key position s of batch b, kv
 * head n2), dequantised when the cache is int8. */
static double kv_elem(const fia_view *v, const fia_quant *q, int64_t at, int64_t b, int64_t n2, int64_t s, int64_t d)
{
    const double x = ao_load_f64(v->data + (at + fia_d_at(v, d)) * v->es, v->dtype);
    if (q->kind == FIA_QUANT_NONE) return x;
    double scale, offset;
    fia_dequant(q, b, n2, s, d, &scale, &offset);
    return (x + offset) * scale;
}

/* q row (at qa) . key row (at ka) over n dims. */
static double dot(const fia_view *qv, int64_t qa, const fia_view *kv, const fia_quant *kq, int64_t ka, int64_t b,
                  int64_t n2, int64_t s, int64_t n)
{
    double sum = 0.0;
    for (int64_t d = 0; d < n; d++)
        sum += ao_load_f64(qv->data + (qa + d * qv->sd) * qv->es, qv->dtype) * kv_elem(kv, kq, ka, b, n2, s, d);
    return sum;
}

/* Element d of the output row at oa (the output's data is writable; the view keeps it const). */
static void store_out(const fia_problem *p, int64_t oa, int64_t d, double value)
{
    ao_store_f64((char *)p->out.data + (oa + d * p->out.sd) * p->out.es, p->out.dtype, value);
}

/* One query row: scores into s (S2), the output row and lse. */
static void attend_row(const fia_problem *p, int64_t b, int64_t h, int64_t i, int64_t L1, int64_t L2, double *s,
                       double *acc)
{
    const int64_t n2 = h / p->G, q_row = fia_q_row0(p, b) + i, kv0 = fia_kv_row0(p, b);
    const int64_t qa = fia_q_at(&p->q, b, h, q_row), qra = p->qr.data ? fia_q_at(&p->qr, b, h, q_row) : 0;
    const attn_band band = attn_band_of(&p->rule, b, L1, L2);
    double m = -INFINITY;
    for (int64_t j = 0; j < L2; j++) {
        s[j] = -INFINITY;
        if (!fia_kept(p, &band, b, i, j)) continue;
        static const fia_quant none = {0};
        double qk = dot(&p->q, qa, &p->k, &p->kq, fia_kv_at(p, &p->k, b, n2, kv0, j), b, n2, j, p->D);
        if (p->qr.data) qk += dot(&p->qr, qra, &p->kr, &none, fia_kv_at(p, &p->kr, b, n2, kv0, j), b, n2, j, p->Dr);
        s[j] = p->scale * qk;
        if (p->softcap > 0.0) s[j] = p->softcap * tanh(s[j] / p->softcap);
        if (p->pse)
            s[j] += ao_load_f64(p->pse + (b * p->pse_sb + h * p->pse_sh + i * p->pse_si + j * p->pse_sj) *
                                    (int64_t)attnops_dtype_size(p->pse_dtype), p->pse_dtype);
        if (p->alibi) {
            const double dist = fabs((double)(i - j + fia_alibi_shift(p, L1, L2)));
            s[j] -= (double)p->alibi[b * p->alibi_sb + h * p->alibi_sh] * (p->alibi_sqrt ? sqrt(dist) : dist);
        }
        m = s[j] > m ? s[j] : m;
    }
    const double sink = attn_sink_of(&p->sink, h); /* -inf without one: its term is 0 */
    m = sink > m ? sink : m;
    for (int64_t d = 0; d < p->Dv; d++) acc[d] = 0.0;
    double sum = 0.0;
    for (int64_t j = 0; j < L2 && m > -INFINITY; j++) {
        if (s[j] == -INFINITY) continue;
        const double w = exp(s[j] - m);
        const int64_t va = fia_kv_at(p, &p->v, b, n2, kv0, j);
        sum += w;
        for (int64_t d = 0; d < p->Dv; d++) acc[d] += w * kv_elem(&p->v, &p->vq, va, b, n2, j, d);
    }
    if (m > -INFINITY) sum += exp(sink - m); /* the sink's term last */
    const int64_t oa = fia_q_at(&p->out, b, h, q_row);
    for (int64_t d = 0; d < p->Dv; d++) store_out(p, oa, d, sum > 0.0 ? acc[d] / sum : 0.0);
    fia_write_lse(p, b, h, q_row, sum > 0.0 ? m + log(sum) : INFINITY);
}

void fia_ref_run(const fia_problem *p, void *workspace)
{
    const int64_t rows = p->layout == ATTNOPS_LAYOUT_TND ? 0 : p->S1; /* padded layouts: every row is written */
#pragma omp parallel for num_threads(p->team) schedule(dynamic)
    for (int64_t bh = 0; bh < p->B * p->N1; bh++) {
        double *s = (double *)workspace + (size_t)ao_thread_id() * (size_t)(p->S2 + p->Dv), *acc = s + p->S2;
        const int64_t b = bh / p->N1, h = bh % p->N1, L1 = fia_q_len(p, b), L2 = fia_kv_len(p, b);
        for (int64_t i = 0; i < L1; i++) attend_row(p, b, h, i, L1, L2, s, acc);
        for (int64_t i = L1; i < rows; i++) fia_empty_row(p, b, h, i); /* past the batch's query length */
    }
}
