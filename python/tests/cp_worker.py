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
import attnops.torch_npu as torch_npu
from checks import assert_close, assert_gradients_close, compare

SEQ_DIM = {"BSND": 1, "BNSD": 2}


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


def check_case(rank, world, layout, dtype, causal, zigzag, b=1, s=64, n=2, nk=2, d=16, group=None, pse_type=None):
    """The ring's output and gradients, gathered, against the single-process call on the whole sequence.
    rank, world: in `group` (default: the world); pse_type 2 / 3: with ALiBi slopes [N]."""
    g = torch.Generator().manual_seed(1000 + s + n + nk + int(causal))
    q = torch.randn(_shape(layout, b, s, n, d), generator=g).to(dtype)
    k, v = (torch.randn(_shape(layout, b, s, nk, d), generator=g).to(dtype) for _ in range(2))
    dy = torch.randn(q.shape, generator=g).to(dtype)
    mode = dict(atten_mask=fa._compressed_mask(), sparse_mode=3) if causal else {}
    alibi = {}
    if pse_type is not None:
        alibi = dict(alibi_slopes=torch.rand(n, generator=g) * 0.5, pse_type=pse_type)
        mode.update(pse=alibi["alibi_slopes"], pse_type=pse_type)
    whole = [t.clone().requires_grad_() for t in (q, k, v)]
    expected = torch_npu.npu_fusion_attention_v2(*whole, n, layout, scale=d ** -0.5, **mode)[0]
    expected_grads = torch.autograd.grad(expected, whole, dy)

    seq = SEQ_DIM[layout]
    local = [cp.shard(t, rank, world, seq_dim=seq, zigzag=zigzag).requires_grad_() for t in (q, k, v)]
    out = cp.ring_attention(*local, group=group, causal=causal, zigzag=zigzag, layout=layout, **alibi)
    grads = torch.autograd.grad(out, local, cp.shard(dy, rank, world, seq_dim=seq, zigzag=zigzag))
    gathered = [cp.unshard(t.detach(), group=group, seq_dim=seq, zigzag=zigzag) for t in (out, *grads)]
    label = f"rank {rank}/{world} {layout} {dtype} causal={causal} zigzag={zigzag} N{n}/{nk} pse_type={pse_type}"
    assert_close(f"{label} out", gathered[0], expected, dtype, s)
    assert_gradients_close([f"{label} d{x}" for x in "qkv"], gathered[1:], expected_grads, dtype, s)
    if world > 1 and causal:  # the check sees a chunk put back in the wrong place
        shards = [torch.empty_like(out) for _ in range(world)]
        dist.all_gather(shards, out.detach().contiguous(), group=group)
        misplaced = cp.merge_shards(shards, seq_dim=seq, zigzag=not zigzag)
        ok, msg = compare(f"{label} misplaced", misplaced, expected, dtype, s)
        assert not ok, f"the comparison passed output chunks put in the wrong order: {msg}"


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
                       b=1, s=64, n=4, nk=4, d=16):
    """ulysses_attention's output and gradients, gathered, against flash_attn_func on the whole sequence."""
    g = torch.Generator().manual_seed(2000 + s + n + nk + int(causal) + window[0])
    q = torch.randn(_shape(layout, b, s, n, d), generator=g).to(dtype)
    k, v = (torch.randn(_shape(layout, b, s, nk, d), generator=g).to(dtype) for _ in range(2))
    dy = torch.randn(q.shape, generator=g).to(dtype)
    slopes = torch.rand(n, generator=g) * 0.5 if alibi else None
    to_bsnd = (lambda t: t) if layout == "BSND" else (lambda t: t.transpose(1, 2))
    whole = [t.clone().requires_grad_() for t in (q, k, v)]
    expected = to_bsnd(fa.flash_attn_func(*(to_bsnd(t) for t in whole), causal=causal, window_size=window,
                                          alibi_slopes=slopes))
    expected_grads = torch.autograd.grad(expected, whole, dy)

    seq = SEQ_DIM[layout]
    local = [cp.shard(t, rank, world, seq_dim=seq, zigzag=zigzag).requires_grad_() for t in (q, k, v)]
    out = cp.ulysses_attention(*local, causal=causal, window_size=window, alibi_slopes=slopes, layout=layout,
                               zigzag=zigzag)
    grads = torch.autograd.grad(out, local, cp.shard(dy, rank, world, seq_dim=seq, zigzag=zigzag))
    gathered = [cp.unshard(t.detach(), seq_dim=seq, zigzag=zigzag) for t in (out, *grads)]
    label = (f"ulysses rank {rank}/{world} {layout} {dtype} causal={causal} window={window} alibi={alibi} "
             f"zigzag={zigzag} N{n}/{nk}")
    assert_close(f"{label} out", gathered[0], expected, dtype, s)
    assert_gradients_close([f"{label} d{x}" for x in "qkv"], gathered[1:], expected_grads, dtype, s)


def run_ulysses_cases(rank, world, init_file, cases):
    _join(rank, world, init_file, 120)
    for case in cases:
        check_ulysses_case(rank, world, **case)
    _leave()
