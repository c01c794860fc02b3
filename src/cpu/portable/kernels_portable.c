/* The portable kernel set: every kernel of the inventories (kernels.h) in
 * plain C, the statement of each contract the ISA versions must meet and
 * the path of a CPU without a vector ISA. */
#include <math.h>
#include <string.h>

#include "attnops.h"
#include "core/core.h"
#include "cpu/kernels.h"
#include "cpu/vec_tanh.h"

static void fa_softmax_fwd__portable(float *s, int rows, int cols, int valid_cols, float scale, float *m, float *l, float *alpha)
{
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * cols;
        float mx = m[r];
        for (int c = 0; c < valid_cols; c++) {
            row[c] *= scale;
            if (row[c] > mx) mx = row[c];
        }
        /* m starts at -inf: the first tile gives alpha = exp(-inf) = 0. */
        alpha[r] = m[r] == -INFINITY ? 0.0f : expf(m[r] - mx);
        float sum = 0.0f;
        for (int c = 0; c < valid_cols; c++) sum += row[c] = expf(row[c] - mx);
        for (int c = valid_cols; c < cols; c++) row[c] = 0.0f;
        l[r] = l[r] * alpha[r] + sum;
        m[r] = mx;
    }
}

static void fa_softmax_bwd__portable(float *s, float *dp, int rows, int cols, int valid_cols, float scale, const float *m,
                        const float *l, const float *drow)
{
    for (int r = 0; r < rows; r++) {
        float *ps = s + (size_t)r * cols, *pd = dp + (size_t)r * cols;
        for (int c = 0; c < valid_cols; c++) {
            float p = expf(ps[c] * scale - m[r]) / l[r];
            ps[c] = p;
            pd[c] = p * (pd[c] - drow[r]);
        }
        for (int c = valid_cols; c < cols; c++) ps[c] = pd[c] = 0.0f;
    }
}

static void fa_to_bf16__portable(const float *src, int rows, int cols, uint16_t *dst, int ld_dst, bool vnni)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            uint16_t v = attnops_f32_to_bf16(src[(size_t)r * cols + c]);
            if (vnni) dst[((size_t)(r / 2) * ld_dst + c) * 2 + (r & 1)] = v;
            else dst[(size_t)r * ld_dst + c] = v;
        }
}

static void fa_round_bf16__portable(float *x, int n)
{
    for (int i = 0; i < n; i++) x[i] = attnops_bf16_to_f32(attnops_f32_to_bf16(x[i]));
}

static void fa_f16_to_f32__portable(const uint16_t *src, int n, float *dst)
{
    for (int i = 0; i < n; i++) dst[i] = attnops_f16_to_f32(src[i]);
}

static void fa_f32_to_f16__portable(const float *src, int n, uint16_t *dst)
{
    for (int i = 0; i < n; i++) dst[i] = attnops_f32_to_f16(src[i]);
}

static void fa_scale_rows__portable(float *o, int rows, int cols, const float *alpha)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) o[(size_t)r * cols + c] *= alpha[r];
}

static void fa_transpose_scaled__portable(const float *src, int ld_src, int rows, int cols, float scale, float *dst,
                                         int ld_dst)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)r * ld_dst + c] = scale * src[(size_t)c * ld_src + r];
}

static void fa_add_bias__portable(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dtype,
                     int64_t ld_b, bool add_then_scale)
{
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c++) {
            const int64_t at = r * ld_b + c;
            const float b = dtype == ATTNOPS_DTYPE_F32   ? ((const float *)bias)[at]
                            : dtype == ATTNOPS_DTYPE_F16 ? attnops_f16_to_f32(((const uint16_t *)bias)[at])
                                                         : attnops_bf16_to_f32(((const uint16_t *)bias)[at]);
            row[c] = add_then_scale ? (row[c] + b) * scale : row[c] * scale + b;
        }
    }
}

static void fa_add_alibi__portable(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0, bool sqrt_dist)
{
    for (int r = 0; r < rows; r++) {
        float *row = s + (size_t)r * ld_s;
        for (int c = 0; c < cols; c++) {
            float d = fabsf(d0 - (float)r + (float)c);
            row[c] = row[c] * scale - slope * (sqrt_dist ? sqrtf(d) : d);
        }
    }
}

