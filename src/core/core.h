/* Internal, ISA-free helpers shared by every operator: error reporting,
 * element loads/stores with exact rounding, strided-view arithmetic. */
#ifndef ATTNOPS_CORE_H
#define ATTNOPS_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnops.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Record `status` with a printf-style sentence for attnops_last_error() and
 * return it, so validation reads `return ao_fail(ATTNOPS_ERR_..., "...")`. */
attnops_status ao_fail(attnops_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ao_clear_error(void);
/* The first call with a given `once` flag (a static of the warning's site)
 * hands the sentence to the warning handler (attnops_set_warning_handler);
 * later calls with it do nothing: one line per process and kind. */
void ao_warn_once(atomic_bool *once, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Loads widen exactly.  Stores round once, to nearest even, from the given
 * precision (a double store never goes through float first). */
double ao_load_f64(const void *p, attnops_dtype dtype);
float ao_load_f32(const void *p, attnops_dtype dtype);
void ao_store_f64(void *p, attnops_dtype dtype, double value);
void ao_store_f32(void *p, attnops_dtype dtype, float value);

/* Rounding from double for the reference's single final rounding. */
uint16_t ao_f64_to_f16(double value);
uint16_t ao_f64_to_bf16(double value);

/* Bytes from the first to one past the last element a view can touch
 * (0 for an empty view); used for overlap and bounds checks. */
void ao_tensor_extent(const attnops_tensor *t, const char **lo, const char **hi);
int64_t ao_tensor_numel(const attnops_tensor *t);

/* A run's team: the threads its parallel regions use (src/core/threads.c):
 * `requested`, capped so that the runs in flight in the process share
 * omp_get_num_procs() threads, never below 1; a run alone gets `requested`.
 * Every ao_team_acquire is paired with an ao_team_release of its result. */
int ao_team_acquire(int requested);
void ao_team_release(int team);

static inline size_t ao_align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* This thread's number in the enclosing OpenMP team (0 without OpenMP): the
 * index of its slice of a workspace. */
static inline int ao_thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Inline forms of the bf16 conversions for loops that must vectorise
 * (identical results to attnops_bf16_to_f32 / attnops_f32_to_bf16). */
static inline float ao_bf16_to_f32(uint16_t b)
{
    union { uint32_t u; float f; } x = {(uint32_t)b << 16};
    return x.f;
}
/* f8 -> f32, inline for the packers (attnops_f8_*_to_f32 call these):
 * built from bits, every NaN decoded to the canonical one as ml_dtypes does. */
static inline float ao_bits_f32(uint32_t u)
{
    union { uint32_t u; float f; } x = {u};
    return x.f;
}
static inline float ao_f8_e4m3fn_to_f32(uint8_t b)
{
    const uint32_t sign = (uint32_t)(b & 0x80u) << 24, exp = (b >> 3) & 0xfu, man = b & 7u;
    if ((b & 0x7fu) == 0x7fu) return ao_bits_f32(sign | 0x7fc00000u); /* the format's only NaN, no infinity */
    if (exp == 0) { /* subnormal or zero, exact */
        union { float f; uint32_t u; } m = {(float)man * 0x1p-9f};
        return ao_bits_f32(sign | m.u);
    }
    return ao_bits_f32(sign | ((exp + 120u) << 23) | (man << 20)); /* re-bias 7 -> 127 */
}
static inline float ao_f8_e5m2_to_f32(uint8_t b)
{
    const uint32_t sign = (uint32_t)(b & 0x80u) << 24, exp = (b >> 2) & 0x1fu, man = b & 3u;
    if (exp == 31) return ao_bits_f32(sign | (man ? 0x7fc00000u : 0x7f800000u)); /* NaN (canonical) or inf */
    if (exp == 0) { /* subnormal or zero, exact */
        union { float f; uint32_t u; } m = {(float)man * 0x1p-16f};
        return ao_bits_f32(sign | m.u);
    }
    return ao_bits_f32(sign | ((exp + 112u) << 23) | (man << 21)); /* re-bias 15 -> 127 */
}

static inline uint16_t ao_f32_to_bf16(float f)
{
    union { float f; uint32_t u; } x = {f};
    if ((x.u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u; /* NaN, as PyTorch */
    return (uint16_t)((x.u + 0x7fffu + ((x.u >> 16) & 1u)) >> 16);
}

#endif
