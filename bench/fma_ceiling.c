#include "fma_ceiling.h"

#include <omp.h>

#include "bench_common.h"
#include "cpu/kernels.h"

double fma_ceiling_gflops(int threads, int reps)
{
    float (*const loop)(long, double *) = cpu_kernels()->peak.fma_chains;
    const long iters = 20000000;
    double gf[64];
    if (reps > 64) reps = 64;
    volatile float sink = 0.0f;
    for (int r = 0; r < reps; r++) {
        double t = 0.0, flops = 0.0;
#pragma omp parallel num_threads(threads) reduction(max : t, flops)
        {
#pragma omp barrier
            const double t0 = now_s();
            sink += loop(iters, &flops);
            t = now_s() - t0;
        }
        gf[r] = flops * threads / t * 1e-9;
    }
    (void)sink;
    return median(gf, reps);
}
