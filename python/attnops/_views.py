"""Strided views (attnops_tensor) of torch tensors and numpy arrays, without copies.

The C API takes any non-negative element strides, which covers every torch
tensor; a numpy array with negative or non-element-multiple byte strides is
copied once (the only case that copies)."""
import ctypes
import struct

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


# attnops_tensor packed by struct (data, dtype, rank, shape[8], strides[8]:
# 144 bytes, no padding): one pack_into per view is several times cheaper
# than building ctypes objects, and the argument structs take the views'
# addresses as plain integers.  test_abi.py checks the size.
_VIEW = struct.Struct("<Qii8q8q")
_PAD = (0,) * _lib.MAX_RANK


def describe_torch(t, name):
    """(address, dtype code, shape, strides) of a CPU torch tensor."""
    if not t.is_cpu:
        raise ValueError(f"attnops: {name} is on device {t.device}; attnops runs on the CPU")
    return t.data_ptr(), _torch_code(t.dtype), tuple(t.shape), t.stride(), t


def describe_numpy(a, name):
    """(address, dtype code, shape, strides, the array kept alive) of a numpy array."""
    a = np.asarray(a)
    code = _NUMPY_CODES.get(a.dtype)
    if code is None:
        raise TypeError(f"attnops: {name} has dtype {a.dtype}, which attnops does not support")
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        a = np.ascontiguousarray(a)
    return a.ctypes.data, code, a.shape, tuple(s // item for s in a.strides), a


class _TorchArrays:
    """Views and allocations for torch tensors."""

    describe = staticmethod(describe_torch)

    def int64(self, values):
        import torch
        return torch.tensor(list(values), dtype=torch.int64)

    def empty(self, shape, like):
        import torch
        return torch.empty(tuple(shape), dtype=like.dtype)

    def empty_f32(self, shape):
        import torch
        return torch.empty(tuple(shape), dtype=torch.float32)

    def empty_float(self, shape, name):
        import torch
        return torch.empty(tuple(shape), dtype=getattr(torch, name))

    def is_float(self, t):
        import torch
        return t.dtype in (torch.float32, torch.float16, torch.bfloat16)


class _NumpyArrays:
    """Views and allocations for numpy arrays (bf16 / f8 through ml_dtypes)."""

    describe = staticmethod(describe_numpy)

    def int64(self, values):
        return np.asarray(list(values), np.int64)

    def empty(self, shape, like):
        return np.empty(tuple(shape), np.asarray(like).dtype)

    def empty_f32(self, shape):
        return np.empty(tuple(shape), np.float32)

    def empty_float(self, shape, name):
        return np.empty(tuple(shape), ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name))

    def is_float(self, a):
        return np.asarray(a).dtype in (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


TORCH, NUMPY = _TorchArrays(), _NumpyArrays()


class Call:
    """One library call: the views it passes (packed attnops_tensor structs, by address) and the arrays
    behind them, kept alive until the call returns.  `arrays` (TORCH or NUMPY) describes the inputs and
    allocates the outputs."""

    _CHUNK = 32  # views per buffer; a new buffer when one is full (addresses never move)

    def __init__(self, arrays=TORCH):
        self.arrays = arrays
        self.keep = []
        self._buf, self._base, self._used = None, 0, self._CHUNK

    def view(self, t, name):
        """The address of a view of `t` (None for None)."""
        if t is None:
            return None
        addr, code, shape, strides, owner = self.arrays.describe(t, name)
        rank = len(shape)
        if rank > _lib.MAX_RANK:
            raise ValueError(f"attnops: {name} has rank {rank}, above the library's maximum of {_lib.MAX_RANK}")
        if self._used == self._CHUNK:
            self._buf = ctypes.create_string_buffer(self._CHUNK * _VIEW.size)
            self._base, self._used = ctypes.addressof(self._buf), 0
            self.keep.append(self._buf)
        off = self._used * _VIEW.size
        _VIEW.pack_into(self._buf, off, addr or _EMPTY_ADDR, code, rank, *(shape + _PAD[rank:]),
                        *(strides + _PAD[rank:]))
        self._used += 1
        self.keep.append(owner)
        return self._base + off

    def view_array(self, tensors, name):
        """The address of an array of view addresses (the AttnRes block lists)."""
        arr = (ctypes.c_void_p * max(len(tensors), 1))(*(self.view(t, f"{name}[{i}]") for i, t in enumerate(tensors)))
        self.keep.append(arr)
        return ctypes.addressof(arr)

    def ints(self, values, name):
        return None if values is None else self.view(self.arrays.int64(values), name)

    def empty(self, shape, like):
        return self.arrays.empty(shape, like)

    def empty_f32(self, shape):
        return self.arrays.empty_f32(shape)

    def empty_float(self, shape, name):
        """A float16 / bfloat16 array."""
        return self.arrays.empty_float(shape, name)
