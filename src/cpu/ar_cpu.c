/* Block Attention Residuals fast kernel, f32 arithmetic on the widened
 * activations.  The op is memory-bound (O(L D) flops per token on L D
 * elements), so each block row is read from memory once per token.  Tokens
 * go in tiles of AR_TILE, rows outer: row l of every token of the tile, then
 * row l + 1, so each block tensor is read as runs of AR_TILE consecutive rows
 * that the hardware prefetchers follow (a token's L rows at a time would be
 * L interleaved streams, which they do not); the backward's second use of a
 * row comes from cache, and its gradient rows are written
 * with non-temporal stores when the call's outputs exceed the caches.  bf16
 * calls keep their f32 rows (wg, accumulators, g, u) in the pair-split
 * layout of kernels.h, whose kernels widen bf16 with half the instructions.
 * Shapes per token (b, t): V [L][D] (the L
 * rows, each a separate tensor), g [D], wg [D] = w * gamma (w without
 * RMSNorm, rounded to f32 once per call).
 *
 * Forward, one pass over the rows with an online softmax:
 *   ar_dots:  ss_l = V[l].V[l],  q_l = V[l].wg
 *   r_l = sqrt(ss_l / D + eps),  z_l = scale q_l / r_l   (= scale w.K[l])
 *   running max m, sum and acc [D] = sum_l exp(z_l - m) V[l], rescaled by
 *   exp(m_old - m) when the max grows (ar_accumulate, the row still in L1,
 *   the token's acc in L2)
 *   h = acc / sum;  alpha_l = exp(z_l - m) / sum;  rms_l = r_l.
 *
 * Backward, per tile two sweeps over its rows (the second from cache):
 *   ar_dots:  dA_l = g.V[l],  q_l = wg.V[l]
 *   s_l = scale alpha_l (dA_l - sum alpha dA)
 *   ar_grad_row:  dV[l] = alpha_l g + (s_l / r_l) wg - (s_l q_l / (D r_l^3)) V[l]
 *                 u += (s_l / r_l) V[l]
 * which is B.2 regrouped (c_l = sum_d gamma dK V = s_l q_l); and since
 * dw = sum s_l K[l] = gamma u and dgamma = sum dK V / r = w u over all
 * tokens and rows, one f32 accumulator u [D] yields both.  u is summed per
 * token, per fixed chunk of tokens, then over the chunks in order
 * (ar_problem.h), so dw and dgamma are bitwise independent of the thread
 * count.  Without RMSNorm: r = 1, e = 0, dw = u.
 *
 * Numerics: f32 sums of up to D products (ar_dots) and of L rows; alpha,
 * r, h and the gradients carry a few f32 ulps of relative error before the
 * one rounding to the dtype, so against the reference most outputs are
 * identical and the rest one dtype ulp away (tests/test_attnres.c measures
 * it; docs/ATTNRES.md).  Rows with a stride other than 1 are widened into
 * (or written from) f32 scratch around the same kernels.
 *
 * Parallel: forward over tiles of AR_TILE tokens; backward over the chunks,
 * each in tiles of AR_BWD_TILE. */
#include <math.h>
#include <string.h>

#include <omp.h>

#include "cpu/ar_cpu.h"
#include "cpu/kernels.h"

/* Tokens per tile: the forward's 16 accumulators stay in L2; the backward's
 * second sweep rereads its tile's L rows, which at 8 tokens mostly still
 * sit in L2 (measured: 8 beat 4 and 16 there). */
enum { AR_TILE = 16, AR_BWD_TILE = 8 };
#define AR_STREAM_BYTES (64.0 * 1024 * 1024)

/* Per-thread scratch rows of D floats: AR_TILE rows of per-token sums (the
 * forward's accumulators, the backward's u), AR_TILE widened g rows
 * (backward), then single rows: a widened input row, its split form, an
 * output row. */
enum { S_ACC = 0, S_G = AR_TILE, S_ROW = 2 * AR_TILE, S_SPLIT, S_OUT, S_ROWS };

