#!/usr/bin/env python3
"""The PyTorch peer of bench_ops --op attnres: Block Attention Residuals forward and
backward composed from PyTorch's own CPU ops, as the seed's reference
(spec B.3, `block_attn_res_forward_reference`) writes them and as its NPU
"benchmark" chain runs them: everything in bf16, autograd for the backward.

    peer_attnres.py [--threads N] [--json PATH] [--quick] [--calls N] [--mem]

Case (bench/bench_ops.c has its definition, the built-in case attnres): B=1, T=4096 (512 with
--quick), N=25 blocks plus the partial block (L=26), D=4096, bf16, RMSNorm
on, scale 1 (the seed skips the multiply then), eps 1e-6:

    v      = torch.stack(blocks + [partial], dim=2)             # [B,T,L,D] bf16
    rms    = torch.sqrt(torch.mean(v ** 2, dim=-1, keepdim=True) + eps)
    k      = v / rms * gamma
    logits = torch.matmul(k, proj_weight)                        # [B,T,L]
    alpha  = softmax(logits, dim=2)
    h      = torch.matmul(alpha.unsqueeze(-2), v).squeeze(-2)    # [B,T,D] bf16

(The seed's op order; no f32 upcasts, as the seed runs it in bf16.  The
other composition, v stacked [L,B,T,D] and h = (alpha[..., None] * v).sum(0),
measured about as fast here at full size and ~1.5x slower at T=512.)

fwd: under torch.no_grad().  bwd: each call builds a fresh forward graph
(untimed) and times only torch.autograd.grad(h, blocks + [partial, w,
gamma], grad_h).  One untimed call, then --calls timed calls (default 3:
torch takes seconds per call here); median and min.

--mem: peak memory, each direction in a fresh subprocess: the inputs are
made, the op runs once on a T=2 copy (torch's lazy set-up), then
/proc/self/clear_refs ("5") resets VmHWM to VmRSS, the call runs, and the
rise VmHWM - VmRSS(before) is reported (torch_attnres_<dir>_rss_rise_bytes)
next to inputs + rise (torch_attnres_<dir>_peak_bytes).  fwd: one no_grad
forward.  bwd: the forward that builds the graph plus autograd.grad (what a
training step of the op adds over its inputs: the saved tensors, h, the
gradients, the temporaries); torch_attnres_bwd_graph_bytes is the RSS the
graph holds after the forward alone.  Where clear_refs cannot be written,
ru_maxrss is used (then the rise can read low).

Writes torch_attnres_{fwd,bwd}_ms_median / _ms_min, torch_version,
torch_threads and, with --mem, the memory figures.
"""
import argparse
import functools
import json
import math
import os
import resource
import subprocess
import sys
import time

import peer_common

NBLK, D = 25, 4096
L = NBLK + 1


def make(T, torch, gen):
    """The seed's _make_inputs distributions (randn; proj_weight randn/sqrt(4D)
    divided in the dtype; gamma ones), bf16, one block at a time."""
    bf = torch.bfloat16

    def rn(*s):
        return torch.randn(*s, generator=gen).to(bf)
    blocks = [rn(1, T, D) for _ in range(NBLK)]
    partial, grad_h = rn(1, T, D), rn(1, T, D)
    w = rn(D) / math.sqrt(D * 4)
    gamma = torch.ones(D, dtype=bf)
    return blocks, partial, w, gamma, grad_h


def forward(torch, blocks, partial, w, gamma, eps=1e-6):
    v = torch.stack(blocks + [partial], dim=2)
    rms = torch.sqrt(torch.mean(v ** 2, dim=-1, keepdim=True) + eps)
    k = v / rms * gamma
    logits = torch.matmul(k, w)
    alpha = torch.nn.functional.softmax(logits, dim=2)
    return torch.matmul(alpha.unsqueeze(-2), v).squeeze(-2)


def graph(torch, blocks, partial, w, gamma):
    """Leaves that require grad and h with its graph (untimed in bwd)."""
    leaves = [b.detach().requires_grad_(True) for b in blocks + [partial, w, gamma]]
    return leaves, forward(torch, leaves[:NBLK], leaves[NBLK], leaves[NBLK + 1], leaves[NBLK + 2])


def run_fwd(torch, x):
    blocks, partial, w, gamma, _ = x
    with torch.no_grad():
        t0 = time.perf_counter()
        h = forward(torch, blocks, partial, w, gamma)
        t1 = time.perf_counter()
    del h
    return (t1 - t0) * 1e3


