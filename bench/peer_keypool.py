#!/usr/bin/env python3
"""The PyTorch peer of bench_ops --op keypool: the same KeyPool cases computed with
PyTorch's own CPU ops (matmul, layer_norm, softmax, gather, index_put), as a
PyTorch user without the fused op would write it -- vectorised over batches,
groups and channels, no Python loop per token.

    peer_keypool.py [--threads N] [--json PATH] [--quick] [--calls N]

Cases (bench/bench_ops.c has their definitions, kp_prefill and kp_decode): prefill B=1, S=4096
(512 with --quick), H=4096, D=128, R=4, bf16 with LayerNorm from position 0;
decode B=32, one token per batch at position 4099 after a history of 4096.
Each: one untimed call, then --calls timed calls (decode: 10x); median, min.
Writes torch_kp_<case>_ms_median / _ms_min and torch_version, torch_threads.
"""
import time

import torch
import torch.nn.functional as F

import peer_common

H, D, R, BLOCK = 4096, 128, 4, 128


def make(B, S, history, gen):
    L = (history + S + BLOCK - 1) // BLOCK
    block_num = 1 + B * L

    def u(*shape):
        return torch.rand(*shape, generator=gen) * 2 - 1

    return dict(
        x=u(B, S, H).to(torch.bfloat16), wk=(u(D, H) * 0.03).to(torch.bfloat16),
        gate=(u(D, H) * 0.03).to(torch.bfloat16), ape=u(R, D) * 0.1,
        cache=u(block_num, BLOCK, 2 * D) * 0.1,
        table=(1 + torch.arange(B * L, dtype=torch.int64)).view(B, L),
        start=torch.full((B,), history, dtype=torch.int64),
        norm_w=1 + 0.1 * u(D), norm_b=0.1 * u(D))


def key_pool(x, wk, gate, ape, cache, table, start, norm_w, norm_b, eps=1e-6):
    """Every batch has the same length and start (as in both cases)."""
    B, S, _ = x.shape
    k = F.layer_norm(torch.matmul(x, wk.t()).float(), (D,), norm_w, norm_b, eps)  # bf16 projection, f32 LN
    g = torch.matmul(x, gate.t()).float()
    st = int(start[0])
    end = st + S
    # the trailing incomplete group's current tokens go to the cache
    tail = end % R
    if tail:
        pos = torch.arange(max(st, end - tail), end)
        blk = table[:, pos // BLOCK]
        cache[blk, (pos % BLOCK).expand_as(blk)] = torch.cat((k[:, pos - st], g[:, pos - st]), dim=-1)
    # complete groups: current rows, or history through the block table
    first, n = st // R, end // R - st // R
    pos = first * R + torch.arange(n * R)
    cur = pos >= st
    hist = cache[table[:, pos // BLOCK], (pos % BLOCK).expand(B, -1)]  # [B, nR, 2D]
    idx = (pos - st).clamp(min=0)
    keys = torch.where(cur[None, :, None], k[:, idx], hist[..., :D]).view(B, n, R, D)
    gates = torch.where(cur[None, :, None], g[:, idx], hist[..., D:]).view(B, n, R, D)
    w = torch.softmax(gates + ape, dim=2).to(torch.bfloat16).float()
    return (w * keys).sum(dim=2).to(torch.bfloat16)


def time_calls(t, calls):
    def run():
        t0 = time.perf_counter()
        key_pool(**t)
        return (time.perf_counter() - t0) * 1e3
    return peer_common.median_min(run, calls)


def main():
    a = peer_common.parser(calls=9).parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(7)
    res = {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads()}
    with torch.no_grad():
        S = 512 if a.quick else 4096
        med, lo = time_calls(make(1, S, 0, gen), a.calls)
        print(f"torch prefill B1 S{S} H{H} D{D} R{R} bf16: {med:.2f} ms (min {lo:.2f})")
        res.update(torch_kp_prefill_ms_median=med, torch_kp_prefill_ms_min=lo)
        med, lo = time_calls(make(32, 1, 4099, gen), a.calls * 10)
        print(f"torch decode B32 (1 token, history 4096): {med:.3f} ms (min {lo:.3f})")
        res.update(torch_kp_decode_ms_median=med, torch_kp_decode_ms_min=lo)
    peer_common.write_json(a.json, res)


if __name__ == "__main__":
    main()
