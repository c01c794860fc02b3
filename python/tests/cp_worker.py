"""The processes of test_distributed.py (torch.multiprocessing spawns them by this module's name): each
joins a gloo group on a file rendezvous, runs its part and raises on a failed check, which fails the
spawning test with the rank's traceback."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import attnops.distributed as cp
import attnops.flash_attn as fa
from attnops import ops
from checks import assert_close, assert_gradients_close, compare

SEQ_DIM = {"BSND": 1, "BNSD": 2, "TND": 0}
INT32_MAX = 2147483647


def _leave():
    """Leave the group and end the process at once.  torch's gloo threads may drop their last reference
    to a tensor of a finished collective after the call returned; at interpreter shutdown that needs the
    GIL and aborts the process (std::terminate under ProcessGroupGloo::runLoop, seen ~1 in 15 runs here),
    so a worker that passed exits without running the interpreter's finalisation."""
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _join(rank, world, init_file, timeout_s):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))


def _shape(layout, b, s, n, d):
    return (b, s, n, d) if layout == "BSND" else (b, n, s, d)


def _cumulative(lengths):
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out


def _inputs(g, layout, dtype, b, s, s_kv, n, nk, d, seqs, kv_seqs):
    """(q, k, v, dy, cu_seqlens_q, cu_seqlens_k) of a whole problem; the lengths are None but in TND."""
    cu_q = cu_kv = None
    if layout == "TND":
        cu_q, cu_kv = _cumulative(seqs), _cumulative(kv_seqs or seqs)
        q_shape, kv_shape = (cu_q[-1], n, d), (cu_kv[-1], nk, d)
    else:
        q_shape, kv_shape = _shape(layout, b, s, n, d), _shape(layout, b, s_kv, nk, d)
    q = torch.randn(q_shape, generator=g).to(dtype)
    k, v = (torch.randn(kv_shape, generator=g).to(dtype) for _ in range(2))
    return q, k, v, torch.randn(q.shape, generator=g).to(dtype), cu_q, cu_kv


def _check_differs(label, gathered, other, other_grads, dtype, reduce_len):
    """The comparison must fail against a call that dropped other elements (another seed)."""
    for name, mine, theirs in zip(("out", "dq", "dk", "dv"), gathered, (other, *other_grads)):
        ok, msg = compare(f"{label} {name} of another seed", mine, theirs, dtype, reduce_len)
        assert not ok, f"the comparison passed {name} of a call that dropped other elements: {msg}"


def _whole_mask(causal, window, origin, s, s_kv):
    """The single call's mask of flash-attn's band (left, right) from either origin."""
    if origin == "bottom_right":
        return fa._mask_args(causal, window)
    left, right = window[0], 0 if causal else window[1]
    if left < 0 and right < 0:
        return {}
    if left < 0 and right == 0:
        return dict(atten_mask=fa._compressed_mask(), sparse_mode=2)
    return dict(atten_mask=fa._compressed_mask(), sparse_mode=4,  # mode 4 counts from the bottom-right corner
                pre_tokens=INT32_MAX if left < 0 else left - s + s_kv,
                next_tokens=INT32_MAX if right < 0 else right + s - s_kv)


