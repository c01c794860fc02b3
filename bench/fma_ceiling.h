/* The machine's FLOP/s ceiling for the ISA in use: a register-only loop of
 * independent FMA chains (no memory traffic), on every thread at once. */
#ifndef ATTNOPS_BENCH_FMA_CEILING_H
#define ATTNOPS_BENCH_FMA_CEILING_H

/* GFLOP/s of `threads` threads running the loop of `isa` ("avx2",
 * "avx512"), the median of `reps` timings; NaN for an ISA with no loop here
 * (portable) or off x86-64. */
double fma_ceiling_gflops(const char *isa, int threads, int reps);

/* One thread's loop: iters x 12 chains x (lanes) FMAs; returns a value
 * depending on every chain so the loop cannot be removed. */
float fma_loop_avx2(long iters);
float fma_loop_avx512(long iters);

#endif
