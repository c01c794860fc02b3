/* Exact dtype conversions (f16, bf16, f8_e4m3fn, f8_e5m2 <-> f32/f64) and
 * element loads/stores.  Rounding is to nearest, ties to even, as PyTorch and
 * ml_dtypes do.  The f32 -> f16/bf16 paths are bit tricks because the fast
 * kernels use them on every output element; the f64 and FP8 paths go through
 * one generic rounding routine that works on the exact double value, so the
 * reference rounds its double results once (never double -> float -> f16).
 *
 * NaN encodings.  PyTorch and numpy/ml_dtypes disagree on NaN bits; we take
 * PyTorch's for f16 and bf16 and ml_dtypes' for FP8 (docs/NUMERICS.md):
 *   f32/f64 -> f16   0x7e00 | sign     (numpy would keep the payload)
 *   f32/f64 -> bf16  0x7fc0, no sign   (ml_dtypes would keep the sign)
 *   f16 -> f32       payload and sign kept, signalling NaNs quietened
 *   -> e4m3fn        0x7f | sign (also for +-inf and overflow: no infinity)
 *   -> e5m2          0x7e | sign
 *   e4m3fn/e5m2 -> f32  0x7fc00000 | sign, whatever the payload. */
#include <math.h>
#include <string.h>

#include "core.h"

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- decoding: every encoding widens exactly ---- */

float attnops_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) {
        float mag = (float)man * 0x1p-24f; /* subnormal or zero, exact */
        return bits_f32(f32_bits(mag) | sign);
    }
    if (exp == 31) { /* inf, or NaN quietened as PyTorch and F16C's vcvtph2ps do */
        uint32_t quiet = man ? 0x400000u : 0u;
        return bits_f32(sign | 0x7f800000u | (man << 13) | quiet);
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

float attnops_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

/* Built from bits (core.h): a float multiply by -1 would not set the sign
 * of a NaN; ml_dtypes decodes every NaN payload to the one canonical NaN. */
float attnops_f8_e5m2_to_f32(uint8_t b) { return ao_f8_e5m2_to_f32(b); }
float attnops_f8_e4m3fn_to_f32(uint8_t b) { return ao_f8_e4m3fn_to_f32(b); }

/* ---- encoding ---- */

uint16_t attnops_f32_to_f16(float value)
{
    uint32_t x = f32_bits(value);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u); /* NaN -> canonical quiet NaN */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {                                   /* below 2^-14: subnormal */
        if (ax <= 0x33000000u) return (uint16_t)sign;         /* <= 2^-25 rounds to 0 */
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e, q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = ax - 0x38000000u; /* re-bias the exponent 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

uint16_t attnops_f32_to_bf16(float value)
{
    uint32_t x = f32_bits(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u; /* PyTorch's NaN: sign dropped */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* |ax| rounded to a binary format with `man_bits` fraction bits and exponent
 * bias `bias`, returned as the magnitude bits (exponent << man_bits | fraction).
 * Works on the exact double, so it is a single rounding.  A result above the
 * format's largest finite encoding means overflow; the caller decides. */
static uint32_t round_magnitude(double ax, int man_bits, int bias)
{
    if (ax == 0.0) return 0;
    int e2;
    frexp(ax, &e2);
    int exponent = e2 - 1, emin = 1 - bias;
    if (exponent < emin) exponent = emin; /* subnormal: fixed quantum */
    uint64_t q = (uint64_t)nearbyint(ldexp(ax, man_bits - exponent)); /* ties to even */
    if (q >= (UINT64_C(1) << (man_bits + 1))) {
        exponent++;
        q >>= 1; /* q was exactly 2^(man_bits+1) */
    }
    if (q < (UINT64_C(1) << man_bits)) return (uint32_t)q; /* subnormal */
    uint64_t field = (uint64_t)(exponent + bias); /* <= 1024 + 127: fits, compares above max finite */
    return (uint32_t)((field << man_bits) | (q - (UINT64_C(1) << man_bits)));
}

typedef struct small_format {
    int man_bits, bias;
    uint32_t max_finite; /* magnitude bits */
    uint32_t overflow;   /* magnitude bits for an overflow and for +-inf */
    uint32_t nan;        /* magnitude bits of the NaN it produces */
    uint32_t sign_bit;
} small_format;

static const small_format FMT_E5M2 = {2, 15, 0x7bu, 0x7cu, 0x7eu, 0x80u};
static const small_format FMT_E4M3FN = {3, 7, 0x7eu, 0x7fu, 0x7fu, 0x80u}; /* no inf: overflow is NaN */

static uint32_t encode_small(double x, const small_format *f)
{
    uint32_t sign = signbit(x) ? f->sign_bit : 0u;
    if (isnan(x)) return sign | f->nan;
    if (isinf(x)) return sign | f->overflow;
    uint32_t mag = round_magnitude(fabs(x), f->man_bits, f->bias);
    if (mag > f->max_finite) mag = f->overflow;
    return sign | mag;
}

/* value rounded to float "to odd": truncated toward zero, the last bit set
 * when anything was cut.  Rounding that float (ties to even) to a format of
 * at most 22 significant bits, f16 and bf16 included, gives value correctly
 * rounded in one step: the odd bit stands for every bit cut, so no tie is
 * invented or lost.  Far cheaper than encode_small, which the golden's
 * per-element stores would otherwise spend most of their time in. */
static float f64_to_f32_odd(double value)
{
    float f = (float)value;
    if (!isfinite(value) || (double)f == value) return f;
    if (fabs((double)f) > fabs(value)) f = nextafterf(f, 0.0f); /* also inf -> FLT_MAX */
    return bits_f32(f32_bits(f) | 1u);
}

uint16_t ao_f64_to_f16(double value) { return attnops_f32_to_f16(f64_to_f32_odd(value)); }

uint16_t ao_f64_to_bf16(double value) { return attnops_f32_to_bf16(f64_to_f32_odd(value)); }

uint8_t attnops_f32_to_f8_e4m3fn(float value) { return (uint8_t)encode_small(value, &FMT_E4M3FN); }
uint8_t attnops_f32_to_f8_e5m2(float value) { return (uint8_t)encode_small(value, &FMT_E5M2); }

/* ---- element access ---- */

double ao_load_f64(const void *p, attnops_dtype dtype)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F32: return *(const float *)p;
    case ATTNOPS_DTYPE_F16: return attnops_f16_to_f32(*(const uint16_t *)p);
    case ATTNOPS_DTYPE_BF16: return attnops_bf16_to_f32(*(const uint16_t *)p);
    case ATTNOPS_DTYPE_F8_E4M3FN: return attnops_f8_e4m3fn_to_f32(*(const uint8_t *)p);
    case ATTNOPS_DTYPE_F8_E5M2: return attnops_f8_e5m2_to_f32(*(const uint8_t *)p);
    case ATTNOPS_DTYPE_U8: case ATTNOPS_DTYPE_BOOL: return *(const uint8_t *)p;
    case ATTNOPS_DTYPE_I32: return *(const int32_t *)p;
    case ATTNOPS_DTYPE_I64: return (double)*(const int64_t *)p;
    case ATTNOPS_DTYPE_I8: return *(const int8_t *)p;
    case ATTNOPS_DTYPE_UNSET: case ATTNOPS_DTYPE_COUNT: break;
    }
    return NAN;
}

