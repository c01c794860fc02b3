#include "cpu/pack.h"

#include <string.h>

/* One row of `n` elements with element stride `stride`, widened to fp32. */
static void load_row(const char *src, attnops_dtype dtype, int64_t stride, int64_t n, float *dst)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F32:
        if (stride == 1) memcpy(dst, src, (size_t)n * sizeof(float));
        else for (int64_t i = 0; i < n; i++) dst[i] = ((const float *)src)[i * stride];
        break;
    case ATTNOPS_DTYPE_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = attnops_f16_to_f32(((const uint16_t *)src)[i * stride]);
        break;
    case ATTNOPS_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = attnops_bf16_to_f32(((const uint16_t *)src)[i * stride]);
        break;
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = ao_load_f32(src + i * stride * (int64_t)attnops_dtype_size(dtype), dtype);
        break;
    }
}

/* One row as bf16 bits.  Inputs reaching the bf16 path are bf16 already, so
 * this is a copy; other dtypes would round (not used today). */
static void load_row_bf16(const char *src, attnops_dtype dtype, int64_t stride, int64_t n, uint16_t *dst)
{
    if (dtype == ATTNOPS_DTYPE_BF16) {
        for (int64_t i = 0; i < n; i++) dst[i] = ((const uint16_t *)src)[i * stride];
        return;
    }
    float tmp[1024];
    for (int64_t c0 = 0; c0 < n; c0 += 1024) {
        int64_t m = n - c0 < 1024 ? n - c0 : 1024;
        load_row(src + c0 * stride * (int64_t)attnops_dtype_size(dtype), dtype, stride, m, tmp);
        for (int64_t i = 0; i < m; i++) dst[c0 + i] = attnops_f32_to_bf16(tmp[i]);
    }
}

static int64_t valid_rows(int64_t s0, int64_t rows, int64_t S)
{
    int64_t n = S - s0;
    return n < 0 ? 0 : (n < rows ? n : rows);
}

void pack_f32(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
              float *dst, int64_t ld)
{
    int64_t nv = valid_rows(s0, rows, S);
    for (int64_t r = 0; r < nv; r++) {
        load_row(fa_at(v, b, n, s0 + r, 0), v->dtype, v->sd, cols, dst + r * ld);
        memset(dst + r * ld + cols, 0, (size_t)(ld - cols) * sizeof *dst);
    }
    memset(dst + nv * ld, 0, (size_t)((rows - nv) * ld) * sizeof *dst);
}

void pack_f32_t(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                float *dst, int64_t ld)
{
    int64_t nv = valid_rows(s0, rows, S);
    float tmp[1024];
    for (int64_t c0 = 0; c0 < cols; c0 += 1024) {
        int64_t m = cols - c0 < 1024 ? cols - c0 : 1024;
        for (int64_t r = 0; r < nv; r++) {
            load_row(fa_at(v, b, n, s0 + r, c0), v->dtype, v->sd, m, tmp);
            for (int64_t c = 0; c < m; c++) dst[(c0 + c) * ld + r] = tmp[c];
        }
    }
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = nv; r < rows; r++) dst[c * ld + r] = 0.0f;
}

void pack_bf16(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
               uint16_t *dst, int64_t ld)
{
    int64_t nv = valid_rows(s0, rows, S);
    for (int64_t r = 0; r < nv; r++) {
        load_row_bf16(fa_at(v, b, n, s0 + r, 0), v->dtype, v->sd, cols, dst + r * ld);
        memset(dst + r * ld + cols, 0, (size_t)(ld - cols) * sizeof *dst);
    }
    memset(dst + nv * ld, 0, (size_t)((rows - nv) * ld) * sizeof *dst);
}

void pack_bf16_t(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                 uint16_t *dst, int64_t ld)
{
    int64_t nv = valid_rows(s0, rows, S);
    uint16_t tmp[1024];
    for (int64_t c0 = 0; c0 < cols; c0 += 1024) {
        int64_t m = cols - c0 < 1024 ? cols - c0 : 1024;
        for (int64_t r = 0; r < nv; r++) {
            load_row_bf16(fa_at(v, b, n, s0 + r, c0), v->dtype, v->sd, m, tmp);
            for (int64_t c = 0; c < m; c++) dst[(c0 + c) * ld + r] = tmp[c];
        }
    }
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = nv; r < rows; r++) dst[c * ld + r] = 0;
}