/* A row of scratch holds D floats in either layout (kernels.h: AR_SPLIT_LEN). */
static size_t row_bytes(const ar_problem *p) { return ao_align_up((size_t)AR_SPLIT_LEN(p->D) * sizeof(float), 64); }
static size_t chunk_bytes(const ar_problem *p) { return p->backward ? (size_t)ar_chunks(p) * row_bytes(p) : 0; }
static size_t thread_bytes(const ar_problem *p) { return S_ROWS * row_bytes(p); }
static float *scratch_row(const ar_problem *p, float *scratch, int which)
{
    return scratch + (size_t)which * row_bytes(p) / sizeof(float);
}

size_t ar_cpu_workspace(const ar_problem *p)
{
    return 2 * row_bytes(p) + chunk_bytes(p) + (size_t)p->threads * thread_bytes(p); /* wg, its split form, ... */
}

/* D elements from src (element stride sd) widened to f32; the common bf16
 * row inline. */
static void widen_row(const ar_problem *p, const char *src, int64_t sd, float *dst)
{
    if (p->dtype == ATTNOPS_DTYPE_BF16 && sd == 1) {
        for (int64_t d = 0; d < p->D; d++) dst[d] = ao_bf16_to_f32(((const uint16_t *)src)[d]);
        return;
    }
    for (int64_t d = 0; d < p->D; d++) dst[d] = ao_load_f32(src + d * sd * p->esize, p->dtype);
}

/* Row (b, t) of a view ready for the kernels: in place when its elements
 * are contiguous, else widened into buf (returning f32 in *dt). */
static const void *input_row(const ar_problem *p, const ar_rows *r, int64_t b, int64_t t, float *buf,
                             attnops_dtype *dt)
{
    const char *row = ar_row(p, r, b, t);
    *dt = r->sd == 1 ? p->dtype : ATTNOPS_DTYPE_F32;
    if (r->sd == 1) return row;
    widen_row(p, row, r->sd, buf);
    return buf;
}

/* Where a kernel writes row (b, t) of an output view: in place when
 * contiguous, else buf in f32, scattered afterwards by flush_row. */
static void *output_row(const ar_problem *p, const ar_rows *r, int64_t b, int64_t t, float *buf, attnops_dtype *dt)
{
    *dt = r->sd == 1 ? p->dtype : ATTNOPS_DTYPE_F32;
    return r->sd == 1 ? (void *)ar_row(p, r, b, t) : (void *)buf;
}

static void flush_row(const ar_problem *p, const ar_rows *r, int64_t b, int64_t t, const float *buf)
{
    if (r->sd == 1) return;
    char *row = ar_row(p, r, b, t);
    for (int64_t d = 0; d < p->D; d++) ao_store_f32(row + d * r->sd * p->esize, p->dtype, buf[d]);
}

/* The row read after row l of tile token j (rows outer), for ar_dots to
 * prefetch; NULL after the tile's last row or when it is not contiguous. */
static const void *next_row(const ar_problem *p, int64_t l, int j, int n, int64_t tok0)
{
    if (++j == n) j = 0, l++;
    if (l == p->L || p->v[l].sd != 1) return NULL;
    return ar_row(p, &p->v[l], (tok0 + j) / p->T, (tok0 + j) % p->T);
}

/* x [D] in the pair-split layout (kernels.h), zero-padded. */
static void to_split(const float *x, int64_t D, float *out)
{
    memset(out, 0, (size_t)AR_SPLIT_LEN(D) * sizeof(float));
    for (int64_t d = 0; d < D; d++) out[AR_SPLIT(d)] = x[d];
}

/* The f32 rows of a call: bf16 calls keep wg, the forward's accumulators,
 * the backward's g and u and any widened row in the pair-split layout, whose
 * bf16 kernels widen a row with half the instructions. */
typedef struct row_layout {
    bool split;
    int D, len;      /* elements; floats per row in the layout */
    const float *wg; /* in the layout */
} row_layout;

