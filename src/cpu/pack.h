/* Moving head slices between strided fa_views and the contiguous tiles the
 * GEMMs consume.  Every packer reads rows [s0, s0+rows) and columns [0, cols)
 * of head (b, n) and writes zeros where a row is past S (the tile padding),
 * so padded tiles contribute nothing to any product. */
#ifndef ATTNOPS_CPU_PACK_H
#define ATTNOPS_CPU_PACK_H

#include "fa/fa_problem.h"

/* dst[r][c], fp32, leading dimension ld (>= cols; columns cols..ld zeroed). */
void pack_f32(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
              float *dst, int64_t ld);
/* dst[c][r] (transposed), fp32, leading dimension ld (>= rows). */
void pack_f32_t(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                float *dst, int64_t ld);
/* dst[r][c], bf16, leading dimension ld (>= cols; columns cols..ld zeroed). */
void pack_bf16(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
               uint16_t *dst, int64_t ld);
/* dst[c][r] (transposed), bf16, leading dimension ld (>= rows). */
void pack_bf16_t(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                 uint16_t *dst, int64_t ld);
/* VNNI-2 along rows: element (r, c) at ((r/2)*ld + c)*2 + r%2; rows even. */
void pack_bf16_vnni(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                    uint16_t *dst, int64_t ld);
/* The transpose X^T [cols][rows] in VNNI-2 along its rows (the columns c of
 * X): element (c, r) at ((c/2)*ld + r)*2 + c%2, cols_pad (even) rows of X^T
 * written, the pad row zero. */
void pack_bf16_vnni_t(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                      int64_t cols_pad, uint16_t *dst, int64_t ld);

/* Writes rows [s0, s0+rows) of head (b, n): dst = value * src[r][c] rounded
 * to the view's dtype (only rows < S). */
void unpack_f32(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                int64_t rows, int64_t S, int64_t cols);

/* The same from a transposed source: element (r, c) is src[c][r]. */
void unpack_f32_t(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                  int64_t rows, int64_t S, int64_t cols);

#endif
