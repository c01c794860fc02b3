#!/usr/bin/env python3
"""Writes the golden tables that tests/test_dtype.c checks bit for bit.

usage: gen_dtype_tables.py OUTDIR

References: float16 from numpy, bfloat16 / float8_e4m3fn / float8_e5m2 from
ml_dtypes.  Where PyTorch and numpy/ml_dtypes disagree on NaN bits of f16 and
bf16, PyTorch wins (docs/NUMERICS.md, "NaN encodings"); FP8 follows ml_dtypes
exactly.  The NaN policy is applied here, so every table holds the exact bits
the library must produce.

All files are raw little-endian arrays; the element count is size / width.
  dec_<fmt>.u32           every encoding (index) -> float32 bits
  enc_in.u32              float32 inputs (bits), shared by all formats
  enc_<fmt>.u16|.u8       expected encoding of each enc_in entry
  enc64_<fmt>_in.u64      double inputs (bits) near <fmt> rounding ties
  enc64_<fmt>.u16|.u8     expected single rounding of each double

The double tables are computed with exact integer arithmetic (rational
rounding below), never through float32: ml_dtypes 0.6 rounds a double to
float32 first (and PyTorch's scalar types take a float), which is exactly the
double rounding under test.
numpy's own double -> float16 cast rounds once and must agree.
"""
import os
import sys

import ml_dtypes
import numpy as np

SEED = 20240611
N_RANDOM_F32 = 1 << 20
N_RANDOM_F64 = 1 << 15  # per format; exact rounding in Python is the slow part


class Fmt:
    def __init__(self, name, dtype, width, man_bits, bias, max_finite, overflow, nan, sign_bit):
        self.name, self.dtype, self.width = name, dtype, width
        self.man_bits, self.bias = man_bits, bias
        self.max_finite, self.overflow, self.sign_bit = max_finite, overflow, sign_bit
        self.nan_mag = nan
        self.utype = np.uint16 if width == 2 else np.uint8
        self.ext = "u16" if width == 2 else "u8"
        self.count = 1 << (8 * width)

    def nan(self, negative):
        """The NaN the library produces for a NaN input of the given sign."""
        if self.name == "bf16":
            return 0x7FC0  # PyTorch drops the sign
        return self.nan_mag | (self.sign_bit if negative else 0)


FORMATS = [
    # NaN magnitudes: PyTorch's canonical ones for f16/bf16, ml_dtypes' for FP8
    Fmt("f16", np.float16, 2, 10, 15, 0x7BFF, 0x7C00, 0x7E00, 0x8000),
    Fmt("bf16", ml_dtypes.bfloat16, 2, 7, 127, 0x7F7F, 0x7F80, 0x7FC0, 0x8000),
    Fmt("e4m3fn", ml_dtypes.float8_e4m3fn, 1, 3, 7, 0x7E, 0x7F, 0x7F, 0x80),  # no inf: overflow is NaN
    Fmt("e5m2", ml_dtypes.float8_e5m2, 1, 2, 15, 0x7B, 0x7C, 0x7E, 0x80),
]


def write(outdir, name, arr):
    np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tofile(os.path.join(outdir, name))


