#!/usr/bin/env python3
"""`attnops dropout-mask` against the independent Python stream of spec 5
(philox_kat.py): the .npy it writes must hold, for every element, the keep
decision of the stream byte at the spec's index (5.2 padded, 5.3 TND), and
--bits must be that mask packed LSB first.  argv: the attnops binary, a
scratch directory."""
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from philox_kat import stream  # noqa: E402


def threshold(kp):
    return math.floor(np.float32(kp) * np.float32(255.0))


def expected_padded(seed, offset, kp, B, N, S1, S2):
    s2a = (S2 + 15) // 16 * 16
    raw = np.frombuffer(stream(seed, offset, 0, B * N * S1 * s2a), dtype=np.uint8).reshape(B, N, S1, s2a)
    return (raw[..., :S2] <= threshold(kp)).astype(np.uint8)


def expected_tnd(seed, offset, kp, N, q, kv):
    out, base = [], 0
    for s1, s2 in zip(q, kv):
        s2a = (s2 + 15) // 16 * 16
        raw = np.frombuffer(stream(seed, offset, N * base, N * s1 * s2a), dtype=np.uint8).reshape(N, s1, s2a)
        out.append((raw[..., :s2] <= threshold(kp)).astype(np.uint8).reshape(-1))
        base += s1 * s2a
    return np.concatenate(out)


def run(cli, args, path):
    subprocess.run([cli, "dropout-mask", *args, "--out", path], check=True, stdout=subprocess.DEVNULL)
    return np.load(path)


def main():
    cli, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    failures = 0
    checks = [
        (["--keep", "0.9", "--seed", "2", "--offset", "0", "--heads", "3", "--shape", "2,5,37"],
         expected_padded(2, 0, 0.9, 2, 3, 5, 37)),
        (["--keep", "0.5", "--seed", "77", "--offset", "40", "--heads", "2", "--seqs", "7:0:33", "--kvseqs", "5:9:17"],
         expected_tnd(77, 40, 0.5, 2, [7, 0, 33], [5, 9, 17])),
    ]
    for args, want in checks:
        got = run(cli, args, os.path.join(tmp, "mask.npy"))
        if got.dtype != np.uint8 or got.shape != want.shape or not np.array_equal(got, want):
            failures += 1
            print(f"FAIL {' '.join(args)}: shape {got.shape} vs {want.shape}, "
                  f"{int((got.reshape(-1) != want.reshape(-1)).sum()) if got.size == want.size else 'n/a'} differ")
        bits = run(cli, args + ["--bits"], os.path.join(tmp, "bits.npy"))
        if not np.array_equal(bits, np.packbits(want.reshape(-1), bitorder="little")):
            failures += 1
            print(f"FAIL {' '.join(args)} --bits: not the byte mask packed LSB first")
    print(f"check_dropout_npy: {2 * len(checks) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
