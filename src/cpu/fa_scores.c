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

/* Writes the fill (and a zero slope) over columns [from, to) of row r. */
static void fill_run(float *s, float *dtanh, int ld, int r, int64_t from, int64_t to)
{
    for (int64_t x = from; x < to; x++) s[(size_t)r * ld + x] = (float)FA_MASK_FILL;
    for (int64_t x = from; dtanh && x < to; x++) dtanh[(size_t)r * ld + x] = 0.0f;
}

void fa_scores_apply(const fa_problem *p, const fa_band *band, const fa_tile_pos *t, fa_tile_class cls, float *s,
                     int ld, float *bias, uint8_t *masked, float *dtanh)
{
    const fa_kernels *kern = &cpu_kernels()->fa;
    const fa_pse_cfg *c = &p->pse;
    float scale = (float)p->scale;
    if (p->softcap > 0.0 && cls != FA_TILE_EMPTY) {
        /* The cap first, then the bias in the score's units: pse_type 1's (q.k + pse) scale takes the capped
         * term divided by the scale, (c t / scale + pse) scale; the others c t + bias (scale 1 below). */
        const bool pse_scaled = c->kind != FA_PSE_NONE && c->type == 1;
        kern->softcap(s, t->rows, t->cols, ld, (float)(p->scale / p->softcap),
                      (float)(pse_scaled ? p->softcap / p->scale : p->softcap), dtanh);
        if (!pse_scaled) scale = 1.0f;
    }
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
    default: /* no bias: the scale alone (1 after the cap) */
        for (int r = 0; scale != 1.0f && r < t->rows; r++)
            for (int x = 0; x < t->cols; x++) s[(size_t)r * ld + x] *= scale;
        break;
    }
    if (cls == FA_TILE_FULL) return;
    if (cls == FA_TILE_EMPTY) {
        for (int r = 0; r < t->rows; r++) fill_run(s, dtanh, ld, r, 0, t->cols);
        return;
    }
    if (!band->elements) { /* a band: each row keeps one run of columns (plus the prefix) */
        for (int r = 0; r < t->rows; r++) {
            /* masked: columns outside [lo, hi], except those before `keep` (the prefix) */
            const int64_t i = t->q0 + r, keep = band->prefix - t->k0 > 0 ? band->prefix - t->k0 : 0;
            const int64_t lo = i - band->pre - t->k0, hi = i + band->next - t->k0;
            fill_run(s, dtanh, ld, r, keep, lo < t->cols ? lo : t->cols);
            fill_run(s, dtanh, ld, r, hi + 1 > keep ? hi + 1 : keep, t->cols);
        }
        return;
    }
    for (int r = 0; r < t->rows; r++) {
        float *row = s + (size_t)r * ld;
        fa_mask_row(p, band, t->b, t->h, t->q0 + r, t->k0, t->cols, masked);
        for (int x = 0; x < t->cols; x++)
            if (masked[x]) {
                row[x] = (float)FA_MASK_FILL;
                if (dtanh) dtanh[(size_t)r * ld + x] = 0.0f;
            }
    }
}