/* V[l].x (x NULL: V[l].V[l]) and V[l].wg for token (b, t), x in the call's
 * layout; *v / *dt: the row as the forward's accumulation reads it (strided
 * rows widened into buf, split into sbuf). */
static void row_dots(const ar_problem *p, const ar_kernels *k, const row_layout *f, int64_t l, int64_t b,
                     int64_t t, const float *x, float *buf, float *sbuf, const void *next, const void **v,
                     attnops_dtype *dt, float *vx, float *vy)
{
    if (f->split && p->v[l].sd == 1) {
        *v = ar_row(p, &p->v[l], b, t), *dt = ATTNOPS_DTYPE_BF16;
        k->dots_split(*v, f->D, x, f->wg, vx, vy, next);
        return;
    }
    *v = input_row(p, &p->v[l], b, t, buf, dt);
    if (f->split) { /* a strided bf16 row, widened: split it like the rest */
        to_split(buf, f->D, sbuf);
        *v = sbuf;
    }
    if (p->dtype == ATTNOPS_DTYPE_F32) k->dots_f64(*v, f->len, x, f->wg, vx, vy, next); /* kernels.h: why double */
    else k->dots(*v, *dt, f->len, x, f->wg, vx, vy, next);
}

static void fwd_accumulate(const ar_kernels *k, const row_layout *f, float *acc, float c, float e, const void *v,
                           attnops_dtype dt)
{
    if (f->split && dt == ATTNOPS_DTYPE_BF16) k->accumulate_split(acc, c, e, v, f->D);
    else k->accumulate(acc, c, e, v, dt, f->len);
}

/* Forward of tokens [tok0, tok0 + n): row l of every token before row l + 1,
 * so each block tensor is read as one run of n consecutive rows (one row per
 * token from L tensors at once is L interleaved streams, more than the
 * hardware prefetchers follow).  Per token the operations and their order
 * are those of a row-by-row pass; the n accumulators stay in L2. */
static void forward_tile(const ar_problem *p, const ar_kernels *k, const row_layout *f, int64_t tok0, int n,
                         float *scratch)
{
    const int D = (int)p->D;
    const size_t ld = row_bytes(p) / sizeof(float);
    float *acc = scratch_row(p, scratch, S_ACC), *buf = scratch_row(p, scratch, S_ROW);
    float *obuf = scratch_row(p, scratch, S_OUT), *sbuf = scratch_row(p, scratch, S_SPLIT);
    float z[AR_TILE][AR_MAX_L], r[AR_TILE][AR_MAX_L], m[AR_TILE], sum[AR_TILE];
    for (int j = 0; j < n; j++) {
        memset(acc + j * ld, 0, (size_t)f->len * sizeof(float));
        m[j] = -INFINITY, sum[j] = 0.0f;
    }
    for (int64_t l = 0; l < p->L; l++) {
        for (int j = 0; j < n; j++) {
            const int64_t b = (tok0 + j) / p->T, t = (tok0 + j) % p->T;
            float *aj = acc + j * ld;
            attnops_dtype dt;
            const void *v;
            float ss, q;
            row_dots(p, k, f, l, b, t, NULL, buf, sbuf, next_row(p, l, j, n, tok0), &v, &dt, &ss, &q);
            r[j][l] = p->rmsnorm ? sqrtf(ss / (float)D + p->eps) : 1.0f;
            z[j][l] = p->scale * (q / r[j][l]);
            if (z[j][l] > m[j]) { /* a new max: rescale what is summed so far (m = -inf at first: c = 0) */
                const float c = expf(m[j] - z[j][l]);
                sum[j] = sum[j] * c + 1.0f, m[j] = z[j][l];
                fwd_accumulate(k, f, aj, c, 1.0f, v, dt);
            } else {
                const float e = expf(z[j][l] - m[j]);
                sum[j] += e;
                fwd_accumulate(k, f, aj, 1.0f, e, v, dt);
            }
        }
    }
    for (int j = 0; j < n; j++) {
        const int64_t b = (tok0 + j) / p->T, t = (tok0 + j) % p->T;
        attnops_dtype odt;
        void *h = output_row(p, &p->h, b, t, obuf, &odt);
        if (f->split) k->store_div_split(h, odt, acc + j * ld, sum[j], D);
        else k->store_div(h, odt, acc + j * ld, sum[j], D);
        flush_row(p, &p->h, b, t, obuf);
        for (int64_t l = 0; l < p->L; l++) {
            if (p->rms.data) *ar_cache_at(&p->rms, b, t, l) = r[j][l];
            if (p->alpha.data) *ar_cache_at(&p->alpha, b, t, l) = expf(z[j][l] - m[j]) / sum[j];
        }
    }
}

