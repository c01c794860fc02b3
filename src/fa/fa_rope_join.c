/* The MLA rope join: fa_rope_join.h. */
#include <string.h>

#include "fa/fa_rope_join.h"

enum { JOIN_Q, JOIN_K, JOIN_DQ, JOIN_DK, JOIN_COUNT };

static int64_t join_rows(const fa_problem *p, int which)
{
    const bool q_side = which == JOIN_Q || which == JOIN_DQ;
    return p->varlen ? (q_side ? p->T1 : p->T2) : (q_side ? p->S1 : p->S2);
}

static int64_t join_heads(const fa_problem *p, int which)
{
    return which == JOIN_Q || which == JOIN_DQ ? p->N1 : p->N2;
}

static size_t join_piece_bytes(const fa_problem *p, int which)
{
    const int64_t batches = p->varlen ? 1 : p->B;
    return ao_align_up((size_t)(batches * join_heads(p, which) * join_rows(p, which) * (p->D + p->Dr)) *
                           attnops_dtype_size(p->dtype), 64);
}

static int join_pieces(bool backward) { return backward ? JOIN_COUNT : JOIN_DQ; }

size_t fa_rope_join_bytes(const fa_problem *p, bool backward)
{
    size_t total = 0;
    for (int w = 0; p->Dr && w < join_pieces(backward); w++) total += join_piece_bytes(p, w);
    return total;
}

static fa_view join_view(const fa_problem *p, int which, char *data)
{
    const int64_t Dt = p->D + p->Dr, rows = join_rows(p, which);
    const int64_t sn = rows * Dt, sb = p->varlen ? 0 : join_heads(p, which) * sn;
    return (fa_view){data, p->dtype, (int64_t)attnops_dtype_size(p->dtype), sb, sn, Dt, 1};
}

/* Columns [s_col0, s_col0 + cols) of every head row of src into dst's
 * columns [d_col0, d_col0 + cols); `which` gives the side's heads and rows. */
static void copy_columns(const fa_problem *p, int which, const fa_view *src, int64_t s_col0, const fa_view *dst,
                         int64_t d_col0, int64_t cols)
{
    const int64_t batches = p->varlen ? 1 : p->B, heads = join_heads(p, which), rows = join_rows(p, which);
    const size_t es = (size_t)src->esize;
    for (int64_t b = 0; b < batches; b++)
        for (int64_t n = 0; n < heads; n++)
            for (int64_t s = 0; s < rows; s++) {
                if (src->sd == 1 && dst->sd == 1) {
                    memcpy(fa_at(dst, b, n, s, d_col0), fa_at(src, b, n, s, s_col0), (size_t)cols * es);
                    continue;
                }
                for (int64_t c = 0; c < cols; c++)
                    memcpy(fa_at(dst, b, n, s, d_col0 + c), fa_at(src, b, n, s, s_col0 + c), es);
            }
}

fa_problem fa_rope_join_problem(const fa_problem *p, bool backward, char *area)
{
    fa_problem j = *p;
    if (!p->Dr) return j;
    j.D = p->D + p->Dr, j.Dr = 0;
    fa_view *views[JOIN_COUNT] = {&j.q, &j.k, &j.dq, &j.dk};
    for (int w = 0; w < join_pieces(backward); w++) {
        *views[w] = join_view(p, w, area);
        if (area) area += join_piece_bytes(p, w);
    }
    return j;
}

void fa_rope_join_inputs(const fa_problem *p, const fa_problem *j)
{
    if (!p->Dr) return;
    copy_columns(p, JOIN_Q, &p->q, 0, &j->q, 0, p->D);
    copy_columns(p, JOIN_Q, &p->qr, 0, &j->q, p->D, p->Dr);
    copy_columns(p, JOIN_K, &p->k, 0, &j->k, 0, p->D);
    copy_columns(p, JOIN_K, &p->kr, 0, &j->k, p->D, p->Dr);
}

void fa_rope_split_grads(const fa_problem *p, const fa_problem *j)
{
    if (!p->Dr) return;
    copy_columns(p, JOIN_DQ, &j->dq, 0, &p->dq, 0, p->D);
    copy_columns(p, JOIN_DQ, &j->dq, p->D, &p->dqr, 0, p->Dr);
    copy_columns(p, JOIN_DK, &j->dk, 0, &p->dk, 0, p->D);
    copy_columns(p, JOIN_DK, &j->dk, p->D, &p->dkr, 0, p->Dr);
}
