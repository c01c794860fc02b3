#include "fa/fa_dropout.h"

#include <math.h>

fa_dropout fa_dropout_make(int64_t seed, int64_t offset, double keep_prob)
{
    fa_dropout d = {0};
    d.active = keep_prob < 1.0;
    d.gen = ao_philox_make((uint64_t)seed, (uint64_t)offset);
    /* the kernel truncates the float32 product (spec 5.1) */
    d.threshold = (uint8_t)floorf((float)keep_prob * 255.0f);
    d.scale = 1.0f / (float)keep_prob;
    d.scale_f64 = 1.0 / (double)(float)keep_prob; /* keep_prob is a float32 attribute of the op */
    return d;
}

fa_dropout fa_dropout_for(const fa_problem *p)
{
    fa_dropout d = fa_dropout_make(p->seed, p->offset, p->keep_prob);
    d.bits = p->drop_bits;
    d.bit_stride = p->drop_bits_stride;
    return d;
}

static uint64_t row_width(const fa_dropout *d, int64_t s2) { return (uint64_t)(d->bits ? s2 : (s2 + 15) / 16 * 16); }

uint64_t fa_dropout_batch_base(const fa_problem *p, const fa_dropout *d, int64_t b)
{
    if (!p->varlen) return (uint64_t)(b * p->N1 * p->S1) * row_width(d, p->S2);
    uint64_t qk = 0;
    for (int64_t k = 0; k < b; k++) qk += (uint64_t)fa_q_len(p, k) * row_width(d, fa_kv_len(p, k));
    return (uint64_t)p->N1 * qk;
}

void fa_dropout_row(const fa_dropout *d, uint64_t row_start, int64_t j0, int64_t cols, uint8_t *keep)
{
    if (d->bits) {
        for (int64_t c = 0; c < cols; c++) {
            const uint64_t e = row_start + (uint64_t)(j0 + c);
            keep[c] = (d->bits[(int64_t)(e / 8) * d->bit_stride] >> (e % 8)) & 1u;
        }
        return;
    }
    ao_philox_bytes(&d->gen, row_start + (uint64_t)j0, (size_t)cols, keep);
    for (int64_t c = 0; c < cols; c++) keep[c] = keep[c] <= d->threshold;
}
