"""torch.library integration: opcheck of every op, torch.compile(fullgraph=True)
without graph breaks matching eager, the thread count taken from torch."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import attnops.flash_attn as fa
import attnops.ops  # noqa: F401
import attnops.torch_npu as torch_npu


def _req(*ts):
    return [t.clone().requires_grad_() for t in ts]


def test_opcheck_flash_attention_score():
    q, k, v = _req(torch.randn(2, 6, 4, 16), torch.randn(2, 9, 2, 16), torch.randn(2, 9, 2, 8))
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    for kwargs in (dict(scale=0.3), dict(scale=0.3, atten_mask=mask, sparse_mode=3, keep_prob=0.8, seed=5)):
        torch.library.opcheck(torch.ops.attnops.flash_attention_score.default, (q, k, v, 4, "BSND"), kwargs)
    out, smax, ssum = torch.ops.attnops.flash_attention_score(q, k, v, 4, "BSND", scale=0.3)
    torch.library.opcheck(torch.ops.attnops.flash_attention_score_grad.default,
                          (q.detach(), k.detach(), v.detach(), torch.randn(out.shape), out.detach(), smax, ssum, 4,
                           "BSND"), dict(scale=0.3))
    sink = torch.randn(4, requires_grad=True)  # attention sinks: a differentiable input, dsink the grad's 6th
    torch.library.opcheck(torch.ops.attnops.flash_attention_score.default, (q, k, v, 4, "BSND"),
                          dict(scale=0.3, sink=sink))
    out, smax, ssum = torch.ops.attnops.flash_attention_score(q, k, v, 4, "BSND", scale=0.3, sink=sink)
    torch.library.opcheck(torch.ops.attnops.flash_attention_score_grad.default,
                          (q.detach(), k.detach(), v.detach(), torch.randn(out.shape), out.detach(), smax.detach(),
                           ssum.detach(), 4, "BSND"), dict(scale=0.3, sink=sink.detach()))


def test_flash_attn_forward_is_flash_attention_score():
    """flash_attn_forward / flash_attn_backward (flash-attn's arguments) are flash_attention_score(_grad) with
    flash-attn's rules mapped onto CANN's: the same bits forward, backward through autograd and through the grad
    op, for the default scale, causal (bottom-right: mode 3), windows (mode 4, a negative side unbounded),
    softcap and determinism; opcheck (their fakes and autograd included); a q of another rank is refused with a
    sentence."""
    g = torch.Generator().manual_seed(8)
    q, k, v = _req(torch.randn(2, 6, 4, 16, generator=g), torch.randn(2, 9, 2, 16, generator=g),
                   torch.randn(2, 9, 2, 8, generator=g))
    dy = torch.randn(2, 6, 4, 8, generator=g)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    cases = [(dict(), dict(scale=0.25)),
             (dict(softmax_scale=0.3, causal=True), dict(scale=0.3, atten_mask=mask, sparse_mode=3, next_tokens=0)),
             (dict(window_left=2, window_right=1), dict(scale=0.25, atten_mask=mask, sparse_mode=4, pre_tokens=2,
                                                        next_tokens=1)),
             (dict(window_left=3, causal=True, window_right=5), dict(scale=0.25, atten_mask=mask, sparse_mode=4,
                                                                     pre_tokens=3, next_tokens=0)),
             (dict(window_right=0), dict(scale=0.25, atten_mask=mask, sparse_mode=3, next_tokens=0)),
             (dict(softcap=2.0, deterministic=True), dict(scale=0.25, softcap=2.0, deterministic=True)),
             (dict(softcap=-1.0), dict(scale=0.25))]
    for compact, full in cases:
        got = torch.ops.attnops.flash_attn_forward(q, k, v, **compact)
        want = torch.ops.attnops.flash_attention_score(q, k, v, 4, "BSND", **full)
        assert all(torch.equal(a, b) for a, b in zip(got, want)), compact
        grads = [torch.autograd.grad(out[0], (q, k, v), dy) for out in (got, want)]
        assert all(torch.equal(a, b) for a, b in zip(*grads)), compact
        saved = [t.detach() for t in (q, k, v)] + [dy] + [t.detach() for t in got]
        direct = torch.ops.attnops.flash_attn_backward(*saved, **compact)
        assert all(torch.equal(a, b) for a, b in zip(direct, grads[0])), compact
    for compact, _ in cases[:4]:
        torch.library.opcheck(torch.ops.attnops.flash_attn_forward.default, (q, k, v), compact)
        torch.library.opcheck(torch.ops.attnops.flash_attn_backward.default, tuple(saved), compact)
    with pytest.raises(ValueError, match=r"flash_attn: q must be \[batch, seqlen, nheads, headdim\]; it has rank 3"):
        torch.ops.attnops.flash_attn_forward(q[0], k[0], v[0])


def test_opcheck_tnd_and_rope():
    q, k, v = torch.randn(20, 2, 16), torch.randn(25, 2, 16), torch.randn(25, 2, 16)
    qr, kr = torch.randn(20, 2, 8), torch.randn(25, 2, 8)
    torch.library.opcheck(torch.ops.attnops.flash_attention_score.default, tuple(_req(q, k, v)) + (2, "TND"),
                          dict(actual_seq_qlen=[8, 20], actual_seq_kvlen=[10, 25], query_rope=qr, key_rope=kr))


def test_opcheck_key_pool():
    x = torch.randn(1, 8, 32).to(torch.bfloat16)
    wk, gate = (torch.randn(16, 32) / 6).to(torch.bfloat16), (torch.randn(16, 32) / 6).to(torch.bfloat16)
    args = (x, wk, gate, torch.randn(4, 16), torch.zeros(4, 4, 32), torch.tensor([[1, 2, 3]], dtype=torch.int32),
            torch.tensor([2], dtype=torch.int32))
    torch.library.opcheck(torch.ops.attnops.key_pool.default, args)
    torch.library.opcheck(torch.ops.attnops.key_pool.default, args, dict(capacity="current"))
    th = (x[0],) + args[1:6] + (torch.tensor([3], dtype=torch.int32),)  # TH: the Meta shape of both capacities
    for capacity in ("fixed", "current"):
        torch.library.opcheck(torch.ops.attnops.key_pool.default, th,
                              dict(cu_seqlens=torch.tensor([0, 8], dtype=torch.int32), capacity=capacity))


def test_opcheck_attn_res():
    blocks = _req(*(torch.randn(2, 3, 40) for _ in range(3)))
    w, g = _req(torch.randn(40) / 6, torch.ones(40))
    torch.library.opcheck(torch.ops.attnops.attn_res.default, (blocks, w, None, g))
    h, rms, alpha = torch.ops.attnops.attn_res(blocks, w, None, g)
    torch.library.opcheck(torch.ops.attnops.attn_res_grad.default,
                          (torch.randn(h.shape), [b.detach() for b in blocks], w.detach(), alpha, None, g.detach(),
                           rms))


class TinyModel(torch.nn.Module):
    """Attention through torch_npu and flash-attn entry points, then AttnRes over the two results."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)
        self.w = torch.nn.Parameter(torch.randn(32) / 6)
        self.gamma = torch.nn.Parameter(torch.ones(32))

    def forward(self, x):
        b, s, _ = x.shape
        qkv = self.proj(x).view(b, s, 2, 16)
        a = torch_npu.npu_fusion_attention(qkv, qkv, qkv, 2, "BSND", scale=0.25)[0].reshape(b, s, 32)
        c = fa.flash_attn_func(qkv, qkv, qkv, causal=True).reshape(b, s, 32)
        h = torch_npu.ai_infra_block_attn_res([a, c], self.w, rmsnorm_gamma=self.gamma)[0]
        return h.square().mean()


@pytest.mark.usefixtures("inductor_cache_per_isa")
def test_torch_compile_fullgraph_matches_eager():
    torch.manual_seed(3)
    model = TinyModel()
    x = torch.randn(2, 24, 32)
    eager = model(x)
    eager.backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)  # fullgraph: any graph break raises
    loss = compiled(x)
    loss.backward()
    torch.testing.assert_close(loss, eager, rtol=1e-5, atol=1e-6)
    for p, g in zip(model.parameters(), eager_grads):
        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-6)


