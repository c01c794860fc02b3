"""attnops.compare: the verification harness's comparison rules (verify/compare.c,
the same code the CLI runs), on numpy arrays or torch tensors.

    v = attnops.compare(actual, expected, rule="dual")
    assert v.passed, str(v)      # str(v) is the CLI's verdict line

Rules (verify/compare.h has their exact definitions): "dual" (the seed's
FlashAttentionScoreGrad rule), "triple" (Block Attention Residuals: needs
`bench`, the benchmark chain's values, and `dtype`), "isclose" (KeyPool),
"allclose" (PyPTO FAG), "thousandth", "ten-thousandth".
"""
import ctypes
import dataclasses
import os
from pathlib import Path

import numpy as np

from . import _lib

_RULES = ("dual", "triple", "isclose", "allclose", "thousandth", "ten-thousandth")
# verify/compare.h's structs, laid out from the header (python/native/layouts.c).
_Options, _Verdict = _lib.STRUCTS["cmp_options"], _lib.STRUCTS["cmp_verdict"]

_path = os.environ.get("ATTNOPS_COMPARE_LIBRARY") or str(Path(__file__).resolve().parent / "_lib" /
                                                         "libattnops_compare.so")
_clib = ctypes.CDLL(_path)
_dp = ctypes.POINTER(ctypes.c_double)
_clib.cmp_compare.restype = _Verdict
_clib.cmp_compare.argtypes = [ctypes.POINTER(_Options), _dp, _dp, _dp, ctypes.c_int64]
_clib.cmp_print.restype = None
_clib.cmp_print.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(_Verdict), _dp, _dp,
                            ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
_libc = ctypes.CDLL(None)
_libc.open_memstream.restype = ctypes.c_void_p
_libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
_libc.fclose.argtypes = [ctypes.c_void_p]
_libc.free.argtypes = [ctypes.c_void_p]

_DTYPES = {name: _lib.DTYPES[name] for name in ("float32", "float16", "bfloat16")}


@dataclasses.dataclass
class Verdict:
    """The harness's verdict: the fields the CLI prints; str() is its line."""
    rule: str
    passed: bool
    n: int
    counted: int
    n_fail: int
    n_nan: int
    max_abs: float
    max_rel: float
    worst: tuple  # index of the largest |a - e| (a NaN mismatch first); None when all are equal
    metrics: dict  # name -> (value, limit, at_least): pass needs value >= limit if at_least, else <=
    line: str

    def __bool__(self):
        return self.passed

    def __str__(self):
        return self.line


def _doubles(x):
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().double().numpy()
    return np.ascontiguousarray(np.asarray(x, dtype=np.float64))


def compare(actual, expected, rule="dual", *, bench=None, dtype=None, rtol=0.0, atol=0.0, min_share=0.0,
            counted=None, label=""):
    """Judge `actual` against the golden `expected` (same shape) by one of the harness's rules.

    bench: the benchmark chain's values (rule "triple" only); dtype: whose small-value thresholds the
    triple rule applies ("float16", "bfloat16", "float32" or a torch/numpy dtype); rtol/atol (isclose,
    allclose) and min_share (isclose) 0 take the rule's defaults; counted: bool mask of the elements
    that count (e.g. valid rows)."""
    if rule not in _RULES:
        raise ValueError(f"attnops.compare: rule is {rule!r}; it must be one of {', '.join(_RULES)}")
    a, e = _doubles(actual), _doubles(expected)
    if a.shape != e.shape:
        raise ValueError(f"attnops.compare: actual has shape {a.shape}, expected {e.shape}")
    opts = _Options(rule=_RULES.index(rule), rtol=rtol, atol=atol, min_share=min_share)
    if rule == "triple":
        if bench is None or dtype is None:
            raise ValueError("attnops.compare: rule 'triple' needs bench (the benchmark chain's values) and dtype")
        b = _doubles(bench)
        if b.shape != e.shape:
            raise ValueError(f"attnops.compare: bench has shape {b.shape}, expected {e.shape}")
        name = str(dtype).replace("torch.", "")
        if name not in _DTYPES:
            raise ValueError(f"attnops.compare: dtype {dtype} has no triple-rule thresholds (float16, bfloat16, "
                             "float32)")
        opts.dtype = _DTYPES[name]
    elif bench is not None:
        raise ValueError(f"attnops.compare: bench is only used by rule 'triple', not {rule!r}")
    mask = None
    if counted is not None:
        mask = np.ascontiguousarray(_doubles(counted).reshape(e.shape) != 0, dtype=np.uint8)
        opts.counted = mask.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
    ptr = lambda x: x.ctypes.data_as(_dp)  # noqa: E731
    v = _clib.cmp_compare(ctypes.byref(opts), ptr(a), ptr(e), ptr(b) if rule == "triple" else None, e.size)
    shape = (ctypes.c_int64 * max(e.ndim, 1))(*e.shape)
    line = _print(label or "tensor", v, a, e, shape, e.ndim)
    metrics = {v.metric[i].name.decode(): (v.metric[i].value, v.metric[i].limit, v.metric[i].at_least)
               for i in range(v.n_metrics)}
    worst = None if v.worst < 0 else tuple(int(i) for i in np.unravel_index(v.worst, e.shape))
    return Verdict(rule, bool(getattr(v, "pass")), v.n, v.counted, v.n_fail, v.n_nan, v.max_abs, v.max_rel, worst,
                   metrics, line)


def _print(label, v, a, e, shape, rank):
    """cmp_print's line, written through a memory stream."""
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    stream = _libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        raise MemoryError("attnops.compare: open_memstream failed")
    try:
        _clib.cmp_print(stream, label.encode(), ctypes.byref(v), a.ctypes.data_as(_dp), e.ctypes.data_as(_dp), shape,
                        rank)
    finally:
        _libc.fclose(stream)
    try:
        return ctypes.string_at(buf, size.value).decode().rstrip("\n")
    finally:
        _libc.free(buf)
