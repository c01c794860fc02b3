#!/usr/bin/env python3
"""A transformers training step, or a generate(), with attn_implementation="attnops" against "sdpa", side by
side.

A small random-init Llama (hidden 512, 4 layers, 8 heads of 64, 4 KV heads, vocab 2048), batch 1,
sequence S (2048), bf16 weights: one step is the forward, the causal-LM loss and its backward (no
optimizer, the same for both).  With --generate N: greedy generate() of N new tokens after a prompt of S
tokens (the prompt through the FlashAttention forward, each new token a decode step of
FusedInferAttentionScore over the cache), tokens per second.  The two models share their weights and
take turns in each round, alternating which goes first; medians of R rounds, after one warm-up each.

    bench_transformers.py [--threads N] [--reps R] [--seq S] [--generate N] [--json PATH] [--md PATH]
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


def median_times(models, run, reps):
    """Median seconds of run(model) per model over `reps` rounds, the models taking turns (which goes first
    alternates)."""
    times = {name: [] for name in models}
    for r in range(reps):
        for name in (list(models) if r % 2 == 0 else list(reversed(models))):
            t0 = time.perf_counter()
            run(models[name])
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def generate_summary(args, steps, ids):
    """Tokens per second of greedy generate() (N new tokens after the prompt), both models: its markdown line
    and its JSON keys."""
    for model in steps.values():
        model.eval()

    def run(model):
        with torch.no_grad():
            return model.generate(ids, max_new_tokens=args.generate, min_new_tokens=args.generate, do_sample=False,
                                  pad_token_id=0)

    tokens = {name: run(model) for name, model in steps.items()}  # warm-up, and the tokens compared
    rate = {name: args.generate / t for name, t in median_times(steps, run, args.reps).items()}
    same = bool(torch.equal(tokens["attnops"], tokens["sdpa"]))
    res = {"transformers_generate_prompt": args.seq, "transformers_generate_new_tokens": args.generate,
           "transformers_generate_threads": args.threads, "transformers_generate_attnops_tokens_per_s":
           rate["attnops"], "transformers_generate_sdpa_tokens_per_s": rate["sdpa"],
           "transformers_generate_speedup": rate["attnops"] / rate["sdpa"], "transformers_generate_same_tokens": same}
    md = (
        f"transformers {transformers.__version__} generate() (the Llama above, bf16, greedy, {args.generate} new "
        f"tokens after a {args.seq}-token prompt; {args.threads} threads; isa {attnops.cpu_isa()}, "
        f"{attnops.cpu_model()}; medians of {args.reps} alternating rounds; the same tokens: "
        f"{'yes' if same else 'no'}): attnops {rate['attnops']:.1f} tokens per second, sdpa {rate['sdpa']:.1f}, "
        f"speed-up vs sdpa {rate['attnops'] / rate['sdpa']:.2f}×.\n")
    return md, res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--generate", type=int, default=0, help="new tokens of a generate() (0: the training step)")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    attnops.transformers.register()
    torch.manual_seed(0)
    steps = models(torch.bfloat16)
    ids = torch.randint(0, 2048, (1, args.seq))
    if args.generate:
        peer_common.report(*generate_summary(args, steps, ids), args.json, args.md)
        return

    def step(model):
        model.zero_grad(set_to_none=True)
        model(ids, labels=ids).loss.backward()

    for model in steps.values():
        step(model)
    med = median_times(steps, step, args.reps)
    res = {"transformers_step_seq": args.seq, "transformers_step_threads": args.threads,
           "transformers_step_attnops_ms": med["attnops"] * 1e3, "transformers_step_sdpa_ms": med["sdpa"] * 1e3,
           "transformers_step_speedup": med["sdpa"] / med["attnops"]}
    md = (
        f"transformers {transformers.__version__} training step (Llama, hidden 512, 4 layers, 8 heads x 64, "
        f"4 KV heads; B1 S{args.seq} bf16; forward + loss + backward; {args.threads} threads; isa "
        f"{attnops.cpu_isa()}, {attnops.cpu_model()}; medians of {args.reps} alternating rounds): attnops "
        f"{med['attnops'] * 1e3:.0f} ms per step, sdpa {med['sdpa'] * 1e3:.0f} ms, speed-up vs sdpa "
        f"{med['sdpa'] / med['attnops']:.2f}×.\n")
    peer_common.report(md, res, args.json, args.md)


if __name__ == "__main__":
    main()
