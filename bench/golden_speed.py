#!/usr/bin/env python3
"""`attnops golden` against the seed's pure-PyTorch golden, side by side on
one shape (fp16 BNSD, no mask, no dropout): the seed computes forward and
backward in float32 with whole [B, N, S, S] matrices (cpu_impl.py's
tforward / tbackward); attnops in double, O(S) memory per row, plus writing
every tensor as .npy.  Prints both times and the ratio.
Usage: golden_speed.py ATTNOPS_BINARY [--B 1] [--N 8] [--S 4096] [--D 128] [--threads 2]"""
import argparse
import json
import math
import os
import subprocess
import tempfile
import time


def torch_golden(torch, B, N, S, D):
    """The seed's golden for a plain case: float32, full S x S matrices."""
    g = torch.Generator().manual_seed(0)
    q, k, v, dy = (torch.randn(B, N, S, D, generator=g).half().float() for _ in range(4))
    scale = 1.0 / math.sqrt(D)
    t0 = time.perf_counter()
    qk = torch.matmul(q, k.transpose(-1, -2)).mul(scale)
    x_max = qk.max(dim=-1, keepdim=True).values
    e = torch.exp(qk - x_max)
    x_sum = e.sum(dim=-1, keepdim=True)
    p = e / x_sum
    out = torch.matmul(p, v)
    dv = torch.matmul(p.transpose(-1, -2), dy)
    dp = torch.matmul(dy, v.transpose(-1, -2))
    ds = (dp - (dp * p).sum(dim=-1, keepdim=True)) * p * scale
    dq = torch.matmul(ds, k)
    dk = torch.matmul(ds.transpose(-1, -2), q)
    _ = (out.half(), dq.half(), dk.half(), dv.half())
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    for k, d in (("B", 1), ("N", 8), ("S", 4096), ("D", 128), ("threads", 2)):
        ap.add_argument(f"--{k}", type=int, default=d)
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        case = {"golden_speed": {"B": a.B, "N1": a.N, "N2": a.N, "S1": a.S, "S2": a.S, "D": a.D, "dtype": "fp16",
                                 "input_layout": "BNSD"}}
        path = os.path.join(tmp, "case.json")
        json.dump(case, open(path, "w"))
        t0 = time.perf_counter()
        subprocess.run([a.binary, "golden", path, "--out", os.path.join(tmp, "g"), "--threads", str(a.threads)],
                       check=True, capture_output=True)
        ours = time.perf_counter() - t0
    theirs = torch_golden(torch, a.B, a.N, a.S, a.D)
    print(f"golden B={a.B} N={a.N} S={a.S} D={a.D} fp16, {a.threads} threads: attnops golden {ours:.1f} s "
          f"(double, incl. .npy export), seed-style torch float32 golden {theirs:.1f} s (compute only); "
          f"attnops / torch = {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
