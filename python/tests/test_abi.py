"""The ctypes structs of attnops._lib match include/attnops.h: a C program
compiled against the installed header prints every sizeof / offsetof (a
field added in C changes a sizeof, a renamed one fails to compile)."""
import ctypes
import shutil
import subprocess

import pytest

from attnops import _compare, _lib


STRUCTS = {**_lib.STRUCTS, **_compare.STRUCTS}


def c_layout(tmp_path):
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "attnops.h"', '#include "verify/compare.h"',
             "int main(void) {"]
    for cname, struct in STRUCTS.items():
        lines.append(f'    printf("{cname} %zu\\n", sizeof({cname}));')
        for field, _ in struct._fields_:
            lines.append(f'    printf("{cname}.{field} %zu\\n", offsetof({cname}, {field}));')
    lines += ["    return 0;", "}"]
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines) + "\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler on PATH (scripts/setup.sh installs gcc)")
    exe = tmp_path / "abi"
    subprocess.run([cc, "-std=c11", "-I", str(_lib.HEADER.parent), str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return dict(line.rsplit(" ", 1) for line in out.splitlines())


def test_structs_match_the_header(tmp_path):
    c = c_layout(tmp_path)
    for cname, struct in STRUCTS.items():
        assert int(c[cname]) == ctypes.sizeof(struct), f"sizeof({cname})"
        for field, _ in struct._fields_:
            assert int(c[f"{cname}.{field}"]) == getattr(struct, field).offset, f"offsetof({cname}, {field})"


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


def test_fa_args_slots_match_the_structs():
    """_fa packs attnops_fa_params with struct and stores the tensor pointers by byte offset: a round trip
    through the ctypes structs (checked against the header above) reads every scalar back, and every
    pointer slot is the offset of the field of its name."""
    from attnops import _fa
    assert _fa.PARAMS.size == ctypes.sizeof(_lib.FaParams)
    values = [0] * len(_fa.PARAM_TENSORS) + [0.5, 0.25, 0.125] + [3, 4, 5, 6] + list(range(7, 15)) + [15, 16, 17, 18]
    buf = ctypes.create_string_buffer(ctypes.sizeof(_lib.FaBwdArgs))
    _fa.PARAMS.pack_into(buf, 0, *values)
    args = _lib.FaBwdArgs.from_buffer(buf)
    assert [getattr(args.p, name) or 0 for name, _ in _lib.FaParams._fields_] == values
    for struct, slots, names in ((_lib.FaFwdArgs, _fa.FWD_SLOTS, _fa.FWD_NAMES),
                                 (_lib.FaBwdArgs, _fa.BWD_SLOTS, _fa.BWD_NAMES)):
        assert _fa.PARAMS.size + 8 * (len(names) - len(_fa.PARAM_TENSORS)) == ctypes.sizeof(struct)
        for slot, name in zip(slots, names):
            field = getattr(_lib.FaParams, name) if name in _fa.PARAM_TENSORS else getattr(struct, name)
            assert slot == field.offset, name


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
