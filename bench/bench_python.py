#!/usr/bin/env python3
"""The Python package's costs, measured side by side in one process:

1. per-call cost of each Python entry point on a tiny shape (B1 S16 N1
   D16 f32, one thread) against the library call itself (the two-phase call on
   prebuilt arguments, `_lib.run`) and torch's scaled_dot_product_attention,
   forward and forward + backward through autograd, the entries taking turns
   in short rounds; and a decode step through flash_attn_with_kvcache against
   the library call of the same step; and, as the floor under any binding,
   do-nothing torch ops (bench/torch_floor.cpp) with the forward's 37-argument
   schema, its first 24 (CANN's attributes), flash-attn's 11 and 5 arguments,
   called the same way; and torch's own SDPA op through torch.ops.aten, the
   entry torch.ops.attnops' ops are called through;
2. a training step (forward + backward through autograd) at B1 N8 S4096
   D128, f32, bf16 and f32 causal, against torch.nn.functional.
   scaled_dot_product_attention's step on the same threads, and against the
   library's direct calls (forward + grad without autograd) of the same run,
   so that the autograd wiring's cost shows as a ratio.

    bench_python.py [--threads N] [--reps R] [--quick] [--floor-build-dir DIR] [--json PATH] [--md PATH]

Medians: of max(R, 15) * 20 rounds of 100 calls (overhead), of R rounds
(steps; in each round the attnops and torch steps alternate which goes
first).  Writes a flat JSON object (python_* keys) and a markdown
table; bench/run.sh merges both into results.json / results.md.
"""
import argparse
import statistics
import time

import ml_dtypes
import torch

import attnops
import attnops._fa as fa
import attnops._fia as fia
import attnops._lib as lib
import attnops.flash_attn as flash_attn
import attnops.torch_npu as torch_npu

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


def numpy_view(t):
    """A numpy array over a CPU tensor's memory (bf16 through ml_dtypes), for the library call on prebuilt
    arguments (the C-level time, without the torch binding)."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def c_call(op, call_args):
    """The library's two-phase call on prebuilt arguments: (call, args struct, outputs) of _fa / _fia."""
    call, args, _ = call_args
    return lambda: lib.run(op, args)


def load_floor_ops(build_dir):
    """torch.ops.attnops_floor (bench/torch_floor.cpp, built just in time): do-nothing ops with the schemas whose
    dispatch cost bounds the binding's; None, with a line saying why, where it cannot be built."""
    from pathlib import Path
    from torch.utils import cpp_extension
    if not cpp_extension.is_ninja_available():
        print("bench_python: dispatch floor SKIPPED: torch.utils.cpp_extension needs ninja (apt ninja-build)")
        return None
    Path(build_dir).mkdir(parents=True, exist_ok=True)
    cpp_extension.load(name="attnops_torch_floor", sources=[str(Path(__file__).with_name("torch_floor.cpp"))],
                       build_directory=str(build_dir), is_python_module=False, extra_cflags=["-O2"])
    return torch.ops.attnops_floor


