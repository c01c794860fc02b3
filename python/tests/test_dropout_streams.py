"""The two dropout streams of npu_fusion_attention, bit for bit, against generators written here from the public
descriptions (never the library's code):

- Ascend A2/A3: op-plugin draws the mask beforehand with aclnnDropoutGenMaskV2 (FlashAttentionKernelNpuOpApi.cpp,
  dropout_gen_mask_impl: shape [numels], prob = float(1) - float(keep_prob), the query's dtype).  ops-math's golden
  for it (random/dsa_gen_bit_mask/tests/st/aclnnDropoutGenMaskV2) is TensorFlow's StatelessRandomUniformV2 with
  key [seed], counter [0, offset], alg Philox, in that dtype, kept where u >= prob, packed LSB first.  TensorFlow's
  Philox-4x32-10 and its uniform conversions (tensorflow/core/lib/random/philox_random.h,
  random_distributions.h) are re-derived below.  The FlashAttention kernel reads the mask flat: [B, N1, S1, S2],
  and in TND per-batch [N1, S1_b, S2_b] blocks back to back.
- Ascend 950: the kernel's own stream (test_npu_compat.py and the C suite check it; here only that the SoC
  selects it)."""
import ml_dtypes
import numpy as np
import pytest
import torch

import attnops
import attnops.torch_npu as torch_npu
from checks import assert_close, assert_gradients_close

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox4x32_10(counter, key):
    """counter: uint64 [n, 4] words, key: (k0, k1) -> uint32 [n, 4] (ten rounds, the key bumped between)."""
    c = counter.astype(np.uint64)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(10):
        p0, p1 = np.uint64(M0) * c[:, 0], np.uint64(M1) * c[:, 2]
        c = np.stack([((p1 >> np.uint64(32)) ^ c[:, 1] ^ k0) & mask, p1 & mask,
                      ((p0 >> np.uint64(32)) ^ c[:, 3] ^ k1) & mask, p0 & mask], axis=1)
        k0, k1 = (k0 + np.uint64(W0)) & mask, (k1 + np.uint64(W1)) & mask
    return c.astype(np.uint32)


def tf_stateless_uniform(count, seed, offset, dtype):
    """StatelessRandomUniformV2(shape [count], key [seed], counter [0, offset], alg Philox) in `dtype`: element i is
    word i % 4 of the generator's output for counter + i // 4 (counter words: lo/hi of 0, lo/hi of offset)."""
    blocks = -(-count // 4)
    n = np.arange(blocks, dtype=np.uint64)  # + 0 in the low 64 bits (no carry for these sizes)
    counter = np.stack([n & np.uint64(0xFFFFFFFF), n >> np.uint64(32),
                        np.full(blocks, offset & 0xFFFFFFFF, np.uint64),
                        np.full(blocks, offset >> 32, np.uint64)], axis=1)
    words = philox4x32_10(counter, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)).reshape(-1)[:count]
    bits = {"float32": 23, "float16": 10, "bfloat16": 7}[dtype]  # the mantissa of [1, 2), minus 1
    return (words & np.uint32((1 << bits) - 1)).astype(np.float64) / (1 << bits)


def gen_mask_oracle(count, prob, seed, offset, dtype):
    """u8 [count], 1 = kept: u >= prob rounded to dtype."""
    np_dtype = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    return (tf_stateless_uniform(count, seed, offset, dtype) >= float(np.array(prob).astype(np_dtype))).astype(np.uint8)


def unpack(bits, count):
    return np.unpackbits(bits, bitorder="little")[:count]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("seed, offset, prob", [(2, 0, 0.1), (12345678901, 24, 0.5), (7, (1 << 33) + 5, 0.3)])
