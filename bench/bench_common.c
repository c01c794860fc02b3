/* Shared benchmark support; see bench_common.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "attnops.h"
#include "bench_common.h"

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(const double *v, int n)
{
    double tmp[256];
    if (n <= 0) return NAN;
    if (n > 256) n = 256;
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

double vmin(const double *v, int n)
{
    double m = INFINITY;
    for (int i = 0; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

double vmax(const double *v, int n)
{
    double m = -INFINITY;
    for (int i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

void *xmalloc(size_t n)
{
    void *p = NULL;
    if (n == 0) n = 64;
    if (posix_memalign(&p, 64, n) != 0 || !p) {
        fprintf(stderr, "bench: out of memory allocating %zu bytes\n", n);
        exit(1);
    }
    return p;
}

void free_all(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++) free(p[i]);
}

/* ------------------------------------------------------------------------ */
/* the one-round programs                                                    */
/* ------------------------------------------------------------------------ */

void check_ok(const char *prog, attnops_status st)
{
    if (st != ATTNOPS_SUCCESS) {
        fprintf(stderr, "%s: %s\n", prog, attnops_last_error());
        exit(1);
    }
}

call_times time_calls(void (*fn)(void *), void *arg, int calls)
{
    double t[256];
    if (calls > 256) calls = 256;
    for (int i = 0; i < calls; i++) {
        const double t0 = now_s();
        fn(arg);
        t[i] = (now_s() - t0) * 1e3;
    }
    return (call_times){median(t, calls), vmin(t, calls)};
}

/* ------------------------------------------------------------------------ */
/* copy bandwidth                                                            */
/* ------------------------------------------------------------------------ */

double copy_gbps(int threads)
{
    const size_t n = (size_t)256 << 20;
    char *src = xmalloc(n), *dst = xmalloc(n);
    double t[5];
    for (int rep = -1; rep < 5; rep++) {
        const double t0 = now_s();
#pragma omp parallel num_threads(threads)
        {
            const size_t part = n / (size_t)omp_get_num_threads(), at = part * (size_t)omp_get_thread_num();
            memcpy(dst + at, src + at, part);
        }
        if (rep >= 0) t[rep] = now_s() - t0;
        else memset(src, 1, n), memset(dst, 2, n); /* first touch */
    }
    free(src), free(dst);
    return 2.0 * (double)n / median(t, 5) * 1e-9;
}

double read_gbps(int threads)
{
    const size_t n = (size_t)256 << 20, words = n / sizeof(uint64_t);
    uint64_t *src = xmalloc(n), sink = 0;
    memset(src, 1, n); /* first touch */
    double t[5];
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = now_s();
#pragma omp parallel num_threads(threads) reduction(^ : sink)
        {
            uint64_t acc[4] = {0, 0, 0, 0}; /* four chains: the adds never bound the loads */
#pragma omp for schedule(static)
            for (size_t i = 0; i < words; i += 4)
                acc[0] += src[i], acc[1] += src[i + 1], acc[2] += src[i + 2], acc[3] += src[i + 3];
            sink ^= acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
        }
        t[rep] = now_s() - t0;
    }
    free(src);
    if (sink == 42) printf(" "); /* keeps the sums */
    return (double)n / median(t, 5) * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* tile-GEMM peak (libxsmm)                                                  */
/* ------------------------------------------------------------------------ */


int gemm_setup(gemm_bench *g, int bf16, int threads)
{
    const libxsmm_blasint m = GM, n = GN, k = GK, lda = GM, ldb = GK, ldc = GM;
    const float alpha = 1.0f, beta = 1.0f; /* C += A*B, as an attention kernel accumulates */
    memset(g, 0, sizeof *g);
    g->bf16 = bf16;
    g->threads = threads;
    if (bf16) {
        int flags = LIBXSMM_GEMM_FLAG_VNNI_A;
        g->bsmm = libxsmm_bsmmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, NULL);
        if (!g->bsmm) return -1;
    } else {
        int flags = LIBXSMM_GEMM_FLAG_NONE;
        g->smm = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, NULL);
        if (!g->smm) return -1;
    }
    size_t es = bf16 ? 2 : 4;
    g->a = calloc((size_t)threads, sizeof *g->a);
    g->b = calloc((size_t)threads, sizeof *g->b);
    g->c = calloc((size_t)threads, sizeof *g->c);
    /* Each thread allocates and first-touches its own buffers. */
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        g->a[t] = xmalloc((size_t)GM * GK * es);
        g->b[t] = xmalloc((size_t)GK * GN * es);
        g->c[t] = xmalloc((size_t)GM * GN * sizeof(float));
        uint64_t s = 0x1234567ull + 7919ull * (uint64_t)t;
        for (int i = 0; i < GM * GK; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            float x = (float)((s >> 40) & 0xFFFF) / 65536.0f * 0.02f - 0.01f;
            if (bf16) ((uint16_t *)g->a[t])[i] = attnops_f32_to_bf16(x);
            else ((float *)g->a[t])[i] = x;
        }
        for (int i = 0; i < GK * GN; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            float x = (float)((s >> 40) & 0xFFFF) / 65536.0f * 0.02f - 0.01f;
            if (bf16) ((uint16_t *)g->b[t])[i] = attnops_f32_to_bf16(x);
            else ((float *)g->b[t])[i] = x;
        }
        memset(g->c[t], 0, (size_t)GM * GN * sizeof(float));
    }
    return 0;
}

