"""attnops.torch_npu.install(): run test code written for Ascend NPUs on the CPU.

What it does (and nothing more):
  - `import torch_npu` resolves to attnops.torch_npu (the operators there);
    `import block_attn_res_impl` to a module with the PyPTO kernel's
    ai_infra_block_attn_res(_backward), as the seed's AttnRes test imports them;
  - `torch.npu` becomes a namespace whose device calls are no-ops on the one
    CPU "device": set_device, current_device (0), device_count (1),
    is_available (True), synchronize, empty_cache, manual_seed(_all) (torch's);
  - `Tensor.npu()` returns the tensor itself, and `Tensor.to(...)` maps a
    device "npu" / "npu:N" to "cpu".
What it does not emulate: device="npu" in factory functions (torch.zeros(...,
device="npu") still fails), NPU streams, events, memory statistics, formats
(npu_format_cast), and every torch_npu operator attnops does not implement.
install() is idempotent; uninstall() restores what it replaced.
"""
import sys
import types

import torch

_saved = {}


def _is_npu(device):
    if isinstance(device, str):
        return device == "npu" or device.startswith("npu:")
    return False


def _to(self, *args, **kwargs):
    args = tuple("cpu" if _is_npu(a) else a for a in args)
    if _is_npu(kwargs.get("device")):
        kwargs["device"] = "cpu"
    return _saved["Tensor.to"](self, *args, **kwargs)


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
    ns.manual_seed = torch.manual_seed
    ns.manual_seed_all = torch.manual_seed
    return ns


def install():
    """Make NPU test code run on the CPU (see the module docstring for exactly what changes)."""
    if _saved:
        return
    from . import torch_npu
    impl = types.ModuleType("block_attn_res_impl")
    impl.ai_infra_block_attn_res = torch_npu.ai_infra_block_attn_res
    impl.ai_infra_block_attn_res_backward = torch_npu.ai_infra_block_attn_res_backward
    _saved.update({"Tensor.to": torch.Tensor.to, "Tensor.npu": getattr(torch.Tensor, "npu", None),
                   "torch.npu": getattr(torch, "npu", None),
                   "modules": {m: sys.modules.get(m) for m in ("torch_npu", "block_attn_res_impl")}})
    sys.modules["torch_npu"] = torch_npu
    sys.modules["block_attn_res_impl"] = impl
    torch.npu = _npu_namespace()
    torch.Tensor.to = _to
    torch.Tensor.npu = _npu


def uninstall():
    """Undo install()."""
    if not _saved:
        return
    torch.Tensor.to = _saved["Tensor.to"]
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
