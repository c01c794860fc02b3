/* The exact dtype conversions, bit for bit, against the tables written by
 * tests/tools/gen_dtype_tables.py (numpy / ml_dtypes with PyTorch's NaN
 * encodings for f16/bf16; exact rational rounding for the double inputs).
 *
 * usage: test_dtype TABLE_DIR
 *
 * Every decode of every encoding (the public decoders and the traits'
 * to_f64), every f32 input through the f32 encoders and through the double
 * paths (ao_store_f64, the traits' from_f64, ao_f64_to_f16/bf16: a float is
 * exactly a double, so all must agree with the f32 table), and every double
 * of the single-rounding tables.  Then the traits table's names: each of a
 * row's spellings parses back to its dtype. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "testutil.h"
#include "suite.h"

#define MAX_PRINTED 5 /* per table: a broken rounding fails 10^5 entries */

typedef struct fmt {
    const char *name;
    attnops_dtype dtype;
    size_t width; /* bytes of an encoding */
    const char *ext;
    uint16_t (*f64_direct)(double); /* the internal double rounding; NULL for FP8 */
} fmt;

static const fmt FORMATS[] = {
    {"f16", ATTNOPS_DTYPE_F16, 2, "u16", ao_f64_to_f16},
    {"bf16", ATTNOPS_DTYPE_BF16, 2, "u16", ao_f64_to_bf16},
    {"e4m3fn", ATTNOPS_DTYPE_F8_E4M3FN, 1, "u8", NULL},
    {"e5m2", ATTNOPS_DTYPE_F8_E5M2, 1, "u8", NULL},
};

static const char *g_dir;
static int g_passed;

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double bits_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* Element i of a little-endian table of `width`-byte integers. */
static uint64_t table_at(const unsigned char *t, size_t i, size_t width)
{
    uint64_t v = 0;
    for (size_t b = 0; b < width; b++) v |= (uint64_t)t[i * width + b] << (8 * b);
    return v;
}

/* Reads OUTDIR/name; the element count is the size over `width`. */
static unsigned char *load(const char *name, size_t width, size_t *count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)size);
        if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
            free(data);
            data = NULL;
        }
    }
    if (f) fclose(f);
    TU_CHECK(data && size % (long)width == 0, "cannot read table %s (run tests/tools/gen_dtype_tables.py)", path);
    *count = data ? (size_t)size / width : 0;
    return data;
}

static float decode(attnops_dtype d, uint32_t bits)
{
    switch (d) {
    case ATTNOPS_DTYPE_F16: return attnops_f16_to_f32((uint16_t)bits);
    case ATTNOPS_DTYPE_BF16: return attnops_bf16_to_f32((uint16_t)bits);
    case ATTNOPS_DTYPE_F8_E4M3FN: return attnops_f8_e4m3fn_to_f32((uint8_t)bits);
    default: return attnops_f8_e5m2_to_f32((uint8_t)bits);
    }
}

static uint32_t encode_f32(attnops_dtype d, float x)
{
    switch (d) {
    case ATTNOPS_DTYPE_F16: return attnops_f32_to_f16(x);
    case ATTNOPS_DTYPE_BF16: return attnops_f32_to_bf16(x);
    case ATTNOPS_DTYPE_F8_E4M3FN: return attnops_f32_to_f8_e4m3fn(x);
    default: return attnops_f32_to_f8_e5m2(x);
    }
}

/* x through the traits' from_f64 (a row of one element). */
static uint32_t traits_store_f64(const fmt *f, double x)
{
    uint16_t bits = 0;
    attnops_dtype_traits_of(f->dtype)->from_f64(&x, &bits, 1);
    return f->width == 2 ? bits : (uint8_t)bits;
}

static float traits_decode(const fmt *f, uint32_t bits)
{
    double x;
    attnops_dtype_traits_of(f->dtype)->to_f64(&bits, &x, 1); /* little-endian: the low bytes */
    return (float)x;
}

static uint32_t store_f64(const fmt *f, double x)
{
    if (f->width == 2) {
        uint16_t h;
        ao_store_f64(&h, f->dtype, x);
        return h;
    }
    uint8_t b;
    ao_store_f64(&b, f->dtype, x);
    return b;
}

/* One comparison.  With `record` the result counts towards the suite (the
 * first MAX_PRINTED failures of a table are printed); without, it only
 * returns whether it matched (used by the self-test). */
static bool expect(bool record, const char *what, uint64_t input, uint32_t got, uint32_t want, int *printed)
{
    if (got == want) {
        g_passed += record;
        return true;
    }
    if (!record) return false;
    if (*printed < MAX_PRINTED) {
        (*printed)++;
        TU_CHECK(got == want, "%s: input 0x%llx gives 0x%x, want 0x%x", what, (unsigned long long)input,
                 (unsigned)got, (unsigned)want);
    } else {
        tu_failures++; /* counted, not printed */
    }
    return false;
}

static void check_decode(const fmt *f)
{
    char name[64], what[64];
    size_t n;
    snprintf(name, sizeof name, "dec_%s.u32", f->name);
    unsigned char *want = load(name, 4, &n);
    if (!want) return;
    TU_CHECK(n == (size_t)1 << (8 * f->width), "%s has %zu entries", name, n);
    snprintf(what, sizeof what, "%s -> f32", f->name);
    int printed[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        expect(true, what, i, f32_bits(decode(f->dtype, (uint32_t)i)), (uint32_t)table_at(want, i, 4), &printed[0]);
        /* via double a signalling NaN is quietened: to_f64 promises a NaN of the sign */
        const uint32_t w = (uint32_t)table_at(want, i, 4), quiet = (w & 0x7fffffffu) > 0x7f800000u ? 0x400000u : 0;
        expect(true, "traits to_f64", i, f32_bits(traits_decode(f, (uint32_t)i)), w | quiet, &printed[1]);
    }
    free(want);
}