def overhead(rounds, floor=None):
    """Microseconds per call of each entry point, of the bare library call, of SDPA and of SDPA's op through
    torch.ops.aten, one thread; with floor (load_floor_ops), also of the do-nothing ops with the forward's,
    CANN's, flash-attn's and a 5-argument schema, called as op_fwd and flash_attn_func call theirs."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    q = torch.randn(1, 16, 1, 16)
    qn = numpy_view(q)
    kw = fa_kwargs(1, "BSND", 0.25)
    fwd_args = fa.forward_args(qn, qn, qn, kw)
    out, smax, ssum = (torch.from_numpy(a) for a in fwd_args[2])
    bwd_args = fa.backward_args(qn, qn, qn, out.numpy(), out.numpy(), smax.numpy(), ssum.numpy(), kw)
    qg = q.clone().requires_grad_()
    dy = torch.randn_like(q)
    # SDPA takes [B, N, S, D]: the same problem is the transposed view of the same tensors (q itself would
    # be 16 heads of one query each).
    qt, qgt, dyt = q.transpose(1, 2), qg.transpose(1, 2), dy.transpose(1, 2)

    def attnops_fwd_bwd():
        torch.autograd.grad(flash_attn.flash_attn_func(qg, qg, qg, softmax_scale=0.25), qg, dy)

    def sdpa_fwd_bwd():
        torch.autograd.grad(torch.nn.functional.scaled_dot_product_attention(qgt, qgt, qgt, scale=0.25), qg, dyt)

    entries = {
        "c_fwd": c_call("flash_attention_score", fwd_args),
        "c_bwd": c_call("flash_attention_score_grad", bwd_args),
        "op_fwd": lambda: torch.ops.attnops.flash_attention_score(q, q, q, 1, "BSND", scale=0.25),
        "npu_fusion_attention": lambda: torch_npu.npu_fusion_attention(q, q, q, 1, "BSND", scale=0.25),
        "flash_attn_func": lambda: flash_attn.flash_attn_func(q, q, q, softmax_scale=0.25),
        "npu_fusion_attention_grad": lambda: torch_npu.npu_fusion_attention_grad(
            q, q, q, out, 1, "BSND", softmax_max=smax, softmax_sum=ssum, attention_in=out, scale_value=0.25),
        "sdpa_fwd": lambda: torch.nn.functional.scaled_dot_product_attention(qt, qt, qt, scale=0.25),
        # the same SDPA call through the entry op_fwd takes: an op's schema parsed from Python arguments
        "aten_sdpa_op": lambda: torch.ops.aten.scaled_dot_product_attention(qt, qt, qt, scale=0.25),
        "flash_attn_func_fwd_bwd": attnops_fwd_bwd,
        "sdpa_fwd_bwd": sdpa_fwd_bwd,
    }
    if floor is not None:
        entries.update({
            "floor_37_args": lambda: floor.args37(q, q, q, 1, "BSND", scale=0.25),
            "floor_24_args": lambda: floor.args24(q, q, q, 1, "BSND", scale=0.25),
            "floor_11_args": lambda: floor.args11(q, q, q, softmax_scale=0.25),
            "floor_5_args": lambda: floor.args5(q, q, q, 0.25, False),
        })
    for fn in entries.values():
        fn()
    res = per_call_us(entries, 100, rounds)
    torch.set_num_threads(saved)
    return res


def decode_step(rounds, threads):
    """One decode step (B1 N32 N2 8 D128, S_kv 512, bf16) through flash_attn_with_kvcache, through the torch op
    it calls and as the library call on prebuilt arguments, microseconds per call."""
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    q = torch.randn(1, 1, 32, 128).bfloat16()
    k_cache, v_cache = (torch.randn(1, 512, 8, 128).bfloat16() for _ in range(2))
    lens = torch.tensor([512], dtype=torch.int32)
    lens64 = numpy_view(lens.long())
    call_args = fia.fia_args(numpy_view(q), numpy_view(k_cache), numpy_view(v_cache), actual_seq_lengths_kv=lens64,
                             num_heads=32, num_key_value_heads=8, scale=128 ** -0.5, input_layout="BSND",
                             num_threads=threads)
    lens64_t = lens.long()
    entries = {
        "decode_c": c_call("fused_infer_attention_score", call_args),
        "decode_op": lambda: torch.ops.attnops.fused_infer_attention_score(
            q, k_cache, v_cache, actual_seq_lengths_kv=lens64_t, num_heads=32, num_key_value_heads=8,
            scale=128 ** -0.5, input_layout="BSND"),
        "decode_flash_attn_with_kvcache": lambda: flash_attn.flash_attn_with_kvcache(
            q, k_cache, v_cache, cache_seqlens=lens),
    }
    for fn in entries.values():
        fn()
    res = per_call_us(entries, 20, rounds)
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

    def direct_step():  # the library's calls on numpy views of the same memory
        kw = fa_kwargs(n, "BSND", scale, **mode)
        if causal:
            kw["atten_mask"] = mask.numpy()
        qn, kn, vn = (numpy_view(t.detach()) for t in (q, k, v))
        out, smax, ssum = fa.forward(qn, kn, vn, kw)
        fa.backward(qn, kn, vn, numpy_view(dy), out, smax, ssum, kw)

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
    ap.add_argument("--floor-build-dir", default="build/bench/torch_floor",
                    help="where torch.utils.cpp_extension builds bench/torch_floor.cpp")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    s = 4096 // 8 if args.quick else 4096
    res = {"python_attnops_version": attnops.version(), "python_isa": attnops.cpu_isa(),
           "python_cpu_model": attnops.cpu_model(), "python_torch_version": torch.__version__,
           "python_threads": args.threads}
    floor = load_floor_ops(args.floor_build_dir)
    over = overhead(max(args.reps, 15) * 20, floor)
    for name, us in over.items():
        res[f"python_{name}_us"] = us
    md = [f"Python package (attnops {res['python_attnops_version']}, isa {res['python_isa']}, "
          f"{res['python_cpu_model']}, torch {res['python_torch_version']}).", "",
          "| entry point (B1 S16 N1 D16 f32, 1 thread) | µs per call | over the library call | × SDPA's |",
          "| --- | ---: | ---: | ---: |"]
    floors = {}  # the do-nothing ops, one row: floor_{37,24,11,5}_args
    for name, us in over.items():
        if name.startswith("floor_") or name.startswith("aten_"):  # references: torch's costs, not attnops'
            res[f"python_{name}_vs_sdpa"] = us / over["sdpa_fwd"]
            if name.startswith("floor_"):
                floors[name[len("floor_"):-len("_args")]] = us
            else:
                md.append(f"| `{name}` (torch's SDPA through torch.ops.aten) | {us:.1f} | | "
                          f"{us / over['sdpa_fwd']:.2f} |")
            continue
        base = over["c_bwd"] if "grad" in name or name == "c_bwd" else over["c_fwd"]
        sdpa = over["sdpa_fwd_bwd"] if name.endswith("fwd_bwd") else over["sdpa_fwd"]
        extra = "" if name.startswith("c_") or name.startswith("sdpa") or name.endswith("fwd_bwd") else \
            f"{us - base:.1f}"
        vs_sdpa = "" if name.startswith("c_") or name.startswith("sdpa") or "grad" in name else f"{us / sdpa:.2f}"
        md.append(f"| `{name}` | {us:.1f} | {extra} | {vs_sdpa} |")
        if extra:
            res[f"python_{name}_overhead_us"] = us - base
        if vs_sdpa:
            res[f"python_{name}_vs_sdpa"] = us / sdpa
    if floors:
        floor_us = ", ".join(f"{us:.1f}" for us in floors.values())
        floor_vs_sdpa = ", ".join(f"{us / over['sdpa_fwd']:.2f}" for us in floors.values())
        md.append(f"| `floor_{{{','.join(floors)}}}_args` (do-nothing ops) | {floor_us} | | {floor_vs_sdpa} |")
    decode = decode_step(max(args.reps, 15) * 4, args.threads)
    for name, us in decode.items():
        res[f"python_{name}_us"] = us
    res["python_decode_binding_ratio"] = decode["decode_flash_attn_with_kvcache"] / decode["decode_c"]
    md += ["", f"Decode step B1 N32 N2 8 D128, S_kv 512, bf16, {args.threads} threads, µs per call: "
           + ", ".join(f"`{name}` {us:.1f}" for name, us in decode.items())
           + f"; flash_attn_with_kvcache / library call {res['python_decode_binding_ratio']:.3f}."]
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