/* Backward of tokens [tok0, tok0 + n), rows-outer like the forward, in two
 * sweeps: the dot products of every row, then the gradient rows (reading
 * the tile's rows again, now from the last-level cache).  Token j's
 * u [D] += sum_l (s_l / r_l) V[l] goes to u + j ld; per token the operations
 * and their order are those of a row-by-row pass. */
static void backward_tile(const ar_problem *p, const ar_kernels *k, const row_layout *f, int64_t tok0, int n,
                          float *scratch, float *u)
{
    const int D = (int)p->D;
    const size_t ld = row_bytes(p) / sizeof(float);
    float *buf = scratch_row(p, scratch, S_ROW), *obuf = scratch_row(p, scratch, S_OUT);
    float *g = scratch_row(p, scratch, S_G), *sbuf = scratch_row(p, scratch, S_SPLIT);
    float alpha[AR_TILE][AR_MAX_L], dA[AR_TILE][AR_MAX_L], q[AR_TILE][AR_MAX_L], sum[AR_TILE];
    /* block gradients past the caches: written without reading their lines first */
    const bool stream = (double)p->L * (double)(p->B * p->T) * (double)p->D * (double)p->esize >= AR_STREAM_BYTES;
    for (int j = 0; j < n; j++) {
        const int64_t b = (tok0 + j) / p->T, t = (tok0 + j) % p->T;
        widen_row(p, ar_row(p, &p->g, b, t), p->g.sd, f->split ? buf : g + j * ld);
        if (f->split) to_split(buf, D, g + j * ld);
    }
    for (int64_t l = 0; l < p->L; l++)
        for (int j = 0; j < n; j++) {
            const int64_t b = (tok0 + j) / p->T, t = (tok0 + j) % p->T;
            attnops_dtype dt;
            const void *v;
            row_dots(p, k, f, l, b, t, g + j * ld, buf, sbuf, next_row(p, l, j, n, tok0), &v, &dt, &dA[j][l],
                     &q[j][l]);
            alpha[j][l] = *ar_cache_at(&p->alpha, b, t, l);
        }
    for (int j = 0; j < n; j++) {
        sum[j] = 0.0f;
        for (int64_t l = 0; l < p->L; l++) sum[j] += alpha[j][l] * dA[j][l];
    }
    for (int64_t l = 0; l < p->L; l++)
        for (int j = 0; j < n; j++) {
            const int64_t b = (tok0 + j) / p->T, t = (tok0 + j) % p->T;
            const float s = p->scale * (alpha[j][l] * (dA[j][l] - sum[j]));
            const float r = p->rmsnorm ? *ar_cache_at(&p->rms, b, t, l) : 1.0f;
            /* divided by r three times, not by r^3: for a zero row r = sqrt(eps) and r^3 leaves f32 (0 / 0) */
            const float e = p->rmsnorm ? -(s * q[j][l]) / ((float)D * r) / r / r : 0.0f;
            attnops_dtype dt, odt;
            const void *v = input_row(p, &p->v[l], b, t, buf, &dt);
            void *dv = output_row(p, &p->dv[l], b, t, obuf, &odt);
            (f->split ? k->grad_row_split : k->grad_row)(v, dt, D, g + j * ld, f->wg, alpha[j][l], s / r, e, dv,
                                                          odt, u + j * ld, stream);
            flush_row(p, &p->dv[l], b, t, obuf);
        }
}

