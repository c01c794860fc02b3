/* The attention sink's gradient (docs/NUMERICS.md, "Attention sinks"), shared
 * by both implementations: their backward passes need nothing else for a sink
 * (P = e^(s - m) / l with the sink's m and l already in the statistics).
 *
 *   out_i = sum_j e^(s_ij - m_i) v_j / l_i,  l_i including e^(sink[h] - m_i)
 *   d out_i / d sink[h] = -(e^(sink[h] - m_i) / l_i) out_i
 *   dsink[h] = -sum_{b, i} e^(sink[h] - m_i) / l_i * (dy_i . out_i)
 *
 * (with dropout out_i holds the dropped P, and the identity is the same).
 * Rows carrying the sentinel statistics attend to nothing and add nothing. */
#include "fa/fa_sink.h"

#include <math.h>

void fa_sink_grad(const fa_problem *p)
{
    if (!p->dsink) return;
    /* heads in parallel, each head's rows in (b, i) order: the same bits for any thread count */
#pragma omp parallel for num_threads(p->team) schedule(static)
    for (int64_t h = 0; h < p->N1; h++) {
        const double sink = attn_sink_of(&p->sink, h);
        double acc = 0.0;
        for (int64_t b = 0; b < p->B; b++) {
            const int64_t rows = fa_q_len(p, b), first = fa_q_first(p, b), vb = p->varlen ? 0 : b;
            for (int64_t i = 0; i < rows; i++) {
                const double m = *fa_stat(p, &p->smax, b, h, i), l = *fa_stat(p, &p->ssum, b, h, i);
                if (m == (double)(float)FA_INVALID_ROW_MAX) continue;
                double dot = 0.0;
                for (int64_t e = 0; e < p->Dv; e++)
                    dot += ao_load_f64(fa_at(&p->dy, vb, h, first + i, e), p->dy.dtype) *
                           ao_load_f64(fa_at(&p->o, vb, h, first + i, e), p->o.dtype);
                acc += exp(sink - m) / l * dot;
            }
        }
        p->dsink[h * p->dsink_stride] = (float)-acc;
    }
}