THREADS_PROBE = textwrap.dedent('''
    import os, sys, torch
    torch.set_num_threads(int(sys.argv[1]))
    import attnops.torch_npu as tn
    q = torch.randn(1, 256, 4, 64)
    before = len(os.listdir("/proc/self/task"))
    tn.npu_fusion_attention(q, q, q, 4, "BSND", scale=0.1)
    print(len(os.listdir("/proc/self/task")) - before)
''')


@pytest.mark.parametrize("threads", [1, 3])
def test_thread_count_follows_torch(tmp_path, threads):
    """With OMP_NUM_THREADS=1 the library's own OpenMP pool grows to torch.get_num_threads() - 1 workers."""
    probe = tmp_path / "probe.py"
    probe.write_text(THREADS_PROBE)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, str(probe), str(threads)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.strip()) == threads - 1


def test_entry_points_are_the_op():
    """npu_fusion_attention calls the op: the same bits, with autograd or without, and the Meta kernel's
    shapes under FakeTensorMode."""
    q, k, v = torch.randn(2, 30, 4, 16), torch.randn(2, 40, 2, 16), torch.randn(2, 40, 2, 8)
    direct = torch_npu.npu_fusion_attention(q, k, v, 4, "BSND", scale=0.3, keep_prob=0.9)
    seed = direct[4]
    via_op = torch.ops.attnops.flash_attention_score(q, k, v, 4, "BSND", scale=0.3, keep_prob=0.9, seed=seed)
    for a, b in zip(direct[:3], via_op):
        assert torch.equal(a, b)
    with_grad = torch.ops.attnops.flash_attention_score(q.clone().requires_grad_(), k, v, 4, "BSND", scale=0.3,
                                                        keep_prob=0.9, seed=seed)
    assert with_grad[0].grad_fn is not None and torch.equal(with_grad[0], via_op[0])
    assert not with_grad[1].requires_grad and not with_grad[2].requires_grad
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        out = torch_npu.npu_fusion_attention(torch.empty(2, 30, 4, 16), torch.empty(2, 40, 2, 16),
                                             torch.empty(2, 40, 2, 8), 4, "BSND")[0]
        assert out.shape == (2, 30, 4, 8)


