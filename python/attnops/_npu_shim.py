"""attnops.torch_npu.install(): run test code written for Ascend NPUs on the CPU.

What it does (and nothing more):
  - `import torch_npu` resolves to attnops.torch_npu (the operators there);
    `import block_attn_res_impl` to a module with the PyPTO kernel's
    ai_infra_block_attn_res(_backward), as the seed's AttnRes test imports them;
  - `torch.npu` (also `torch_npu.npu`) becomes a namespace for the one CPU
    "device" (docs/PYTHON.md lists each value): set_device, current_device (0),
    device_count (1), is_available (True), synchronize, empty_cache,
    set_compile_mode, set_option, config.allow_internal_format, streams and
    events (current_stream, Stream, Event, stream(); Event.elapsed_time is
    wall time), get_device_name / get_device_properties (the emulated SoC,
    `soc`), is_bf16_supported (True), the memory queries (memory_allocated and
    its kin: 0, as nothing is held on a device; mem_get_info: the host's
    available and total memory); its manual_seed(_all) seed torch and reset the
    NPU generator's dropout offset (_npu_rng);
  - `import torch_npu.testing.testcase` / `.common_utils` resolve to the few
    test utilities op-plugin's test files import (TestCase.assertRtolEqual,
    run_tests, SupportedDevices), from _npu_testing;
  - the NPU *is* the CPU: `torch.device("npu")` / `torch.device("npu:N")`
    construct the CPU device (so `t.device == torch.device("npu")` holds for
    every CPU tensor); torch's factory functions (torch.randn, empty, zeros,
    arange, tensor, *_like, ...), Tensor.new_*, Tensor.to and Module.to take
    "npu" / "npu:N" as "cpu"; `Tensor.npu()` and `Module.npu()` return the
    tensor / module itself.
What it does not emulate: `t.device.type` is "cpu", not "npu"; NPU streams,
events, memory statistics, formats (npu_format_cast) and every torch_npu
operator attnops does not implement; `torch.device("npu")` inside a
torch.compile(fullgraph=True) region is a graph break (build it outside);
functions outside that list do not map "npu" (torch.Generator(device="npu")).
install() is idempotent; uninstall() restores what it replaced.
"""
import contextlib
import functools
import sys
import time
import types

import torch

from . import _npu_rng

_saved = {}
_DEVICE = torch.device
_MODULES = ("torch_npu", "torch_npu.npu", "torch_npu.testing", "torch_npu.testing.testcase",
            "torch_npu.testing.common_utils", "block_attn_res_impl")


def _is_npu(device):
    return isinstance(device, str) and (device == "npu" or device.startswith("npu:"))


def _cpu(arg):
    return "cpu" if _is_npu(arg) else arg


class _DeviceMeta(type):
    """isinstance(x, torch.device) keeps meaning what it meant, and so does a comparison of the class
    itself: torch.fx's code generator registers the real class under the global name "device" only
    while `obj != torch.device` is false (torch/fx/graph.py, add_global); without this, every
    generated graph with a device argument failed with NameError: name 'device' is not defined."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _DEVICE)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _DEVICE)

    def __eq__(cls, other):
        return other is cls or other is _DEVICE

    def __ne__(cls, other):
        return not _DeviceMeta.__eq__(cls, other)

    def __hash__(cls):
        return hash(_DEVICE)


class _NpuDevice(metaclass=_DeviceMeta):
    """torch.device while installed: "npu" / "npu:N" (or type "npu" with an index) is the CPU device."""

    def __new__(cls, *args, **kwargs):
        if args and _is_npu(args[0]):
            return _DEVICE("cpu")
        if _is_npu(kwargs.get("type")):
            return _DEVICE("cpu")
        return _DEVICE(*args, **kwargs)


# The functions that take a device: factories, Tensor.new_*, .to.  Wrapped one by one rather than
# through a TorchFunctionMode: a mode costs every torch call ~2 us, and under a mode Dynamo mis-traced
# models once torch.device was replaced (an arange's device became a torch.Size).
_TORCH_FACTORIES = ("empty", "empty_strided", "zeros", "ones", "full", "rand", "randn", "randint", "randperm",
                    "arange", "range", "linspace", "logspace", "eye", "tensor", "as_tensor", "empty_like",
                    "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like")
_TENSOR_METHODS = ("to", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor")


def _on_cpu(fn):
    """fn with every "npu[:N]" argument (positional or device=) replaced by "cpu"."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _is_npu(kwargs.get("device")):
            kwargs["device"] = "cpu"
        return fn(*(_cpu(a) for a in args), **kwargs)
    return call


