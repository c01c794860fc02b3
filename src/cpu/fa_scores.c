#include "cpu/fa_scores.h"

#include "fa/fa_pse.h"

void fa_scores_apply(const fa_problem *p, const fa_band *band, const fa_tile_pos *t, fa_tile_class cls, float *s,
                     int ld, float *bias, uint8_t *masked)
{
    const float scale = (float)p->scale;
    const bool has_pse = p->pse.kind != FA_PSE_NONE, add_then_scale = p->pse.type == 1;
    if (has_pse) fa_pse_tile(p, t->b, t->h, t->q0, t->rows, t->k0, t->cols, t->S1, t->S2, bias, ld);
    for (int r = 0; r < t->rows; r++) {
        float *row = s + (size_t)r * ld;
        const float *brow = bias + (size_t)r * ld;
        if (!has_pse) for (int c = 0; c < t->cols; c++) row[c] *= scale;
        else if (add_then_scale) for (int c = 0; c < t->cols; c++) row[c] = (row[c] + brow[c]) * scale;
        else for (int c = 0; c < t->cols; c++) row[c] = row[c] * scale + brow[c];
        if (cls != FA_TILE_PARTIAL) continue;
        fa_mask_row(p, band, t->b, t->h, t->q0 + r, t->k0, t->cols, masked);
        for (int c = 0; c < t->cols; c++)
            if (masked[c]) row[c] = (float)FA_MASK_FILL;
    }
}