def test_backward_node():
    """The forward's autograd node (C++, python/csrc/flash_attention.cpp): its gradients are the grad op's on the
    saved tensors; a saved tensor changed in place, a second backward after the first freed them and a double
    backward are refused, as torch refuses them for its own ops; retain_graph keeps them; compiled autograd
    traces the node."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 8, 2, 16, generator=g, requires_grad=True) for _ in range(3))
    mask = torch.zeros(8, 8, dtype=torch.bool)
    dy = torch.randn(1, 8, 2, 16, generator=g)
    kw = dict(scale=0.25, atten_mask=mask, sparse_mode=0)
    op = torch.ops.attnops.flash_attention_score

    out = op(q, k, v, 2, "BSND", **kw)[0]
    assert out.grad_fn.name() == "FlashAttentionScoreBackward"
    grads = torch.autograd.grad(out, (q, k, v), dy, retain_graph=True)
    assert all(torch.equal(a, b) for a, b in zip(grads, torch.autograd.grad(out, (q, k, v), dy)))
    with pytest.raises(RuntimeError, match="second time"):
        torch.autograd.grad(out, (q, k, v), dy)
    detached = [t.detach() for t in (q, k, v)]
    fwd = op(*detached, 2, "BSND", **kw)
    want = torch.ops.attnops.flash_attention_score_grad(*detached, dy, *fwd, 2, "BSND", **kw)
    assert all(torch.equal(a, b) for a, b in zip(grads, want[:3]))

    for changed in (k, mask):  # a differentiable input and a saved non-differentiable one
        out = op(q, k, v, 2, "BSND", **kw)[0]
        with torch.no_grad():
            changed.copy_(changed)  # bumps the version, values unchanged
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.autograd.grad(out, (q, k, v), dy)

    out = op(q, k, v, 2, "BSND", **kw)[0]
    dq, = torch.autograd.grad(out, q, dy, create_graph=True)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(dq.sum(), q)

    torch._dynamo.reset()
    torch._dynamo.config.compiled_autograd = True
    try:
        compiled = torch.compile(lambda q, k, v: op(q, k, v, 2, "BSND", **kw)[0])
        torch.autograd.backward(compiled(q, k, v), dy)
    finally:
        torch._dynamo.config.compiled_autograd = False
        torch._dynamo.reset()
    assert all(torch.equal(t.grad, w) for t, w in zip((q, k, v), grads))


def test_attn_res_backward_node():
    """attn_res's node: a block changed in place is refused, the gradients under compiled autograd are eager's."""
    g = torch.Generator().manual_seed(6)
    blocks = [torch.randn(1, 3, 16, generator=g, requires_grad=True) for _ in range(3)]
    w = torch.randn(16, generator=g, requires_grad=True)
    dh = torch.randn(1, 3, 16, generator=g)

    def op(b, w):
        return torch.ops.attnops.attn_res(b, w, enable_rmsnorm=False)

    h = op(blocks, w)[0]
    assert h.grad_fn.name() == "AttnResBackward"
    grads = torch.autograd.grad(h, blocks + [w], dh)
    h = op(blocks, w)[0]
    with torch.no_grad():
        blocks[1].copy_(blocks[1])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torch.autograd.grad(h, blocks + [w], dh)
    torch._dynamo.reset()
    torch._dynamo.config.compiled_autograd = True
    try:
        torch.autograd.backward(torch.compile(lambda b, w: op(b, w)[0])(blocks, w), dh)
    finally:
        torch._dynamo.config.compiled_autograd = False
        torch._dynamo.reset()
    assert all(torch.equal(t.grad, want) for t, want in zip(blocks + [w], grads))


def test_ops_without_gradient_refuse_a_backward():
    """The inference ops and the grad ops (python/csrc's no_gradient_autograd): with an input that requires grad
    the outputs are those of a call without, and a backward through them raises torch's "not implemented"; with
    grad mode off or nothing requiring grad they carry no node; a tensor list's grad counts (attn_res_grad)."""
    g = torch.Generator().manual_seed(7)
    q, kc, vc = torch.randn(1, 2, 4, 16, generator=g), torch.randn(1, 8, 2, 16, generator=g), \
        torch.randn(1, 8, 2, 16, generator=g)
    lens = torch.tensor([6], dtype=torch.int32)
    kvcache = torch.ops.attnops.flash_attn_kvcache
    fia = torch.ops.attnops.fused_infer_attention_score
    calls = {"flash_attn_kvcache": lambda q: kvcache(q, kc, vc, lens, causal=True)[0],
             "fused_infer_attention_score": lambda q: fia(q, kc, vc, actual_seq_lengths_kv=lens, num_heads=4,
                                                          num_key_value_heads=2, input_layout="BSND")[0]}
    for name, call in calls.items():
        plain = call(q)
        assert plain.grad_fn is None
        qg = q.clone().requires_grad_()
        with torch.no_grad():
            assert call(qg).grad_fn is None
        out = call(qg)
        assert torch.equal(out, plain) and out.requires_grad
        with pytest.raises(RuntimeError, match=f"derivative for attnops::{name} is not implemented"):
            out.sum().backward()

    blocks = [torch.randn(1, 3, 16, generator=g, requires_grad=True) for _ in range(2)]
    w = torch.randn(16, generator=g)
    alpha = torch.ops.attnops.attn_res(blocks, w, enable_rmsnorm=False)[2]
    grads = torch.ops.attnops.attn_res_grad(torch.randn(1, 3, 16, generator=g), blocks, w, alpha.detach(),
                                            enable_rmsnorm=False)
    assert all(t.requires_grad for t in grads[0])
    with pytest.raises(RuntimeError, match="derivative for attnops::attn_res_grad is not implemented"):
        grads[0][0].sum().backward()


def test_npu_fusion_attention_op_is_flash_attention_score():
    """npu_fusion_attention (torch_npu's schema and seven outputs) is flash_attention_score with torch_npu's
    arguments: the same bits forward and backward (through autograd and through npu_fusion_attention_backward),
    a lower-case layout upper-cased, softmax_layout "TND" as softmax_in_layout "same_as_input", the given
    dropout seed and offset used and returned, numels the dropout stream's length; opcheck; refusals."""
    g = torch.Generator().manual_seed(11)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1)
    bsnd = _req(torch.randn(2, 6, 4, 16, generator=g), torch.randn(2, 9, 2, 16, generator=g),
                torch.randn(2, 9, 2, 8, generator=g))
    sbh = _req(torch.randn(7, 2, 64, generator=g), torch.randn(5, 2, 32, generator=g),
               torch.randn(5, 2, 32, generator=g))
    tnd = _req(torch.randn(9, 2, 16, generator=g), torch.randn(12, 1, 16, generator=g),
               torch.randn(12, 1, 16, generator=g))
    pse = torch.randn(2, 4, 7, 5, generator=g)
    cases = [  # (tensors, head_num, layout, npu keywords, flash_attention_score keywords, numels)
        (bsnd, 4, "BSND", dict(scale=0.3), dict(scale=0.3), 2 * 4 * 6 * 9),
        (bsnd, 4, "bsnd", dict(atten_mask=mask, sparse_mode=3, next_tockens=0, scale=0.2),
         dict(atten_mask=mask, sparse_mode=3, next_tokens=0, scale=0.2), 2 * 4 * 6 * 9),
        (sbh, 4, "SBH", dict(pse=pse, scale=0.25, inner_precise=2),
         dict(pse=pse, scale=0.25, inner_precise=2), 2 * 4 * 7 * 5),
        (tnd, 2, "TND", dict(actual_seq_qlen=[4, 9], actual_seq_kvlen=[5, 12], softmax_layout="TND"),
         dict(actual_seq_qlen=[4, 9], actual_seq_kvlen=[5, 12], softmax_in_layout="same_as_input"),
         2 * (4 * 5 + 5 * 7)),
        (bsnd, 4, "BSND", dict(keep_prob=0.8, seed=7, offset=24, scale=0.3),
         dict(keep_prob=0.8, seed=7, offset=24, scale=0.3), 2 * 4 * 6 * 9),
    ]
    for (q, k, v), n, layout, npu_kw, fa_kw, numels in cases:
        got = torch.ops.attnops.npu_fusion_attention(q, k, v, n, layout, **npu_kw)
        want = torch.ops.attnops.flash_attention_score(q, k, v, n, layout.upper(), **fa_kw)
        assert all(torch.equal(a, b) for a, b in zip(got[:3], want)), npu_kw
        assert got[3].numel() == 0 and got[4:] == (npu_kw.get("seed", 0), npu_kw.get("offset", 0), numels), npu_kw
        dy = torch.randn(got[0].shape, generator=g)
        grads = [torch.autograd.grad(out[0], (q, k, v), dy) for out in (got, want)]
        assert all(torch.equal(a, b) for a, b in zip(*grads)), npu_kw
        saved = [t.detach() for t in (q, k, v)] + [dy] + [t.detach() for t in got[:3]]
        direct = torch.ops.attnops.npu_fusion_attention_backward(*saved, n, layout, **npu_kw)
        assert all(torch.equal(a, b) for a, b in zip(direct, grads[0])), npu_kw
    for (q, k, v), n, layout, npu_kw, _, _ in cases[:3]:
        torch.library.opcheck(torch.ops.attnops.npu_fusion_attention.default, (q, k, v, n, layout), npu_kw)
    (q, k, v), n, layout, npu_kw = cases[0][:4]
    out = torch.ops.attnops.npu_fusion_attention(q, k, v, n, layout, **npu_kw)
    torch.library.opcheck(torch.ops.attnops.npu_fusion_attention_backward.default,
                          tuple(t.detach() for t in (q, k, v, out[0], out[0], out[1], out[2])) + (n, layout), npu_kw)
    with pytest.raises(ValueError, match="softmax_layout is 'BSND'"):
        torch.ops.attnops.npu_fusion_attention(q, k, v, n, layout, softmax_layout="BSND")
    with pytest.raises(ValueError, match="softmax_layout \"TND\" needs input_layout TND"):
        torch.ops.attnops.npu_fusion_attention(q, k, v, n, layout, softmax_layout="TND")
    with pytest.raises(ValueError, match="padding_mask"):
        torch.ops.attnops.npu_fusion_attention(q, k, v, n, layout, padding_mask=mask)


