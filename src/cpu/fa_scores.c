#include "cpu/fa_scores.h"

#include "cpu/kernels.h"
#include "fa/fa_pse.h"

void fa_scores_prefetch(const fa_problem *p, const fa_tile_pos *t)
{
    const fa_pse_cfg *c = &p->pse;
    if (c->kind != FA_PSE_TENSOR || c->bias.ss == 0) return;
    const int64_t row_bytes = t->cols * c->bias.esize * c->bias.sd;
    for (int r = 0; r < t->rows; r++) {
        const char *row = fa_at(&c->bias, t->b, t->h, t->q0 + r, t->k0);
        for (int64_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(row + off);
    }
}

void fa_scores_apply(const fa_problem *p, const fa_band *band, const fa_tile_pos *t, fa_tile_class cls, float *s,
                     int ld, float *bias, uint8_t *masked)
{
    const fa_kernels *kern = &cpu_kernels()->fa;
    const fa_pse_cfg *c = &p->pse;
    const float scale = (float)p->scale;
    switch (c->kind) {
    case FA_PSE_SLOPES:
        kern->add_alibi(s, t->rows, t->cols, ld, scale, fa_pse_slope(p, t->b, t->h),
                        (float)(t->k0 - t->q0 + fa_pse_shift(p, t->b)), c->type == 3);
        break;
    case FA_PSE_TENSOR:
        if (c->bias.sd == 1) { /* read in place (BN1S: row stride 0) */
            kern->add_bias(s, t->rows, t->cols, ld, scale, fa_at(&c->bias, t->b, t->h, t->q0, t->k0), c->bias.dtype,
                           c->bias.ss, c->type == 1);
            break;
        }
        /* strided columns: gather into the scratch tile first */
        __attribute__((fallthrough));
    case FA_PSE_ALIBI_1024:
        fa_pse_tile(p, t->b, t->h, t->q0, t->rows, t->k0, t->cols, t->S1, t->S2, bias, ld);
        kern->add_bias(s, t->rows, t->cols, ld, scale, bias, ATTNOPS_DTYPE_F32, ld, c->type == 1);
        break;
    default: /* no bias: the scale alone */
        for (int r = 0; r < t->rows; r++)
            for (int x = 0; x < t->cols; x++) s[(size_t)r * ld + x] *= scale;
        break;
    }
    if (cls == FA_TILE_FULL) return;
    const float fill = (float)FA_MASK_FILL;
    if (cls == FA_TILE_EMPTY) {
        for (int r = 0; r < t->rows; r++)
            for (int x = 0; x < t->cols; x++) s[(size_t)r * ld + x] = fill;
        return;
    }
    if (!band->elements) { /* a band: each row keeps one run of columns (plus the prefix) */
        for (int r = 0; r < t->rows; r++) {
            float *row = s + (size_t)r * ld;
            /* masked: columns outside [lo, hi], except those before `keep` (the prefix) */
            const int64_t i = t->q0 + r, keep = band->prefix - t->k0 > 0 ? band->prefix - t->k0 : 0;
            const int64_t lo = i - band->pre - t->k0, hi = i + band->next - t->k0;
            for (int64_t x = keep; x < lo && x < t->cols; x++) row[x] = fill;
            for (int64_t x = hi + 1 > keep ? hi + 1 : keep; x < t->cols; x++) row[x] = fill;
        }
        return;
    }
    for (int r = 0; r < t->rows; r++) {
        float *row = s + (size_t)r * ld;
        fa_mask_row(p, band, t->b, t->h, t->q0 + r, t->k0, t->cols, masked);
        for (int x = 0; x < t->cols; x++)
            if (masked[x]) row[x] = fill;
    }
}