void pack_bf16_vnni(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                    uint16_t *dst, int64_t ld)
{
    int64_t nv = valid_rows(s0, rows, S);
    uint16_t tmp[1024];
    for (int64_t r = 0; r < rows; r++) {
        uint16_t *out = dst + (r / 2) * ld * 2 + (r & 1);
        for (int64_t c0 = 0; c0 < cols; c0 += 1024) {
            int64_t m = cols - c0 < 1024 ? cols - c0 : 1024;
            if (r < nv) load_row_bf16(fa_at(v, b, n, s0 + r, c0), v->dtype, v->sd, m, tmp);
            else memset(tmp, 0, (size_t)m * sizeof *tmp);
            for (int64_t c = 0; c < m; c++) out[(c0 + c) * 2] = tmp[c];
        }
        for (int64_t c = cols; c < ld; c++) out[c * 2] = 0;
    }
}

void pack_bf16_vnni_t(const fa_view *v, int64_t b, int64_t n, int64_t s0, int64_t rows, int64_t S, int64_t cols,
                      int64_t cols_pad, uint16_t *dst, int64_t ld)
{
    int64_t nv = valid_rows(s0, rows, S);
    uint16_t tmp[1024];
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c0 = 0; c0 < cols_pad; c0 += 1024) {
            int64_t m = cols_pad - c0 < 1024 ? cols_pad - c0 : 1024;
            int64_t real = cols - c0 < m ? (cols - c0 > 0 ? cols - c0 : 0) : m;
            if (r < nv && real > 0) load_row_bf16(fa_at(v, b, n, s0 + r, c0), v->dtype, v->sd, real, tmp);
            else real = 0;
            for (int64_t c = real; c < m; c++) tmp[c] = 0;
            for (int64_t c = 0; c < m; c++) {
                int64_t cc = c0 + c;
                dst[((cc / 2) * ld + r) * 2 + (cc & 1)] = tmp[c];
            }
        }
    }
}

void unpack_f32(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                int64_t rows, int64_t S, int64_t cols)
{
    int64_t nv = valid_rows(s0, rows, S);
    for (int64_t r = 0; r < nv; r++) {
        char *out = fa_at(v, b, n, s0 + r, 0);
        const float *in = src + r * ld;
        switch (v->dtype) {
        case ATTNOPS_DTYPE_F32:
            for (int64_t c = 0; c < cols; c++) ((float *)out)[c * v->sd] = value * in[c];
            break;
        case ATTNOPS_DTYPE_F16:
            for (int64_t c = 0; c < cols; c++) ((uint16_t *)out)[c * v->sd] = attnops_f32_to_f16(value * in[c]);
            break;
        case ATTNOPS_DTYPE_BF16:
            for (int64_t c = 0; c < cols; c++) ((uint16_t *)out)[c * v->sd] = attnops_f32_to_bf16(value * in[c]);
            break;
        default:
            for (int64_t c = 0; c < cols; c++) ao_store_f32(out + c * v->sd * v->esize, v->dtype, value * in[c]);
            break;
        }
    }
}

void unpack_f32_t(const float *src, int64_t ld, float value, const fa_view *v, int64_t b, int64_t n, int64_t s0,
                  int64_t rows, int64_t S, int64_t cols)
{
    int64_t nv = valid_rows(s0, rows, S);
    float row[1024];
    for (int64_t c0 = 0; c0 < cols; c0 += 1024) {
        int64_t m = cols - c0 < 1024 ? cols - c0 : 1024;
        for (int64_t r = 0; r < nv; r++) {
            for (int64_t c = 0; c < m; c++) row[c] = src[(c0 + c) * ld + r];
            fa_view part = *v;
            part.data = fa_at(v, b, n, s0 + r, c0);
            unpack_f32(row, m, value, &part, 0, 0, 0, 1, 1, m);
        }
    }
}