def test_errors_carry_the_library_status():
    """torch.ops.attnops raises the builtin exception with the library's sentence and status; the package's
    functions raise attnops' exceptions carrying the status."""
    q = torch.randn(1, 8, 2, 16)
    with pytest.raises(ValueError, match=r"sparse_mode.*\[ATTNOPS_ERR_PARAM_INVALID 161002\]$"):
        torch.ops.attnops.flash_attention_score(q, q, q, 2, "BSND", sparse_mode=99)
    with pytest.raises(attnops.AttnopsValueError) as exc:
        attnops.ops.flash_attention_score(q, q, q, 2, "BSND", sparse_mode=99)
    assert exc.value.status == 161002
    with pytest.raises(ValueError, match="input_layout is 'XYZ'"):  # the binding's own check
        torch.ops.attnops.flash_attention_score(q, q, q, 2, "XYZ")
    with pytest.raises(TypeError, match="query has dtype torch.float64"):
        torch.ops.attnops.flash_attention_score(q.double(), q, q, 2, "BSND")


def test_workspace_cache_first_run():
    """A call first runs on its thread's cached workspace (one validation) and queries the size only when the
    library refuses: a problem larger than the cache then gives the bits of a thread whose first call it is, and
    a bad call still raises the library's sentence and status, whatever the cache holds."""
    import threading
    g = torch.Generator().manual_seed(3)
    tiny = [torch.randn(1, 16, 1, 16, generator=g) for _ in range(3)]
    big = [torch.randn(2, 3, 32, 128, generator=g), torch.randn(2, 2000, 8, 128, generator=g),
           torch.randn(2, 2000, 8, 128, generator=g)]

    def calls(order):
        out = {}
        for name in order:
            out[name] = torch.ops.attnops.flash_attention_score(*(tiny if name == "tiny" else big),
                                                                1 if name == "tiny" else 32, "BSND", scale=0.1)
        with pytest.raises(ValueError, match=r"sparse_mode.*\[ATTNOPS_ERR_PARAM_INVALID 161002\]$"):
            torch.ops.attnops.flash_attention_score(*big, 32, "BSND", sparse_mode=99)
        out["after"] = torch.ops.attnops.flash_attention_score(*tiny, 1, "BSND", scale=0.1)
        return out

    results = []
    for order in (("big",), ("tiny", "big"), ("tiny", "big", "tiny")):  # each on a thread of its own: no cache yet
        t = threading.Thread(target=lambda o=order: results.append(calls(o)))
        t.start()
        t.join()
    assert len(results) == 3
    for got in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(got["big"], results[0]["big"]))
        assert all(torch.equal(a, b) for a, b in zip(got["after"], results[0]["after"]))
        assert all(torch.equal(a, b) for a, b in zip(got["tiny"], results[0]["after"]))