def run_bwd(torch, x):
    blocks, partial, w, gamma, grad_h = x
    leaves, h = graph(torch, blocks, partial, w, gamma)
    t0 = time.perf_counter()
    grads = torch.autograd.grad(h, leaves, grad_h)
    t1 = time.perf_counter()
    del grads, h, leaves
    return (t1 - t0) * 1e3


def status_bytes(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return 1024 * int(line.split()[1])
    return None


def rss_mark():
    """Reset VmHWM to VmRSS; returns (VmRSS, True), or (ru_maxrss, False)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return status_bytes("VmRSS"), True
    except OSError:
        return 1024 * resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, False


def rss_peak(reset):
    return status_bytes("VmHWM") if reset else 1024 * resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def mem_child(direction, T, threads):
    """One direction in this (fresh) process; prints a JSON object."""
    import torch
    torch.set_num_threads(threads)
    x = make(T, torch, torch.Generator().manual_seed(7))
    in_bytes = sum(t.numel() * t.element_size() for t in x[0] + list(x[1:4]))
    if direction == "bwd":
        in_bytes += x[4].numel() * x[4].element_size()
    tiny = make(2, torch, torch.Generator().manual_seed(8))  # torch's lazy set-up outside the measurement
    leaves, h = graph(torch, *tiny[:4])
    torch.autograd.grad(h, leaves, tiny[4])
    del tiny, leaves, h
    out = {}
    before, reset = rss_mark()
    if direction == "fwd":
        with torch.no_grad():
            h = forward(torch, *x[:4])
        rise = rss_peak(reset) - before
        del h
    else:
        leaves, h = graph(torch, *x[:4])
        out["torch_attnres_bwd_graph_bytes"] = status_bytes("VmRSS") - before
        grads = torch.autograd.grad(h, leaves, x[4])  # noqa: F841 (alive while the peak is read)
        rise = rss_peak(reset) - before
        del grads, h, leaves
    out.update({f"torch_attnres_{direction}_input_bytes": in_bytes,
                f"torch_attnres_{direction}_rss_rise_bytes": rise,
                f"torch_attnres_{direction}_peak_bytes": in_bytes + rise,
                "torch_attnres_rss_method": "VmHWM after clear_refs" if reset else "ru_maxrss"})
    print(json.dumps(out))


def main():
    ap = peer_common.parser(calls=3)
    ap.add_argument("--mem", action="store_true", help="also measure peak memory (fresh subprocess per direction)")
    ap.add_argument("--mem-child", choices=("fwd", "bwd"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    threads = a.threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or os.cpu_count()
    T = 512 if a.quick else 4096
    if a.mem_child:
        mem_child(a.mem_child, T, threads)
        return
    import torch
    torch.set_num_threads(threads)
    res = {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads()}
    x = make(T, torch, torch.Generator().manual_seed(7))
    for direction, run in (("fwd", run_fwd), ("bwd", run_bwd)):
        med, lo = peer_common.median_min(functools.partial(run, torch, x), a.calls)
        print(f"torch {direction} B1 T{T} N{NBLK}(+partial) D{D} bf16 rms: {med:.2f} ms (min {lo:.2f})", flush=True)
        res.update({f"torch_attnres_{direction}_ms_median": med, f"torch_attnres_{direction}_ms_min": lo})
    del x
    if a.mem:
        for direction in ("fwd", "bwd"):
            cmd = [sys.executable, os.path.abspath(__file__), "--threads", str(threads), "--mem-child", direction]
            r = subprocess.run(cmd + (["--quick"] if a.quick else []), capture_output=True, text=True, check=True)
            m = json.loads(r.stdout.strip().splitlines()[-1])
            res.update(m)
            MiB = 1024.0 * 1024.0
            print(f"torch {direction} peak memory: inputs {m[f'torch_attnres_{direction}_input_bytes'] / MiB:.1f} MiB"
                  f" + RSS rise {m[f'torch_attnres_{direction}_rss_rise_bytes'] / MiB:.1f} MiB"
                  + (f" (graph after the forward {m['torch_attnres_bwd_graph_bytes'] / MiB:.1f} MiB)"
                     if direction == "bwd" else "") + f" [{m['torch_attnres_rss_method']}]", flush=True)
    peer_common.write_json(a.json, res)


if __name__ == "__main__":
    main()
