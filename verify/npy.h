/* .npy files as numpy (and numpy + ml_dtypes) read and write them, for the
 * harness's golden export and device comparison.
 *
 * Format versions 1.0, 2.0 and 3.0; little-endian; C order only (a Fortran
 * order file is refused with a message).  dtypes, by descr:
 *   <f4 f32, <f2 f16, |u1 u8, |b1 bool, <i4 i32, <i8 i64, and what ml_dtypes
 *   arrays save as: bfloat16 <V2, float8_e4m3fn <V1, float8_e5m2 <f1 (which
 *   numpy itself cannot load back, so both f8 types are written as <V1).
 * A void descr says only the width, so reading takes a hint: <V2 is bf16,
 * <V1 is the hint's f8 (f8_e4m3fn without one); the harness's manifest
 * records every array's dtype.  Corrupt, truncated or unsupported files are
 * errors with one sentence, never crashes. */
#ifndef ATTNOPS_VERIFY_NPY_H
#define ATTNOPS_VERIFY_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnops.h"

#define NPY_MAX_RANK 8

typedef struct npy_array {
    attnops_dtype dtype;
    int rank;
    int64_t shape[NPY_MAX_RANK];
    void *data; /* malloc'ed, C order; free() it */
    size_t bytes;
} npy_array;

/* Writes a version 1.0 file (2.0 when the header needs it).  0, or -1 with err. */
int npy_write(const char *path, attnops_dtype dtype, int rank, const int64_t *shape, const void *data, char *err,
              size_t errlen);
/* Reads a file; hint (0 for none) names the dtype of a void descr.  The
 * file must be a regular file whose size is exactly the header's plus the
 * data its shape needs (checked, overflow included, before the data is
 * allocated).  0, or -1 with err and *out zeroed. */
int npy_read(const char *path, attnops_dtype hint, npy_array *out, char *err, size_t errlen);
/* The same from a whole file's n bytes in memory; `origin` names it in err. */
int npy_parse(const void *buf, size_t n, const char *origin, attnops_dtype hint, npy_array *out, char *err,
              size_t errlen);

#endif