static void fa_philox_bytes__portable(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
{
    ao_philox_bytes(g, first, count, out);
}

static void fa_philox_blocks__portable(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
{
    for (int i = 0; i < n; i++) ao_philox_bytes(g, blocks[i] * 16, 16, out + 16 * i);
}

static void fa_fp8_round__portable(float *x, int n, float scale, const ao_f8_format *f)
{
    for (int i = 0; i < n; i++) x[i] = ao_f8_round_f32(x[i] * scale, f);
}

static float fa_abs_max__portable(const float *x, int n)
{
    float m = 0.0f;
    for (int i = 0; i < n; i++) /* a comparison, not fmaxf: glibc's fmaxf turns a signalling NaN into NaN */
        if (fabsf(x[i]) > m) m = fabsf(x[i]);
    return m;
}

static void fa_scale2__portable(float *y, const float *x, int n, float a, float b, bool accumulate)
{
    for (int i = 0; i < n; i++) y[i] = accumulate ? y[i] + x[i] * a * b : x[i] * a * b;
}

/* Branch-free: the keep bits are random, a branch per element would mispredict half the time. */
static void fa_apply_keep__portable(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale)
{
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * (size_t)ld;
        const uint8_t *kr = keep + (size_t)r * (size_t)ld;
        for (int c = 0; c < cols; c++) row[c] *= (float)kr[c] * scale;
    }
}

static void fa_softcap__portable(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const size_t at = (size_t)r * ld + c;
            float d;
            s[at] = vec_tanh_ref(s[at] * in_scale, &d) * out_scale;
            if (dtanh) dtanh[at] = d;
        }
}

static void fa_softcap_grad__portable(float *ds, const float *dtanh, int rows, int cols, int ld)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) ds[(size_t)r * ld + c] *= dtanh[(size_t)r * ld + c];
}

static void kp_group_pool__portable(const float *const *key, const float *const *gate, const float *ape, int R, int D, bool bf16,
                       float *out)
{
    float e[128];
    for (int d = 0; d < D; d++) {
        float m = -INFINITY, sum = 0.0f, acc = 0.0f;
        for (int r = 0; r < R; r++) {
            e[r] = gate[r][d] + ape[r * D + d];
            m = e[r] > m ? e[r] : m;
        }
        for (int r = 0; r < R; r++) sum += (e[r] = expf(e[r] - m));
        for (int r = 0; r < R; r++) {
            const float w = e[r] / sum;
            const float wr =
                bf16 ? attnops_bf16_to_f32(attnops_f32_to_bf16(w)) : attnops_f16_to_f32(attnops_f32_to_f16(w));
            acc += wr * key[r][d];
        }
        out[d] = acc;
    }
}

/* Element i of an AttnRes row of dtype dt, widened exactly. */
static inline float ar_load(const void *v, attnops_dtype dt, int i)
{
    switch (dt) {
    case ATTNOPS_DTYPE_BF16: return ao_bf16_to_f32(((const uint16_t *)v)[i]);
    case ATTNOPS_DTYPE_F16: return attnops_f16_to_f32(((const uint16_t *)v)[i]);
    default: return ((const float *)v)[i];
    }
}

static inline void ar_store(void *out, attnops_dtype dt, int i, float x)
{
    switch (dt) {
    case ATTNOPS_DTYPE_BF16: ((uint16_t *)out)[i] = ao_f32_to_bf16(x); break;
    case ATTNOPS_DTYPE_F16: ((uint16_t *)out)[i] = attnops_f32_to_f16(x); break;
    default: ((float *)out)[i] = x; break;
    }
}

static void ar_dots__portable(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                    const void *next)
{
    (void)next; /* the portable form leaves prefetching to the hardware */
    float sx = 0.0f, sy = 0.0f;
    for (int d = 0; d < D; d++) {
        const float a = ar_load(v, dt, d);
        sx += a * (x ? x[d] : a);
        sy += a * y[d];
    }
    *vx = sx, *vy = sy;
}

static void ar_dots_f64__portable(const float *v, int D, const float *x, const float *y, float *vx, float *vy, const void *next)
{
    (void)next;
    double sx = 0.0, sy = 0.0;
    for (int d = 0; d < D; d++) {
        const double a = v[d];
        sx += a * (x ? x[d] : a);
        sy += a * y[d];
    }
    *vx = (float)sx, *vy = (float)sy;
}

static void ar_accumulate__portable(float *acc, float c, float e, const void *v, attnops_dtype dt, int D)
{
    for (int d = 0; d < D; d++) acc[d] = c * acc[d] + e * ar_load(v, dt, d);
}

static void ar_store_div__portable(void *out, attnops_dtype out_dt, const float *src, float div, int D)
{
    for (int d = 0; d < D; d++) ar_store(out, out_dt, d, src[d] / div);
}

static void ar_dots_split__portable(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                          const void *next)
{
    (void)next;
    /* in layout order, padding included: bitwise ar_dots on the row widened and split (strided rows) */
    float sx = 0.0f, sy = 0.0f;
    for (int pos = 0; pos < AR_SPLIT_LEN(D); pos++) {
        const int w = pos & 31, d = (pos & ~31) + (w < 16 ? 2 * w : 2 * (w - 16) + 1);
        const float a = d < D ? ao_bf16_to_f32(v[d]) : 0.0f;
        sx += a * (xs ? xs[pos] : a), sy += a * ys[pos];
    }
    *vx = sx, *vy = sy;
}

