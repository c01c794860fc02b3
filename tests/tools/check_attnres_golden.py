#!/usr/bin/env python3
"""`attnops golden attnres-seed` and `attnops compare` as an AttnRes device
developer uses them, on the seed's second case (b1_t1023_n32_d512_bf16):
the export loads in numpy + ml_dtypes with the shapes and dtypes the
manifest records, with the case's attributes; h, rms, alpha and every
gradient agree with a float64 numpy AttnRes (spec B.1, B.2) run here on the
exported inputs; the benchmark chain's outputs (role "bench") are there and
are not the golden's; a device returning the golden passes `compare` (exit
0), so does one returning the benchmark chain's outputs (ratio 1); one whose
grad_block_03 is 2 % off fails (exit 1) unless --bench names that device
(--bench takes precedence over the export's bench); a missing device output
or bench file gives exit 2 and names it.
Usage: check_attnres_golden.py ATTNOPS_BINARY"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import golden_files
from golden_files import DT, check, compare, load

CASE = "b1_t1023_n32_d512_bf16"


def attn_res(T, attrs):
    """Spec B.1 and B.2 in float64 (eps and scale as the f32 the operator sees)."""
    f64 = lambda name: T[name].astype(np.float64)
    N, rms_on = attrs["num_blocks"], attrs["enable_rmsnorm"]
    V = np.stack([f64(f"block_{l:02d}") for l in range(N)] + ([f64("partial_block")] if attrs["partial_block"] else []))
    D = V.shape[-1]
    eps, scale = np.float64(np.float32(attrs["rmsnorm_eps"])), np.float64(np.float32(attrs["scale"]))
    w, g = f64("proj_weight"), f64("grad_h")
    gamma = f64("rmsnorm_gamma") if rms_on else np.ones(D)
    r = np.sqrt((V * V).sum(-1) / D + eps) if rms_on else np.ones(V.shape[:-1])
    K = V / r[..., None] * gamma
    z = scale * (K @ w)
    alpha = np.exp(z - z.max(axis=0))
    alpha /= alpha.sum(axis=0)
    out = {"h": (alpha[..., None] * V).sum(0), "alpha": np.moveaxis(alpha, 0, -1)}
    dA = (g * V).sum(-1)
    dz = alpha * (dA - (alpha * dA).sum(0))
    dK = scale * dz[..., None] * w
    out["grad_proj_weight"] = scale * (dz[..., None] * K).sum((0, 1, 2))
    if rms_on:
        c = (gamma * dK * V).sum(-1)
        dV = alpha[..., None] * g + gamma * dK / r[..., None] - V * (c / (D * r ** 3))[..., None]
        out["rms"] = np.moveaxis(r, 0, -1)[..., None]
        out["grad_rmsnorm_gamma"] = (dK * V / r[..., None]).sum((0, 1, 2))
    else:
        dV = alpha[..., None] * g + dK
    for l in range(N):
        out[f"grad_block_{l:02d}"] = dV[l]
    if attrs["partial_block"]:
        out["grad_partial_block"] = dV[N]
    return out


def rounding_errors(T, tensors, outputs, want):
    """Per output, the worst |got - exact| in units of one rounding of its dtype: u |exact| (u = 2^-8 for
    bf16, 2^-22 for f32) plus a floor of the output's largest magnitude times 1e-6 for the bf16
    gradients, whose elements cancel to ~0 (the golden rounds its bf16 intermediates where the device
    does), and times 1e-9 for the f32 rms and alpha, which are positive and never cancel: at 1e-6
    their floor hid an eps-sized change of the RMSNorm."""
    worst = {}
    for name in outputs:
        got, exact = T[name].astype(np.float64), want[name]
        bf16 = tensors[name]["dtype"] == "bf16"
        u, floor = (2.0 ** -8, 1e-6) if bf16 else (2.0 ** -22, 1e-9)
        worst[name] = np.max(np.abs(got - exact) / (u * np.abs(exact) + floor * np.abs(exact).max()))
    return worst


def main(binary):
    tmp = tempfile.mkdtemp()
    try:
        g, dev = os.path.join(tmp, "golden"), os.path.join(tmp, "device")
        r = subprocess.run([binary, "golden", "attnres-seed", "--filter", CASE, "--out", g], capture_output=True,
                           text=True)
        check(r.returncode == 0, f"attnops golden attnres-seed --filter {CASE} exits 0 ({r.stderr.strip()[:200]})")
        m = json.load(open(os.path.join(g, "manifest.json")))
        c = m["cases"][0]
        check(len(m["cases"]) == 1 and c["name"] == CASE and c["op"] == "attnres" and c["compare"] == "triple"
              and c["attributes"] == {"num_blocks": 32, "partial_block": True, "enable_rmsnorm": True, "scale": 1,
                                      "rmsnorm_eps": 1e-6, "data_seed": 42},
              f"manifest: the seed's case, op attnres, rule triple, its attributes ({c['attributes']})")
        tensors = c["tensors"]
        roles = {role: [k for k, t in tensors.items() if t["role"] == role] for role in ("input", "output", "bench")}
        blocks = [f"block_{l:02d}" for l in range(32)]
        outputs = ["h", "rms", "alpha", "grad_partial_block", "grad_block_00", "grad_proj_weight",
                   "grad_rmsnorm_gamma"] + [f"grad_{b}" for b in blocks[1:]]
        check(roles["input"] == blocks + ["partial_block", "proj_weight", "rmsnorm_gamma", "grad_h"]
              and roles["output"] == outputs and roles["bench"] == ["bench_" + o for o in outputs]
              and all(tensors["bench_" + o]["file"] == f"{CASE}/bench_{o}.npy" for o in outputs),
              "inputs, outputs (the seed's first, then every block's gradient) and the bench chain's outputs")
        T = {k: load(g, t) for k, t in tensors.items()}
        check(all(list(T[k].shape) == t["shape"] and T[k].dtype == np.dtype(DT[t["dtype"]]) for k, t in tensors.items())
              and T["h"].shape == (1, 1023, 512) and T["rms"].shape == (1, 1023, 33, 1)
              and T["alpha"].shape == (1, 1023, 33)
              and T["grad_proj_weight"].shape == (512,) and T["rms"].dtype == np.float32,
              "every exported tensor loads with its manifest shape and dtype")

        worst = rounding_errors(T, tensors, outputs, attn_res(T, c["attributes"]))  # golden vs numpy
        bad = {k: round(float(v), 2) for k, v in worst.items() if not v <= 1.0}
        check(not bad, f"h, rms, alpha and all {len(outputs) - 3} gradients as a float64 numpy AttnRes computes them "
                       f"(within one rounding; worst {max(worst.values()):.2f} of it){' ' + str(bad) if bad else ''}")
        # the comparison sees an RMSNorm off by its eps (2 eps instead of eps)
        off_eps = rounding_errors(T, tensors, outputs, attn_res(T, dict(c["attributes"], rmsnorm_eps=2e-6)))
        check(off_eps["rms"] > 1.0, f"... and would see an eps-sized RMSNorm change (rms at {off_eps['rms']:.2f} "
                                    "roundings with 2 eps)")
        check(all(T["bench_" + o].shape == T[o].shape for o in outputs) and not np.array_equal(T["bench_h"], T["h"]),
              "the benchmark chain's outputs have the golden's shapes and are not the golden's values")

        shutil.copytree(g, dev)
        r = compare(binary, g, dev)
        check(r.returncode == 0 and "38 of 38 outputs passed" in r.stdout
              and f"PASS {CASE} grad_block_31 [triple]" in r.stdout, "a device returning the golden passes")
        for o in outputs:
            shutil.copy(os.path.join(g, tensors["bench_" + o]["file"]), os.path.join(dev, tensors[o]["file"]))
        r = compare(binary, g, dev)
        check(r.returncode == 0 and "38 of 38 outputs passed" in r.stdout and "mare_ratio 1 (<= 2)" in r.stdout,
              "a device returning the benchmark chain's outputs passes (ratio 1)")

        t = tensors["grad_block_03"]
        off = T["grad_block_03"].astype(np.float32) * 1.02
        np.save(os.path.join(dev, t["file"]), off.astype(T["grad_block_03"].dtype))
        r = compare(binary, g, dev)
        check(r.returncode == 1 and f"FAIL {CASE} grad_block_03 [triple]" in r.stdout
              and "37 of 38 outputs passed" in r.stdout, "a device whose grad_block_03 is 2 % off fails, exit 1")
        r = compare(binary, g, dev, "--bench", dev)
        check(r.returncode == 0 and "38 of 38 outputs passed" in r.stdout,
              "--bench DIR is the benchmark chain instead of the export's (that device against itself passes)")

        os.remove(os.path.join(dev, t["file"]))
        r = compare(binary, g, dev)
        check(r.returncode == 2 and "grad_block_03.npy" in r.stderr,
              "a missing device output gives exit 2 and names it")
        shutil.copy(os.path.join(g, t["file"]), os.path.join(dev, t["file"]))
        os.remove(os.path.join(g, tensors["bench_grad_block_05"]["file"]))
        r = compare(binary, g, dev)
        check(r.returncode == 2 and "bench_grad_block_05.npy" in r.stderr,
              "a missing bench file gives exit 2 and names it")
    finally:
        shutil.rmtree(tmp)
    return golden_files.summary("check_attnres_golden")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
