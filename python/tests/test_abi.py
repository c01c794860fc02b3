"""The ctypes structs of attnops._lib are built from the layouts attnops._native reads off the headers
(python/native/layouts.c: offsetof / sizeof), and the builder refuses a table that misses a field."""
import ctypes

import pytest

from attnops import _fa, _lib
from attnops._native import layouts


def _table(name):
    return next(entry for entry in layouts() if entry[0] == name)


def test_every_struct_is_built_from_the_header_layout():
    for name, size, fields in layouts():
        cls = _lib.STRUCTS[name]
        assert ctypes.sizeof(cls) == size, name
        assert [(f, getattr(cls, f).offset) for f, _, _, _ in fields] == [(f, off) for f, off, _, _ in fields]


@pytest.mark.parametrize("name, drop, words", [
    ("attnops_fia_args", 13, "misses a field of the header before it"),
    ("attnops_fa_fwd_args", -1, "misses a field of the header at its end")])
def test_a_table_missing_a_field_is_refused(name, drop, words):
    """The check at import: a field left out of layouts.c moves the next one's offset, or the size.  (A last
    field that fits in the struct's tail padding changes neither; nothing but the header can tell.)"""
    name, size, fields = _table(name)
    fields = fields[:drop] + fields[drop + 1:] if drop != -1 else fields[:-1]
    with pytest.raises(ImportError, match=words):
        _lib.struct_class(name, size, fields, dict(_lib.STRUCTS))


def test_fa_pointer_slots_are_the_fields():
    """_fa stores the views' addresses by byte offset: each slot read back through the struct is its field."""
    args = _lib.FaBwdArgs()
    buf = (ctypes.c_char * ctypes.sizeof(args)).from_address(ctypes.addressof(args))
    for i, (slot, name) in enumerate(zip(_fa.BWD_SLOTS, _fa.BWD_NAMES)):
        ctypes.memmove(ctypes.addressof(buf) + slot, ctypes.byref(ctypes.c_void_p(0x1000 + i)), 8)
        field = getattr(args.p, name) if name in _fa.PARAM_TENSORS else getattr(args, name)
        assert field == 0x1000 + i, name


def test_native_views_read_back_through_the_tensor_struct():
    """attnops._native writes attnops_tensor views (compiled against the header): a strided numpy array and an
    empty one read back field by field through the ctypes struct."""
    import numpy as np
    from attnops import _views
    call = _views.Call()  # owns the views: keep it while reading
    a = np.zeros((4, 6), np.int32)[:, ::2]
    v = _lib.Tensor.from_address(call.view(a, "a"))
    assert (v.data, v.dtype, v.rank, list(v.shape[:2]), list(v.strides[:2])) == (
        a.ctypes.data, _lib.DTYPES["int32"], 2, [4, 3], [6, 2])
    empty = np.zeros((0, 4), np.float32)
    v = _lib.Tensor.from_address(call.view(empty, "empty"))
    assert (v.dtype, v.rank, list(v.shape[:2])) == (_lib.DTYPES["float32"], 2, [0, 4]) and v.data


def test_dtype_codes_come_from_the_traits_table():
    """The package's dtype codes are the library's traits rows: every torch dtype the library names
    exists in torch and numpy (ml_dtypes), maps back to its code through attnops_dtype_from_string by
    all three spellings, and an unknown name gives ATTNOPS_DTYPE_UNSET (0)."""
    import torch
    from attnops import _views
    lib = _lib.lib
    lib.attnops_dtype_from_string.restype, lib.attnops_dtype_from_string.argtypes = ctypes.c_int, [ctypes.c_char_p]
    assert set(_lib.DTYPES) == {"float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "uint8", "bool",
                                "int32", "int64", "int8"}
    for name, code in _lib.DTYPES.items():
        t = lib.attnops_dtype_traits_of(code).contents
        for spelling in (t.name, t.cann_name, t.torch_name):
            assert lib.attnops_dtype_from_string(spelling) == code
        assert t.size == getattr(torch, name).itemsize == _views._numpy_dtype(name).itemsize
        assert t.is_float == getattr(torch, name).is_floating_point
    assert lib.attnops_dtype_from_string(b"float64") == 0 and lib.attnops_dtype_from_string(None) == 0
    assert not lib.attnops_dtype_traits_of(0) and not lib.attnops_dtype_traits_of(len(_lib.DTYPES) + 1)
