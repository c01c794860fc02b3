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

