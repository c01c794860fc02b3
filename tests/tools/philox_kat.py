#!/usr/bin/env python3
"""Known-answer vectors for the dropout generator, written independently of
the C code from the spec (shared/spec/flash-attention.md section 5.1):
Philox-4x32 with 7 rounds, multipliers 0xD2511F53 / 0xCD9E8D57, key
increments 0x9E3779B9 / 0xBB67AE85, key = (seed lo32, seed hi32), counter
= ceil(offset / 16) + n as a 128-bit little-word-first integer, 16 bytes
per block, little-endian within each word.

Writes one line per vector: `seed offset first count hexbytes`, where the
bytes are stream elements [first, first + count)."""
import sys

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def block(seed, counter):
    c = [(counter >> (32 * i)) & MASK32 for i in range(4)]
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    for _ in range(7):
        p0 = M0 * c[0]
        p1 = M1 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & MASK32, p1 & MASK32, ((p0 >> 32) ^ c[3] ^ k1) & MASK32, p0 & MASK32]
        k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
    return b"".join(w.to_bytes(4, "little") for w in c)


def stream(seed, offset, first, count):
    c0 = -(-offset // 16)  # ceil
    out = bytearray()
    n = first // 16
    while len(out) < (first % 16) + count:
        out += block(seed, (c0 + n) % (1 << 128))
        n += 1
    return bytes(out[first % 16: first % 16 + count])


VECTORS = [
    (2, 0, 0, 64), (2, 0, 1000, 37), (0, 0, 0, 16), (12345, 17, 5, 100),
    (2**31 - 1, 2**20 + 3, 123456, 48), (2**40 + 7, 0, 0, 32),      # a seed above 2^32: hi word of the key
    (9, (2**32 - 1) * 16, 0, 64),                                  # the counter's low word carries
    (9, (2**32) * 16 - 5, 40, 48),                                 # offset not a multiple of 16
]

if __name__ == "__main__":
    with open(sys.argv[1], "w") as f:
        for seed, offset, first, count in VECTORS:
            f.write(f"{seed} {offset} {first} {count} {stream(seed, offset, first, count).hex()}\n")
