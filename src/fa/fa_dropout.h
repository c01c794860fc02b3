/* Dropout (spec 5): which (b, h, i, j) are kept, bit-exact with the Ascend
 * 950 in-kernel mask, shared by the reference, the fast kernel and the
 * public mask call.
 *
 * Element (b, h, i, j) reads stream byte u at
 *   padded layouts: ((b*N1 + h)*S1 + i)*S2a + j,   S2a = ceil(S2 / 16) * 16
 *   TND:            N1*qk[b] + (h*S1_b + i)*S2a_b + j,   qk[b] = sum_{k<b} S1_k * S2a_k
 * and is kept iff u <= floor((float)keep_prob * 255) (kept values are
 * scaled by 1 / keep_prob in the forward P and the backward dP). */
#ifndef ATTNOPS_FA_DROPOUT_H
#define ATTNOPS_FA_DROPOUT_H

#include "core/philox.h"
#include "fa/fa_problem.h"

typedef struct fa_dropout {
    bool active;        /* keep_prob < 1 */
    ao_philox gen;
    uint8_t threshold;  /* keep iff byte <= threshold */
    float scale;        /* 1 / keep_prob, in fp32 as the kernel multiplies */
    double scale_f64;   /* the same for the reference */
} fa_dropout;

fa_dropout fa_dropout_make(int64_t seed, int64_t offset, double keep_prob);

/* Stream index of (b, h, i, 0): batch b's base plus the row's position.
 * fa_dropout_batch_base is O(B) in TND; call it once per batch. */
uint64_t fa_dropout_batch_base(const fa_problem *p, int64_t b);
static inline uint64_t fa_dropout_row_start(const fa_problem *p, int64_t b, uint64_t batch_base, int64_t h,
                                            int64_t i)
{
    const int64_t s1 = fa_q_len(p, b), s2a = (fa_kv_len(p, b) + 15) / 16 * 16;
    return batch_base + (uint64_t)((h * s1 + i) * s2a);
}

/* keep[c] = 1 for the kept elements (b, h, i, j0 + c), c < cols, of one row. */
void fa_dropout_row(const fa_dropout *d, uint64_t row_start, int64_t j0, int64_t cols, uint8_t *keep);

#endif
