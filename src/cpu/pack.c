#include "cpu/pack.h"

#include "cpu/kernels.h"

#include <string.h>

/* Rows are converted in chunks of this many elements through a stack buffer. */
#define CHUNK 1024

static size_t elem_size(pack_elem e) { return e == PACK_F32 ? 4 : 2; }

/* `n` elements with element stride `stride` into dst as `elem`.  bf16 inputs
 * reaching a bf16 tile are copied; everything else widens exactly to fp32
 * (and would round to bf16, which no caller needs today). */
static void load_row(pack_elem elem, const char *src, attnops_dtype dtype, int64_t stride, int64_t n, void *dst)
{
    if (elem == PACK_BF16) {
        uint16_t *out = dst;
        if (dtype == ATTNOPS_DTYPE_BF16) {
            if (stride == 1) memcpy(out, src, (size_t)n * 2);
            else for (int64_t i = 0; i < n; i++) out[i] = ((const uint16_t *)src)[i * stride];
        } else if (dtype == ATTNOPS_DTYPE_F8_E4M3FN || dtype == ATTNOPS_DTYPE_F8_E5M2) { /* exact in bf16 */
            const uint8_t *f8 = (const uint8_t *)src;
            for (int64_t i = 0; i < n; i++)
                out[i] = ao_f32_to_bf16(dtype == ATTNOPS_DTYPE_F8_E4M3FN ? ao_f8_e4m3fn_to_f32(f8[i * stride])
                                                                      : ao_f8_e5m2_to_f32(f8[i * stride]));
        } else {
            for (int64_t i = 0; i < n; i++)
                out[i] = attnops_f32_to_bf16(ao_load_f32(src + i * stride * (int64_t)attnops_dtype_size(dtype), dtype));
        }
        return;
    }
    float *out = dst;
    switch (dtype) {
    case ATTNOPS_DTYPE_F32:
        if (stride == 1) memcpy(out, src, (size_t)n * sizeof(float));
        else for (int64_t i = 0; i < n; i++) out[i] = ((const float *)src)[i * stride];
        break;
    case ATTNOPS_DTYPE_F16:
        if (stride == 1) cpu_kernels()->fa.f16_to_f32((const uint16_t *)src, (int)n, out); /* n <= CHUNK */
        else for (int64_t i = 0; i < n; i++) out[i] = attnops_f16_to_f32(((const uint16_t *)src)[i * stride]);
        break;
    case ATTNOPS_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) out[i] = ao_bf16_to_f32(((const uint16_t *)src)[i * stride]);
        break;
    case ATTNOPS_DTYPE_F8_E4M3FN:
        for (int64_t i = 0; i < n; i++) out[i] = ao_f8_e4m3fn_to_f32(((const uint8_t *)src)[i * stride]);
        break;
    case ATTNOPS_DTYPE_F8_E5M2:
        for (int64_t i = 0; i < n; i++) out[i] = ao_f8_e5m2_to_f32(((const uint8_t *)src)[i * stride]);
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            out[i] = ao_load_f32(src + i * stride * (int64_t)attnops_dtype_size(dtype), dtype);
        break;
    }
}

static int64_t valid_rows(int64_t s0, int64_t rows, int64_t S)
{
    int64_t n = S - s0;
    return n < 0 ? 0 : (n < rows ? n : rows);
}

/* Calls put(ctx, r, c0, m, chunk) for every row r < rows and chunk of
 * columns [c0, c0+m) of [0, cols); rows past S arrive as zeros. */
typedef void (*put_fn)(void *ctx, int64_t r, int64_t c0, int64_t m, const void *chunk);

static void for_each_chunk(pack_elem elem, const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows,
                           int64_t S, int64_t cols, put_fn put, void *ctx)
{
    _Alignas(64) float buf[CHUNK]; /* large enough for CHUNK elements of either type */
    const int64_t nv = valid_rows(s0, rows, S);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c0 = 0; c0 < cols; c0 += CHUNK) {
            const int64_t m = cols - c0 < CHUNK ? cols - c0 : CHUNK;
            if (r < nv) load_row(elem, fa_at(v, b, n, s0 + r, c0), v->dtype, v->sd, m, buf);
            else memset(buf, 0, (size_t)m * elem_size(elem));
            put(ctx, r, c0, m, buf);
        }
}

