"""The test utilities op-plugin's test files import, for NPU test code run through
attnops.torch_npu.install() (which maps `torch_npu.testing.testcase` and
`torch_npu.testing.common_utils` here):

    from torch_npu.testing.testcase import TestCase, run_tests
    from torch_npu.testing.common_utils import SupportedDevices

Only what those files use: TestCase (unittest's, with assertRtolEqual),
run_tests and the SupportedDevices decorator.  assertRtolEqual follows the rule
torch_npu's testcase.py states (read in Ascend/pytorch's torch_npu/testing/
testcase.py; written here from that description): an element passes when
|x - y| <= prec or |x - y| / (max(|x|, |y|) + tiny) <= prec, NaNs must sit in
the same places, and the comparison fails only when more than size * prec
elements fail each of the two tests; prec16 replaces prec for 16-bit floats.
"""
import functools
import unittest

import numpy as np
import torch

_TINY_16, _TINY = 6e-8, 1e-9


def _numpy(t):
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return np.asarray(t)


class TestCase(unittest.TestCase):
    """unittest.TestCase with torch_npu's assertRtolEqual."""

    def assertRtolEqual(self, x, y, prec=1.e-4, prec16=1.e-3, auto_trans_dtype=False, message=None):
        x, y = _numpy(x), _numpy(y)
        if auto_trans_dtype:
            x = x.astype(y.dtype)
        self.assertEqual(x.shape, y.shape, message)
        half = x.dtype == np.float16 or y.dtype == np.float16
        tol, tiny = (prec16, _TINY_16) if half else (prec, _TINY)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        nan = np.isnan(x64)
        if not np.array_equal(nan, np.isnan(y64)):
            self.fail(message or "NaNs in different places")
        diff = np.abs(np.where(nan, 0.0, y64 - x64))
        atol_ok = diff <= tol
        rtol_ok = diff / (np.maximum(np.abs(x64), np.abs(y64)) + tiny) <= tol
        size = max(x.size, 1)
        if (np.count_nonzero(~rtol_ok) > size * tol and np.count_nonzero(~atol_ok) > size * tol):
            self.fail(message or f"result error: {np.count_nonzero(~(atol_ok | rtol_ok))} of {size} elements "
                      f"beyond {tol}")


def run_tests():
    unittest.main()


def SupportedDevices(devices):
    """Run the test only when the emulated SoC (torch.npu.get_device_name()) starts with one of `devices`."""
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            name = torch.npu.get_device_name() if hasattr(torch, "npu") else ""
            if not any(name.startswith(d) for d in devices):
                raise unittest.SkipTest(f"the emulated device {name!r} is not one of {devices}")
            return fn(*args, **kwargs)
        return wrapper
    return decorator
