#!/usr/bin/env python3
"""`attnops golden fia` and `attnops compare` as an inference-attention device developer
uses them: every exported case loads in numpy + ml_dtypes; its attention_out and softmax_lse agree
with the tests' float64 FusedInferAttentionScore (python/tests/fia_oracle.py, which never calls
attnops) run here on the exported inputs and attributes; a device that returns the oracle's values
passes `compare` (exit 0), one with an attention_out element 5 % off fails (exit 1), and a missing
output file gives exit 2.
Usage: check_fia_golden.py ATTNOPS_BINARY"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

import golden_files
from golden_files import DT, check, compare, load

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "tests"))
from fia_oracle import fia  # noqa: E402

KW = ("input_layout", "num_heads", "num_key_value_heads", "scale", "pre_tokens", "next_tokens", "sparse_mode",
      "block_size")
TENSORS = ("block_table", "atten_mask", "pse_shift", "query_rope", "key_rope", "key_antiquant_scale",
           "key_antiquant_offset", "value_antiquant_scale", "value_antiquant_offset", "alibi_slopes")
UNIT_ROUNDOFF = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def torch_of(a):
    if a.dtype == DT["bf16"]:
        return torch.from_numpy(a.astype(np.float32)).bfloat16()
    return torch.from_numpy(np.ascontiguousarray(a))


def oracle_outputs(root, case):
    T = {name: load(root, t) for name, t in case["tensors"].items() if t["role"] == "input"}
    kw = {k: case["attributes"][k] for k in KW}
    if kw["block_size"] == 0:
        del kw["block_size"]
    for name in ("key_antiquant_mode", "value_antiquant_mode", "softcap"):
        if name in case["attributes"]:
            kw[name] = case["attributes"][name]
    for name in TENSORS:
        if name in T:
            kw[name] = torch_of(T[name])
    for name in ("actual_seq_lengths", "actual_seq_lengths_kv"):
        if name in T:
            kw[name] = [int(x) for x in T[name]]
    return fia(torch_of(T["query"]), torch_of(T["key"]), torch_of(T["value"]), **kw)


def main():
    binary = sys.argv[1]
    root = tempfile.mkdtemp()
    try:
        golden, device = os.path.join(root, "golden"), os.path.join(root, "device")
        out = subprocess.run([binary, "golden", "fia", "--out", golden], capture_output=True, text=True)
        check(out.returncode == 0, f"golden fia exits 0 ({out.stderr.strip()[:200]})")
        with open(os.path.join(golden, "manifest.json")) as f:
            manifest = json.load(f)
        check(len(manifest["cases"]) == 14 and all(c["op"] == "fia" for c in manifest["cases"]),
              "the manifest lists the suite's fourteen fia cases")
        for case in manifest["cases"]:
            e_out, e_lse = oracle_outputs(golden, case)
            outs = {n: t for n, t in case["tensors"].items() if t["role"] == "output"}
            g_out = load(golden, outs["attention_out"]).astype(np.float64)
            err = np.abs(g_out - e_out.numpy()).max() if g_out.size else 0.0
            # the golden rounds each output once from double: one unit roundoff of the largest, twice for slack
            largest = np.abs(e_out.numpy()).max() if e_out.numel() else 0.0
            limit = 2 * UNIT_ROUNDOFF[outs["attention_out"]["dtype"]] * largest
            check(g_out.shape == tuple(e_out.shape) and err <= limit,
                  f"{case['name']}: the golden's attention_out is the oracle's (max err {err:.3g})")
            os.makedirs(os.path.join(device, case["name"]), exist_ok=True)
            dtype = DT[outs["attention_out"]["dtype"]]
            np.save(os.path.join(device, outs["attention_out"]["file"]), e_out.numpy().astype(dtype))
            if "softmax_lse" in outs:
                lse = e_lse.numpy().reshape(load(golden, outs["softmax_lse"]).shape).astype(np.float32)
                np.save(os.path.join(device, outs["softmax_lse"]["file"]), lse)
        res = compare(binary, golden, device)
        check(res.returncode == 0, f"the oracle's outputs pass compare ({res.stdout.strip().splitlines()[-1]})")
        victim = manifest["cases"][0]["tensors"]["attention_out"]
        path = os.path.join(device, victim["file"])
        a = load(device, victim).astype(np.float32)
        flat = a.reshape(-1)
        flat[np.argmax(np.abs(flat))] *= 1.05
        np.save(path, a.astype(DT[victim["dtype"]]))
        check(compare(binary, golden, device).returncode == 1, "an element 5 % off fails compare (exit 1)")
        os.remove(path)
        check(compare(binary, golden, device).returncode == 2, "a missing output file gives exit 2")
    finally:
        shutil.rmtree(root)
    return golden_files.summary("check_fia_golden")


if __name__ == "__main__":
    sys.exit(main())
