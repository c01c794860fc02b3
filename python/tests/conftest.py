"""Fixtures shared by the Python tests (the comparator is checks.py)."""
import platform

import pytest
import torch

# torch.compile on aarch64: Inductor builds its C++ kernels against a precompiled
# header of ATen's vector classes, and on a CPU with SVE (Graviton 3/4, Neoverse
# V1/V2, Grace) Debian 12's g++ 12.2 dies on that header (internal compiler error
# at svld1_f32 in ATen/cpu/vec/sve/vec_float.h); the same kernel compiles without
# it.  A compiler bug outside attnops (docs/ARM64.md, "torch.compile on SVE
# hosts"), so on every aarch64 CPU (the header only saves compile time) the tests
# compile without it, every kernel still through Inductor's C++ backend.
if platform.machine() == "aarch64":
    import torch._inductor.config as inductor_config
    if hasattr(inductor_config, "cpp_cache_precompile_headers"):
        inductor_config.cpp_cache_precompile_headers = False


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)
