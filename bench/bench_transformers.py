#!/usr/bin/env python3
"""A transformers training step with attn_implementation="attnops" against "sdpa", side by side.

A small random-init Llama (hidden 512, 4 layers, 8 heads of 64, 4 KV heads, vocab 2048), batch 1,
sequence S (2048), bf16 weights: one step is the forward, the causal-LM loss and its backward (no
optimizer, the same for both).  The two models share their weights and take turns in each round,
alternating which goes first; medians of R rounds, after one warm-up step each.

    bench_transformers.py [--threads N] [--reps R] [--seq S] [--json PATH] [--md PATH]
"""
import argparse
import copy
import statistics
import time

import torch
import transformers
from transformers import AutoModelForCausalLM, LlamaConfig

import attnops
import attnops.transformers

import peer_common  # bench/, beside this script


def models(dtype):
    cfg = LlamaConfig(vocab_size=2048, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=8192)
    sdpa = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation="sdpa").to(dtype)
    ours = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation="attnops").to(dtype)
    ours.load_state_dict(sdpa.state_dict())
    return {"attnops": ours.train(), "sdpa": sdpa.train()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    attnops.transformers.register()
    torch.manual_seed(0)
    steps = models(torch.bfloat16)
    ids = torch.randint(0, 2048, (1, args.seq))

    def step(model):
        model.zero_grad(set_to_none=True)
        model(ids, labels=ids).loss.backward()

    for model in steps.values():
        step(model)
    times = {name: [] for name in steps}
    for r in range(args.reps):
        for name in (list(steps) if r % 2 == 0 else list(reversed(steps))):
            t0 = time.perf_counter()
            step(steps[name])
            times[name].append(time.perf_counter() - t0)
    med = {name: statistics.median(t) for name, t in times.items()}
    res = {"transformers_step_seq": args.seq, "transformers_step_threads": args.threads,
           "transformers_step_attnops_ms": med["attnops"] * 1e3, "transformers_step_sdpa_ms": med["sdpa"] * 1e3,
           "transformers_step_speedup": med["sdpa"] / med["attnops"]}
    md = "\n".join([
        f"transformers {transformers.__version__} training step (Llama, hidden 512, 4 layers, 8 heads x 64, "
        f"4 KV heads; B1 S{args.seq} bf16; forward + loss + backward; {args.threads} threads; isa "
        f"{attnops.cpu_isa()}, {attnops.cpu_model()}; medians of {args.reps} alternating rounds).", "",
        "| attn_implementation | ms per step | speed-up vs sdpa |", "| --- | ---: | ---: |",
        f"| attnops | {med['attnops'] * 1e3:.0f} | {med['sdpa'] / med['attnops']:.2f}× |",
        f"| sdpa | {med['sdpa'] * 1e3:.0f} | 1.00× |"]) + "\n"
    peer_common.report(md, res, args.json, args.md)


if __name__ == "__main__":
    main()
