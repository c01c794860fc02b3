#!/usr/bin/env python3
"""`attnops golden keypool-seed` and `attnops compare` as a KeyPool device
developer uses them: the export loads in numpy + ml_dtypes with the shapes
and dtypes the manifest records; pooled_key and state_cache_out agree with
a float64 numpy KeyPool (spec A.3) run here on the exported inputs, and
valid_rows with n[b] = floor((st + len) / R) - floor(st / R); a device that
returns the golden passes `compare` (exit 0); one whose pooled_key has a
valid row 2 % off fails (exit 1); garbage (even NaN) in rows past the valid
ones still passes, which is the valid-row masking; a corrupted
state_cache_out fails, so does a single NaN in it (non-finite); a missing
valid_rows.npy gives exit 2.
Usage: check_keypool_golden.py ATTNOPS_BINARY"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

import golden_files
from golden_files import DT, check, compare, load

SEED = ["bsh_norm_off_history", "th_norm_on_zero_batch", "bsh_norm_on_long_history", "th_norm_off_small_blocks"]


def key_pool(T, attrs, dtype):
    """Spec A.3 in float64 between the golden's rounding points: the pooled
    rows of each batch (a list) and the cache after the call."""
    rnd = lambda x: np.asarray(x, np.float64).astype(dtype).astype(np.float64)
    f64 = lambda name: T[name].astype(np.float64)
    R, eps = attrs["cmp_ratio"], np.float64(np.float32(attrs["norm_eps"]))
    x, wk, wg, ape = f64("hidden_states"), f64("wk"), f64("gate_weight"), f64("ape")
    cache, table, starts = T["state_cache"].astype(np.float32).copy(), T["cache_block_table"], T["start_pos"]
    B, D, BS = len(starts), wk.shape[0], cache.shape[1]
    if attrs["layout"] == "TH":
        cu = T["cu_seqlens"]
        tokens = [x[cu[b]:cu[b + 1]] for b in range(B)]
    else:
        tokens = [x[b] for b in range(B)]
    keys, gates = [], []
    for b in range(B):  # project, normalise, cache the trailing incomplete group
        k, g = rnd(tokens[b] @ wk.T), rnd(tokens[b] @ wg.T)
        if "norm_weight" in T:
            mu = k.mean(axis=1, keepdims=True)
            var = ((k - mu) ** 2).mean(axis=1, keepdims=True)
            k = ((k - mu) / np.sqrt(var + eps) * f64("norm_weight") + f64("norm_bias")).astype(np.float32)
        keys.append(k.astype(np.float64))
        gates.append(g)
        st, end = int(starts[b]), int(starts[b]) + len(tokens[b])
        for p in range(max(st, end - end % R), end):
            cache[table[b, p // BS], p % BS] = np.concatenate([keys[b][p - st], g[p - st]])
    pooled = []
    for b in range(B):  # pool every complete group with a current token
        st, end, rows = int(starts[b]), int(starts[b]) + len(tokens[b]), []
        for q in range(st // R, end // R):
            kk, gg = np.zeros((R, D)), np.zeros((R, D))
            for r in range(R):
                p = q * R + r
                if p >= st:
                    kk[r], gg[r] = keys[b][p - st], gates[b][p - st]
                else:
                    row = cache[table[b, p // BS], p % BS].astype(np.float64)
                    kk[r], gg[r] = row[:D], row[D:]
            logit = gg + ape
            w = np.exp(logit - logit.max(axis=0))
            rows.append(rnd((rnd(w / w.sum(axis=0)) * kk).sum(axis=0)))
        pooled.append(rows)
    return pooled, cache



def main(binary):
    tmp = tempfile.mkdtemp()
    try:
        g, dev = os.path.join(tmp, "golden"), os.path.join(tmp, "device")
        r = subprocess.run([binary, "golden", "keypool-seed", "--out", g], capture_output=True, text=True)
        check(r.returncode == 0, f"attnops golden keypool-seed exits 0 ({r.stderr.strip()[:200]})")
        m = json.load(open(os.path.join(g, "manifest.json")))
        cases = {c["name"]: c for c in m["cases"]}
        check(list(cases) == SEED and all(c["op"] == "keypool" and c["compare"] == "isclose" for c in m["cases"]),
              f"manifest: the seed's four KeyPool cases, rule isclose ({list(cases)})")
        good = True
        for c in m["cases"]:
            for name, t in c["tensors"].items():
                a = load(g, t)
                good &= list(a.shape) == t["shape"] and a.dtype == np.dtype(DT[t["dtype"]])
        check(good, "every exported tensor loads with its manifest shape and dtype")
        th = cases["th_norm_on_zero_batch"]
        check(th["attributes"] == {"layout": "TH", "cmp_ratio": 8, "norm_eps": 1e-6, "rotary_mode": 1,
                                   "capacity": "current", "data_seed": 20260824}
              and {"cu_seqlens", "norm_weight", "norm_bias"} <= set(th["tensors"])
              and th["tensors"]["pooled_key"]["counted"] == "valid_rows"
              and th["tensors"]["valid_rows"]["role"] == "mask", "th_norm_on_zero_batch attributes and tensors")
        check("cu_seqlens" not in cases["bsh_norm_off_history"]["tensors"]
              and "norm_weight" not in cases["bsh_norm_off_history"]["tensors"], "BSH without norm: no cu_seqlens, norm")

        for name, c in cases.items():  # the golden against numpy, on the exported inputs
            T = {k: load(g, t) for k, t in c["tensors"].items()}
            pooled, cache = key_pool(T, c["attributes"], DT[c["tensors"]["pooled_key"]["dtype"]])
            n = [len(rows) for rows in pooled]
            out = T["pooled_key"].astype(np.float64)
            mine = np.zeros_like(out)
            packed = 0
            for b, rows in enumerate(pooled):
                for i, row in enumerate(rows):
                    if out.ndim == 2:
                        mine[packed + i] = row
                    else:
                        mine[b, i] = row
                packed += len(rows)
            close = np.isclose(out, mine, rtol=2 ** -7, atol=1e-4)
            cache_err = np.max(np.abs(T["state_cache_out"].astype(np.float64) - cache))
            check(list(T["valid_rows"]) == n and close.all() and cache_err < 1e-6,
                  f"{name}: valid_rows {n}, pooled_key ({close.mean():.4f} close) and state_cache_out "
                  f"(max error {cache_err:.1e}) as numpy computes them; unused rows zero")

        shutil.copytree(g, dev)
        r = compare(binary, g, dev)
        check(r.returncode == 0 and "8 of 8 outputs passed" in r.stdout, "a device returning the golden passes")

        t = cases["bsh_norm_off_history"]["tensors"]["pooled_key"]
        a = load(dev, t)
        off = a.astype(np.float32)
        off[1, 0] *= 1.02  # batch 1 has two valid rows; its first is 2 % off
        np.save(os.path.join(dev, t["file"]), off.astype(a.dtype))
        r = compare(binary, g, dev)
        check(r.returncode == 1 and "FAIL bsh_norm_off_history pooled_key [isclose]" in r.stdout
              and "7 of 8 outputs passed" in r.stdout, "a valid row of pooled_key 2 % off fails, exit 1")
        off[1, 0], off[1, 2] = a[1, 0], np.nan  # batch 1's third row is past its two valid ones
        np.save(os.path.join(dev, t["file"]), off.astype(a.dtype))
        t = cases["th_norm_on_zero_batch"]["tensors"]["pooled_key"]
        a = load(dev, t).astype(np.float32)
        a[1:] = 1e4  # TH: only row 0 is valid (n = 1, 0, 0)
        np.save(os.path.join(dev, t["file"]), a.astype(ml_dtypes.bfloat16))
        r = compare(binary, g, dev)
        check(r.returncode == 0 and "8 of 8 outputs passed" in r.stdout,
              "garbage and NaN in pooled_key rows past the valid ones still pass (valid-row masking)")

        t = cases["th_norm_off_small_blocks"]["tensors"]["state_cache_out"]
        saved = load(dev, t)
        bad = saved.copy()
        bad[1:3] = 0.0  # two of 25 blocks wiped: 8 % of the cache
        np.save(os.path.join(dev, t["file"]), bad)
        r = compare(binary, g, dev)
        check(r.returncode == 1 and "FAIL th_norm_off_small_blocks state_cache_out [isclose]" in r.stdout,
              "a corrupted state_cache_out fails, exit 1")
        bad = saved.copy()
        bad[3, 0, 5] = np.nan  # one element of 6400: the share holds, the non-finite check does not
        np.save(os.path.join(dev, t["file"]), bad)
        r = compare(binary, g, dev)
        check(r.returncode == 1 and "non_finite 1 (<= 0)" in r.stdout, "one NaN in state_cache_out fails, exit 1")
        np.save(os.path.join(dev, t["file"]), saved)

        os.remove(os.path.join(g, cases["th_norm_on_zero_batch"]["tensors"]["valid_rows"]["file"]))
        r = compare(binary, g, dev)
        check(r.returncode == 2 and "valid_rows.npy" in r.stderr, "a missing valid_rows.npy gives exit 2 and names it")
    finally:
        shutil.rmtree(tmp)
    return golden_files.summary("check_keypool_golden")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
