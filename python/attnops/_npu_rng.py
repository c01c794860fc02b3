"""The (seed, offset) torch_npu hands a dropout call: the NPU generator's Philox inputs, emulated.

Sources read (docs/PYTHON.md, "Dropout"): Ascend/op-plugin
op_plugin/ops/opapi/FlashAttentionKernelNpuOpApi.cpp (dropout_gen_mask; the
same call on branches 7.1.0 57c52665 to master 517f2e7d) and Ascend/pytorch
torch_npu/csrc/aten/NPUGeneratorImpl.cpp (philox_engine_inputs,
set_current_seed; v2.1.0-7.1.0 92d8eb40, master 9e73e708).

A call of npu_fusion_attention(_v2) with 0 < keep_prob < 1 asks the default
NPU generator for philox_engine_inputs(10): the generator returns (its seed,
its offset) and advances the offset by the increment rounded up to a multiple
of 4, so by 12 per call (as CUDA's generator does).  Seeding it
(torch.manual_seed, which reaches torch.npu.manual_seed_all, or
torch.npu.manual_seed) sets the seed and resets the offset to 0 (set_current_seed).
A call without dropout does not touch the generator.

So after torch.manual_seed(s), the k-th dropout call (k = 0, 1, ...) of the
process runs with seed s and offset 12 k.  Two differences, both outside what
a test can rely on: unseeded, the NPU's generator starts from a random seed
and attnops' from torch's initial seed; and other NPU random ops advance the
NPU's offset too, where here only these calls do.

The generator's state is one int64 [2] tensor (seed, offset), so that a call
inside torch.compile draws from it in the graph (and advances it there) as an
eager call does.  Importing this module wraps torch.manual_seed and
torch.seed so that they reset it, as they reset torch_npu's generator.
"""
import torch

OFFSET_STEP = 12  # philox_engine_inputs(10): 10 rounded up to a multiple of 4
_INT64 = 1 << 64


def _signed(seed):
    """A seed as torch takes it (any int; used modulo 2^64) as the int64 it is stored in."""
    seed = int(seed) % _INT64
    return seed - _INT64 if seed >= 1 << 63 else seed


# Seeded before this module was imported, torch's initial seed is the seed the
# NPU generator was given then; no dropout call can have drawn yet.
_state = torch.tensor([_signed(torch.initial_seed()), 0], dtype=torch.int64)


def reset(seed):
    """The generator seeded with `seed`: (seed, offset 0)."""
    _state[0] = _signed(seed)
    _state[1] = 0


def draw():
    """(seed, offset, seed_offset) of one dropout call, advancing the offset by OFFSET_STEP: ints and None
    in eager mode; inside torch.compile a fresh int64 [2] tensor read at run time by the op (and its two
    elements as seed and offset)."""
    if torch.compiler.is_compiling():
        seed_offset = _state.clone()
        _state[1].add_(OFFSET_STEP)
        return seed_offset[0], seed_offset[1], seed_offset
    seed, offset = _state.tolist()
    _state[1] = offset + OFFSET_STEP
    return seed, offset, None


def state():
    """(seed, offset) the next dropout call will use."""
    seed, offset = _state.tolist()
    return seed, offset


def manual_seed(seed):
    """torch.npu.manual_seed(_all): on the CPU, torch.manual_seed (which resets this generator too)."""
    return torch.manual_seed(seed)


def initial_seed():
    """torch.npu.initial_seed(): the NPU generator's seed (as torch_npu returns it, unsigned)."""
    return int(_state[0]) % _INT64


_torch_manual_seed, _torch_seed = torch.manual_seed, torch.seed


def _manual_seed(seed):
    generator = _torch_manual_seed(seed)
    reset(seed)
    return generator


def _seed():
    seed = _torch_seed()
    reset(seed)
    return seed


_manual_seed.__doc__, _seed.__doc__ = _torch_manual_seed.__doc__, _torch_seed.__doc__
_manual_seed.__wrapped__, _seed.__wrapped__ = _torch_manual_seed, _torch_seed
if getattr(torch.manual_seed, "__wrapped__", None) is None:  # once, even if this module is reloaded
    torch.manual_seed = torch.random.manual_seed = _manual_seed
    torch.seed = torch.random.seed = _seed