def test_gen_mask_matches_the_tensorflow_stream(dtype, seed, offset, prob):
    count = 1001
    bits = attnops.dropout_gen_mask(count, prob, seed, offset, dtype)
    assert bits.shape == (-(-count // 128) * 16,)  # as CANN allocates it
    want = gen_mask_oracle(count, prob, seed, offset, dtype)
    assert np.array_equal(unpack(bits, count), want)
    assert not unpack(bits, len(bits) * 8)[count:].any()  # the tail is zero
    # the check bites: another offset or dtype gives another mask
    assert not np.array_equal(gen_mask_oracle(count, prob, seed, offset + 4, dtype), want)


def test_npu_dropout_gen_mask_is_the_same_stream():
    q = torch.empty(1, dtype=torch.float16)
    bits = torch_npu._npu_dropout_gen_mask(q, [3, 100], 0.2, 2, 12)
    assert bits.dtype == torch.uint8 and bits.numel() == -(-300 // 128) * 16
    assert np.array_equal(unpack(bits.numpy(), 300), gen_mask_oracle(300, 0.2, 2, 12, "float16"))


def golden_dropout_attention(q, k, v, scale, keep, keep_prob):
    """BNSD float64 with keep [B, N, S1, S2] (1 = kept): softmax(q k^T scale) * keep / keep_prob @ v."""
    p = torch.softmax(q.double() @ k.double().transpose(-1, -2) * scale, -1)
    return (p * keep / keep_prob) @ v.double()


@pytest.fixture
def a2():
    before = torch_npu.soc()
    torch_npu.set_soc("Ascend910B4")
    yield
    torch_npu.set_soc(before)


def test_a2_fusion_attention_applies_the_gen_mask_stream(a2):
    b, n, s1, s2, d, keep_prob = 2, 3, 17, 40, 16, 0.8
    q, k, v = (torch.randn(b, s, n, d, dtype=torch.float16, requires_grad=True) for s in (s1, s2, s2))
    torch.manual_seed(2)  # the NPU generator: seed 2, offset 0 for the first dropout call
    out = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", scale=0.25, keep_prob=keep_prob)[0]
    numels = b * n * s1 * s2
    keep = torch.from_numpy(gen_mask_oracle(numels, float(np.float32(1) - np.float32(keep_prob)), 2, 0,
                                            "float16").reshape(b, n, s1, s2)).double()
    qd, kd, vd = (t.detach().double().transpose(1, 2).requires_grad_() for t in (q, k, v))
    want = golden_dropout_attention(qd, kd, vd, 0.25, keep, keep_prob)
    assert_close("attention_out", out.transpose(1, 2), want, torch.float16, s2)
    dy = torch.randn_like(out)
    out.backward(dy)
    want.backward(dy.double().transpose(1, 2))
    assert_gradients_close(("dq", "dk", "dv"), [t.grad.transpose(1, 2) for t in (q, k, v)],
                           [t.grad for t in (qd, kd, vd)], torch.float16, s2)
    # the 950's stream is another mask: the check would catch a stream mix-up
    torch_npu.set_soc("Ascend950PR")
    torch.manual_seed(2)
    other = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", scale=0.25, keep_prob=keep_prob)[0]
    assert (other - out).abs().max() > 1e-2


def test_a2_tnd_slices_the_flat_stream_per_batch(a2):
    n, d, keep_prob = 2, 16, 0.7
    qlen, kvlen = [5, 12, 20], [9, 13, 30]  # cumulative: S1 5, 7, 8 and S2 9, 4, 17
    q = torch.randn(qlen[-1], n, d)
    k, v = torch.randn(kvlen[-1], n, d), torch.randn(kvlen[-1], n, d)
    torch.manual_seed(3)
    out = torch_npu.npu_fusion_attention(q, k, v, n, "TND", scale=0.25, keep_prob=keep_prob, actual_seq_qlen=qlen,
                                         actual_seq_kvlen=kvlen)[0]
    s1 = np.diff([0] + qlen)
    s2 = np.diff([0] + kvlen)
    numels = int(n * np.sum(s1 * s2))
    flat = gen_mask_oracle(numels, float(np.float32(1) - np.float32(keep_prob)), 3, 0, "float32")
    at, q0, k0 = 0, 0, 0
    for a, c in zip(s1, s2):
        keep = torch.from_numpy(flat[at:at + n * a * c].reshape(1, n, a, c)).double()
        want = golden_dropout_attention(q[q0:q0 + a].transpose(0, 1)[None], k[k0:k0 + c].transpose(0, 1)[None],
                                        v[k0:k0 + c].transpose(0, 1)[None], 0.25, keep, keep_prob)
        assert_close("attention_out", out[q0:q0 + a], want[0].transpose(0, 1), torch.float32, c)
        at, q0, k0 = at + n * a * c, q0 + a, k0 + c
