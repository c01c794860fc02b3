#!/usr/bin/env python3
"""The PyTorch peer of bench_ops --op fia: the same FusedInferAttentionScore
cases as a PyTorch user runs them on the CPU, with scaled_dot_product_attention
(enable_gqa=True, the cache's own dtype) on contiguous [B, N, S, D] caches.

    peer_fia.py [--threads N] [--json PATH] [--quick] [--calls N]

Cases (bench/bench_ops.c has their definitions; --quick: caches 8x shorter):
  decode_bf16/_f16/_f32  B4 N32 N2=8 D128, one query row over 4096 cached keys
  decode_paged_bf16      torch has no paged cache: the contiguous call (what paging costs attnops
                         is its own ratio to fia_decode_bf16)
  decode_int8            the int8 cache dequantised per channel to bf16 ((x + offset) * scale), then
                         SDPA, as a user without an int8 kernel does it every step
  long_bf16              B1 over 32768 keys
  spec4_bf16, spec16_bf16  4 and 16 query rows, bottom-right causal (a boolean mask)
  mla_bf16               B1 N1=128 on one latent head, D 512 + rope 64 (q and k concatenated: the
                         scores are q . k + q_rope . k_rope), values the 512 latent columns
  prompt_bf16            a dense prompt B1 N1=N2=8, S1=S2=4096, D128
  chunk_paged_bf16       a chunked prefill of that model: 512 query rows after 3584 keys, bottom-right causal (a
                         boolean mask); torch has no paged cache: the contiguous call, as decode_paged_bf16
Each: one untimed call, then --calls timed calls (decode 4x); median, min.
Writes torch_fia_<case>_ms_median / _ms_min and torch_version, torch_threads.
"""
import time

import torch
import torch.nn.functional as F

import peer_common


def gqa_case(b, s1, s2, dtype, gen, causal=False, int8=False):
    n1, n2, d = 32, 8, 128
    q = torch.randn(b, n1, s1, d, generator=gen).to(dtype)
    if int8:
        k8 = torch.randint(-128, 128, (b, n2, s2, d), generator=gen, dtype=torch.int8)
        v8 = torch.randint(-128, 128, (b, n2, s2, d), generator=gen, dtype=torch.int8)
        scale = (torch.rand(1, n2, 1, d, generator=gen) * 0.02 + 0.001).to(dtype)
        offset = (torch.randn(1, n2, 1, d, generator=gen) * 8).to(dtype)

        def call():
            k = (k8.to(dtype) + offset) * scale
            v = (v8.to(dtype) + offset) * scale
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return call
    k = torch.randn(b, n2, s2, d, generator=gen).to(dtype)
    v = torch.randn(b, n2, s2, d, generator=gen).to(dtype)
    mask = None
    if causal:  # bottom-right: row i keeps keys j <= i + s2 - s1
        mask = torch.arange(s2)[None, :] <= torch.arange(s1)[:, None] + (s2 - s1)
    return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def mla_case(s2, gen):
    n1, d, dr = 128, 512, 64
    q = torch.randn(1, n1, 1, d + dr, generator=gen).bfloat16()
    k = torch.randn(1, 1, s2, d + dr, generator=gen).bfloat16()
    v = torch.randn(1, 1, s2, d, generator=gen).bfloat16()
    return lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def prompt_case(s, gen):
    q, k, v = (torch.randn(1, 8, s, 128, generator=gen).bfloat16() for _ in range(3))
    return lambda: F.scaled_dot_product_attention(q, k, v)


def chunk_case(s1, s2, gen):
    q = torch.randn(1, 8, s1, 128, generator=gen).bfloat16()
    k, v = (torch.randn(1, 8, s2, 128, generator=gen).bfloat16() for _ in range(2))
    mask = torch.arange(s2)[None, :] <= torch.arange(s1)[:, None] + (s2 - s1)  # bottom-right: j <= i + s2 - s1
    return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def main():
    ap = peer_common.parser(calls=9)
    ap.add_argument("--cases", help="comma-separated case names (without fia_); default all")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(11)
    s2 = 512 if a.quick else 4096
    cases = {
        "decode_bf16": (lambda: gqa_case(4, 1, s2, torch.bfloat16, gen), 4),
        "decode_f16": (lambda: gqa_case(4, 1, s2, torch.float16, gen), 4),
        "decode_f32": (lambda: gqa_case(4, 1, s2, torch.float32, gen), 4),
        "decode_paged_bf16": (lambda: gqa_case(4, 1, s2, torch.bfloat16, gen), 4),
        "decode_int8": (lambda: gqa_case(4, 1, s2, torch.bfloat16, gen, int8=True), 4),
        "long_bf16": (lambda: gqa_case(1, 1, 8 * s2, torch.bfloat16, gen), 1),
        "spec4_bf16": (lambda: gqa_case(4, 4, s2, torch.bfloat16, gen, causal=True), 1),
        "spec16_bf16": (lambda: gqa_case(4, 16, s2, torch.bfloat16, gen, causal=True), 1),
        "mla_bf16": (lambda: mla_case(s2, gen), 1),
        "prompt_bf16": (lambda: prompt_case(s2, gen), 1),
        "chunk_paged_bf16": (lambda: chunk_case(512, s2, gen), 1),
    }
    res = {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads()}
    with torch.no_grad():
        for name, (make, factor) in cases.items():
            if a.cases and name not in a.cases.split(","):
                continue
            call = make()

            def run():
                t0 = time.perf_counter()
                call()
                return (time.perf_counter() - t0) * 1e3
            med, lo = peer_common.median_min(run, a.calls * factor)
            print(f"torch fia_{name}: {med:.3f} ms (min {lo:.3f})")
            res.update({f"torch_fia_{name}_ms_median": med, f"torch_fia_{name}_ms_min": lo})
    peer_common.write_json(a.json, res)


if __name__ == "__main__":
    main()