float ao_load_f32(const void *p, attnops_dtype dtype)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F32: return *(const float *)p;
    case ATTNOPS_DTYPE_F16: return attnops_f16_to_f32(*(const uint16_t *)p);
    case ATTNOPS_DTYPE_BF16: return attnops_bf16_to_f32(*(const uint16_t *)p);
    default: return (float)ao_load_f64(p, dtype);
    }
}

void ao_store_f64(void *p, attnops_dtype dtype, double v)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F32: *(float *)p = (float)v; break;
    case ATTNOPS_DTYPE_F16: *(uint16_t *)p = ao_f64_to_f16(v); break;
    case ATTNOPS_DTYPE_BF16: *(uint16_t *)p = ao_f64_to_bf16(v); break;
    case ATTNOPS_DTYPE_F8_E4M3FN: *(uint8_t *)p = (uint8_t)encode_small(v, &FMT_E4M3FN); break;
    case ATTNOPS_DTYPE_F8_E5M2: *(uint8_t *)p = (uint8_t)encode_small(v, &FMT_E5M2); break;
    case ATTNOPS_DTYPE_U8: case ATTNOPS_DTYPE_BOOL: *(uint8_t *)p = (uint8_t)v; break;
    case ATTNOPS_DTYPE_I32: *(int32_t *)p = (int32_t)v; break;
    case ATTNOPS_DTYPE_I64: *(int64_t *)p = (int64_t)v; break;
    case ATTNOPS_DTYPE_I8: *(int8_t *)p = (int8_t)v; break;
    case ATTNOPS_DTYPE_UNSET: case ATTNOPS_DTYPE_COUNT: break;
    }
}

void ao_store_f32(void *p, attnops_dtype dtype, float v)
{
    switch (dtype) {
    case ATTNOPS_DTYPE_F32: *(float *)p = v; break;
    case ATTNOPS_DTYPE_F16: *(uint16_t *)p = attnops_f32_to_f16(v); break;
    case ATTNOPS_DTYPE_BF16: *(uint16_t *)p = attnops_f32_to_bf16(v); break;
    default: ao_store_f64(p, dtype, v); break;
    }
}

/* ---- the traits table ---- */

static void to_f64_rows(attnops_dtype dtype, const void *src, double *dst, size_t n)
{
    const size_t es = attnops_dtype_size(dtype);
    for (size_t i = 0; i < n; i++) dst[i] = ao_load_f64((const char *)src + i * es, dtype);
}

