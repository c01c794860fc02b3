"""The output shapes come from the library (attnops_flash_attention_score_output_shapes,
attnops_fused_infer_attention_score_output_shapes; tests/test_output_shapes.c checks the rule itself):
the numpy binding's and the torch ops' (CPU and Meta) outputs have the shapes the contracts state,
and under torch.compile(dynamic=True) the batch and sequence sizes stay symbolic through the Meta
kernels (one graph for several of them), while the head dims the library reads are guarded."""
import numpy as np
import pytest
import torch

from attnops import _fa, _fia, ops

# (layout, q, k, v, heads, attention_out, statistics), written from the FA contract (docs/FLASH_ATTENTION_API.md)
FA_SHAPES = [
    ("BNSD", (2, 4, 5, 16), (2, 2, 7, 16), (2, 2, 7, 8), 4, (2, 4, 5, 8), (2, 4, 5, 8)),
    ("BSND", (2, 5, 4, 16), (2, 7, 2, 16), (2, 7, 2, 8), 4, (2, 5, 4, 8), (2, 4, 5, 8)),
    ("BSH", (2, 5, 64), (2, 7, 32), (2, 7, 16), 4, (2, 5, 32), (2, 4, 5, 8)),
    ("SBH", (5, 2, 64), (7, 2, 32), (7, 2, 16), 4, (5, 2, 32), (2, 4, 5, 8)),
]


@pytest.mark.parametrize("layout, q, k, v, heads, out, stats", FA_SHAPES)
def test_flash_attention_shapes(layout, q, k, v, heads, out, stats):
    arrays = [np.zeros(s, np.float32) for s in (q, k, v)]
    assert _fa.output_shapes(*arrays, heads, layout) == (out, stats)
    tensors = [torch.randn(s) for s in (q, k, v)]
    for device in ("cpu", "meta"):
        got = ops.flash_attention_score(*(t.to(device) for t in tensors), heads, layout)
        assert [tuple(t.shape) for t in got] == [out, stats, stats], device


# (input_layout, q, k, v, attention_out, softmax_lse), FIA's contract (docs/FIA.md), N1 4, N2 2
FIA_SHAPES = [
    ("BSH", (2, 3, 64), (2, 7, 32), (2, 7, 16), (2, 3, 32), (2, 4, 3, 1)),
    ("BNSD", (2, 4, 3, 16), (2, 2, 7, 16), (2, 2, 7, 8), (2, 4, 3, 8), (2, 4, 3, 1)),
    ("BNSD_BSND", (2, 4, 3, 16), (2, 2, 7, 16), (2, 2, 7, 8), (2, 3, 4, 8), (2, 4, 3, 1)),
    ("BSND", (2, 3, 4, 16), (2, 7, 2, 16), (2, 7, 2, 8), (2, 3, 4, 8), (2, 4, 3, 1)),
]


@pytest.mark.parametrize("layout, q, k, v, out, lse", FIA_SHAPES)
def test_fused_infer_attention_shapes(layout, q, k, v, out, lse):
    arrays = [np.zeros(s, np.float32) for s in (q, k, v)]
    assert _fia.output_shapes(*arrays, layout, 4) == (out, lse)
    tensors = [torch.randn(s) for s in (q, k, v)]
    for device in ("cpu", "meta"):
        for flag in (True, False):
            got = ops.fused_infer_attention_score(*(t.to(device) for t in tensors), num_heads=4,
                                                  num_key_value_heads=2, input_layout=layout, softmax_lse_flag=flag)
            assert [tuple(t.shape) for t in got] == [out, lse if flag else (1,)], (device, flag)


def _graphs(fn, calls):
    """How many graphs torch.compile(dynamic=True) makes for fn over the calls (argument tuples)."""
    graphs = []

    def backend(gm, _inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=True, fullgraph=True)
    for args, want in calls:
        assert tuple(compiled(*args).shape) == want
    return len(graphs)


def test_batch_and_sequence_sizes_stay_symbolic():
    def fa(q, k, v):
        return ops.flash_attention_score(q, k, v, 4, "BSND")[0]

    def fia(q, k, v):
        return ops.fused_infer_attention_score(q, k, v, num_heads=4, num_key_value_heads=2, input_layout="BSND")[0]

    # the first call's sizes all differ (dynamo gives equal sizes one symbol, and a later call would break that)
    calls = [((torch.randn(b, s, 4, 16), torch.randn(b, s + 6, 2, 16), torch.randn(b, s + 6, 2, 8)), (b, s, 4, 8))
             for b, s in ((3, 5), (5, 7), (6, 9))]
    assert _graphs(fa, calls) == 1
    assert _graphs(fia, calls) == 1