static void ar_accumulate_split__portable(float *accs, float c, float e, const uint16_t *v, int D)
{
    for (int d = 0; d < D; d++) accs[AR_SPLIT(d)] = c * accs[AR_SPLIT(d)] + e * ao_bf16_to_f32(v[d]);
}

static void ar_store_div_split__portable(void *out, attnops_dtype out_dt, const float *srcs, float div, int D)
{
    for (int d = 0; d < D; d++) ar_store(out, out_dt, d, srcs[AR_SPLIT(d)] / div);
}

static void ar_grad_row_split__portable(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                              float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream)
{
    (void)stream;
    for (int d = 0; d < D; d++) {
        const float x = ar_load(v, dt, d);
        const int pos = AR_SPLIT(d);
        ar_store(out, out_dt, d, a * gs[pos] + b * ys[pos] + e * x);
        us[pos] += b * x;
    }
}

static void ar_grad_row__portable(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                        float e, void *out, attnops_dtype out_dt, float *u, bool stream)
{
    (void)stream; /* plain stores: portable C has no non-temporal store */
    for (int d = 0; d < D; d++) {
        const float x = ar_load(v, dt, d);
        ar_store(out, out_dt, d, a * g[d] + b * y[d] + e * x);
        u[d] += b * x;
    }
}

/* The C loops: row i of C gets a[i][k] b[k][.] added for k in order. */
static void gemm_f32__portable(bool trans_a, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                               float *C, int ldc, bool accumulate)
{
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (!accumulate) memset(c, 0, (size_t)N * sizeof *c);
        for (int k = 0; k < K; k++) {
            const float a = trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
            const float *b = B + (size_t)k * ldb;
            for (int j = 0; j < N; j++) c[j] += a * b[j];
        }
    }
}

static float peak_fma_chains__portable(long iters, double *flops)
{
    float a[PEAK_CHAINS];
    for (int j = 0; j < PEAK_CHAINS; j++) a[j] = PEAK_START(j);
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < PEAK_CHAINS; j++) a[j] = a[j] * PEAK_B + PEAK_C;
    float sum = 0.0f;
    for (int j = 0; j < PEAK_CHAINS; j++) sum += a[j];
    *flops = 2.0 * PEAK_CHAINS * (double)iters;
    return sum;
}

/* ---- FusedInferAttentionScore ---- */

static float kv_element(const void *row, attnops_dtype dt, int d)
{
    if (dt == ATTNOPS_DTYPE_I8) return (float)((const int8_t *)row)[d];
    return ao_load_f32((const char *)row + (size_t)d * attnops_dtype_size(dt), dt);
}

static void fia_dot_rows__portable(const float *q, int rows, int ld_q, const void *const *k, attnops_dtype dt,
                                   int D, int cols, float *s, int ld_s, bool accumulate, const void *const *ahead,
                                   int ahead_bytes)
{
    for (int c = 0; ahead && c < cols; c++) fia_prefetch_row(ahead[c], ahead_bytes);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float sum = 0.0f;
            for (int d = 0; d < D; d++) sum += q[(size_t)r * ld_q + d] * kv_element(k[c], dt, d);
            s[(size_t)r * ld_s + c] = accumulate ? s[(size_t)r * ld_s + c] + sum : sum;
        }
}

static void fia_axpy_rows__portable(const float *p, int rows, int ld_p, const void *const *v, attnops_dtype dt,
                                    int D, int cols, float *o, int ld_o, bool p_bf16, const void *const *ahead,
                                    int ahead_bytes)
{
    (void)p_bf16; /* p as it is */
    for (int c = 0; ahead && c < cols; c++) fia_prefetch_row(ahead[c], ahead_bytes);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const float w = p[(size_t)r * ld_p + c];
            for (int d = 0; d < D; d++) o[(size_t)r * ld_o + d] += w * kv_element(v[c], dt, d);
        }
}

/* Every kernel, each named as the vector kernels are (src/cpu/simd/simd.h). */
#define FA_(name) .name = fa_##name##__portable,
#define KP_(name) .name = kp_##name##__portable,
#define AR_(name) .name = ar_##name##__portable,
#define FIA_(name) .name = fia_##name##__portable,
#define GEMM_(name) .name = gemm_##name##__portable,
#define PEAK_(name) .name = peak_##name##__portable,
#define GOLDEN_(name) .name = golden_##name##__portable,
GOLDEN_KERNELS_DECLARE(portable)
const cpu_kernel_set cpu_kernels_portable = {.fa = {FA_KERNEL_NAMES(FA_)},
                                             .kp = {KP_KERNEL_NAMES(KP_)},
                                             .ar = {AR_KERNEL_NAMES(AR_)},
                                             .fia = {FIA_KERNEL_NAMES(FIA_)},
                                             .gemm = {GEMM_KERNEL_NAMES(GEMM_)},
                                             .peak = {PEAK_KERNEL_NAMES(PEAK_)},
                                             .golden = {GOLDEN_KERNEL_NAMES(GOLDEN_)}};