/* f32 inputs: the public encoder, ao_store_f64 and the direct double
 * rounding must all give the table's bits.  Returns the mismatches. */
static size_t check_encode_f32(bool record, const fmt *f, const unsigned char *in, const unsigned char *want,
                               size_t n)
{
    char what[4][64];
    snprintf(what[0], 64, "f32 -> %s", f->name);
    snprintf(what[1], 64, "ao_store_f64(f32) -> %s", f->name);
    snprintf(what[2], 64, "ao_f64_to_%s(f32)", f->name);
    snprintf(what[3], 64, "traits from_f64(f32) -> %s", f->name);
    int printed[4] = {0, 0, 0, 0};
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)table_at(in, i, 4), w = (uint32_t)table_at(want, i, f->width);
        float v = bits_f32(x);
        bad += !expect(record, what[0], x, encode_f32(f->dtype, v), w, &printed[0]);
        bad += !expect(record, what[1], x, store_f64(f, v), w, &printed[1]);
        bad += !expect(record, what[3], x, traits_store_f64(f, v), w, &printed[3]);
        if (f->f64_direct) bad += !expect(record, what[2], x, f->f64_direct(v), w, &printed[2]);
    }
    return bad;
}

/* Doubles near the format's ties, rounded once. */
static void check_encode_f64(const fmt *f)
{
    char name[64], what[2][64];
    size_t n, m;
    snprintf(name, sizeof name, "enc64_%s_in.u64", f->name);
    unsigned char *in = load(name, 8, &n);
    snprintf(name, sizeof name, "enc64_%s.%s", f->name, f->ext);
    unsigned char *want = load(name, f->width, &m);
    if (in && want && n == m) {
        snprintf(what[0], 64, "ao_store_f64 -> %s", f->name);
        snprintf(what[1], 64, "ao_f64_to_%s", f->name);
        int printed[3] = {0, 0, 0};
        for (size_t i = 0; i < n; i++) {
            uint64_t x = table_at(in, i, 8);
            uint32_t w = (uint32_t)table_at(want, i, f->width);
            expect(true, what[0], x, store_f64(f, bits_f64(x)), w, &printed[0]);
            expect(true, "traits from_f64", x, traits_store_f64(f, bits_f64(x)), w, &printed[2]);
            if (f->f64_direct) expect(true, what[1], x, f->f64_direct(bits_f64(x)), w, &printed[1]);
        }
    }
    TU_CHECK(n == m, "%s: %zu inputs but %zu results", f->name, n, m);
    free(in);
    free(want);
}

/* Every row's three spellings parse back to its dtype, sizes agree with
 * attnops_dtype_size, and names that are no row's (a spelling off by one
 * letter included) give ATTNOPS_DTYPE_UNSET. */
static void check_traits_names(void)
{
    int rows = 0;
    for (int d = 0; d <= ATTNOPS_DTYPE_COUNT; d++) {
        const attnops_dtype_traits *t = attnops_dtype_traits_of((attnops_dtype)d);
        if (d == ATTNOPS_DTYPE_UNSET || d == ATTNOPS_DTYPE_COUNT) {
            TU_CHECK(t == NULL, "attnops_dtype_traits_of(%d) is not NULL", d);
            continue;
        }
        TU_CHECK(t != NULL, "dtype %d has no traits row", d);
        if (!t) continue;
        rows++;
        const char *spellings[] = {t->name, t->cann_name, t->torch_name};
        for (int k = 0; k < 3; k++) {
            char wrong[32];
            snprintf(wrong, sizeof wrong, "%sx", spellings[k]);
            TU_CHECK(attnops_dtype_from_string(spellings[k]) == (attnops_dtype)d, "'%s' does not parse to dtype %d",
                     spellings[k], d);
            TU_CHECK(attnops_dtype_from_string(wrong) == ATTNOPS_DTYPE_UNSET, "'%s' parses", wrong);
        }
        TU_CHECK(t->size == attnops_dtype_size((attnops_dtype)d) && !strcmp(t->name, attnops_dtype_name(d)),
                 "dtype %d: its row and attnops_dtype_size/name disagree", d);
    }
    TU_CHECK(attnops_dtype_from_string(NULL) == ATTNOPS_DTYPE_UNSET && attnops_dtype_from_string("") == ATTNOPS_DTYPE_UNSET,
             "NULL or an empty name parses");
    g_passed += rows;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TABLE_DIR\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];

    size_t n_in;
    unsigned char *in = load("enc_in.u32", 4, &n_in);
    for (size_t k = 0; k < sizeof FORMATS / sizeof FORMATS[0]; k++) {
        const fmt *f = &FORMATS[k];
        check_decode(f);
        check_encode_f64(f);

        char name[64];
        size_t n_want;
        snprintf(name, sizeof name, "enc_%s.%s", f->name, f->ext);
        unsigned char *want = load(name, f->width, &n_want);
        TU_CHECK(n_want == n_in, "%s has %zu entries for %zu inputs", name, n_want, n_in);
        if (in && want && n_want == n_in) {
            check_encode_f32(true, f, in, want, n_in);

            /* Self-test: the same check must catch one corrupted entry. */
            unsigned char bad[2];
            memcpy(bad, want, f->width);
            bad[0] ^= 1u;
            size_t caught = check_encode_f32(false, f, in, bad, 1);
            TU_CHECK(caught > 0, "%s: a corrupted table entry went unnoticed", f->name);
            g_passed += caught > 0;
        }
        free(want);
    }
    free(in);
    check_traits_names();
    return tu_finish("test_dtype", g_passed);
}