def check_case(rank, world, layout, dtype, causal, zigzag, b=1, s=64, s_kv=None, n=2, nk=2, d=16, group=None,
               pse_type=None, window=(-1, -1), dropout_p=0.0, origin="bottom_right", seqs=None, kv_seqs=None):
    """The ring's output and gradients, gathered, against the single-process call on the whole sequence.
    rank, world: in `group` (default: the world); s / s_kv: the global query / key lengths; pse_type 2 / 3:
    with ALiBi slopes [N]; window: flash-attn's (left, right); origin: the band's; dropout_p: both calls
    with the same seed.  TND: seqs / kv_seqs, the sequences' global lengths."""
    s_kv = s if s_kv is None else s_kv
    g = torch.Generator().manual_seed(1000 + s + s_kv + n + nk + int(causal) + window[0])
    tnd = layout == "TND"
    q, k, v, dy, cu_q, cu_kv = _inputs(g, layout, dtype, b, s, s_kv, n, nk, d, seqs, kv_seqs)
    extra = _whole_mask(causal, window, origin, s, s_kv)
    if tnd:
        extra.update(actual_seq_qlen=cu_q[1:], actual_seq_kvlen=cu_kv[1:])
    alibi, seed = {}, 4242 + s
    if pse_type is not None:
        alibi = dict(alibi_slopes=torch.rand(n, generator=g) * 0.5, pse_type=pse_type)
        extra.update(pse=alibi["alibi_slopes"], pse_type=pse_type)

    def whole_call(seed):
        whole = [t.clone().requires_grad_() for t in (q, k, v)]
        out = ops.flash_attention_score(*whole, n, layout, scale=d ** -0.5, keep_prob=1.0 - dropout_p, seed=seed,
                                        **extra)[0]
        return out, torch.autograd.grad(out, whole, dy)
    expected, expected_grads = whole_call(seed)

    seq = SEQ_DIM[layout]
    cuts = [dict(seq_dim=seq, zigzag=zigzag, cu_seqlens=cu) for cu in (cu_q, cu_kv, cu_kv)]
    local = [cp.shard(t, rank, world, **cut).requires_grad_() for t, cut in zip((q, k, v), cuts)]
    out = cp.ring_attention(*local, group=group, causal=causal, causal_origin=origin, zigzag=zigzag, layout=layout,
                            window_size=window, dropout_p=dropout_p, seed=seed, cu_seqlens_q=cu_q,
                            cu_seqlens_k=cu_kv, **alibi)
    grads = torch.autograd.grad(out, local, cp.shard(dy, rank, world, **cuts[0]))
    gathered = [cp.unshard(t.detach(), group=group, **cut) for t, cut in zip((out, *grads), (cuts[0], *cuts))]
    label = (f"rank {rank}/{world} {layout} {dtype} causal={causal} ({origin}) zigzag={zigzag} N{n}/{nk} "
             f"S{s}/{s_kv} seqs={seqs}/{kv_seqs} pse_type={pse_type} window={window} dropout_p={dropout_p}")
    reduce_len = max(s, s_kv) if not tnd else max(seqs + (kv_seqs or []))
    assert_close(f"{label} out", gathered[0], expected, dtype, reduce_len)
    assert_gradients_close([f"{label} d{x}" for x in "qkv"], gathered[1:], expected_grads, dtype, reduce_len)
    if world > 1 and (causal or window != (-1, -1)):  # the check sees a chunk put back in the wrong place
        shards = [torch.empty_like(out) for _ in range(world)]
        dist.all_gather(shards, out.detach().contiguous(), group=group)
        misplaced = cp.merge_shards(shards, seq_dim=seq, zigzag=not zigzag, cu_seqlens=cu_q)
        ok, msg = compare(f"{label} misplaced", misplaced, expected, dtype, reduce_len)
        assert not ok, f"the comparison passed output chunks put in the wrong order: {msg}"
    if dropout_p:  # and one that dropped other elements
        _check_differs(label, gathered, *whole_call(seed + 1), dtype, reduce_len)


def run_cases(rank, world, init_file, cases):
    _join(rank, world, init_file, 120)
    for case in cases:
        check_case(rank, world, **case)
    _leave()


