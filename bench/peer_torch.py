#!/usr/bin/env python3
"""The PyTorch peer of bench_fa: the same cases through
torch.nn.functional.scaled_dot_product_attention on the CPU.

    peer_torch.py --cases CASES.json [--threads N] [--reps R] [--json PATH]

The cases are the descriptors `bench_fa --list-cases --json CASES.json [--quick]
[--case ...]` writes: bench_fa (bench/bench_fa.c) holds the one case list and
the one parser of case specs, so both programs time the same shapes under the
same names (bench/run.sh does this).

Masks (by the names' tags; the band from the descriptor's sparse_mode, pre
and next), where SDPA has the same call (CANN polarity: 1 = masked out;
SDPA's boolean attn_mask is True = takes part, so the peer passes ~mask):
  mask=causal2   is_causal=True (SDPA's causal mask is top-left aligned,
                 j > i masked: sparse_mode 2 for any S1, S2)
  mask=causal3   is_causal=True when S1 = S2, else a boolean attn_mask of the
                 right-down causal pattern
  mask=bandW     boolean attn_mask [S1, S2] of the mode-4 band (pre, next
                 from the right-down origin; W = pre + next)
  mask=mask1     boolean attn_mask [S1, S2], ~(j > i)
keep=P runs SDPA with dropout_p = 1 - P (PyTorch's CPU SDPA then takes its
unfused math path).  Cases with a pse (alibi2, bnss), FP8 cases, det=1
cases, softcap cases, varlen cases and cases marked peer=no are skipped (listed as skipped,
no numbers).

Forward: SDPA under torch.no_grad().  Backward: each repetition builds a fresh
forward graph (untimed) and times torch.autograd.grad(out, (q, k, v), dy)
only.  Inputs are created in the case's layout and viewed as [B, N, S, D], as
a PyTorch user holding BSND/BSH/SBH tensors would call SDPA.  Scale is
1/sqrt(D); N1 != N2 uses enable_gqa=True.  One untimed warm-up per case, then
R rounds over all cases; medians of the R timings.

Prints a table and writes a flat JSON object of named numbers:
torch_<case>_ms_median, torch_<case>_ms_min, torch_<case>_gflops (dense-
equivalent FLOPs: forward 2*B*N1*S1*S2*(D+Dv), backward 2.5x), plus
torch_version and torch_threads.
"""
import argparse
import json
import math
import statistics
import sys
import time


TORCH_DTYPE = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}  # bench_fa's names; FP8 is skipped


def read_cases(path):
    """The descriptors of `bench_fa --list-cases --json` (bench_fa holds the one case parser)."""
    with open(path) as f:
        return json.load(f)


def skip_reason(c):
    """Why SDPA has no equivalent of the case (None: it has one)."""
    if not c["peer"]:
        return "peer=no"
    if c["varlen"] or c["varlen_dense"]:
        return "varlen: no SDPA call of this shape"
    if c["pse"] != "none":
        return f"pse={c['pse']}: no SDPA equivalent"
    if c["dtype"] not in TORCH_DTYPE:
        return "FP8: no SDPA equivalent"
    if c["det"]:
        return "det=1: no SDPA equivalent"
    if c.get("softcap"):
        return "softcap: no SDPA equivalent"
    return None


def cann_mask(torch, c):
    """The case's mask as a [S1, S2] bool tensor, CANN polarity (True = masked
    out), from the rule attnops applies: key j takes part in query row i when
    -pre <= j - i <= next."""
    S1, S2 = c["S1"], c["S2"]
    inf = 1 << 60
    if c["mask"] in ("causal2", "mask1"):
        pre, nxt = inf, 0
    elif c["mask"] == "causal3":
        pre, nxt = inf, S2 - S1
    else:  # sparse_mode 4, the descriptor's pre/next from the right-down origin
        pre, nxt = c["pre"] + S1 - S2, c["next"] - S1 + S2
    d = torch.arange(S2).view(1, S2) - torch.arange(S1).view(S1, 1)
    return (d > nxt) | (d < -pre)


def case_flop(c):
    f = 2.0 * c["B"] * c["N1"] * c["S1"] * c["S2"] * (c["D"] + c["Dv"])
    return 2.5 * f if c["dir"] == "bwd" else f


