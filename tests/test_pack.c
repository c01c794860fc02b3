/* The packers and unpackers (src/cpu/pack.h) alone, under the ISA ctest
 * selects (their f16/bf16 rows go through the kernel inventory), against the
 * layouts pack.h states, written out here element by element:
 *   pack_rows       dst[r*ld + c]                        (c < ld; c >= cols: 0)
 *   pack_cols       dst[c*ld + r]
 *   pack_rows_vnni  dst[((r/2)*ld + c)*2 + r%2]          (c < ld; c >= cols: 0)
 *   pack_cols_vnni  dst[((c/2)*ld + r)*2 + c%2]          (c < cols_pad; c >= cols: 0)
 *   unpack_rows     out(r, c) = dtype(value * src[r*ld + c]), rows < S only
 *   unpack_cols     out(r, c) = dtype(value * src[c*ld + r])
 * with rows past S packed as zeros.  Sources are head (0, 1) of a
 * [B=1][N=2][S][D] tensor of every dtype the packers read, unit-stride and
 * strided (d stride 2: every other element of a wider row), with values
 * exact in every dtype (so any misplaced or mis-converted element shows as a
 * wrong value).  The operator suites reach the strided and f8 paths only
 * through whole problems on CPUs whose GEMMs take them, so a wrong index
 * there can pass every other test on this machine.  A self-test at the end
 * requires the VNNI row check to see a packer that places row pair r/2 at
 * (r/2)*ld instead of (r/2)*ld*2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "cpu/pack.h"
#include "testutil.h"
#include "suite.h"

enum { S_MAX = 40, D_MAX = 70, HEADS = 2, CANARY = 0xA5A5 };

/* The value of (s, d): a multiple of 1/2 of magnitude <= 3 (at most 3
 * significant bits), exact in f8 e4m3/e5m2, f16, bf16 and f32. */
static float value_at(int64_t s, int64_t d) { return (float)((s * 7 + d * 3) % 13 - 6) * 0.5f; }

typedef struct source {
    fa_view view;
    char *data;
} source;

/* Head 1 of a [1][2][S][D] tensor of dtype dt whose d stride is sd (1 or 2). */
static source make_source(attnops_dtype dt, int64_t S, int64_t D, int64_t sd)
{
    const int64_t esize = (int64_t)attnops_dtype_size(dt), row = D * sd;
    source src = {{NULL, dt, esize, HEADS * S * row, S * row, row, sd}, NULL};
    src.data = calloc((size_t)(HEADS * S * row), (size_t)esize);
    src.view.data = src.data;
    for (int64_t s = 0; s < S; s++)
        for (int64_t d = 0; d < D; d++) ao_store_f32(fa_at(&src.view, 0, 1, s, d), dt, value_at(s, d));
    return src;
}

/* What the tile holds at (r, c) of the packed region: the value, or 0 past S. */
static float packed_value(int64_t s0, int64_t r, int64_t S, int64_t c, int64_t cols)
{
    return s0 + r < S && c < cols ? value_at(s0 + r, c) : 0.0f;
}

static float tile_f32(const void *t, int64_t i) { return ((const float *)t)[i]; }
static float tile_bf16(const void *t, int64_t i) { return ao_bf16_to_f32(((const uint16_t *)t)[i]); }

typedef struct shape {
    int64_t S, s0, rows, cols, ld;
} shape;

static const char *layout_name(int64_t sd) { return sd == 1 ? "unit stride" : "d stride 2"; }

/* Count (and report the first of) the positions whose value is wrong. */
static int64_t check_at(const char *what, const source *src, const shape *sh, int64_t r, int64_t c, float got,
                        float want, int64_t *bad)
{
    if (got == want || (*bad)++ > 0) return *bad;
    TU_CHECK(false, "%s (%s, %s, S %lld s0 %lld rows %lld cols %lld ld %lld): (r %lld, c %lld) = %g, want %g",
             what, attnops_dtype_name(src->view.dtype), layout_name(src->view.sd), (long long)sh->S,
             (long long)sh->s0, (long long)sh->rows, (long long)sh->cols, (long long)sh->ld, (long long)r,
             (long long)c, got, want);
    return *bad;
}

static void check_pack_rows(const source *src, const shape *sh, pack_elem elem)
{
    const size_t e = elem == PACK_F32 ? 4 : 2;
    void *t = malloc((size_t)(sh->rows * sh->ld) * e);
    memset(t, 0xA5, (size_t)(sh->rows * sh->ld) * e);
    pack_rows(elem, &src->view, 0, 1, sh->s0, sh->rows, sh->S, sh->cols, t, sh->ld);
    int64_t bad = 0;
    for (int64_t r = 0; r < sh->rows; r++)
        for (int64_t c = 0; c < sh->ld; c++)
            check_at(elem == PACK_F32 ? "pack_rows f32" : "pack_rows bf16", src, sh, r, c,
                     (elem == PACK_F32 ? tile_f32 : tile_bf16)(t, r * sh->ld + c),
                     packed_value(sh->s0, r, sh->S, c, sh->cols), &bad);
    free(t);
}

static void check_pack_cols(const source *src, const shape *sh, pack_elem elem)
{
    const size_t e = elem == PACK_F32 ? 4 : 2;
    const int64_t ld = sh->rows + 3; /* dst[c][r], ld >= rows */
    void *t = malloc((size_t)(sh->cols * ld) * e);
    memset(t, 0xA5, (size_t)(sh->cols * ld) * e);
    pack_cols(elem, &src->view, 0, 1, sh->s0, sh->rows, sh->S, sh->cols, t, ld);
    int64_t bad = 0;
    for (int64_t r = 0; r < sh->rows; r++)
        for (int64_t c = 0; c < sh->cols; c++)
            check_at(elem == PACK_F32 ? "pack_cols f32" : "pack_cols bf16", src, sh, r, c,
                     (elem == PACK_F32 ? tile_f32 : tile_bf16)(t, c * ld + r),
                     packed_value(sh->s0, r, sh->S, c, sh->cols), &bad);
    free(t);
}

