#!/usr/bin/env python3
"""The Python package's costs, measured side by side in one process:

1. per-call overhead of each Python entry point on a tiny shape (B1 S16 N1
   D16 f32, one thread) over the library call itself (the two-phase call on
   prebuilt arguments, `_lib.run`), the entries taking turns in short rounds;
2. a training step (forward + backward through autograd) at B1 N8 S4096
   D128, f32, bf16 and f32 causal, against torch.nn.functional.
   scaled_dot_product_attention's step on the same threads, and against the
   library's direct calls (forward + grad without autograd) of the same run,
   so that the autograd wiring's cost shows as a ratio.

    bench_python.py [--threads N] [--reps R] [--quick] [--json PATH] [--md PATH]

Medians: of max(R, 15) * 20 rounds of 100 calls (overhead), of R rounds
(steps; in each round the attnops and torch steps alternate which goes
first).  Writes a flat JSON object (python_* keys) and a markdown
table; bench/run.sh merges both into results.json / results.md.
"""
import argparse
import ctypes
import statistics
import time

import torch

import attnops
import attnops._fa as fa
import attnops._lib as lib
import attnops.flash_attn as flash_attn
import attnops.torch_npu as torch_npu
from attnops._views import Call

import peer_common  # bench/, beside this script

INT32_MAX = 2147483647


def fa_kwargs(n1, layout, scale, **over):
    kw = dict(head_num=n1, input_layout=layout, pse=None, drop_mask=None, atten_mask=None, scale=scale,
              keep_prob=1.0, pre_tokens=INT32_MAX, next_tokens=INT32_MAX, inner_precise=0, prefix=None,
              actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, pse_type=1, query_rope=None,
              key_rope=None, q_start_idx=None, kv_start_idx=None, seed=0, offset=0, impl="auto",
              deterministic=False, num_threads=torch.get_num_threads())
    kw.update(over)
    return kw


def per_call_us(entries, calls, rounds):
    """Median microseconds per call of each entry over `rounds` short rounds of `calls` calls.  The
    entries take turns within every round (in a rotating order), so a noisy stretch of this shared
    machine lands on all of them alike instead of on whichever entry was running."""
    names = list(entries)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = entries[name]
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - t0) / calls * 1e6)
    return {name: statistics.median(t) for name, t in times.items()}


def floor_forward_entry(q, kw):
    """A forward doing only what any binding written in Python must do per call: three torch.empty
    outputs, one pack of the params (their values computed beforehand), the six views, the two-phase
    call.  It skips every check and default, so its excess over c_fwd is a floor for the entry points."""
    scratch = ctypes.create_string_buffer(fa.PARAMS.size)
    fa._params(Call(), scratch, q, kw)
    packed = fa.PARAMS.unpack_from(scratch)
    size = fa.PARAMS.size + 8 * len(fa.FWD_OUTPUTS)
    stat = fa.stat_shape(q, kw["head_num"], kw["input_layout"])
    unused = (None,) * (len(fa.PARAM_TENSORS) - 3)

    def floor_fwd():
        args = ctypes.create_string_buffer(size)
        fa.PARAMS.pack_into(args, 0, *packed)
        out = torch.empty_like(q)
        smax = torch.empty(stat, dtype=torch.float32)
        ssum = torch.empty_like(smax)
        call = Call()  # holds the views until the run
        call.bind(args, fa.FWD_SLOTS, fa.FWD_NAMES, (q, q, q, *unused, smax, ssum, None, out))
        lib.run("flash_attention_score", args)
        return out
    return floor_fwd


