#include "fma_ceiling.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "bench_common.h"

double fma_ceiling_gflops(const char *isa, int threads, int reps)
{
#if defined(__x86_64__)
    float (*loop)(long) = !strcmp(isa, "avx512") ? fma_loop_avx512 : !strcmp(isa, "avx2") ? fma_loop_avx2 : NULL;
    const double flops_per_iter = 12.0 * 2 * (loop == fma_loop_avx512 ? 16 : 8);
    if (!loop) return NAN;
    const long iters = 20000000;
    double gf[64];
    if (reps > 64) reps = 64;
    volatile float sink = 0.0f;
    for (int r = 0; r < reps; r++) {
        double t = 0.0;
#pragma omp parallel num_threads(threads) reduction(max : t)
        {
#pragma omp barrier
            const double t0 = now_s();
            sink += loop(iters);
            t = now_s() - t0;
        }
        gf[r] = flops_per_iter * (double)iters * threads / t * 1e-9;
    }
    (void)sink;
    return median(gf, reps);
#else
    (void)isa, (void)threads, (void)reps;
    return NAN;
#endif
}
