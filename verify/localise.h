/* Where a comparison fails, for people: how far each element is from the
 * rule's own threshold (a histogram of |a - e| / limit, 1 = at the limit)
 * and how many elements fail in each row (every leading index; a row is
 * the last dimension, e.g. one token's head dim).  Triple judges whole
 * tensors, so its elements are measured against a thousandth of
 * max(|e|, 2^-14) instead. */
#ifndef ATTNOPS_VERIFY_LOCALISE_H
#define ATTNOPS_VERIFY_LOCALISE_H

#include "compare.h"

#define LOC_BINS 12 /* ratio < 2^-10, < 2^-8, < 2^-6, < 2^-4, < 2^-2, <= 1 | < 2, < 4, < 16, < 64, >= 64, NaN */

extern const char *const loc_bin_labels[LOC_BINS];

typedef struct localisation {
    int64_t hist[LOC_BINS];
    int64_t rows, row_len;
    int64_t *row_fail; /* [rows], malloc'ed */
} localisation;

localisation loc_analyse(const cmp_options *o, const double *actual, const double *expected, int64_t n,
                         int64_t row_len);
void loc_free(localisation *l);
/* Up to k rows with the most failures, most first; returns how many have any. */
int loc_worst_rows(const localisation *l, int64_t *rows, int k);

#endif
