/* Dropout (spec 5): which (b, h, i, j) are kept, bit-exact with the Ascend
 * 950 in-kernel mask, shared by the reference, the fast kernel and the
 * public mask call.
 *
 * Element (b, h, i, j) reads stream byte u at
 *   padded layouts: ((b*N1 + h)*S1 + i)*S2a + j,   S2a = ceil(S2 / 16) * 16
 *   TND:            N1*qk[b] + (h*S1_b + i)*S2a_b + j,   qk[b] = sum_{k<b} S1_k * S2a_k
 * and is kept iff u <= floor((float)keep_prob * 255) (kept values are
 * scaled by 1 / keep_prob in the forward P and the backward dP).
 *
 * With an explicit drop_mask (spec 5.6) the keep bit of (b, h, i, j) is bit
 * e % 8 (LSB first) of byte e / 8 at the unaligned index
 *   padded: ((b*N1 + h)*S1 + i)*S2 + j;   TND: N1*sum_{k<b} S1_k*S2_k + (h*S1_b + i)*S2_b + j. */
#ifndef ATTNOPS_FA_DROPOUT_H
#define ATTNOPS_FA_DROPOUT_H

#include "core/philox.h"
#include "fa/fa_problem.h"

typedef struct fa_dropout {
    bool active;        /* keep_prob < 1 */
    ao_philox gen;
    const uint8_t *bits; /* explicit drop_mask, or NULL for the generated stream */
    int64_t bit_stride;
    /* the stream generator: ao_philox_bytes, or a vector form of it, and a
     * generator of up to 16 arbitrary blocks (NULL: use `stream`) */
    void (*stream)(const ao_philox *g, uint64_t first, size_t count, uint8_t *out);
    void (*blocks)(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out);
    uint8_t threshold;  /* keep iff byte <= threshold */
    float scale;        /* 1 / keep_prob, in fp32 as the kernel multiplies */
    double scale_f64;   /* the same for the reference */
} fa_dropout;

/* The generated stream for (seed, offset, keep_prob). */
fa_dropout fa_dropout_make(int64_t seed, int64_t offset, double keep_prob);
/* The dropout of a call: its explicit drop_mask if given, else the stream. */
fa_dropout fa_dropout_for(const fa_problem *p);

/* Where batch b's rows lie in the stream (or the drop_mask): element
 * (h, i, j) of this call is stream index
 *   base + ((h + head0) * rows + i + row0) * width + col0 + j
 * -- the whole call's indexing, which is this call's own unless it is a
 * dropout block (fa_drop_block).  O(B) in TND: take it once per batch. */
typedef struct fa_dropout_batch {
    uint64_t base;               /* element (b, 0, 0, 0) of the whole call */
    int64_t rows;                /* query rows of the whole call's batch b */
    int64_t width;               /* its row width: S2, aligned to 16 for the generated stream */
    int64_t head0, row0, col0;   /* this call's origin in it */
} fa_dropout_batch;

fa_dropout_batch fa_dropout_batch_of(const fa_problem *p, const fa_dropout *d, int64_t b);
/* Batch b's query and key lengths in the whole call (this call's own unless it is a dropout block). */
void fa_dropout_whole_lengths(const fa_problem *p, int64_t b, int64_t *s1, int64_t *s2);
static inline uint64_t fa_dropout_row_start(const fa_dropout_batch *db, int64_t h, int64_t i)
{
    return db->base + (uint64_t)(((h + db->head0) * db->rows + i + db->row0) * db->width + db->col0);
}

/* keep[c] = 1 for the kept elements (b, h, i, j0 + c), c < cols, of one row. */
void fa_dropout_row(const fa_dropout *d, uint64_t row_start, int64_t j0, int64_t cols, uint8_t *keep);

/* The same for rows i0 .. i0 + rows - 1 of head (b, h): keep[r * ld + c].
 * Gathers the blocks of all rows into full passes of the block generator. */
void fa_dropout_tile(const fa_dropout *d, const fa_dropout_batch *db, int64_t h, int64_t i0, int rows, int64_t j0,
                     int cols, uint8_t *keep, int ld);

#endif