static void from_f64_rows(attnops_dtype dtype, const double *src, void *dst, size_t n)
{
    const size_t es = attnops_dtype_size(dtype);
    for (size_t i = 0; i < n; i++) ao_store_f64((char *)dst + i * es, dtype, src[i]);
}

/* to_f64_<name> and from_f64_<name>: the traits' row conversions. */
#define ROW_CONVERSIONS(suffix, dtype)                                                                           \
    static void to_f64_##suffix(const void *src, double *dst, size_t n) { to_f64_rows(dtype, src, dst, n); }   \
    static void from_f64_##suffix(const double *src, void *dst, size_t n) { from_f64_rows(dtype, src, dst, n); }
ROW_CONVERSIONS(f32, ATTNOPS_DTYPE_F32)
ROW_CONVERSIONS(f16, ATTNOPS_DTYPE_F16)
ROW_CONVERSIONS(bf16, ATTNOPS_DTYPE_BF16)
ROW_CONVERSIONS(f8_e4m3fn, ATTNOPS_DTYPE_F8_E4M3FN)
ROW_CONVERSIONS(f8_e5m2, ATTNOPS_DTYPE_F8_E5M2)
ROW_CONVERSIONS(u8, ATTNOPS_DTYPE_U8)
ROW_CONVERSIONS(bool, ATTNOPS_DTYPE_BOOL)
ROW_CONVERSIONS(i32, ATTNOPS_DTYPE_I32)
ROW_CONVERSIONS(i64, ATTNOPS_DTYPE_I64)
ROW_CONVERSIONS(i8, ATTNOPS_DTYPE_I8)
#define CONVERSIONS(suffix) to_f64_##suffix, from_f64_##suffix

/* One row per dtype, indexed by the enum: what every layer above (the
 * harness, .npy files, the CLI, the Python package) reads instead of its
 * own list.  The CANN spelling is the seed case tables' ("fp16"); the torch
 * spelling is torch's, numpy's and ml_dtypes' dtype name. */
static const attnops_dtype_traits TRAITS[] = {
    [ATTNOPS_DTYPE_F32] = {"f32", "fp32", "float32", 4, true, CONVERSIONS(f32)},
    [ATTNOPS_DTYPE_F16] = {"f16", "fp16", "float16", 2, true, CONVERSIONS(f16)},
    [ATTNOPS_DTYPE_BF16] = {"bf16", "bf16", "bfloat16", 2, true, CONVERSIONS(bf16)},
    [ATTNOPS_DTYPE_F8_E4M3FN] = {"f8_e4m3fn", "fp8_e4m3fn", "float8_e4m3fn", 1, true, CONVERSIONS(f8_e4m3fn)},
    [ATTNOPS_DTYPE_F8_E5M2] = {"f8_e5m2", "fp8_e5m2", "float8_e5m2", 1, true, CONVERSIONS(f8_e5m2)},
    [ATTNOPS_DTYPE_U8] = {"u8", "uint8", "uint8", 1, false, CONVERSIONS(u8)},
    [ATTNOPS_DTYPE_BOOL] = {"bool", "bool", "bool", 1, false, CONVERSIONS(bool)},
    [ATTNOPS_DTYPE_I32] = {"i32", "int32", "int32", 4, false, CONVERSIONS(i32)},
    [ATTNOPS_DTYPE_I64] = {"i64", "int64", "int64", 8, false, CONVERSIONS(i64)},
    [ATTNOPS_DTYPE_I8] = {"i8", "int8", "int8", 1, false, CONVERSIONS(i8)},
};
_Static_assert(sizeof TRAITS / sizeof TRAITS[0] == ATTNOPS_DTYPE_COUNT, "a dtype without its traits row");

const attnops_dtype_traits *attnops_dtype_traits_of(attnops_dtype dtype)
{
    return dtype > ATTNOPS_DTYPE_UNSET && dtype < ATTNOPS_DTYPE_COUNT ? &TRAITS[dtype] : NULL;
}

size_t attnops_dtype_size(attnops_dtype dtype)
{
    const attnops_dtype_traits *t = attnops_dtype_traits_of(dtype);
    return t ? t->size : 0;
}

const char *attnops_dtype_name(attnops_dtype dtype)
{
    const attnops_dtype_traits *t = attnops_dtype_traits_of(dtype);
    return t ? t->name : "?";
}

attnops_dtype attnops_dtype_from_string(const char *name)
{
    for (int d = ATTNOPS_DTYPE_UNSET + 1; name && d < ATTNOPS_DTYPE_COUNT; d++)
        if (!strcmp(name, TRAITS[d].name) || !strcmp(name, TRAITS[d].cann_name) || !strcmp(name, TRAITS[d].torch_name))
            return (attnops_dtype)d;
    return ATTNOPS_DTYPE_UNSET;
}
