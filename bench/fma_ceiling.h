/* The machine's FLOP/s ceiling for the ISA in use: the kernel table's
 * register-only loop of independent FMA chains (peak.fma_chains, no memory
 * traffic), on every thread at once. */
#ifndef ATTNOPS_BENCH_FMA_CEILING_H
#define ATTNOPS_BENCH_FMA_CEILING_H

/* GFLOP/s of `threads` threads running the fma_chains kernel of the ISA in
 * use (ATTNOPS_ISA chooses it, as it does the library's), the median of
 * `reps` timings.  For the portable kernels it is the scalar C ceiling. */
double fma_ceiling_gflops(int threads, int reps);

#endif