/* One JIT call on thread t's buffers. */
static inline void gemm_call(const gemm_bench *g, int t)
{
    if (g->bf16)
        g->bsmm((const libxsmm_bfloat16 *)g->a[t], (const libxsmm_bfloat16 *)g->b[t], g->c[t]);
    else
        g->smm((const float *)g->a[t], (const float *)g->b[t], g->c[t]);
}

/* Every thread runs `iters` calls; returns the wall time of the slowest. */
double gemm_run(const gemm_bench *g, long iters)
{
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(g->threads)
    {
        int t = omp_get_thread_num();
#pragma omp barrier
#pragma omp master
        t0 = now_s();
        for (long i = 0; i < iters; i++) gemm_call(g, t);
#pragma omp barrier
#pragma omp master
        t1 = now_s();
    }
    return t1 - t0;
}

/* Check the kernel computes A*B (A VNNI-2 packed for bf16): catches a wrong
 * dispatch that would make the "peak" meaningless. */
int gemm_check(const gemm_bench *g)
{
    float *c = g->c[0];
    memset(c, 0, (size_t)GM * GN * sizeof(float));
    gemm_call(g, 0);
    double maxerr = 0;
    for (int j = 0; j < GN; j++)
        for (int i = 0; i < GM; i++) {
            double ref = 0;
            for (int p = 0; p < GK; p++) {
                double a, b;
                if (g->bf16) {
                    /* VNNI-2 A: element (i, p) at [(p/2)][i][p%2] */
                    a = attnops_bf16_to_f32(((const uint16_t *)g->a[0])[(p / 2) * GM * 2 + i * 2 + (p % 2)]);
                    b = attnops_bf16_to_f32(((const uint16_t *)g->b[0])[j * GK + p]);
                } else {
                    a = ((const float *)g->a[0])[p * GM + i];
                    b = ((const float *)g->b[0])[j * GK + p];
                }
                ref += a * b;
            }
            double e = fabs(ref - c[j * GM + i]);
            maxerr = e > maxerr ? e : maxerr;
        }
    return maxerr < 1e-4 ? 0 : -1;
}

/* Choose iterations so one measurement takes about `target` seconds. */
void gemm_calibrate(gemm_bench *g, double target)
{
    long it = 256;
    for (;;) {
        double t = gemm_run(g, it);
        if (t >= 0.02 || it > (1L << 30)) {
            double per = t / (double)it;
            g->iters = (long)(target / per);
            if (g->iters < 16) g->iters = 16;
            return;
        }
        it *= 4;
    }
}

void gemm_free(gemm_bench *g)
{
    if (!g->a) return;
    for (int t = 0; t < g->threads; t++) {
        free(g->a[t]);
        free(g->b[t]);
        free(g->c[t]);
    }
    free(g->a);
    free(g->b);
    free(g->c);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

void json_open(json_out *j, const char *path)
{
    j->n = 0;
    j->f = NULL;
    if (!path) return;
    j->f = fopen(path, "w");
    if (!j->f) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        exit(2);
    }
    fputs("{\n", j->f);
}

void json_num(json_out *j, const char *key, double v)
{
    if (!j->f) return;
    if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0) /* integers (bytes) exactly */
        fprintf(j->f, "%s  \"%s\": %.0f", j->n ? ",\n" : "", key, v);
    else if (isfinite(v))
        fprintf(j->f, "%s  \"%s\": %.6g", j->n ? ",\n" : "", key, v);
    else fprintf(j->f, "%s  \"%s\": null", j->n ? ",\n" : "", key);
    j->n++;
}

void json_numf(json_out *j, double v, const char *fmt, const char *a, const char *b)
{
    char key[256];
    snprintf(key, sizeof key, fmt, a, b);
    json_num(j, key, v);
}

void json_str(json_out *j, const char *key, const char *v)
{
    if (!j->f) return;
    fprintf(j->f, "%s  \"%s\": \"", j->n ? ",\n" : "", key);
    for (const char *c = v; *c; c++) fprintf(j->f, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c); /* JSON escapes */
    fputc('"', j->f);
    j->n++;
}

void json_times(json_out *j, const char *prefix, call_times t)
{
    json_numf(j, t.med_ms, "%s_ms_median", prefix, "");
    json_numf(j, t.min_ms, "%s_ms_min", prefix, "");
}

void json_close(json_out *j)
{
    if (!j->f) return;
    fputs("\n}\n", j->f);
    fclose(j->f);
}


void print_machine(const char *prog)
{
    printf("%s: attnops %s, isa %s, cpu %s, gemm f32: %s, gemm bf16: %s\n", prog, attnops_version(),
           attnops_cpu_isa(), attnops_cpu_model(), attnops_gemm_backend(ATTNOPS_DTYPE_F32),
           attnops_gemm_backend(ATTNOPS_DTYPE_BF16));
}

void json_machine(json_out *j)
{
    json_str(j, "attnops_isa", attnops_cpu_isa());
    json_str(j, "cpu_model", attnops_cpu_model());
    json_str(j, "gemm_f32", attnops_gemm_backend(ATTNOPS_DTYPE_F32));
    json_str(j, "gemm_bf16", attnops_gemm_backend(ATTNOPS_DTYPE_BF16));
}
