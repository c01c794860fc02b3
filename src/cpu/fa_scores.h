/* From raw q.k tiles to the scores the softmax sees (spec 1.1, 3, 4):
 * scale, position bias and the masked fill, for tiles the mask does not
 * leave untouched.  Shared by the forward and backward drivers. */
#ifndef ATTNOPS_FA_SCORES_H
#define ATTNOPS_FA_SCORES_H

#include "fa/fa_mask.h"

/* Where one tile sits: head (b, h), batch-local rows [q0, q0 + rows), keys
 * [k0, k0 + cols) (the valid extents), in a batch of lengths S1, S2. */
typedef struct fa_tile_pos {
    int64_t b, h, q0, k0;
    int rows, cols;
    int64_t S1, S2;
} fa_tile_pos;

/* Whether the tile needs fa_scores_apply (otherwise the softmax kernels
 * apply the scale themselves).  An EMPTY tile reaches the softmax only when
 * a row attends to nothing and must see every key's fill value. */
static inline bool fa_scores_needed(const fa_problem *p, fa_tile_class cls)
{
    return p->pse.kind != FA_PSE_NONE || cls != FA_TILE_FULL || p->softcap > 0.0;
}

/* Starts fetching the tile's external bias rows so that they arrive while
 * the tile's GEMMs run: the rows lie S2 elements apart, too far for the
 * hardware prefetchers (the backward visits tiles down a key column). */
void fa_scores_prefetch(const fa_problem *p, const fa_tile_pos *t);

/* s[r*ld + c] (raw q.k) becomes (raw + bias)*scale or raw*scale + bias
 * (under softcap c: c tanh(raw scale / c) + bias, with pse_type 1's bias
 * pse*scale), and FA_MASK_FILL where masked (everywhere when cls is EMPTY,
 * per element when PARTIAL).
 * dtanh: NULL, or (the backward under softcap) a tile laid out as s that
 * gets d score / d (raw scale): 1 - tanh^2, 0 where masked.
 * scratch: ld * rows floats (bias) + ld bytes (mask row). */
void fa_scores_apply(const fa_problem *p, const fa_band *band, const fa_tile_pos *t, fa_tile_class cls, float *s,
                     int ld, float *bias_scratch, uint8_t *mask_scratch, float *dtanh);

#endif
