"""What the checks of `attnops golden` exports share: the numpy dtype of
each manifest dtype name (bf16 and FP8 through ml_dtypes), loading one
exported tensor, running `attnops compare`, and pass/fail lines with the
failure count that becomes the exit code."""
import os
import subprocess

import ml_dtypes
import numpy as np

DT = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f8_e4m3fn": ml_dtypes.float8_e4m3fn,
      "f8_e5m2": ml_dtypes.float8_e5m2, "u8": np.uint8, "bool": np.bool_, "i8": np.int8, "i32": np.int32,
      "i64": np.int64}
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def load(root, t):
    """The manifest entry t's array; numpy reads bf16 / FP8 files as void, viewed back here."""
    a = np.load(os.path.join(root, t["file"]))
    return a.view(DT[t["dtype"]]) if a.dtype.kind == "V" else a


def compare(binary, golden, actual, *extra):
    """`attnops compare` of a device directory against a golden one, output captured."""
    return subprocess.run([binary, "compare", "--golden", golden, "--actual", actual, *extra], capture_output=True,
                          text=True)


def summary(name):
    """The closing line of a check script and its exit code."""
    print(f"{name}: all passed" if not failures else f"{name}: {failures} failed")
    return 1 if failures else 0
