/* The mask predicate of every sparse mode (spec 3.2), shared by the
 * reference and the fast kernel.
 *
 * Per batch (lengths S1, S2) every mode reduces to a band in top-left
 * coordinates, a prefix (attn_band_of, the rule FusedInferAttentionScore
 * shares) and possibly the mask tensor's elements:
 *
 *   band_masked(i, j) = (j - i > next  or  i - j > pre)  and not  j < prefix
 *   masked(i, j)      = band_masked(i, j)  or  (elements and mask[b][h][i][j])
 *
 *   mode 0  pre, next as given (+ elements)     mode 4  pre + S1 - S2, next - S1 + S2
 *   mode 1  no band (elements only)             mode 5  causal right-down, prefix[b] (+ elements)
 *   mode 2  pre = inf, next = 0                 mode 6  causal right-down, prefix[b]
 *   mode 3  pre = inf, next = S2 - S1           no mask tensor: nothing is masked
 *
 * Modes 0 and 5 read both the tokens/prefix and the tensor; the tensor is
 * required to agree with them (CANN uses the tokens for block skipping), and
 * where a caller's tensor disagrees the union is masked (documented in
 * docs/NUMERICS.md).  Compressed masks (modes 2/3/4/6) are read for their
 * shape only, as the kernel reads them by diagonal offset. */
#ifndef ATTNOPS_FA_MASK_H
#define ATTNOPS_FA_MASK_H

#include "fa/fa_problem.h"

typedef struct fa_band {
    int64_t pre, next;
    int64_t prefix;
    bool elements;
} fa_band;

/* The band of batch b whose lengths are S1, S2. */
fa_band fa_band_of(const fa_problem *p, int64_t b, int64_t S1, int64_t S2);
bool fa_is_masked(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i, int64_t j);

typedef enum fa_tile_class { FA_TILE_EMPTY, FA_TILE_FULL, FA_TILE_PARTIAL } fa_tile_class;

/* Rows [i0, i1) x columns [j0, j1) (both already clipped to S1, S2):
 * EMPTY when every element is masked, FULL when none is. */
fa_tile_class fa_classify_tile(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i0,
                               int64_t i1, int64_t j0, int64_t j1);
/* out[c] = masked(i, j0 + c) for c < cols, as 0/1 bytes. */
void fa_mask_row(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t cols,
                 uint8_t *out);
/* True when every row in [i0, i1) has an unmasked column in [0, S2). */
bool fa_rows_attend(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i0, int64_t i1,
                    int64_t S2);

#endif