typedef struct put_ctx {
    pack_elem elem;
    char *dst;
    int64_t ld;
} put_ctx;

static void put_row(void *c, int64_t r, int64_t c0, int64_t m, const void *chunk)
{
    const put_ctx *p = c;
    const size_t e = elem_size(p->elem);
    memcpy(p->dst + ((size_t)(r * p->ld + c0)) * e, chunk, (size_t)m * e);
}

static void put_col(void *c, int64_t r, int64_t c0, int64_t m, const void *chunk)
{
    const put_ctx *p = c;
    if (p->elem == PACK_F32)
        for (int64_t i = 0; i < m; i++) ((float *)p->dst)[(c0 + i) * p->ld + r] = ((const float *)chunk)[i];
    else
        for (int64_t i = 0; i < m; i++) ((uint16_t *)p->dst)[(c0 + i) * p->ld + r] = ((const uint16_t *)chunk)[i];
}

static void put_row_vnni(void *c, int64_t r, int64_t c0, int64_t m, const void *chunk)
{
    const put_ctx *p = c;
    uint16_t *out = (uint16_t *)p->dst + (r / 2) * p->ld * 2 + (r & 1);
    for (int64_t i = 0; i < m; i++) out[(c0 + i) * 2] = ((const uint16_t *)chunk)[i];
}

static void put_col_vnni(void *c, int64_t r, int64_t c0, int64_t m, const void *chunk)
{
    const put_ctx *p = c;
    for (int64_t i = 0; i < m; i++) {
        const int64_t cc = c0 + i;
        ((uint16_t *)p->dst)[((cc / 2) * p->ld + r) * 2 + (cc & 1)] = ((const uint16_t *)chunk)[i];
    }
}

void pack_rows(pack_elem elem, const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S,
               int64_t cols, void *dst, int64_t ld)
{
    const size_t e = elem_size(elem);
    if (v->sd == 1 && ((elem == PACK_F32 && v->dtype == ATTNOPS_DTYPE_F32) ||
                       (elem == PACK_BF16 && v->dtype == ATTNOPS_DTYPE_BF16))) { /* a plain row copy */
        const int64_t nv = valid_rows(s0, rows, S);
        for (int64_t r = 0; r < rows; r++) {
            char *out = (char *)dst + (size_t)(r * ld) * e;
            if (r < nv) memcpy(out, fa_at(v, b, n, s0 + r, 0), (size_t)cols * e);
            else memset(out, 0, (size_t)cols * e);
            memset(out + (size_t)cols * e, 0, (size_t)(ld - cols) * e);
        }
        return;
    }
    put_ctx ctx = {elem, dst, ld};
    for_each_chunk(elem, v, b, n, s0, rows, S, cols, put_row, &ctx);
    for (int64_t r = 0; r < rows && ld > cols; r++) memset((char *)dst + (size_t)(r * ld + cols) * e, 0, (size_t)(ld - cols) * e);
}

void pack_cols(pack_elem elem, const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S,
               int64_t cols, void *dst, int64_t ld)
{
    const bool same_type = (elem == PACK_F32 && v->dtype == ATTNOPS_DTYPE_F32) ||
                           (elem == PACK_BF16 && v->dtype == ATTNOPS_DTYPE_BF16);
    if (same_type && v->sd == 1) {
        /* transpose in 16 x 16 blocks, so the scattered writes stay in a few lines */
        const int64_t nv = valid_rows(s0, rows, S);
        for (int64_t r0 = 0; r0 < rows; r0 += 16)
            for (int64_t c0 = 0; c0 < cols; c0 += 16) {
                const int64_t r1 = r0 + 16 < rows ? r0 + 16 : rows, c1 = c0 + 16 < cols ? c0 + 16 : cols;
                for (int64_t r = r0; r < r1; r++) {
                    const char *row = r < nv ? fa_at(v, b, n, s0 + r, 0) : NULL;
                    if (elem == PACK_F32)
                        for (int64_t c = c0; c < c1; c++) ((float *)dst)[c * ld + r] = row ? ((const float *)row)[c] : 0.0f;
                    else
                        for (int64_t c = c0; c < c1; c++) ((uint16_t *)dst)[c * ld + r] = row ? ((const uint16_t *)row)[c] : 0;
                }
            }
        return;
    }
    put_ctx ctx = {elem, dst, ld};
    for_each_chunk(elem, v, b, n, s0, rows, S, cols, put_col, &ctx);
}

