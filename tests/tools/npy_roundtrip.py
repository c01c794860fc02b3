#!/usr/bin/env python3
"""The .npy round trip of the harness (verify/npy.c) against numpy +
ml_dtypes.  `write DIR`: every dtype the harness uses, random bit patterns,
saved by numpy in format versions 1.0, 2.0 and 3.0 (<name>.v<k>.npy) with
the raw bytes beside them (<name>.raw), plus broken files (bad_*.npy).
`check DIR`: the files test_npy wrote back (<name>.c.npy) load in numpy to
the same bits."""
import os
import sys

import ml_dtypes
import numpy as np

DTYPES = {"f32": np.float32, "f16": np.float16, "u8": np.uint8, "bool": np.bool_, "i32": np.int32,
          "i64": np.int64, "bf16": ml_dtypes.bfloat16, "f8_e4m3fn": ml_dtypes.float8_e4m3fn,
          "f8_e5m2": ml_dtypes.float8_e5m2}
SHAPES = {"f32": (3, 5, 7), "f16": (4, 9), "u8": (17,), "bool": (2, 3), "i32": (6,), "i64": (2, 2, 2),
          "bf16": (1, 2, 3, 4), "f8_e4m3fn": (5, 6), "f8_e5m2": (7,)}


def array(name):
    rng = np.random.default_rng(len(name))
    dt = np.dtype(DTYPES[name])
    raw = rng.integers(0, 256, size=int(np.prod(SHAPES[name])) * dt.itemsize, dtype=np.uint8)
    if name == "bool":
        raw &= 1
    return raw.view(dt).reshape(SHAPES[name])


def write(d):
    os.makedirs(d, exist_ok=True)
    for name in DTYPES:
        a = array(name)
        with open(os.path.join(d, f"{name}.raw"), "wb") as f:
            f.write(a.tobytes())
        for v in ((1, 0), (2, 0), (3, 0)):
            with open(os.path.join(d, f"{name}.v{v[0]}.npy"), "wb") as f:
                np.lib.format.write_array(f, a, version=v)
    good = open(os.path.join(d, "f32.v1.npy"), "rb").read()
    open(os.path.join(d, "bad_magic.npy"), "wb").write(b"\x93NUMPZ" + good[6:])
    open(os.path.join(d, "bad_truncated.npy"), "wb").write(good[:-5])
    np.save(os.path.join(d, "bad_fortran.npy"), np.asfortranarray(np.zeros((2, 3), np.float32)))
    np.save(os.path.join(d, "bad_bigendian.npy"), np.zeros(3, dtype=">f4"))
    np.save(os.path.join(d, "bad_float64.npy"), np.zeros(3, dtype=np.float64))
    junk = b"{'shape': 7}".ljust(117) + b"\n"  # a well-framed header that is no numpy dict
    open(os.path.join(d, "bad_header.npy"), "wb").write(good[:8] + len(junk).to_bytes(2, "little") + junk)


def check(d):
    bad = 0
    for name in DTYPES:
        a = array(name)
        b = np.load(os.path.join(d, f"{name}.c.npy"))
        if b.dtype.kind == "V":  # ml_dtypes types come back as void; view them as the recorded dtype
            b = b.view(DTYPES[name])
        if b.shape != a.shape or b.tobytes() != a.tobytes():
            print(f"FAIL {name}: numpy reads {b.dtype} {b.shape} with other bits")
            bad += 1
        else:
            print(f"ok   {name}.c.npy")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
