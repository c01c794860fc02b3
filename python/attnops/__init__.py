"""attnops: the attention operators of CANN ops-transformer on CPUs.

    import attnops.torch_npu   # torch_npu-compatible npu_fusion_attention(_grad), ...
    import attnops.ops         # the torch.library custom ops (torch.ops.attnops.*)
    import attnops.flash_attn  # flash-attn-style flash_attn_func, flash_attn_varlen_func, ...
    import attnops.golden      # numpy goldens of every operator (no torch needed)
    import attnops.distributed # ring attention across processes on torch.distributed
    attnops.compare(actual, expected, rule="dual")   # the harness's comparison rules

The C library (libattnops.so) ships inside this package and is bound with
ctypes; numpy is the only hard dependency, torch is needed by the torch
modules.  docs/PYTHON.md lists every function.
"""
from ._lib import (AttnopsError, AttnopsInternalError, AttnopsMemoryError, AttnopsNotImplementedError,
                   AttnopsValueError, cpu_isa, cpu_model, version)
from ._compare import Verdict, compare
from ._dropout import dropout_gen_mask, dropout_mask

__version__ = version()
__all__ = ["AttnopsError", "AttnopsValueError", "AttnopsNotImplementedError", "AttnopsMemoryError",
           "AttnopsInternalError", "cpu_isa", "cpu_model", "version", "dropout_mask", "dropout_gen_mask", "compare",
           "Verdict",
           "__version__"]