static void run_forward(const ar_problem *p, const ar_kernels *k, const row_layout *f, char *scratch)
{
    const int64_t tokens = p->B * p->T, tiles = (tokens + AR_TILE - 1) / AR_TILE;
#pragma omp parallel for num_threads(p->team) schedule(static)
    for (int64_t tile = 0; tile < tiles; tile++) {
        float *s = (float *)(scratch + (size_t)omp_get_thread_num() * thread_bytes(p));
        const int64_t tok0 = tile * AR_TILE;
        forward_tile(p, k, f, tok0, (int)(tokens - tok0 < AR_TILE ? tokens - tok0 : AR_TILE), s);
    }
}

static void run_backward(const ar_problem *p, const ar_kernels *k, const row_layout *f, float *chunk_u,
                         char *scratch)
{
    const int64_t D = p->D, ld = (int64_t)(row_bytes(p) / sizeof(float)), chunks = ar_chunks(p), per = ar_chunk_tokens(p);
    const int64_t tokens = p->B * p->T;
#pragma omp parallel for num_threads(p->team) schedule(dynamic)
    for (int64_t c = 0; c < chunks; c++) {
        float *s = (float *)(scratch + (size_t)omp_get_thread_num() * thread_bytes(p)), *u = scratch_row(p, s, S_ACC);
        float *cu = chunk_u + c * ld;
        const int64_t end = tokens < (c + 1) * per ? tokens : (c + 1) * per;
        memset(cu, 0, (size_t)f->len * sizeof(float));
        for (int64_t tok0 = c * per; tok0 < end; tok0 += AR_BWD_TILE) {
            const int n = (int)(end - tok0 < AR_BWD_TILE ? end - tok0 : AR_BWD_TILE);
            memset(u, 0, (size_t)n * (size_t)ld * sizeof(float));
            backward_tile(p, k, f, tok0, n, s, u);
            for (int j = 0; j < n; j++) /* token by token, in order */
                for (int64_t x = 0; x < f->len; x++) cu[x] += u[j * ld + x];
        }
    }
    for (int64_t d = 0; d < D; d++) {
        const int64_t at = f->split ? AR_SPLIT(d) : d;
        float total = 0.0f;
        for (int64_t c = 0; c < chunks; c++) total += chunk_u[c * ld + at];
        const float w = ao_load_f32(ar_vec_at(p, &p->w, d), p->dtype);
        const float gamma = p->rmsnorm ? ao_load_f32(ar_vec_at(p, &p->gamma, d), p->dtype) : 1.0f;
        ao_store_f32(ar_vec_at(p, &p->dw, d), p->dtype, gamma * total);
        if (p->rmsnorm) ao_store_f32(ar_vec_at(p, &p->dgamma, d), p->dtype, w * total);
    }
}

void ar_cpu_run(const ar_problem *p, void *workspace)
{
    char *ws = workspace;
    float *wg = (float *)ws;
    for (int64_t d = 0; d < p->D; d++) {
        const float w = ao_load_f32(ar_vec_at(p, &p->w, d), p->dtype);
        wg[d] = p->rmsnorm ? w * ao_load_f32(ar_vec_at(p, &p->gamma, d), p->dtype) : w;
    }
    const ar_kernels *k = &cpu_kernels()->ar;
    row_layout f = {p->dtype == ATTNOPS_DTYPE_BF16, (int)p->D, (int)p->D, wg};
    if (f.split) { /* wg's split form follows it */
        float *wg_split = (float *)(ws + row_bytes(p));
        to_split(wg, p->D, wg_split);
        f.wg = wg_split, f.len = AR_SPLIT_LEN(f.D);
    }
    char *scratch = ws + 2 * row_bytes(p) + chunk_bytes(p);
    if (p->backward) run_backward(p, k, &f, (float *)(ws + 2 * row_bytes(p)), scratch);
    else run_forward(p, k, &f, scratch);
}
