"""attnops.torch_npu.install(): run test code written for Ascend NPUs on the CPU.

What it does (and nothing more):
  - `import torch_npu` resolves to attnops.torch_npu (the operators there);
    `import block_attn_res_impl` to a module with the PyPTO kernel's
    ai_infra_block_attn_res(_backward), as the seed's AttnRes test imports them;
  - `torch.npu` becomes a namespace whose device calls are no-ops on the one
    CPU "device": set_device, current_device (0), device_count (1),
    is_available (True), synchronize, empty_cache; its manual_seed(_all)
    seed torch and reset the NPU generator's dropout offset (_npu_rng);
  - the NPU *is* the CPU: `torch.device("npu")` / `torch.device("npu:N")`
    construct the CPU device (so `t.device == torch.device("npu")` holds for
    every CPU tensor); torch's factory functions (torch.randn, empty, zeros,
    arange, tensor, *_like, ...), Tensor.new_*, Tensor.to and Module.to take
    "npu" / "npu:N" as "cpu"; `Tensor.npu()` returns the tensor itself.
What it does not emulate: `t.device.type` is "cpu", not "npu"; NPU streams,
events, memory statistics, formats (npu_format_cast) and every torch_npu
operator attnops does not implement; `torch.device("npu")` inside a
torch.compile(fullgraph=True) region is a graph break (build it outside);
functions outside that list do not map "npu" (torch.Generator(device="npu")).
install() is idempotent; uninstall() restores what it replaced.
"""
import functools
import sys
import types

import torch

from . import _npu_rng

_saved = {}
_DEVICE = torch.device


def _is_npu(device):
    return isinstance(device, str) and (device == "npu" or device.startswith("npu:"))


def _cpu(arg):
    return "cpu" if _is_npu(arg) else arg


class _DeviceMeta(type):
    """isinstance(x, torch.device) keeps meaning what it meant."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _DEVICE)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _DEVICE)


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


def _npu_namespace():
    ns = types.ModuleType("torch.npu")
    ns.set_device = lambda device=0: None
    ns.current_device = lambda: 0
    ns.device_count = lambda: 1
    ns.is_available = lambda: True
    ns.synchronize = lambda device=None: None
    ns.empty_cache = lambda: None
    ns.manual_seed = _npu_rng.manual_seed
    ns.manual_seed_all = _npu_rng.manual_seed
    ns.initial_seed = _npu_rng.initial_seed
    return ns


def install():
    """Make NPU test code run on the CPU (see the module docstring for exactly what changes)."""
    if _saved:
        return
    from . import torch_npu
    impl = types.ModuleType("block_attn_res_impl")
    impl.ai_infra_block_attn_res = torch_npu.ai_infra_block_attn_res
    impl.ai_infra_block_attn_res_backward = torch_npu.ai_infra_block_attn_res_backward
    _saved.update({"Tensor.npu": getattr(torch.Tensor, "npu", None), "torch.npu": getattr(torch, "npu", None),
                   "torch.device": torch.device, "Module.to": torch.nn.Module.to,
                   "torch": {f: getattr(torch, f) for f in _TORCH_FACTORIES},
                   "Tensor": {f: getattr(torch.Tensor, f) for f in _TENSOR_METHODS},
                   "modules": {m: sys.modules.get(m) for m in ("torch_npu", "block_attn_res_impl")}})
    sys.modules["torch_npu"] = torch_npu
    sys.modules["block_attn_res_impl"] = impl
    torch.npu = _npu_namespace()
    torch.device = _NpuDevice
    torch.Tensor.npu = _npu
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
    for name, mod in _saved["modules"].items():
        if mod is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = mod
    _saved.clear()