/* The VNNI packers below take contiguous rows of bf16 (read in place) or
 * of f8 (converted a row at a time: f8 values are exact in bf16) without
 * the per-element chunk path; row conversions go through `buf`. */
static bool bf16_rows(const fa_view *v, int64_t cols)
{
    const bool f8 = v->dtype == ATTNOPS_DTYPE_F8_E4M3FN || v->dtype == ATTNOPS_DTYPE_F8_E5M2;
    return v->sd == 1 && (v->dtype == ATTNOPS_DTYPE_BF16 || (f8 && cols <= CHUNK));
}

static const uint16_t *bf16_row(const fa_view *v, int64_t b, int64_t n, int64_t s, int64_t cols, uint16_t *buf)
{
    const char *at = fa_at(v, b, n, s, 0);
    if (v->dtype == ATTNOPS_DTYPE_BF16) return (const uint16_t *)at;
    const uint8_t *f8 = (const uint8_t *)at;
    for (int64_t c = 0; c < cols; c++) { /* the f32 bits of an f8 value have 16 zero low bits */
        const float x = v->dtype == ATTNOPS_DTYPE_F8_E4M3FN ? ao_f8_e4m3fn_to_f32(f8[c]) : ao_f8_e5m2_to_f32(f8[c]);
        uint32_t u;
        memcpy(&u, &x, 4);
        buf[c] = (uint16_t)(u >> 16);
    }
    return buf;
}

void pack_rows_vnni(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                    uint16_t *dst, int64_t ld)
{
    if (bf16_rows(v, cols)) { /* interleave row pairs: out[c] = (row r, row r+1) */
        uint16_t buf_a[CHUNK], buf_b[CHUNK];
        const int64_t nv = valid_rows(s0, rows, S);
        for (int64_t r = 0; r < rows; r += 2) {
            const uint16_t *a = r < nv ? bf16_row(v, b, n, s0 + r, cols, buf_a) : NULL;
            const uint16_t *c1 = r + 1 < nv ? bf16_row(v, b, n, s0 + r + 1, cols, buf_b) : NULL;
            uint16_t *out = dst + (r / 2) * ld * 2;
            if (c1) /* both rows present: the common case, kept branch-free */
                for (int64_t c = 0; c < cols; c++) out[2 * c] = a[c], out[2 * c + 1] = c1[c];
            else
                for (int64_t c = 0; c < cols; c++) out[2 * c] = a ? a[c] : 0, out[2 * c + 1] = 0;
            for (int64_t c = cols; c < ld; c++) out[2 * c] = out[2 * c + 1] = 0;
        }
        return;
    }
    put_ctx ctx = {PACK_BF16, (char *)dst, ld};
    for_each_chunk(PACK_BF16, v, b, n, s0, rows, S, cols, put_row_vnni, &ctx);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = cols; c < ld; c++) dst[((r / 2) * ld + c) * 2 + (r & 1)] = 0;
}