def overhead(rounds):
    """Microseconds per call of each entry point and of the bare library call, one thread."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    q = torch.randn(1, 16, 1, 16)
    kw = fa_kwargs(1, "BSND", 0.25)
    _fwd_call, fwd, (out, smax, ssum) = fa.forward_args(q, q, q, kw)
    _bwd_call, bwd, _ = fa.backward_args(q, q, q, out, out, smax, ssum, kw)
    entries = {
        "c_fwd": lambda: lib.run("flash_attention_score", fwd),
        "c_bwd": lambda: lib.run("flash_attention_score_grad", bwd),
        "floor_fwd": floor_forward_entry(q, kw),
        "binding_fwd": lambda: fa.forward(q, q, q, kw),
        "op_fwd": lambda: torch.ops.attnops.flash_attention_score(q, q, q, 1, "BSND", scale=0.25),
        "npu_fusion_attention": lambda: torch_npu.npu_fusion_attention(q, q, q, 1, "BSND", scale=0.25),
        "flash_attn_func": lambda: flash_attn.flash_attn_func(q, q, q, softmax_scale=0.25),
        "npu_fusion_attention_grad": lambda: torch_npu.npu_fusion_attention_grad(
            q, q, q, out, 1, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out, scale_value=0.25),
        "sdpa_fwd": lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q),
    }
    for fn in entries.values():
        fn()
    res = per_call_us(entries, 100, rounds)
    torch.set_num_threads(saved)
    return res


def step_case(dtype, causal, s, rounds):
    """Median seconds of one training step: attnops through autograd, attnops' direct calls, SDPA."""
    b, n, d = 1, 8, 128
    scale = d ** -0.5
    q, k, v = (torch.randn(b, s, n, d).to(dtype).requires_grad_() for _ in range(3))
    dy = torch.randn(b, s, n, d).to(dtype)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1) if causal else None
    mode = dict(atten_mask=mask, sparse_mode=3) if causal else {}

    def attnops_step():
        out = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", scale=scale, **mode)[0]
        torch.autograd.grad(out, (q, k, v), dy)

    def direct_step():
        kw = fa_kwargs(n, "BSND", scale, **mode)
        out, smax, ssum = fa.forward(q.detach(), k.detach(), v.detach(), kw)
        fa.backward(q.detach(), k.detach(), v.detach(), dy, out, smax, ssum, kw)

    def sdpa_step():
        out = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                               v.transpose(1, 2), is_causal=causal, scale=scale)
        torch.autograd.grad(out, (q, k, v), dy.transpose(1, 2))

    steps = {"autograd": attnops_step, "direct": direct_step, "sdpa": sdpa_step}
    for fn in steps.values():
        fn()
    times = {name: [] for name in steps}
    for r in range(rounds):
        order = list(steps) if r % 2 == 0 else list(reversed(steps))
        for name in order:
            t0 = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="S 4096 / 8")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    s = 4096 // 8 if args.quick else 4096
    res = {"python_attnops_version": attnops.version(), "python_isa": attnops.cpu_isa(),
           "python_cpu_model": attnops.cpu_model(), "python_torch_version": torch.__version__,
           "python_threads": args.threads}
    over = overhead(max(args.reps, 15) * 20)
    for name, us in over.items():
        res[f"python_{name}_us"] = us
    md = [f"Python package (attnops {res['python_attnops_version']}, isa {res['python_isa']}, "
          f"{res['python_cpu_model']}, torch {res['python_torch_version']}).", "",
          "| entry point (B1 S16 N1 D16 f32, 1 thread) | µs per call | over the library call |",
          "| --- | ---: | ---: |"]
    for name, us in over.items():
        base = over["c_bwd"] if "grad" in name or name == "c_bwd" else over["c_fwd"]
        extra = "" if name.startswith("c_") or name.startswith("sdpa") else f"{us - base:.1f}"
        md.append(f"| `{name}` | {us:.1f} | {extra} |")
        if extra:
            res[f"python_{name}_overhead_us"] = us - base
    md += ["", f"| training step B1 N8 S{s} D128, {args.threads} threads | attnops autograd ms | attnops direct ms "
               "| SDPA ms | speed-up (autograd) | speed-up (direct) | autograd / direct |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, dtype, causal in (("f32", torch.float32, False), ("bf16", torch.bfloat16, False),
                                 ("f32 causal", torch.float32, True)):
        t = step_case(dtype, causal, s, args.reps)
        key = label.replace(" ", "_")
        for name, sec in t.items():
            res[f"python_step_{key}_{name}_ms"] = sec * 1e3
        res[f"python_step_{key}_speedup_autograd"] = t["sdpa"] / t["autograd"]
        res[f"python_step_{key}_speedup_direct"] = t["sdpa"] / t["direct"]
        md.append(f"| {label} | {t['autograd'] * 1e3:.1f} | {t['direct'] * 1e3:.1f} | {t['sdpa'] * 1e3:.1f} "
                  f"| {t['sdpa'] / t['autograd']:.2f}× | {t['sdpa'] / t['direct']:.2f}× "
                  f"| {t['autograd'] / t['direct']:.3f} |")
    peer_common.report("\n".join(md) + "\n", res, args.json, args.md)


if __name__ == "__main__":
    main()
