"""Fixtures shared by the Python tests (the comparator is checks.py)."""
import os
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


# NPU-style test code runs in its own process, through install() (test_npu_style.py).
collect_ignore = ["npu_style"]


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


@pytest.fixture
def inductor_cache_per_isa(monkeypatch):
    """torch.compile's cache in a directory of this CPU's vector ISA, unless the user chose one.
    Inductor's FX graph cache key leaves out the vector width its loops step by, and a graph cached
    on a CPU of another width computed wrong numbers or corrupted the heap here (docs/ARM64.md,
    "torch.compile's cache across CPUs"); the default directory, /tmp/torchinductor_$USER, can
    outlive a change of CPU (a migrated VM, an image with a warmed cache)."""
    from torch._inductor.cpu_vec_isa import pick_vec_isa
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    default = default_cache_dir()
    # Inductor sets the variable to its default itself once it has used the cache: only another value
    # is the user's choice.
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR", default) != default:
        return
    isa = "_".join(str(pick_vec_isa()).split()) or "novec"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", f"{default}_{platform.machine()}_{isa}")
