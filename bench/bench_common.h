/* What every benchmark program shares: timing and statistics, aligned
 * allocation, the libxsmm tile-GEMM peak the kernels are measured against
 * (fp32 and bf16 64x64x128 JIT GEMMs, C += A B, every thread on its own
 * buffers), a machine copy bandwidth, and a flat JSON writer; error exits,
 * timed calls and the peak RSS over a call. */
#ifndef ATTNOPS_BENCH_COMMON_H
#define ATTNOPS_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libxsmm.h>

#include "attnops.h"

double now_s(void);
int cmp_double(const void *a, const void *b);
double median(const double *v, int n);
double vmin(const double *v, int n);
double vmax(const double *v, int n);
/* 64-byte aligned; exits with a message when memory runs out. */
void *xmalloc(size_t n);
/* free() each of the n pointers; FREE_ALL(p, q, ...) lists them inline. */
void free_all(void *const *p, size_t n);
#define FREE_ALL(...) free_all((void *[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))

/* ---- the one-round programs: error exits, timed calls, peak RSS ---- */
/* Exits 1, printing "prog: attnops_last_error()", unless st is success. */
void check_ok(const char *prog, attnops_status st);

typedef struct call_times {
    double med_ms, min_ms;
} call_times;

/* Median and min of `calls` (at most 256) timed calls of fn(arg), in ms.
 * The untimed first call is the caller's. */
call_times time_calls(void (*fn)(void *), void *arg, int calls);


/* ---- copy bandwidth ---- */
/* Read + written bytes per second (GB/s, 1e9) of a parallel memcpy of 256 MiB
 * split evenly over `threads` OpenMP threads: one untimed first-touch pass,
 * then the median of 5 timed copies. */
double copy_gbps(int threads);
/* The read-only bandwidth: bytes per second of a parallel sum over 256 MiB
 * (what a decode step, which reads its cache and writes little, can reach). */
double read_gbps(int threads);

/* ---- tile-GEMM peak ---- */
enum { GM = 64, GN = 64, GK = 128 };
#define GEMM_FLOP (2.0 * GM * GN * GK)

typedef struct gemm_bench {
    int bf16;              /* 0: fp32 smm, 1: bf16 bsmm with VNNI-2 A */
    libxsmm_smmfunction smm;
    libxsmm_bsmmfunction bsmm;
    long iters;            /* per thread per measurement */
    int threads;
    void **a, **b;         /* per-thread buffers */
    float **c;
} gemm_bench;

/* 0, or -1 when libxsmm cannot JIT the GEMM on this CPU. */
int gemm_setup(gemm_bench *g, int bf16, int threads);
/* 0 when the kernel computes A B (catches a wrong dispatch). */
int gemm_check(const gemm_bench *g);
/* Sets g->iters so one gemm_run takes about `target` seconds. */
void gemm_calibrate(gemm_bench *g, double target);
/* Every thread runs `iters` calls; returns the wall time of the slowest. */
double gemm_run(const gemm_bench *g, long iters);
void gemm_free(gemm_bench *g);

/* ---- JSON: one flat object of numbers and strings ---- */
typedef struct json_out {
    FILE *f;
    int n;
} json_out;

/* path NULL: every call is a no-op. */
void json_open(json_out *j, const char *path);
void json_num(json_out *j, const char *key, double v);
/* key = fmt with a, b substituted (two %s). */
void json_numf(json_out *j, double v, const char *fmt, const char *a, const char *b);
void json_str(json_out *j, const char *key, const char *v);
/* "<prefix>_ms_median" and "<prefix>_ms_min". */
void json_times(json_out *j, const char *prefix, call_times t);
void json_close(json_out *j);

/* The machine every measurement is reported with: ISA in use, CPU model,
 * GEMM backend per operand kind; one header line, and the same as JSON keys. */
void print_machine(const char *prog);
void json_machine(json_out *j);

#endif
