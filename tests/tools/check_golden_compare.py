#!/usr/bin/env python3
"""`attnops golden` and `attnops compare` as a device developer uses them:
the export loads in numpy + ml_dtypes with the shapes and dtypes the
manifest records; GQA_01's exported gradients agree with a float64 numpy
backward computed here from the exported inputs; a "device" that returns
the golden passes `compare` (exit 0), one whose dq is 1 % off fails it
(exit 1, FAIL line for that output), a missing output file gives exit 2,
and so do a manifest path that leaves the export and a symbolic link.
Usage: check_golden_compare.py ATTNOPS_BINARY"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import golden_files
from golden_files import DT, check, compare, load


def main(binary):
    tmp = tempfile.mkdtemp()
    try:
        # A nested --out is created with its parents, as mkdir -p would.
        g, dev = os.path.join(tmp, "exports", "golden"), os.path.join(tmp, "device")
        r = subprocess.run([binary, "golden", "fag-seed", "--out", g], capture_output=True, text=True)
        check(r.returncode == 0, f"attnops golden fag-seed exits 0 ({r.stderr.strip()[:200]})")
        m = json.load(open(os.path.join(g, "manifest.json")))
        names = [c["name"] for c in m["cases"]]
        check(names == ["GQA_01", "MLA_02", "FP8E5_03", "FP8E4_04", "FP32_05", "TND_06"], f"manifest cases {names}")
        good = True
        for c in m["cases"]:
            for name, t in c["tensors"].items():
                a = load(g, t)
                good &= list(a.shape) == t["shape"] and a.dtype == np.dtype(DT[t["dtype"]])
        check(good, "every exported tensor loads with its manifest shape and dtype")

        # GQA_01 (BNSD, fp16, N1 = 2, N2 = 1, no mask): an independent float64 backward
        c = next(c for c in m["cases"] if c["name"] == "GQA_01")
        T = {k: load(g, t).astype(np.float64) for k, t in c["tensors"].items()}
        scale = c["attributes"]["scale_value"]
        q, k, v, dy, o = T["query"][0], T["key"][0], T["value"][0], T["dy"][0], T["attention_in"][0]
        dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
        for h in range(q.shape[0]):
            s = scale * q[h] @ k[0].T
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            dp = dy[h] @ v[0].T
            ds = p * (dp - np.sum(dy[h] * o[h], axis=1, keepdims=True))
            dq[h] = scale * ds @ k[0]
            dk[0] += scale * ds.T @ q[h]
            dv[0] += p.T @ dy[h]
        for name, mine in (("dq", dq), ("dk", dk), ("dv", dv)):
            err = np.max(np.abs(T[name][0] - mine)) / np.max(np.abs(mine))
            check(err < 2e-3, f"GQA_01 {name} matches a float64 numpy backward (max error {err:.2e} of max |{name}|)")

        shutil.copytree(g, dev)
        r = compare(binary, g, dev)
        check(r.returncode == 0 and "20 of 20 outputs passed" in r.stdout, "a device returning the golden passes")
        t = next(c for c in m["cases"] if c["name"] == "GQA_01")["tensors"]["dq"]
        a = load(dev, t)
        np.save(os.path.join(dev, t["file"]), (a.astype(np.float32) * 1.01).astype(a.dtype))
        r = compare(binary, g, dev)
        check(r.returncode == 1 and "FAIL GQA_01 dq [dual]" in r.stdout and "19 of 20 outputs passed" in r.stdout,
              "a device whose dq is 1 % off fails on GQA_01 dq, exit 1")
        os.remove(os.path.join(dev, t["file"]))
        r = compare(binary, g, dev)
        check(r.returncode == 2 and "dq.npy" in r.stderr, "a missing device output gives exit 2 and names the file")
        r = compare(binary, tmp, dev)
        check(r.returncode == 2 and "manifest" in r.stderr, "a directory without a manifest gives exit 2")

        # Hostile exports: a manifest path that leaves the export, and a symbolic link inside it.
        shutil.copy(os.path.join(g, t["file"]), os.path.join(dev, t["file"]))
        manifest_path = os.path.join(g, "manifest.json")
        evil = json.load(open(manifest_path))
        next(c for c in evil["cases"] if c["name"] == "GQA_01")["tensors"]["dq"]["file"] = "../device/GQA_01/dq.npy"
        json.dump(evil, open(manifest_path, "w"))
        r = compare(binary, g, dev)
        check(r.returncode == 2 and "case 'GQA_01': tensor 'dq': field 'file' must be a relative path" in r.stderr,
              "a manifest path with '..' is refused, naming the case and the field")
        json.dump(m, open(manifest_path, "w"))
        os.remove(os.path.join(dev, t["file"]))
        os.symlink(os.path.join(g, t["file"]), os.path.join(dev, t["file"]))
        r = compare(binary, g, dev)
        check(r.returncode == 2 and "a symbolic link" in r.stderr and "dq.npy" in r.stderr,
              "a device output that is a symbolic link is refused")
    finally:
        shutil.rmtree(tmp)
    return golden_files.summary("check_golden_compare")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