class Case:
    def __init__(self, torch, c, gen):
        self.torch, self.c = torch, c
        dt = getattr(torch, TORCH_DTYPE[c["dtype"]])
        self.gqa = c["N1"] != c["N2"]
        self.scale = 1.0 / math.sqrt(c["D"])
        self.q = self._make(c["S1"], c["N1"], c["D"], dt, gen)
        self.k = self._make(c["S2"], c["N2"], c["D"], dt, gen)
        self.v = self._make(c["S2"], c["N2"], c["Dv"], dt, gen)
        self.dy = self._make(c["S1"], c["N1"], c["Dv"], dt, gen) if c["dir"] == "bwd" else None
        # SDPA's boolean attn_mask: True = takes part, the opposite of CANN's.
        self.is_causal = c["mask"] == "causal2" or (c["mask"] == "causal3" and c["S1"] == c["S2"])
        self.attn_mask = None
        if c["mask"] != "none" and not self.is_causal:
            self.attn_mask = ~cann_mask(torch, c)

    def _make(self, S, N, d, dt, gen):
        """A tensor stored in the case's layout, returned as a [B, N, S, d] view."""
        torch, B, lay = self.torch, self.c["B"], self.c["layout"]
        shape = {"BNSD": (B, N, S, d), "BSND": (B, S, N, d), "BSH": (B, S, N, d), "SBH": (S, B, N, d)}[lay]
        t = (torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1).to(dt)
        if lay == "BNSD":
            return t
        if lay == "SBH":
            return t.permute(1, 2, 0, 3)
        return t.transpose(1, 2)

    def sdpa(self, q, k, v):
        F = self.torch.nn.functional
        kw = {}
        if self.gqa:
            kw["enable_gqa"] = True
        if self.is_causal:
            kw["is_causal"] = True
        if self.attn_mask is not None:
            kw["attn_mask"] = self.attn_mask
        if self.c["keep"]:
            kw["dropout_p"] = 1.0 - self.c["keep"]
        return F.scaled_dot_product_attention(q, k, v, scale=self.scale, **kw)

    def run(self):
        """One timed call, milliseconds."""
        torch = self.torch
        if self.c["dir"] == "fwd":
            with torch.no_grad():
                t0 = time.perf_counter()
                out = self.sdpa(self.q, self.k, self.v)
                t1 = time.perf_counter()
            del out
            return (t1 - t0) * 1e3
        q = self.q.detach().requires_grad_(True)
        k = self.k.detach().requires_grad_(True)
        v = self.v.detach().requires_grad_(True)
        out = self.sdpa(q, k, v)
        t0 = time.perf_counter()
        grads = torch.autograd.grad(out, (q, k, v), self.dy)
        t1 = time.perf_counter()
        del grads, out
        return (t1 - t0) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: OMP_NUM_THREADS or all)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--cases", required=True, help="the JSON of bench_fa --list-cases --json")
    a = ap.parse_args()

    import os
    import torch

    threads = a.threads or int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or os.cpu_count()
    torch.set_num_threads(threads)
    cases = read_cases(a.cases)

    print(f"peer_torch: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"cpu capability {torch.backends.cpu.get_cpu_capability()}, {a.reps} rounds", flush=True)
    gen = torch.Generator().manual_seed(1234)
    runs, times, failed, skipped = [], {}, {}, {}
    for c in cases:
        why = skip_reason(c)
        if why:
            skipped[c["name"]] = why
            continue
        try:
            r = Case(torch, c, gen)
            r.run()  # warm-up
            runs.append(r)
            times[c["name"]] = []
        except Exception as e:  # a case torch cannot run is reported, not fatal
            failed[c["name"]] = f"{type(e).__name__}: {e}"
            print(f"peer_torch: case {c['name']} failed: {failed[c['name']]}", file=sys.stderr)
    for rep in range(a.reps):
        for r in runs:
            times[r.c["name"]].append(r.run())
        print(f"peer_torch: round {rep + 1}/{a.reps} done", file=sys.stderr, flush=True)

    out = {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
           "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(), "reps": a.reps}
    print(f"\n{'case (torch SDPA, dense-equivalent FLOPs)':<44} {'ms median':>10} {'ms min':>10} {'GFLOP/s':>10}")
    for r in runs:
        n, t = r.c["name"], times[r.c["name"]]
        med = statistics.median(t)
        gf = case_flop(r.c) / (med * 1e-3) * 1e-9
        print(f"{n:<44} {med:>10.2f} {min(t):>10.2f} {gf:>10.1f}")
        out[f"torch_{n}_ms_median"] = med
        out[f"torch_{n}_ms_min"] = min(t)
        out[f"torch_{n}_gflops"] = gf
    for n in failed:
        print(f"{n:<44} {'failed':>10}")
    for n, why in skipped.items():
        print(f"{n:<44} {'skipped':>10} ({why})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        print(f"\nwrote {a.json}")


if __name__ == "__main__":
    main()