void pack_cols_vnni(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                    int64_t cols_pad, uint16_t *dst, int64_t ld)
{
    if (bf16_rows(v, cols)) {
        /* Columns (c, c+1) of a row are adjacent in the source and in the
         * destination: a transpose of 32-bit pairs, [rows][cols/2] -> [cols/2][ld],
         * in blocks of 16 rows so the scattered writes stay in a few lines. */
        const int64_t nv = valid_rows(s0, rows, S), pairs = cols_pad / 2, whole = cols / 2;
        uint32_t *out = (uint32_t *)dst;
        for (int64_t r0 = 0; r0 < rows; r0 += 16) {
            const int64_t r1 = r0 + 16 < rows ? r0 + 16 : rows;
            for (int64_t r = r0; r < r1; r++) {
                if (r >= nv) {
                    for (int64_t k = 0; k < pairs; k++) out[k * ld + r] = 0;
                    continue;
                }
                uint16_t buf[CHUNK];
                const uint16_t *row = bf16_row(v, b, n, s0 + r, cols, buf);
                for (int64_t k = 0; k < whole; k++) {
                    uint32_t pair;
                    memcpy(&pair, row + 2 * k, sizeof pair); /* little-endian: column 2k in the low half */
                    out[k * ld + r] = pair;
                }
                if (whole < pairs) out[whole * ld + r] = cols & 1 ? row[cols - 1] : 0; /* odd cols: pad half zero */
                for (int64_t k = whole + 1; k < pairs; k++) out[k * ld + r] = 0;
            }
        }
        return;
    }
    put_ctx ctx = {PACK_BF16, (char *)dst, ld};
    for_each_chunk(PACK_BF16, v, b, n, s0, rows, S, cols, put_col_vnni, &ctx);
    for (int64_t c = cols; c < cols_pad; c++)
        for (int64_t r = 0; r < rows; r++) dst[((c / 2) * ld + r) * 2 + (c & 1)] = 0;
}

/* One output row of `cols` values, scaled and rounded to the view's dtype. */
static void store_row(const float *in, float value, const fa_view *v, char *out, int64_t cols)
{
    const bool f16 = v->dtype == ATTNOPS_DTYPE_F16;
    if ((v->dtype == ATTNOPS_DTYPE_BF16 || f16) && v->sd == 1) { /* the vector kernels round contiguous rows */
        float tmp[CHUNK];
        for (int64_t c0 = 0; c0 < cols; c0 += CHUNK) {
            const int m = (int)(cols - c0 < CHUNK ? cols - c0 : CHUNK);
            for (int c = 0; c < m; c++) tmp[c] = value * in[c0 + c];
            if (f16) cpu_kernels()->fa.f32_to_f16(tmp, m, (uint16_t *)out + c0);
            else cpu_kernels()->fa.to_bf16(tmp, 1, m, (uint16_t *)out + c0, m, false);
        }
        return;
    }
    switch (v->dtype) {
    case ATTNOPS_DTYPE_F32:
        for (int64_t c = 0; c < cols; c++) ((float *)out)[c * v->sd] = value * in[c];
        break;
    case ATTNOPS_DTYPE_F16:
        for (int64_t c = 0; c < cols; c++) ((uint16_t *)out)[c * v->sd] = attnops_f32_to_f16(value * in[c]);
        break;
    case ATTNOPS_DTYPE_BF16:
        for (int64_t c = 0; c < cols; c++) ((uint16_t *)out)[c * v->sd] = ao_f32_to_bf16(value * in[c]);
        break;
    default:
        for (int64_t c = 0; c < cols; c++) ao_store_f32(out + c * v->sd * v->esize, v->dtype, value * in[c]);
        break;
    }
}

void unpack_rows(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                 int64_t rows, int64_t S, int64_t cols)
{
    const int64_t nv = valid_rows(s0, rows, S);
    if (v->dtype == ATTNOPS_DTYPE_BF16 && v->sd == 1 && value == 1.0f && ld == cols && nv > 0 && cols <= INT32_MAX &&
        v->ss <= INT32_MAX) { /* the forward's output tile: one vector pass, no scaling copy */
        cpu_kernels()->fa.to_bf16(src, (int)nv, (int)cols, (uint16_t *)fa_at(v, b, n, s0, 0), (int)v->ss, false);
        return;
    }
    for (int64_t r = 0; r < nv; r++) store_row(src + r * ld, value, v, fa_at(v, b, n, s0 + r, 0), cols);
}

void unpack_cols(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                 int64_t rows, int64_t S, int64_t cols)
{
    const int64_t nv = valid_rows(s0, rows, S);
    float row[CHUNK];
    for (int64_t r = 0; r < nv; r++)
        for (int64_t c0 = 0; c0 < cols; c0 += CHUNK) {
            const int64_t m = cols - c0 < CHUNK ? cols - c0 : CHUNK;
            for (int64_t c = 0; c < m; c++) row[c] = src[(c0 + c) * ld + r];
            store_row(row, value, v, fa_at(v, b, n, s0 + r, c0), m);
        }
}