def test_meta_tensors_take_the_fake_implementation():
    q, k, v = (torch.empty(2, 30, 4, 16, device="meta") for _ in range(3))
    out, smax, ssum, *_ = torch_npu.npu_fusion_attention(q, k, v, 4, "BSND")
    assert out.device.type == "meta" and out.shape == (2, 30, 4, 16) and smax.shape == (2, 4, 30, 8)


@pytest.mark.usefixtures("inductor_cache_per_isa")
def test_torch_compile_fullgraph_with_dropout():
    """Inside a compiled graph the dropout seed is drawn in the graph and read by the op at run time (no
    graph break); the backward replays the same mask, as an explicit grad call with that seed shows."""
    q, k, v = (torch.randn(1, 32, 2, 16, requires_grad=True) for _ in range(3))

    def step(q, k, v):
        out, _, _, _, seed, offset, _ = torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.25,
                                                                       keep_prob=0.8)
        return out, seed, offset

    torch._dynamo.reset()
    out, seed, offset = torch.compile(step, fullgraph=True)(q, k, v)
    assert isinstance(seed, torch.Tensor) and int(offset) == 0
    seed = int(seed)
    dy = torch.randn(out.shape)
    grads = torch.autograd.grad(out, (q, k, v), dy)
    ref = torch.ops.attnops.flash_attention_score(q, k, v, 2, "BSND", scale=0.25, keep_prob=0.8, seed=seed,
                                                  offset=0)
    torch.testing.assert_close(out, ref[0], rtol=0, atol=0)
    explicit = torch_npu.npu_fusion_attention_grad(q.detach(), k.detach(), v.detach(), dy, 2, "BSND",
                                                   softmax_max=ref[1], softmax_sum=ref[2],
                                                   attention_in=ref[0].detach(), scale_value=0.25, keep_prob=0.8,
                                                   seed=seed, offset=0)
    for g, e in zip(grads, explicit[:3]):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
