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


def test_packed_views_match_the_tensor_struct():
    """_views packs attnops_tensor with struct: same size and field offsets as the (C-checked) ctypes struct."""
    from attnops import _views
    t = _lib.Tensor
    assert _views._VIEW.size == ctypes.sizeof(t)
    assert (t.data.offset, t.dtype.offset, t.rank.offset, t.shape.offset, t.strides.offset) == (0, 8, 12, 16, 80)


def test_packed_fa_args_match_the_structs():
    """_fa packs attnops_fa_params / fwd / bwd args with struct; a round trip through the ctypes structs
    (checked against the header above) reads every field back at its offset."""
    from attnops import _fa
    assert _fa.PARAMS.size == ctypes.sizeof(_lib.FaParams)
    assert _fa.PARAMS.size + _fa.FWD_OUTPUTS.size == ctypes.sizeof(_lib.FaFwdArgs)
    assert _fa.PARAMS.size + _fa.BWD_TENSORS.size == ctypes.sizeof(_lib.FaBwdArgs)
    values = [1000 + i for i in range(19)] + [0.5, 0.25] + [3, 4, 5, 6] + [7, 8, 9, 10, 11, 12] + [13, 14, 15, 16]
    buf = ctypes.create_string_buffer(ctypes.sizeof(_lib.FaBwdArgs))
    _fa.PARAMS.pack_into(buf, 0, *values)
    _fa.BWD_TENSORS.pack_into(buf, _fa.PARAMS.size, *range(2000, 2011))
    args = _lib.FaBwdArgs.from_buffer(buf)
    got = [getattr(args.p, name) for name, _ in _lib.FaParams._fields_]
    assert got == values
    assert [getattr(args, name) for name, _ in _lib.FaBwdArgs._fields_[1:]] == list(range(2000, 2011))
