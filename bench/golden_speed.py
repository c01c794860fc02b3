#!/usr/bin/env python3
"""`attnops golden` against the seed's pure-PyTorch golden, side by side on
one shape (fp16 BNSD, no mask, no dropout, rope 0).

Two torch timings, both compute only (input generation and saving are left
out for torch; attnops' time includes its input generation and .npy export):
- seed: the operations the seed's golden runs for this case, in its order
  (spec/flash-attention.md [G] cpu_impl.py: attentionScoreWithGrad ->
  tforward / tsoftmax / tbackward / tsoftmax_grad, read at a950bba2).  For
  a case without pse, mask or dropout the seed still builds a zero pse of
  [B, N2, G, S1, S2] (pse_shape "NONE"), a zero uint8 [S1, S2] band mask
  (sparse_mode 0 with the default 65536 tokens) and a scalar drop mask 1,
  and applies all three: add(pse), masked_fill, two multiplies by the drop
  mask and 1/keep_prob in the forward and two more in the backward.  The
  zero tensors are made before the clock starts; their float32 casts at the
  call are timed, as the seed makes them there.
- minimal: the same mathematics without those no-op steps: the least a
  float32 golden on whole S x S matrices computes.
Usage: golden_speed.py ATTNOPS_BINARY [--B 1] [--N 8] [--S 4096] [--D 128] [--threads 2] [--repeat 3] [--skip-seed]"""
import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile
import time


def inputs(torch, B, N, S, D):
    """q, k, v, dy as the seed's DataGen shapes them ([B, N2, G, S, D], G = 1), fp16."""
    g = torch.Generator().manual_seed(0)
    return [torch.randn(B, N, 1, S, D, generator=g).half() for _ in range(4)]


def minimal_golden(torch, B, N, S, D):
    """float32, whole S x S matrices, only the operations the maths needs."""
    q, k, v, dy = (t.float() for t in inputs(torch, B, N, S, D))
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


def seed_golden(torch, B, N, S, D):
    """The seed golden's steps for this case (see the module comment)."""
    q16, k16, v16, dy16 = inputs(torch, B, N, S, D)
    pse16 = torch.zeros(B, N, 1, S, S, dtype=torch.float16)  # pse_shape NONE: a zero tensor
    mask8 = torch.zeros(S, S, dtype=torch.uint8)              # sparse_mode 0, tokens 65536: no band
    drop = torch.tensor(1)                                     # keep_prob 1: a scalar mask
    scale, keep_prob = 1.0 / math.sqrt(D), 1.0
    t0 = time.perf_counter()
    q, k, v, dy = (t.float() for t in (q16, k16, v16, dy16))
    pse, mask, drop_mask = pse16.float(), mask8.float(), drop.float()
    # forward (pse_type 1: add, then scale)
    qk = torch.matmul(q, k.permute(0, 1, 2, 4, 3)).add(pse).mul(scale)
    qk = qk.masked_fill(mask.bool(), value=torch.tensor(-40000.0))
    x_max = torch.max(qk, dim=-1, keepdim=True)[0]
    y = torch.exp(qk.sub(x_max))
    del qk
    x_sum = y.sum(dim=-1, keepdim=True)
    softmax_res = y.div(x_sum)
    del y
    drop_res = softmax_res * drop_mask * (1.0 / keep_prob)
    out = torch.matmul(drop_res, v)
    del drop_res
    pse = pse16.float()  # the backward call casts its pse argument again
    del pse
    # backward
    drop_res = softmax_res.mul(drop_mask).mul(1.0 / keep_prob)
    dv = torch.matmul(drop_res.permute(0, 1, 2, 4, 3), dy)
    del drop_res
    dp = torch.matmul(dy, v.permute(0, 1, 2, 4, 3))
    dp_drop = dp * drop_mask * (1.0 / keep_prob)
    del dp
    muls_r = (dp_drop * softmax_res).sum(dim=-1, keepdim=True)
    grad = (dp_drop - muls_r) * softmax_res * scale
    del dp_drop, softmax_res
    dq = torch.matmul(grad, k)
    dk = torch.matmul(grad.permute(0, 1, 2, 4, 3), q)
    dk, dv = torch.sum(dk, dim=2, keepdim=True), torch.sum(dv, dim=2, keepdim=True)
    _ = (out.half(), dq.half(), dk.half(), dv.half())
    return time.perf_counter() - t0


def attnops_golden(binary, B, N, S, D, threads):
    with tempfile.TemporaryDirectory() as tmp:
        case = {"golden_speed": {"B": B, "N1": N, "N2": N, "S1": S, "S2": S, "D": D, "dtype": "fp16",
                                 "input_layout": "BNSD"}}
        path = os.path.join(tmp, "case.json")
        json.dump(case, open(path, "w"))
        t0 = time.perf_counter()
        subprocess.run([binary, "golden", path, "--out", os.path.join(tmp, "g"), "--threads", str(threads)],
                       check=True, capture_output=True)
        return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    for k, d in (("B", 1), ("N", 8), ("S", 4096), ("D", 128), ("threads", 2), ("repeat", 3)):
        ap.add_argument(f"--{k}", type=int, default=d)
    ap.add_argument("--skip-seed", action="store_true",
                    help="leave out the seed-steps timing (it needs ~10 x S^2 x N x 4 bytes)")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    times = {"attnops": [], "seed": [], "minimal": []}
    for r in range(a.repeat):  # rounds side by side: this machine's speed drifts by a third over minutes
        times["attnops"].append(attnops_golden(a.binary, a.B, a.N, a.S, a.D, a.threads))
        if not a.skip_seed:
            times["seed"].append(seed_golden(torch, a.B, a.N, a.S, a.D))
        times["minimal"].append(minimal_golden(torch, a.B, a.N, a.S, a.D))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items() if v), flush=True)
    med = {k: statistics.median(v) for k, v in times.items() if v}
    ratios = {k: statistics.median(o / t for o, t in zip(times["attnops"], v)) for k, v in times.items()
              if v and k != "attnops"}
    line = (f"golden B={a.B} N={a.N} S={a.S} D={a.D} fp16, {a.threads} threads, medians of {a.repeat} rounds: "
            f"attnops golden {med['attnops']:.1f} s (double, incl. input generation and .npy export); "
            f"torch float32 (compute only): ")
    line += ", ".join(f"{k} {med[k]:.1f} s (attnops / {k} = {ratios[k]:.2f})" for k in ratios)
    print(line)


if __name__ == "__main__":
    main()
