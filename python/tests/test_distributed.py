"""attnops.distributed on gloo over loopback: ring and Ulysses outputs and gradients equal the
single-process call (by the shared comparator's fp32- / bf16-derived bound), for full and causal
attention, sliding windows, ALiBi, dropout (the same seed drops the same elements; another seed's
call fails the comparison), contiguous and zigzag shards, GQA, BSND and BNSD, on 2 and 4 processes;
mismatched calls and lost peers raise."""
import multiprocessing
import os

import pytest
import torch
import torch.multiprocessing as mp

import attnops.distributed as cp
import attnops.torch_npu as torch_npu
import cp_worker

F32, BF16 = torch.float32, torch.bfloat16
TIMEOUT_S = 5


def _spawn(fn, world, tmp_path, *args):
    mp.spawn(fn, args=(world, str(tmp_path / "rendezvous"), *args), nprocs=world, join=True)


CASES_2 = [
    dict(layout="BSND", dtype=F32, causal=False, zigzag=False),
    dict(layout="BSND", dtype=F32, causal=True, zigzag=False),
    dict(layout="BSND", dtype=F32, causal=True, zigzag=True),
    dict(layout="BNSD", dtype=F32, causal=True, zigzag=True, n=4, nk=2),
    dict(layout="BSND", dtype=BF16, causal=True, zigzag=True, b=2),
    dict(layout="BNSD", dtype=BF16, causal=False, zigzag=False, n=4, nk=1),
    dict(layout="BSND", dtype=F32, causal=True, zigzag=True, pse_type=2),
    dict(layout="BNSD", dtype=F32, causal=False, zigzag=False, pse_type=3),
    dict(layout="BSND", dtype=F32, causal=False, zigzag=False, dropout_p=0.3),
    dict(layout="BSND", dtype=F32, causal=True, zigzag=True, n=4, nk=2, dropout_p=0.2),
    dict(layout="BNSD", dtype=F32, causal=False, zigzag=True, window=(8, 4)),
    dict(layout="BSND", dtype=BF16, causal=True, zigzag=True, window=(20, -1), dropout_p=0.1),
    dict(layout="BSND", dtype=F32, causal=True, zigzag=True, s=64, s_kv=128),
    dict(layout="BNSD", dtype=F32, causal=True, zigzag=False, s=128, s_kv=64, origin="top_left", dropout_p=0.2),
    dict(layout="TND", dtype=F32, causal=True, zigzag=True, seqs=[32, 8, 0, 24], dropout_p=0.25, n=4, nk=2),
    dict(layout="TND", dtype=BF16, causal=False, zigzag=False, seqs=[12, 30], kv_seqs=[40, 6]),
    dict(layout="TND", dtype=F32, causal=False, zigzag=True, seqs=[16, 32], window=(6, 3), pse_type=2,
         dropout_p=0.2),
]
CASES_4 = [
    dict(layout="BSND", dtype=F32, causal=True, zigzag=True, n=4, nk=2),
    dict(layout="BNSD", dtype=F32, causal=True, zigzag=False),
    dict(layout="BSND", dtype=BF16, causal=False, zigzag=True, s=128),
    dict(layout="BSND", dtype=F32, causal=True, zigzag=True, n=4, nk=2, pse_type=3),
    dict(layout="BNSD", dtype=F32, causal=False, zigzag=True, pse_type=2),
    dict(layout="BSND", dtype=F32, causal=False, zigzag=True, window=(8, 8), pse_type=2, dropout_p=0.25),
    dict(layout="BNSD", dtype=F32, causal=True, zigzag=False, window=(10, -1), dropout_p=0.2),
    dict(layout="TND", dtype=F32, causal=True, zigzag=True, seqs=[16, 40, 8], dropout_p=0.3),
    dict(layout="BSND", dtype=F32, causal=False, zigzag=True, s=64, s_kv=32, window=(4, 12), origin="top_left"),
    dict(layout="TND", dtype=F32, causal=True, zigzag=True, seqs=[16, 32], kv_seqs=[32, 48], dropout_p=0.1,
         pse_type=3),
]


ULYSSES_2 = [
    dict(layout="BSND", dtype=F32),
    dict(layout="BSND", dtype=F32, causal=True, zigzag=True),
    dict(layout="BNSD", dtype=F32, window=(8, 4), alibi=True, nk=2),
    dict(layout="BSND", dtype=BF16, causal=True, alibi=True, nk=1),
    dict(layout="BSND", dtype=F32, causal=True, dropout_p=0.2, nk=1),
    dict(layout="TND", dtype=F32, causal=True, zigzag=True, seqs=[32, 8, 24], dropout_p=0.2, nk=2),
    dict(layout="TND", dtype=BF16, window=(6, 2), seqs=[20, 12], kv_seqs=[28, 16], alibi=False),
]
ULYSSES_4 = [
    dict(layout="BSND", dtype=F32, causal=True, nk=2),
    dict(layout="BNSD", dtype=F32, window=(16, -1), zigzag=True, n=8, nk=4, alibi=True),
    dict(layout="BNSD", dtype=F32, window=(8, 4), zigzag=True, n=8, nk=2, dropout_p=0.3),
    dict(layout="TND", dtype=F32, causal=True, seqs=[16, 48], alibi=True, n=8, nk=8),
]