def f32_from_bits(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


# ---- decoding -------------------------------------------------------------

def decode_table(fmt):
    enc = np.arange(fmt.count, dtype=np.uint32).astype(fmt.utype)
    out = enc.view(fmt.dtype).astype(np.float32).view(np.uint32).copy()
    if fmt.name == "f16":
        # numpy keeps signalling NaNs signalling; PyTorch (software path and
        # F16C vcvtph2ps alike) quiets them, keeping sign and payload.
        out[np.isnan(out.view(np.float32))] |= np.uint32(0x00400000)
    return out


# ---- float32 inputs for encoding ------------------------------------------

def positive_values(fmt):
    """Finite non-negative values of the format, ascending, as float64."""
    vals = np.arange(fmt.count // 2, dtype=np.uint32).astype(fmt.utype).view(fmt.dtype).astype(np.float64)
    return vals[np.isfinite(vals)]


def tie_points(fmt):
    """Midpoints between adjacent finite magnitudes, plus the overflow tie
    between max finite and the next value the exponent range would give."""
    v = positive_values(fmt)
    step_at_max = v[-1] - v[-2]
    ext = np.append(v, v[-1] + step_at_max)
    return (ext[:-1] + ext[1:]) / 2  # exact: all are short binary fractions


def tie_inputs(fmt):
    """Every value of fmt, every tie between neighbours and the float32 one
    ulp either side of each tie (positive; callers add the negatives)."""
    m = tie_points(fmt).astype(np.float32)
    assert np.all(m.astype(np.float64) == tie_points(fmt)), fmt.name  # ties are float32-exact
    v = positive_values(fmt).astype(np.float32)
    return np.concatenate([v, m, np.nextafter(m, np.float32(0)), np.nextafter(m, np.float32(np.inf))])


def f32_inputs():
    pos = [tie_inputs(fmt) for fmt in FORMATS]
    special = [
        0x00000000, 0x00000001, 0x00000002, 0x007FFFFF, 0x00800000, 0x00800001,  # f32 subnormal edges
        0x33000000, 0x33000001, 0x32FFFFFF, 0x33800000, 0x33C00000,  # f16: 2^-25 tie, 2^-24 min subnormal
        0x387FC000, 0x387FE000, 0x387FFFFF, 0x38800000,  # f16 min normal 2^-14 and just below
        0x477FE000, 0x477FEFFF, 0x477FF000, 0x477FF001, 0x47800000,  # f16 max 65504, overflow tie 65520
        0x7F7F0000, 0x7F7F7FFF, 0x7F7F8000, 0x7F7F8001, 0x7F7FFFFF,  # bf16 max, overflow tie, FLT_MAX
        0x43E00000, 0x43E80000, 0x43E80001, 0x43F00000,  # e4m3fn 448, 464 tie, 480 (NaN)
        0x47600000, 0x47680000, 0x47680001, 0x47700000,  # e5m2 57344, 59392 tie, 61440 (inf)
        0x3B000000, 0x3A800000, 0x3A800001, 0x3C800000,  # e4m3fn 2^-9 min subnormal, 2^-10 tie, 2^-6 min normal
        0x37800000, 0x37000000, 0x37000001, 0x38800000,  # e5m2 2^-16 min subnormal, 2^-17 tie
        0x7F800000,  # inf
        0x7F800001, 0x7F800FFF, 0x7F801FFF, 0x7F802000, 0x7F810000, 0x7FA00000, 0x7FBFFFFF,  # signalling NaNs
        0x7FC00000, 0x7FC00001, 0x7FC02000, 0x7FE00000, 0x7FFFFFFF,  # quiet NaNs
    ]
    pos.append(f32_from_bits(np.array(special, dtype=np.uint32)))
    pos = np.concatenate(pos)
    rng = np.random.default_rng(SEED)
    rnd = rng.integers(0, 1 << 32, size=N_RANDOM_F32, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([pos, -pos, f32_from_bits(rnd)]).view(np.uint32)


def encode_f32(fmt, bits):
    x = f32_from_bits(bits)
    out = x.astype(fmt.dtype).view(fmt.utype).copy()
    nan_in = np.isnan(x)
    assert np.all(np.isnan(out.view(fmt.dtype).astype(np.float32))[nan_in]), fmt.name
    neg = (bits >> 31).astype(bool)
    want_nan = np.where(neg, fmt.nan(True), fmt.nan(False)).astype(fmt.utype)
    if fmt.width == 1:
        assert np.array_equal(out[nan_in], want_nan[nan_in]), fmt.name  # FP8: ml_dtypes' own NaNs
    out[nan_in] = want_nan[nan_in]
    return out


# ---- exact single rounding from double ------------------------------------

def round_exact(x, fmt):
    """x (a Python float) rounded once to fmt, ties to even, using the exact
    rational value of the double (integer arithmetic only)."""
    negative = np.signbit(x)
    sign = fmt.sign_bit if negative else 0
    if x != x:
        return fmt.nan(negative)
    if x in (float("inf"), float("-inf")):
        return sign | fmt.overflow
    if x == 0:
        return sign
    n, d = abs(x).as_integer_ratio()  # d is a power of two
    e = n.bit_length() - d.bit_length()  # floor(log2 |x|) or one more
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    quantum = max(e, 1 - fmt.bias) - fmt.man_bits  # |x| = q * 2^quantum, q to be rounded
    num, den = (n, d << quantum) if quantum >= 0 else (n << -quantum, d)
    q, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and q & 1):
        q += 1
    if q < (1 << fmt.man_bits):
        return sign | q  # subnormal (or zero)
    if q == (2 << fmt.man_bits):  # rounded up into the next binade
        q >>= 1
        quantum += 1
    mag = ((quantum + fmt.man_bits + fmt.bias) << fmt.man_bits) | (q - (1 << fmt.man_bits))
    return sign | (fmt.overflow if mag > fmt.max_finite else mag)


def f64_inputs(fmt, rng):
    """Doubles within half a float32 ulp of each tie of fmt (so float32
    rounding would land on the tie and then round to even), but off it: the
    single rounding must go the other way half of the time."""
    m = tie_points(fmt)
    m32 = m.astype(np.float32)
    down32 = (m - np.nextafter(m32, np.float32(0)).astype(np.float64))  # float32 ulp below the tie
    up32 = (np.nextafter(m32, np.float32(np.inf)).astype(np.float64) - m)
    ulp64_dn = m - np.nextafter(m, 0.0)
    ulp64_up = np.nextafter(m, np.inf) - m
    cand = [m - ulp64_dn, m - down32 / 4, m - (down32 / 2 - ulp64_dn),
            m + ulp64_up, m + up32 / 4, m + (up32 / 2 - ulp64_up)]
    near = np.concatenate(cand)
    # the point of the table: none of these is a float32, all round to the tie in float32
    assert np.all(near.astype(np.float32).astype(np.float64) != near), fmt.name
    assert np.all(np.tile(m32, 6) == near.astype(np.float32)), fmt.name
    # random doubles with full 53-bit significands across the format's range
    lo, hi = -(fmt.bias + fmt.man_bits + 2), fmt.bias + 2
    rnd = np.ldexp(rng.random(N_RANDOM_F64) + 1.0, rng.integers(lo, hi, N_RANDOM_F64))
    special = np.array([0.0, 5e-324, 2.2250738585072014e-308, 1e-300, 1e-46, 1.401298464324817e-45,
                        0.7006492321624085e-45, 3.4028234663852886e38, 3.4028235677973366e38, 3.5e38,
                        1e300, 1.7976931348623157e308, float("inf"), float("nan")])
    payload_nans = np.array([0x7FF0000000000001, 0x7FF8000000000001, 0x7FF4000000000000, 0x7FFFFFFFFFFFFFFF],
                            dtype=np.uint64).view(np.float64)
    pos = np.concatenate([near, rnd, special, payload_nans])
    return np.concatenate([pos, -pos]).view(np.uint64)


def main():
    np.seterr(invalid="ignore", over="ignore")  # NaN and overflow casts are the point here
    if len(sys.argv) != 2:
        sys.exit("usage: gen_dtype_tables.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(SEED + 1)

    enc_in = f32_inputs()
    write(outdir, "enc_in.u32", enc_in)
    for fmt in FORMATS:
        write(outdir, f"dec_{fmt.name}.u32", decode_table(fmt))
        expected = encode_f32(fmt, enc_in)
        write(outdir, f"enc_{fmt.name}.{fmt.ext}", expected)

        # The exact rounder must agree with the references wherever they are
        # trustworthy (float32 inputs: one rounding there too).
        ties = tie_inputs(fmt).view(np.uint32)
        if ties.size > 20000:
            ties = rng.choice(ties, 20000)
        sample = np.concatenate([ties, ties | np.uint32(0x80000000), rng.choice(enc_in, 20000)])
        exp_sample = encode_f32(fmt, sample)
        for b, want in zip(f32_from_bits(sample).astype(np.float64).tolist(), exp_sample.tolist()):
            assert round_exact(b, fmt) == want, (fmt.name, b, want)

        d_in = f64_inputs(fmt, rng)
        d_out = np.array([round_exact(v, fmt) for v in d_in.view(np.float64).tolist()], dtype=fmt.utype)
        if fmt.name == "f16":  # numpy's double -> half is a single rounding too: a second opinion
            d = d_in.view(np.float64)
            assert np.array_equal(d.astype(np.float16).view(np.uint16)[~np.isnan(d)], d_out[~np.isnan(d)])
        write(outdir, f"enc64_{fmt.name}_in.u64", d_in)
        write(outdir, f"enc64_{fmt.name}.{fmt.ext}", d_out)
        print(f"{fmt.name}: {fmt.count} decodes, {enc_in.size} f32 encodes, {d_in.size} f64 encodes")


if __name__ == "__main__":
    main()
