#!/usr/bin/env python3
"""Context parallelism on this machine: one training step (forward + backward through autograd) of
attnops.distributed.ring_attention on W ranks x 1 thread (gloo over loopback, zigzag shards) against
the single-process call (the attnops::flash_attention_score op) on 1 rank x W threads, same problem:
full, causal, and causal with dropout 0.1 (the same seed in both, so the same elements are dropped).

    bench_distributed.py [--ranks W] [--seq S] [--heads N] [--dim D] [--reps R] [--json PATH] [--md PATH]

Per case (full, causal) and configuration: the median of R steps after one warm-up (the ring's step is
the slowest rank's, an all_reduce MAX).  The single-process steps run R times before the ranks start
and R times after they end; the median is of all 2R, so a noisy stretch lands on both.  The ring's
ranks also report t_wait, the seconds they waited for the ring's exchanges inside the step, the
least of the ranks' (a rank also waits for a slower peer's compute; the slowest rank waits for the
transfers only), and t_comm, the seconds the same exchanges take alone with no compute; the share
hidden by overlap is 1 - t_wait / t_comm.  Bytes sent per rank per ring step: K+V in the forward, K+V and the fp32 dK/dV
accumulators in the backward.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import attnops
import attnops.distributed as cp
from attnops.distributed import _common, _ring
import attnops.flash_attn as flash_attn
from attnops import ops

import peer_common  # bench/, beside this script


def _inputs(s, n, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, s, n, d, generator=g) for _ in range(4)]


# The cases: ring_attention's options.  causal_dropout (dropout_p 0.1) takes the ring's path of pieces
# (one call per chunk pair with its dropout block: 3 quarter-block calls per step instead of one half block).
CASES = {"full": dict(causal=False), "causal": dict(causal=True), "causal_dropout": dict(causal=True, dropout_p=0.1)}
_SEED = 1234


def _single_args(case):
    """npu_fusion_attention's arguments for a case."""
    opts = CASES[case]
    args = dict(atten_mask=flash_attn._compressed_mask(), sparse_mode=3) if opts["causal"] else {}
    if opts.get("dropout_p"):
        args.update(keep_prob=1.0 - opts["dropout_p"], seed=_SEED)
    return args


def single_step_s(s, n, d, case):
    q, k, v, dy = _inputs(s, n, d)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    t0 = time.perf_counter()
    out = ops.flash_attention_score(q, k, v, n, "BSND", scale=d ** -0.5, **_single_args(case))[0]
    torch.autograd.grad(out, (q, k, v), dy)
    return time.perf_counter() - t0


class _WaitClock:
    """Wraps _Ring.start so that the seconds spent in the exchanges' waits add up in `waited`."""

    def __init__(self):
        self.waited = 0.0
        self._start = _common.Ring.start
        clock = self

        def start(ring, tensors, tag):
            wait = clock._start(ring, tensors, tag)

            def timed():
                t0 = time.perf_counter()
                got = wait()
                clock.waited += time.perf_counter() - t0
                return got
            return timed
        _common.Ring.start = start


def _comm_alone_s(ring, k, v):
    """The step's exchanges with no compute: W-1 K/V sends (forward and backward) and W dK/dV sends."""
    dist.barrier()
    t0 = time.perf_counter()
    kv, dkv = (k, v), (torch.zeros(k.shape), torch.zeros(v.shape))
    for _ in range(2 * (ring.world_size - 1)):
        kv = ring.start(kv, _ring._KV_TAG)()
    for _ in range(ring.world_size):
        dkv = ring.start(dkv, _ring._DKV_TAG)()
    return time.perf_counter() - t0


def _across_ranks(seconds, op):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=op)
    return t.item()


def _slowest(seconds):
    return _across_ranks(seconds, dist.ReduceOp.MAX)


def rank_main(rank, world, init_file, s, n, d, reps, out_file):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=600))
    clock = _WaitClock()
    results = {}
    for case, opts in CASES.items():
        q, k, v, dy = (cp.shard(t, rank, world, seq_dim=1, zigzag=True) for t in _inputs(s, n, d))
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        steps, waits = [], []
        for rep in range(reps + 1):
            dist.barrier()
            clock.waited = 0.0
            t0 = time.perf_counter()
            out = cp.ring_attention(q, k, v, zigzag=True, seed=_SEED, **opts)
            torch.autograd.grad(out, (q, k, v), dy)
            step = _slowest(time.perf_counter() - t0)
            if rep:
                steps.append(step)
                waits.append(_across_ranks(clock.waited, dist.ReduceOp.MIN))
        comm = statistics.median(_slowest(_comm_alone_s(_common.Ring(None), k.detach(), v.detach()))
                                 for _ in range(reps))
        results[case] = dict(step_s=statistics.median(steps), wait_s=statistics.median(waits), comm_s=comm)
    if rank == 0:
        with open(out_file, "w") as f:
            json.dump(results, f)
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)  # see python/tests/cp_worker.py _leave: gloo's threads and interpreter shutdown


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    w, s, n, d = args.ranks, args.seq, args.heads, args.dim
    torch.set_num_threads(w)
    single = {case: [] for case in CASES}

    def run_single():
        for case in single:
            single_step_s(s, n, d, case)  # warm-up
            single[case] += [single_step_s(s, n, d, case) for _ in range(args.reps)]

    run_single()
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "ring.json")
        mp.spawn(rank_main, args=(w, os.path.join(tmp, "rendezvous"), s, n, d, args.reps, out_file), nprocs=w)
        with open(out_file) as f:
            ring = json.load(f)
    run_single()

    kv_bytes = 2 * (s // w) * n * d * 4
    res = {"cp_attnops_version": attnops.version(), "cp_isa": attnops.cpu_isa(), "cp_cpu_model": attnops.cpu_model(),
           "cp_torch_version": torch.__version__, "cp_ranks": w, "cp_seq": s,
           "cp_fwd_bytes_per_step": kv_bytes, "cp_bwd_bytes_per_step": kv_bytes + kv_bytes}
    md = [f"Context parallelism (attnops {res['cp_attnops_version']}, isa {res['cp_isa']}, {res['cp_cpu_model']}, "
          f"torch {res['cp_torch_version']}, gloo over loopback), B1 N{n} S{s} D{d} f32, one training step, "
          f"medians of {args.reps} (ring) and {2 * args.reps} (single) steps. Bytes sent per rank per ring step: "
          f"forward {kv_bytes / 2**20:.1f} MiB (K+V), backward {2 * kv_bytes / 2**20:.1f} MiB (K+V and the fp32 dK/dV "
          "accumulators).", "",
          f"| case | 1 rank x {w} threads s | {w} ranks x 1 thread s | ring / single | t_wait s "
          "| t_comm s | share hidden by overlap |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for case, r in ring.items():
        t_single = statistics.median(single[case])
        hidden = max(0.0, 1.0 - r["wait_s"] / r["comm_s"]) if r["comm_s"] > 0 else 1.0
        res.update({f"cp_{case}_single_s": t_single, f"cp_{case}_ring_s": r["step_s"],
                    f"cp_{case}_wait_s": r["wait_s"], f"cp_{case}_comm_s": r["comm_s"],
                    f"cp_{case}_hidden_share": hidden})
        md.append(f"| {case} | {t_single:.2f} | {r['step_s']:.2f} | {r['step_s'] / t_single:.2f} | {r['wait_s']:.3f} "
                  f"| {r['comm_s']:.3f} | {hidden * 100:.0f} % |")
    peer_common.report("\n".join(md) + "\n", res, args.json, args.md)


if __name__ == "__main__":
    main()
