"""Strided views (attnops_tensor) of numpy arrays, without copies: the numpy binding (attnops.golden).

Each array is described here as (address, dtype code, shape, element
strides), and attnops._native (python/native/attnops_native.c) writes its
view.  The C API takes any non-negative element strides; an array with
negative or non-element-multiple byte strides is copied once (the only case
that copies).  The torch ops have their own binding (python/csrc)."""
import ctypes

import ml_dtypes
import numpy as np

from . import _lib, _native


def _numpy_dtype(name):
    """numpy's dtype of a torch dtype name: numpy's own, or ml_dtypes' (bfloat16, float8_*)."""
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


_NUMPY_CODES = {_numpy_dtype(name): code for name, code in _lib.DTYPES.items()}

VIEW_SIZE = ctypes.sizeof(_lib.Tensor)


def describe_numpy(a, name):
    """((address, dtype code, shape, element strides), the array to keep alive) of a numpy array."""
    a = np.asarray(a)
    code = _NUMPY_CODES.get(a.dtype)
    if code is None:
        raise TypeError(f"attnops: {name} has dtype {a.dtype}, which attnops does not support")
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides):
        a = np.ascontiguousarray(a)
    return (a.ctypes.data, code, a.shape, tuple(s // item for s in a.strides)), a


class _NumpyArrays:
    """Views and allocations for numpy arrays (bf16 / f8 through ml_dtypes)."""

    def items(self, items, names, keep):
        described = []
        for a, name in zip(items, names):
            if a is None:
                described.append(None)
                continue
            view, owner = describe_numpy(a, name)
            described.append(view)
            keep.append(owner)
        return tuple(described)

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


NUMPY = _NumpyArrays()


class Call:
    """One library call: the views it passes (attnops_tensor structs, by address) and the arrays behind
    them, kept alive until the call returns; `arrays` describes the inputs and allocates the outputs."""

    def __init__(self):
        self.arrays = NUMPY
        self.keep = []

    def bind(self, struct, slots, names, items):
        """Store in `struct` (a ctypes struct or buffer), at each byte offset of `slots`, the address of a
        view of the matching item (NULL for None)."""
        items = self.arrays.items(items, names, self.keep)
        views = ctypes.create_string_buffer(len(items) * VIEW_SIZE)
        _native.bind(ctypes.addressof(struct), ctypes.addressof(views), slots, names, items)
        self.keep += (views, items)

    def view(self, t, name):
        """The address of a view of `t` (None for None)."""
        if t is None:
            return None
        (item,) = self.arrays.items((t,), (name,), self.keep)
        view = ctypes.create_string_buffer(VIEW_SIZE)
        _native.pack(ctypes.addressof(view), item, name)
        self.keep += (view, t)
        return ctypes.addressof(view)

    def view_array(self, tensors, name):
        """The address of an array of view addresses (the AttnRes block lists)."""
        arr = (ctypes.c_void_p * max(len(tensors), 1))()
        self.bind(arr, tuple(range(0, len(tensors) * ctypes.sizeof(ctypes.c_void_p), ctypes.sizeof(ctypes.c_void_p))),
                  tuple(f"{name}[{i}]" for i in range(len(tensors))), tuple(tensors))
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