def _npu(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
    return self


def _module_npu(self, device=None):
    return self


class _Event:
    """torch.npu.Event: record() notes the wall time (the CPU has run everything by then)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end_event):
        """Milliseconds between the two record() calls."""
        return (end_event._t - self._t) * 1e3


class _Stream:
    """torch.npu.Stream: work is done when it is issued, so every stream is always idle."""

    def __init__(self, device=None, priority=0):
        self.device = _DEVICE("cpu")

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def query(self):
        return True


_DEFAULT_STREAM = _Stream()


def _host_memory():
    """(available, total) bytes of host memory, as mem_get_info reports a device's (free, total)."""
    info = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, value = line.split(":", 1)
                info[key] = int(value.split()[0]) * 1024
    except OSError:
        return 0, 0
    return info.get("MemAvailable", 0), info.get("MemTotal", 0)


def _npu_namespace():
    ns = types.ModuleType("torch.npu")
    ns.set_device = lambda device=0: None
    ns.current_device = lambda: 0
    ns.device_count = lambda: 1
    ns.is_available = lambda: True
    ns.is_initialized = lambda: True
    ns.init = lambda: None
    ns.synchronize = lambda device=None: None
    ns.empty_cache = lambda: None
    ns.set_compile_mode = lambda jit_compile=True: None
    ns.set_option = lambda option=None: None
    ns.config = types.SimpleNamespace(allow_internal_format=False)
    ns.get_device_name = lambda device=None: _soc[0]
    ns.get_device_properties = lambda device=None: types.SimpleNamespace(name=_soc[0],
                                                                         total_memory=_host_memory()[1])
    ns.is_bf16_supported = lambda: True
    ns.Stream, ns.Event = _Stream, _Event
    ns.current_stream = ns.default_stream = lambda device=None: _DEFAULT_STREAM
    ns.stream = lambda stream=None: contextlib.nullcontext(stream)
    ns.set_stream = lambda stream=None: None
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"):
        setattr(ns, name, lambda device=None: 0)
    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated", "reset_accumulated_memory_stats"):
        setattr(ns, name, lambda device=None: None)
    ns.memory_stats = lambda device=None: {}
    ns.mem_get_info = lambda device=None: _host_memory()
    ns.manual_seed = _npu_rng.manual_seed
    ns.manual_seed_all = _npu_rng.manual_seed
    ns.initial_seed = _npu_rng.initial_seed
    return ns


# The SoC emulated by default: the Ascend 950, whose in-kernel dropout stream attnops reproduces.
DEFAULT_SOC = "Ascend950PR"
_soc = [DEFAULT_SOC]


def set_soc(soc):
    """The SoC torch_npu code runs as: what torch.npu.get_device_name() reports, and the dropout stream
    npu_fusion_attention(_v2) applies -- on the Ascend 950 the kernel's own Philox stream; on every earlier
    SoC (Atlas A2 / A3: "Ascend910B1" .. "Ascend910B4", "Ascend910_93xx") the mask op-plugin draws beforehand
    with aclnnDropoutGenMaskV2 (docs/PYTHON.md, "Dropout")."""
    if not isinstance(soc, str) or not soc.startswith("Ascend"):
        raise ValueError(f"attnops.torch_npu: soc is {soc!r}; it must be a SoC name such as \"Ascend950PR\" or "
                         "\"Ascend910B4\"")
    _soc[0] = soc


def soc():
    return _soc[0]


def gen_mask_dropout():
    """Whether the emulated SoC takes its dropout mask from DropOutGenMask (op-plugin: SoC < Ascend950)."""
    return not _soc[0].startswith("Ascend950")


def install(soc=None):
    """Make NPU test code run on the CPU (see the module docstring for exactly what changes).
    `soc` (default: the one set_soc chose, else DEFAULT_SOC) is the SoC emulated (set_soc)."""
    if _saved:
        return
    if soc is not None:
        set_soc(soc)
    from . import _npu_testing, torch_npu
    impl = types.ModuleType("block_attn_res_impl")
    impl.ai_infra_block_attn_res = torch_npu.ai_infra_block_attn_res
    impl.ai_infra_block_attn_res_backward = torch_npu.ai_infra_block_attn_res_backward
    _saved.update({"Tensor.npu": getattr(torch.Tensor, "npu", None), "torch.npu": getattr(torch, "npu", None),
                   "Module.npu": getattr(torch.nn.Module, "npu", None),
                   "torch.device": torch.device, "Module.to": torch.nn.Module.to,
                   "torch": {f: getattr(torch, f) for f in _TORCH_FACTORIES},
                   "Tensor": {f: getattr(torch.Tensor, f) for f in _TENSOR_METHODS},
                   "modules": {m: sys.modules.get(m) for m in _MODULES}})
    torch.npu = torch_npu.npu = _npu_namespace()
    sys.modules.update({"torch_npu": torch_npu, "torch_npu.npu": torch.npu, "block_attn_res_impl": impl,
                        "torch_npu.testing": _npu_testing, "torch_npu.testing.testcase": _npu_testing,
                        "torch_npu.testing.common_utils": _npu_testing})
    torch_npu.testing = _npu_testing
    torch.device = _NpuDevice
    torch.Tensor.npu = _npu
    torch.nn.Module.npu = _module_npu
    torch.nn.Module.to = _on_cpu(torch.nn.Module.to)
    for name, fn in _saved["torch"].items():
        setattr(torch, name, _on_cpu(fn))
    for name, fn in _saved["Tensor"].items():
        setattr(torch.Tensor, name, _on_cpu(fn))


def uninstall():
    """Undo install()."""
    if not _saved:
        return
    torch.device = _saved["torch.device"]
    torch.nn.Module.to = _saved["Module.to"]
    for name, fn in _saved["torch"].items():
        setattr(torch, name, fn)
    for name, fn in _saved["Tensor"].items():
        setattr(torch.Tensor, name, fn)
    if _saved["Tensor.npu"] is None:
        del torch.Tensor.npu
    else:
        torch.Tensor.npu = _saved["Tensor.npu"]
    if _saved["torch.npu"] is None:
        del torch.npu
    else:
        torch.npu = _saved["torch.npu"]
    if _saved["Module.npu"] is None:
        del torch.nn.Module.npu
    else:
        torch.nn.Module.npu = _saved["Module.npu"]
    from . import torch_npu
    for name in ("npu", "testing"):
        torch_npu.__dict__.pop(name, None)
    for name, mod in _saved["modules"].items():
        if mod is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = mod
    _saved.clear()
