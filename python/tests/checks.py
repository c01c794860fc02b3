"""The one comparator of the Python tests and its tolerances.

The tolerance is the C suite's (verify/testutil.c, tu_attention_tolerance),
derived from the dtypes and the problem size, never tuned per case:
    rtol = 2 u_out,  atol = 8 (u_gemm + 2^-24 sqrt(K)) max|expected|
u = unit roundoff (2^-24 f32, 2^-11 f16, 2^-8 bf16), u_gemm that of the
rounded operands (forward: bf16 for bf16 inputs, f32 otherwise; gradients:
also attention_in, which the backward reads in the output dtype for its
row term rowsum(dy * attention_in), so the output dtype's), K the longest
reduction.  Gradients share one scale, the largest of them (dS = P (dP -
Drow) cancels, so a gradient's error follows the size of the terms).
Any NaN in `actual` fails unless `expected` has a NaN at the same place.
"""
import math

import torch

UNIT_ROUNDOFF = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}


def attention_tolerance(dtype, reduce_len, scale, operand=None):
    u_out = UNIT_ROUNDOFF[dtype]
    if operand is None:
        operand = torch.bfloat16 if dtype == torch.bfloat16 else torch.float32
    u_gemm = UNIT_ROUNDOFF[operand]
    return 2.0 * u_out, 8.0 * (u_gemm + 2.0 ** -24 * math.sqrt(max(reduce_len, 1))) * scale


def compare(name, actual, expected, dtype, reduce_len, operand=None, scale=None):
    """(ok, message): |a - e| <= atol + rtol |e| everywhere, NaNs only where expected has them."""
    a, e = actual.detach().double(), expected.detach().double()
    if a.shape != e.shape:
        return False, f"{name}: shape {tuple(a.shape)}, expected {tuple(e.shape)}"
    if a.numel() == 0:
        return True, f"{name}: empty"
    if scale is None:
        scale = max_abs(e)
    rtol, atol = attention_tolerance(dtype, reduce_len, scale, operand)
    nan_bad = a.isnan() & ~e.isnan()
    err = (a - e).abs()
    bad = nan_bad | (err > atol + rtol * e.abs())
    if not bad.any():
        return True, f"{name}: max |err| {err.max().item():.3g} <= atol {atol:.3g} + rtol {rtol:.3g} |e|"
    idx = torch.nonzero(bad)[0].tolist()
    return False, (f"{name}: {int(bad.sum())} of {a.numel()} elements off (NaN: {int(nan_bad.sum())}); first at "
                   f"{idx}: {a[tuple(idx)].item():.6g} vs {e[tuple(idx)].item():.6g}; atol {atol:.3g}, rtol {rtol:.3g}")


def max_abs(t):
    finite = t.detach().double()
    finite = finite[~finite.isnan()]
    return finite.abs().max().item() if finite.numel() else 0.0


def assert_close(name, actual, expected, dtype, reduce_len, operand=None, scale=None):
    ok, msg = compare(name, actual, expected, dtype, reduce_len, operand, scale)
    assert ok, msg


def assert_gradients_close(names, actual, expected, dtype, reduce_len):
    """Gradients: operands of the output dtype (attention_in), one shared scale."""
    scale = max(max_abs(e) for e in expected)
    for name, a, e in zip(names, actual, expected):
        assert_close(name, a, e, dtype, reduce_len, operand=dtype, scale=scale)
