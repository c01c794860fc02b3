/* verify/npy.c against files numpy + ml_dtypes wrote (tests/tools/npy_roundtrip.py):
 * every dtype in format versions 1.0-3.0 reads to the same bytes and shape,
 * and is written back (<name>.c.npy, which the Python side loads and
 * compares); broken files fail with their reason, never crash. */
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "testutil.h"

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: test_npy DIR\n"), 2;
    static const struct { const char *name; attnops_dtype d; int rank; int64_t shape[4]; } arrays[] = {
        {"f32", ATTNOPS_DTYPE_F32, 3, {3, 5, 7}}, {"f16", ATTNOPS_DTYPE_F16, 2, {4, 9}}, {"u8", ATTNOPS_DTYPE_U8, 1, {17}},
        {"bool", ATTNOPS_DTYPE_BOOL, 2, {2, 3}}, {"i32", ATTNOPS_DTYPE_I32, 1, {6}}, {"i64", ATTNOPS_DTYPE_I64, 3, {2, 2, 2}},
        {"bf16", ATTNOPS_DTYPE_BF16, 4, {1, 2, 3, 4}}, {"f8_e4m3fn", ATTNOPS_DTYPE_F8_E4M3FN, 2, {5, 6}},
        {"f8_e5m2", ATTNOPS_DTYPE_F8_E5M2, 1, {7}}};
    int passed = 0;
    char path[1024], err[1024];
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        const int before = tu_failures;
        snprintf(path, sizeof path, "%s/%s.raw", argv[1], arrays[i].name);
        FILE *f = fopen(path, "rb");
        TU_CHECK(f != NULL, "cannot open %s", path);
        if (!f) continue;
        unsigned char raw[4096];
        const size_t nraw = fread(raw, 1, sizeof raw, f);
        fclose(f);
        for (int v = 1; v <= 3; v++) {
            snprintf(path, sizeof path, "%s/%s.v%d.npy", argv[1], arrays[i].name, v);
            npy_array a;
            const int rc = npy_read(path, arrays[i].d, &a, err, sizeof err);
            TU_CHECK(rc == 0, "%s", err);
            if (rc) continue;
            TU_CHECK(a.dtype == arrays[i].d && a.rank == arrays[i].rank &&
                         !memcmp(a.shape, arrays[i].shape, sizeof(int64_t) * (size_t)a.rank),
                     "%s: dtype %s rank %d", path, attnops_dtype_name(a.dtype), a.rank);
            TU_CHECK(a.bytes == nraw && !memcmp(a.data, raw, nraw), "%s: bytes differ from numpy's", path);
            if (v == 1) {
                snprintf(path, sizeof path, "%s/%s.c.npy", argv[1], arrays[i].name);
                TU_CHECK(npy_write(path, a.dtype, a.rank, a.shape, a.data, err, sizeof err) == 0, "%s", err);
            }
            free(a.data);
        }
        passed += tu_failures == before;
    }
    static const struct { const char *file, *reason; } broken[] = {
        {"bad_magic.npy", "bad magic"}, {"bad_truncated.npy", "truncated data"}, {"bad_fortran.npy", "Fortran order"},
        {"bad_bigendian.npy", "big-endian"}, {"bad_float64.npy", "unsupported dtype '<f8'"},
        {"bad_header.npy", "header is not a numpy dict"}, {"does_not_exist.npy", "No such file"}};
    const int before = tu_failures;
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", argv[1], broken[i].file);
        npy_array a;
        const int rc = npy_read(path, 0, &a, err, sizeof err);
        TU_CHECK(rc == -1 && a.data == NULL && strstr(err, broken[i].reason) && strstr(err, broken[i].file),
                 "%s: rc %d, message \"%s\" (expected \"%s\")", broken[i].file, rc, err, broken[i].reason);
    }
    passed += tu_failures == before;
    return tu_finish("test_npy", passed);
}
