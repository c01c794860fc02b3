/* The .npy reader (verify/npy.h): any bytes either give an array whose data
 * size is exactly what its shape and dtype say, or are refused with a
 * sentence naming the origin, and nothing is allocated from a size the
 * file could not back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const attnops_dtype hints[] = {0, ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F8_E5M2};
    npy_array a;
    char err[512] = "";
    const int rc = npy_parse(data, size, "fuzz.npy", hints[size % 3], &a, err, sizeof err);
    if (rc != 0) {
        if (a.data || strncmp(err, "fuzz.npy: ", 10) != 0) abort();
        return 0;
    }
    size_t n = 1;
    for (int i = 0; i < a.rank; i++) n *= (size_t)a.shape[i];
    if (a.rank < 0 || a.rank > NPY_MAX_RANK || n * attnops_dtype_size(a.dtype) != a.bytes || a.bytes > size) abort();
    free(a.data);
    return 0;
}