def run_in_subgroups(rank, world, init_file, case):
    """Two rings at once: the world split into groups of two ranks, each running `case` in its group."""
    _join(rank, world, init_file, 120)
    groups = [dist.new_group([r, r + 1]) for r in range(0, world, 2)]  # every rank creates every group
    check_case(rank % 2, 2, **case, group=groups[rank // 2])
    _leave()


def mismatched_shapes(rank, world, init_file):
    """Rank 1 holds a longer shard: every rank must raise the same ValueError."""
    _join(rank, world, init_file, 60)
    q = torch.randn(1, 16 if rank == 1 else 8, 2, 16)
    try:
        cp.ring_attention(q, q, q)
    except ValueError as e:
        assert "rank 1 calls with" in str(e) or "rank 0 calls with" in str(e), str(e)
    else:
        raise AssertionError(f"rank {rank}: ring_attention accepted shards of different lengths")
    _leave()


def lost_peer(rank, world, init_file, how, timeout_s, results):
    """Rank 1 exits (how="exit") or never calls (how="hang"); rank 0 reports what its call raised and
    after how many seconds."""
    _join(rank, world, init_file, timeout_s)
    q = torch.randn(1, 8, 2, 16)
    cp.ring_attention(q, q, q)  # one good call first: the peers are connected
    if rank == 1:
        if how == "exit":
            os._exit(3)
        time.sleep(timeout_s * 4)
        os._exit(0)
    start = time.monotonic()
    try:
        cp.ring_attention(q, q, q)
        results.put(("returned", "", time.monotonic() - start))
    except Exception as e:  # noqa: BLE001 - reported to the test, which checks the type
        results.put((type(e).__name__, str(e)[:300], time.monotonic() - start))
    results.close()
    results.join_thread()  # the report is written before the process ends
    os._exit(0)


def report_affinity(results):
    """The CPUs this (child) process may run on."""
    results.put(sorted(os.sched_getaffinity(0)))
    results.close()
    results.join_thread()


def check_ulysses_case(rank, world, layout, dtype, causal=False, window=(-1, -1), alibi=False, zigzag=False,
                       b=1, s=64, n=4, nk=4, d=16, dropout_p=0.0, seqs=None, kv_seqs=None):
    """ulysses_attention's output and gradients, gathered, against flash_attn_func (flash_attn_varlen_func
    in TND, seqs / kv_seqs the global lengths) on the whole sequence; with dropout both draw their seed
    from torch's generator, seeded alike (ulysses uses rank 0's)."""
    g = torch.Generator().manual_seed(2000 + s + n + nk + int(causal) + window[0])
    tnd = layout == "TND"
    q, k, v, dy, cu_q, cu_kv = _inputs(g, layout, dtype, b, s, s, n, nk, d, seqs, kv_seqs)
    slopes = torch.rand(n, generator=g) * 0.5 if alibi else None
    to_bsnd = (lambda t: t) if layout != "BNSD" else (lambda t: t.transpose(1, 2))

    def whole_call(torch_seed):
        whole = [t.clone().requires_grad_() for t in (q, k, v)]
        torch.manual_seed(torch_seed)
        common = dict(dropout_p=dropout_p, causal=causal, window_size=window, alibi_slopes=slopes)
        if tnd:
            cu = [torch.tensor(c, dtype=torch.int32) for c in (cu_q, cu_kv)]
            out = fa.flash_attn_varlen_func(*whole, *cu, max(seqs), max(kv_seqs or seqs), **common)
        else:
            out = to_bsnd(fa.flash_attn_func(*(to_bsnd(t) for t in whole), **common))
        return out, torch.autograd.grad(out, whole, dy)
    expected, expected_grads = whole_call(77)

    seq = SEQ_DIM[layout]
    cuts = [dict(seq_dim=seq, zigzag=zigzag, cu_seqlens=cu) for cu in (cu_q, cu_kv, cu_kv)]
    local = [cp.shard(t, rank, world, **cut).requires_grad_() for t, cut in zip((q, k, v), cuts)]
    torch.manual_seed(77 if rank == 0 else 78)  # rank 0's draw decides
    out = cp.ulysses_attention(*local, causal=causal, window_size=window, alibi_slopes=slopes, layout=layout,
                               zigzag=zigzag, dropout_p=dropout_p, cu_seqlens_q=cu_q, cu_seqlens_k=cu_kv)
    grads = torch.autograd.grad(out, local, cp.shard(dy, rank, world, **cuts[0]))
    gathered = [cp.unshard(t.detach(), **cut) for t, cut in zip((out, *grads), (cuts[0], *cuts))]
    label = (f"ulysses rank {rank}/{world} {layout} {dtype} causal={causal} window={window} alibi={alibi} "
             f"zigzag={zigzag} N{n}/{nk} seqs={seqs}/{kv_seqs} dropout_p={dropout_p}")
    reduce_len = s if not tnd else max(seqs + (kv_seqs or []))
    assert_close(f"{label} out", gathered[0], expected, dtype, reduce_len)
    assert_gradients_close([f"{label} d{x}" for x in "qkv"], gathered[1:], expected_grads, dtype, reduce_len)
    if nk % world == 0:  # each head's call is the whole call's head: the same bits (no merge, no repeated K/V)
        for name, mine, theirs in zip(("out", "dq", "dk", "dv"), gathered, (expected, *expected_grads)):
            assert torch.equal(mine, theirs), f"{label} {name}: not bitwise the single call's"
    if dropout_p:  # a call that dropped other elements fails the same comparison
        _check_differs(label, gathered, *whole_call(78), dtype, reduce_len)


def run_ulysses_cases(rank, world, init_file, cases):
    _join(rank, world, init_file, 120)
    for case in cases:
        check_ulysses_case(rank, world, **case)
    _leave()
