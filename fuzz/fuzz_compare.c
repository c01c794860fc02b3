/* The comparison rules (verify/compare.h): any rule, options, values (NaN,
 * infinities, denormals) and counted mask give a verdict whose counts are
 * consistent, and cmp_print never reads outside the arrays. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8) return 0;
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F8_E4M3FN};
    cmp_options o = {.rule = (cmp_rule)(data[0] % CMP_RULE_COUNT), .dtype = dtypes[data[1] % 4]};
    if (data[2] & 1) o.rtol = data[3] / 64.0, o.atol = data[4] / 256.0;
    if (data[2] & 2) o.min_share = data[5] / 255.0;
    const bool masked = data[2] & 4;
    data += 8, size -= 8;
    /* three arrays of doubles (actual, expected, bench) and a mask from the rest */
    const int64_t n = (int64_t)(size / (3 * sizeof(double) + 1));
    double *a = malloc(sizeof(double) * (size_t)(n ? n : 1)), *e = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *b = malloc(sizeof(double) * (size_t)(n ? n : 1));
    uint8_t *counted = malloc((size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        memcpy(&a[i], data + (size_t)i * 24, 8), memcpy(&e[i], data + (size_t)i * 24 + 8, 8);
        memcpy(&b[i], data + (size_t)i * 24 + 16, 8);
        counted[i] = data[(size_t)n * 24 + (size_t)i] & 1;
    }
    o.counted = masked ? counted : NULL;
    const cmp_verdict v = cmp_compare(&o, a, e, o.rule == CMP_TRIPLE ? b : NULL, n);
    if (v.n != n || v.counted < 0 || v.counted > n || v.n_fail < 0 || v.n_fail > v.counted || v.worst < -1 ||
        v.worst >= n || v.n_metrics < 0 || v.n_metrics > CMP_MAX_METRICS)
        abort();
    const int64_t shape[2] = {n > 0 ? 1 : 0, n};
    cmp_print(sink, "fuzz", &v, a, e, shape, 2);
    free(a), free(e), free(b), free(counted);
    return 0;
}
