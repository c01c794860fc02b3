/* verify/npy.c against files numpy + ml_dtypes wrote (tests/tools/npy_roundtrip.py):
 * every dtype in format versions 1.0-3.0 reads to the same bytes and shape,
 * and is written back (<name>.c.npy, which the Python side loads and
 * compares); broken files fail with their reason, never crash. */
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "testutil.h"
#include "suite.h"

/* A version 1.0 file: preamble, `header` padded as numpy pads it, then
 * `data_bytes` bytes of data (zeros). */
static size_t make_npy(unsigned char *buf, const char *header, size_t data_bytes)
{
    size_t len = strlen(header);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((len + 1) & 0xff), buf[9] = (unsigned char)((len + 1) >> 8);
    memcpy(buf + 10, header, len);
    buf[10 + len] = '\n';
    memset(buf + 11 + len, 0, data_bytes);
    return 11 + len + data_bytes;
}

/* Hostile files (docs/RELIABILITY.md): each refused with a sentence naming the
 * file and what is wrong, nothing allocated from the untrusted sizes. */
static int hostile(const char *dir)
{
    const int before = tu_failures;
    static unsigned char buf[1 << 16];
    char err[512], path[1024];
    static const struct { const char *header; size_t data; const char *reason; } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 23, "truncated data (23 bytes"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 25, "trailing bytes after the data (25"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0, "overflows 64 bits"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 2), }", 0, "byte size overflows"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0, "bad shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0, "bad shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, "bad shape"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8, "unsupported dtype '<c8'"},
        {"{'descr': '<f4', 'shape': (1,), }", 4, "header is not a numpy dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3", 24, "bad shape"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_t n = make_npy(buf, cases[i].header, cases[i].data);
        npy_array a;
        int rc = npy_parse(buf, n, "mem.npy", 0, &a, err, sizeof err);
        TU_CHECK(rc == -1 && a.data == NULL && strstr(err, cases[i].reason) && strstr(err, "mem.npy"),
                 "hostile %zu in memory: rc %d, \"%s\" (expected \"%s\")", i, rc, err, cases[i].reason);
        snprintf(path, sizeof path, "%s/hostile_%zu.npy", dir, i);
        FILE *f = fopen(path, "wb");
        if (f) fwrite(buf, 1, n, f), fclose(f);
        rc = npy_read(path, 0, &a, err, sizeof err);
        TU_CHECK(rc == -1 && a.data == NULL && strstr(err, cases[i].reason) && strstr(err, path),
                 "hostile %zu as a file: rc %d, \"%s\" (expected \"%s\")", i, rc, err, cases[i].reason);
    }
    /* Every prefix of a good file is refused (truncation at each byte). */
    const size_t good = make_npy(buf, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 24);
    for (size_t cut = 0; cut < good; cut++) {
        npy_array a;
        TU_CHECK(npy_parse(buf, cut, "cut.npy", 0, &a, err, sizeof err) == -1 && a.data == NULL,
                 "a file cut to %zu of %zu bytes was accepted", cut, good);
    }
    npy_array a;
    TU_CHECK(npy_parse(buf, good, "good.npy", 0, &a, err, sizeof err) == 0 && a.bytes == 24, "the whole file: %s",
             err);
    free(a.data);
    /* A header length above 1 MiB (version 2.0) and a directory. */
    memcpy(buf, "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
    TU_CHECK(npy_parse(buf, 12, "long.npy", 0, &a, err, sizeof err) == -1 && strstr(err, "header length"),
             "a 2 GiB header length: \"%s\"", err);
    TU_CHECK(npy_read(dir, 0, &a, err, sizeof err) == -1 && strstr(err, "not a regular file"),
             "a directory: \"%s\"", err);
    return tu_failures == before;
}

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
    passed += hostile(argv[1]);
    return tu_finish("test_npy", passed);
}