def test_ring_equals_single_process_2_ranks(tmp_path):
    _spawn(cp_worker.run_cases, 2, tmp_path, CASES_2)


def test_ring_equals_single_process_4_ranks(tmp_path):
    _spawn(cp_worker.run_cases, 4, tmp_path, CASES_4)


def test_ulysses_equals_single_process_2_ranks(tmp_path):
    _spawn(cp_worker.run_ulysses_cases, 2, tmp_path, ULYSSES_2)


def test_ulysses_equals_single_process_4_ranks(tmp_path):
    _spawn(cp_worker.run_ulysses_cases, 4, tmp_path, ULYSSES_4)


def test_two_rings_in_subgroups_of_a_4_process_world(tmp_path):
    _spawn(cp_worker.run_in_subgroups, 4, tmp_path, dict(layout="BSND", dtype=F32, causal=True, zigzag=True))


def test_mismatched_shards_raise_on_every_rank(tmp_path):
    _spawn(cp_worker.mismatched_shapes, 2, tmp_path)


@pytest.mark.parametrize("how", ["exit", "hang"])
def test_lost_peer_raises_within_the_timeout(tmp_path, how):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=cp_worker.lost_peer, args=(r, 2, str(tmp_path / "rendezvous"), how, TIMEOUT_S,
                                                           results)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        kind, message, seconds = results.get(timeout=120)
    finally:
        for p in procs:
            p.join(timeout=TIMEOUT_S * 6)
            if p.is_alive():
                p.kill()
    assert kind != "returned", "ring_attention returned although its peer was gone"
    assert kind.endswith("Error"), (kind, message)
    print(f"rank 0 raised {kind} after {seconds:.2f} s: {message}")
    assert seconds < TIMEOUT_S * 3, f"rank 0 raised after {seconds:.1f} s, the group's timeout is {TIMEOUT_S} s"


def test_shard_and_merge_are_inverse():
    x = torch.arange(2 * 24 * 3).reshape(2, 24, 3)
    for zigzag in (False, True):
        shards = [cp.shard(x, r, 3, seq_dim=1, zigzag=zigzag) for r in range(3)]
        assert torch.equal(cp.merge_shards(shards, seq_dim=1, zigzag=zigzag), x)
    # 6 chunks of 4 positions (x[0, s, 0] = 3 s): rank 1 holds chunks 1 and 4
    assert (cp.shard(x, 1, 3, seq_dim=1, zigzag=True)[0, :, 0] // 3).tolist() == [4, 5, 6, 7, 16, 17, 18, 19]
    with pytest.raises(ValueError, match="does not split into 6 equal chunks"):
        cp.shard(x[:, :20], 0, 3, seq_dim=1, zigzag=True)


def test_unsupported_options_raise_before_any_communication():
    q = torch.randn(1, 8, 2, 16)
    with pytest.raises(ValueError, match="dropout_p is 1.0"):
        cp.ring_attention(q, q, q, dropout_p=1.0)
    with pytest.raises(ValueError, match=r"window_size is \(-2, 4\)"):
        cp.ring_attention(q, q, q, window_size=(-2, 4))
    with pytest.raises(ValueError, match="pse_type 1"):
        cp.ring_attention(q, q, q, alibi_slopes=torch.ones(2), pse_type=1)
    with pytest.raises(NotImplementedError, match="layout 'SBH'"):
        cp.ring_attention(q, q, q, layout="SBH")
    with pytest.raises(ValueError, match="rank 3"):
        cp.ring_attention(q, q, q, layout="TND")
    with pytest.raises(ValueError, match="causal_origin"):
        cp.ring_attention(q, q, q, causal=True, causal_origin="top")
    with pytest.raises(TypeError, match="float64"):
        cp.ring_attention(q.double(), q.double(), q.double())
    with pytest.raises(ValueError, match="dropout_p is -0.5"):
        cp.ulysses_attention(q, q, q, dropout_p=-0.5)


def test_a_call_leaves_child_processes_unpinned():
    """libxsmm's set-up put OMP_PROC_BIND=TRUE into the environment, and every process started afterwards
    (these ranks) ran its threads on CPU 0 alone: 2 ranks x 1 thread took twice 1 rank x 2 threads."""
    q = torch.randn(1, 16, 1, 16)
    torch_npu.npu_fusion_attention(q, q, q, 1, "BSND")  # the GEMM set-up has run in this process
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    child = ctx.Process(target=cp_worker.report_affinity, args=(results,))
    child.start()
    cpus = results.get(timeout=60)
    child.join()
    assert cpus == sorted(os.sched_getaffinity(0)), f"a child process may run on CPUs {cpus} only"
