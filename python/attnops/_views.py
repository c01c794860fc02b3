"""Strided views (attnops_tensor) of torch tensors and numpy arrays, without copies.

The C API takes any non-negative element strides, which covers every torch
tensor; a numpy array with negative or non-element-multiple byte strides is
copied once (the only case that copies)."""
import ctypes

import ml_dtypes
import numpy as np

from . import _lib

_NUMPY_CODES = {np.dtype(np.float32): _lib.DTYPE_F32, np.dtype(np.float16): _lib.DTYPE_F16,
                np.dtype(ml_dtypes.bfloat16): _lib.DTYPE_BF16,
                np.dtype(ml_dtypes.float8_e4m3fn): _lib.DTYPE_F8_E4M3FN,
                np.dtype(ml_dtypes.float8_e5m2): _lib.DTYPE_F8_E5M2, np.dtype(np.uint8): _lib.DTYPE_U8,
                np.dtype(np.bool_): _lib.DTYPE_BOOL, np.dtype(np.int32): _lib.DTYPE_I32,
                np.dtype(np.int64): _lib.DTYPE_I64}

# A tensor without elements may have no storage (data_ptr 0); the library
# still wants a pointer, and never reads or writes through it.
_EMPTY = ctypes.create_string_buffer(64)
_EMPTY_ADDR = ctypes.addressof(_EMPTY)

_torch_codes = None


def _torch_code(dtype):
    global _torch_codes
    if _torch_codes is None:
        import torch
        _torch_codes = {torch.float32: _lib.DTYPE_F32, torch.float16: _lib.DTYPE_F16,
                        torch.bfloat16: _lib.DTYPE_BF16, torch.float8_e4m3fn: _lib.DTYPE_F8_E4M3FN,
                        torch.float8_e5m2: _lib.DTYPE_F8_E5M2, torch.uint8: _lib.DTYPE_U8,
                        torch.bool: _lib.DTYPE_BOOL, torch.int32: _lib.DTYPE_I32, torch.int64: _lib.DTYPE_I64}
    code = _torch_codes.get(dtype)
    if code is None:
        raise TypeError(f"attnops: tensors of dtype {dtype} are not supported")
    return code


_I64X8 = ctypes.c_int64 * _lib.MAX_RANK


def _make(addr, code, shape, strides):
    if len(shape) > _lib.MAX_RANK:
        raise ValueError(f"attnops: rank {len(shape)} exceeds the library's maximum of {_lib.MAX_RANK}")
    return _lib.Tensor(addr or _EMPTY_ADDR, code, len(shape), _I64X8(*shape), _I64X8(*strides))


def of_torch(t, name="tensor"):
    """attnops_tensor of a CPU torch tensor (the caller keeps `t` alive)."""
    if not t.is_cpu:
        raise ValueError(f"attnops: {name} is on device {t.device}; attnops runs on the CPU")
    return _make(t.data_ptr(), _torch_code(t.dtype), t.shape, t.stride())


def of_numpy(a, name="array"):
    """(attnops_tensor, array kept alive) of a numpy array."""
    a = np.asarray(a)
    code = _NUMPY_CODES.get(a.dtype)
    if code is None:
        raise TypeError(f"attnops: {name} has dtype {a.dtype}, which attnops does not support")
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        a = np.ascontiguousarray(a)
    return _make(a.ctypes.data, code, a.shape, [s // item for s in a.strides]), a


class _TorchArrays:
    """Views and allocations for torch tensors."""

    def view(self, t, name):
        return of_torch(t, name), t

    def int64(self, values):
        import torch
        return torch.tensor(list(values), dtype=torch.int64)

    def empty(self, shape, like):
        import torch
        return torch.empty(tuple(shape), dtype=like.dtype)

    def empty_f32(self, shape):
        import torch
        return torch.empty(tuple(shape), dtype=torch.float32)

    def is_float(self, t):
        import torch
        return t.dtype in (torch.float32, torch.float16, torch.bfloat16)


class _NumpyArrays:
    """Views and allocations for numpy arrays (bf16 / f8 through ml_dtypes)."""

    def view(self, a, name):
        return of_numpy(a, name)

    def int64(self, values):
        return np.asarray(list(values), np.int64)

    def empty(self, shape, like):
        return np.empty(tuple(shape), np.asarray(like).dtype)

    def empty_f32(self, shape):
        return np.empty(tuple(shape), np.float32)

    def is_float(self, a):
        return np.asarray(a).dtype in (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


TORCH, NUMPY = _TorchArrays(), _NumpyArrays()


class Call:
    """One library call: the views it passes and the arrays behind them, kept alive until the call returns.
    `arrays` (TORCH or NUMPY) makes the views and allocates the outputs."""

    def __init__(self, arrays=TORCH):
        self.arrays = arrays
        self.keep = []

    def view(self, t, name):
        if t is None:
            return None
        v, owner = self.arrays.view(t, name)
        self.keep += [v, owner]
        return ctypes.pointer(v)

    def ints(self, values, name):
        return None if values is None else self.view(self.arrays.int64(values), name)

    def empty(self, shape, like):
        return self.arrays.empty(shape, like)

    def empty_f32(self, shape):
        return self.arrays.empty_f32(shape)