/* pack_rows_vnni with `pair_stride` the distance of row pairs in elements
 * as the model places them (2 * ld by pack.h); returns the wrong positions. */
static int64_t vnni_rows_mismatches(const source *src, const shape *sh, int64_t pair_stride, bool report)
{
    const int64_t rows = sh->rows + (sh->rows & 1), n = (rows / 2) * sh->ld * 2 + 2 * sh->ld;
    uint16_t *t = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) t[i] = CANARY;
    pack_rows_vnni(&src->view, 0, 1, sh->s0, rows, sh->S, sh->cols, t, sh->ld);
    int64_t bad = 0, quiet = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < sh->ld; c++) {
            const int64_t at = (r / 2) * pair_stride + c * 2 + (r & 1);
            const float got = at < n ? tile_bf16(t, at) : NAN, want = packed_value(sh->s0, r, sh->S, c, sh->cols);
            if (report) check_at("pack_rows_vnni", src, sh, r, c, got, want, &bad);
            else quiet += got != want;
        }
    free(t);
    return report ? bad : quiet;
}

static void check_pack_cols_vnni(const source *src, const shape *sh)
{
    const int64_t cols_pad = sh->cols + (sh->cols & 1) + 2, ld = sh->rows + 1;
    const int64_t n = (cols_pad / 2) * ld * 2;
    uint16_t *t = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) t[i] = CANARY;
    pack_cols_vnni(&src->view, 0, 1, sh->s0, sh->rows, sh->S, sh->cols, cols_pad, t, ld);
    int64_t bad = 0;
    for (int64_t r = 0; r < sh->rows; r++)
        for (int64_t c = 0; c < cols_pad; c++)
            check_at("pack_cols_vnni", src, sh, r, c, tile_bf16(t, ((c / 2) * ld + r) * 2 + (c & 1)),
                     packed_value(sh->s0, r, sh->S, c, sh->cols), &bad);
    free(t);
}

/* unpack_rows / unpack_cols of a tile holding value_at(r, c) / 2, scaled
 * by 2: the view gets value_at(s0 + r, c) (exact in every dtype) where
 * s0 + r < S, and keeps its bits everywhere else. */
static void check_unpack(attnops_dtype dt, int64_t sd, const shape *sh, bool transposed)
{
    source dst = make_source(dt, sh->S, D_MAX, sd);
    const int64_t ld = transposed ? sh->rows + 2 : sh->cols + 2;
    float *tile = malloc((size_t)((transposed ? sh->cols : sh->rows) * ld) * sizeof(float));
    for (int64_t r = 0; r < sh->rows; r++)
        for (int64_t c = 0; c < sh->cols; c++)
            tile[transposed ? c * ld + r : r * ld + c] = value_at(sh->s0 + r + 1, c) * 0.5f;
    (transposed ? unpack_cols : unpack_rows)(tile, ld, 2.0f, &dst.view, 0, 1, sh->s0, sh->rows, sh->S, sh->cols);
    int64_t bad = 0;
    for (int64_t s = 0; s < sh->S; s++)
        for (int64_t d = 0; d < D_MAX; d++) {
            const bool written = s >= sh->s0 && s < sh->s0 + sh->rows && d < sh->cols;
            const float want = written ? value_at(s + 1, d) : value_at(s, d);
            check_at(transposed ? "unpack_cols" : "unpack_rows", &dst, sh, s - sh->s0, d,
                     ao_load_f32(fa_at(&dst.view, 0, 1, s, d), dt), want, &bad);
        }
    free(tile);
    free(dst.data);
}

int main(void)
{
    tu_require_isa();
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16,
                                           ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F8_E5M2};
    /* S, s0, rows, cols, ld: whole tiles, a tile running past S, odd rows and columns */
    static const shape shapes[] = {{32, 0, 16, 64, 64}, {40, 32, 16, 70, 72}, {37, 30, 9, 33, 40}, {5, 0, 8, 1, 3}};
    int checks = 0;
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++)
        for (int64_t sd = 1; sd <= 2; sd++)
            for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
                const shape *sh = &shapes[i];
                source src = make_source(dtypes[t], sh->S, D_MAX, sd);
                check_pack_rows(&src, sh, PACK_F32);
                check_pack_rows(&src, sh, PACK_BF16);
                check_pack_cols(&src, sh, PACK_F32);
                check_pack_cols(&src, sh, PACK_BF16);
                vnni_rows_mismatches(&src, sh, sh->ld * 2, true);
                check_pack_cols_vnni(&src, sh);
                free(src.data);
                if (dtypes[t] != ATTNOPS_DTYPE_F8_E4M3FN && dtypes[t] != ATTNOPS_DTYPE_F8_E5M2) {
                    check_unpack(dtypes[t], sd, sh, false);
                    check_unpack(dtypes[t], sd, sh, true);
                }
                checks++;
            }
    /* self-test: the row-pair stride the VNNI check holds the packer to is seen */
    for (int64_t sd = 1; sd <= 2; sd++) {
        source src = make_source(ATTNOPS_DTYPE_BF16, 40, D_MAX, sd);
        const int64_t wrong = vnni_rows_mismatches(&src, &shapes[1], shapes[1].ld, false);
        TU_CHECK(wrong > 0, "self-test (%s): a packer placing row pair r/2 at (r/2)*ld would pass", layout_name(sd));
        free(src.data);
    }
    return tu_finish("test_pack", checks);
}
