/* Moving head slices between strided fa_views and the contiguous tiles the
 * GEMMs consume.  Every packer reads rows [s0, s0+rows) and columns [0, cols)
 * of head (b, n), converts them to the tile's element type and writes zeros
 * where a row is past S (tile padding), so padded rows contribute nothing to
 * any product. */
#ifndef ATTNOPS_CPU_PACK_H
#define ATTNOPS_CPU_PACK_H

#include "fa/fa_problem.h"

typedef enum pack_elem { PACK_F32, PACK_BF16 } pack_elem;

/* dst[r][c], leading dimension ld (>= cols; columns cols..ld zeroed). */
void pack_rows(pack_elem elem, const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S,
               int64_t cols, void *dst, int64_t ld);
/* The transpose: dst[c][r], leading dimension ld (>= rows). */
void pack_cols(pack_elem elem, const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S,
               int64_t cols, void *dst, int64_t ld);
/* bf16 in VNNI-2 form along the rows: element (r, c) at ((r/2)*ld + c)*2 + r%2;
 * rows even, columns cols..ld zeroed. */
void pack_rows_vnni(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                    uint16_t *dst, int64_t ld);
/* The transpose X^T [cols_pad][rows] in VNNI-2 form along its rows (the
 * columns c of X): element (c, r) at ((c/2)*ld + r)*2 + c%2; cols_pad even,
 * the pad row zero. */
void pack_cols_vnni(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                    int64_t cols_pad, uint16_t *dst, int64_t ld);

/* Writes rows [s0, s0+rows) of head (b, n) (only rows < S): element (r, c)
 * = value * src[r*ld + c], rounded once to the view's dtype. */
void unpack_rows(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                 int64_t rows, int64_t S, int64_t cols);
/* The same from a transposed source: element (r, c) = value * src[c*ld + r]. */
void unpack_cols(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                 int64_t rows, int64_t S, int64_t cols);

#endif
