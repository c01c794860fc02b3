"""The attention family as NPU test code calls it: `import torch_npu`, tensors moved with .npu(),
op-plugin's TestCase / SupportedDevices, float64 goldens written here from the documents."""
import math
import unittest
import warnings

import numpy as np
import torch
import torch_npu
from torch_npu.testing.common_utils import SupportedDevices
from torch_npu.testing.testcase import TestCase, run_tests


def golden_attention(q, k, v, scale, mask=None, sink=None):
    """BNSD float64: softmax(q k^T * scale, masked where mask is true) v, GQA by head groups;
    -> (out, lse [B, N, S1, 1])."""
    q, k, v = (t.double().cpu() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ k.transpose(-1, -2) * scale
    if mask is not None:
        s = s.masked_fill(mask.bool(), -math.inf)
    lse = torch.logsumexp(s, -1, keepdim=True)
    return torch.exp(s - lse) @ v, lse


class TestFusedInferAttentionV2(TestCase):
    """npu_fused_infer_attention_score_v2 (op-plugin's current schema) against the golden and the v1 call."""

    def _qkv(self, b=2, n=8, n2=2, s1=6, s2=40, d=64, dtype=torch.float16):
        q = torch.randn(b, n, s1, d, dtype=dtype).npu()
        k = torch.randn(b, n2, s2, d, dtype=dtype).npu()
        v = torch.randn(b, n2, s2, d, dtype=dtype).npu()
        return q, k, v

    def test_layouts_against_the_golden(self):
        q, k, v = self._qkv()
        scale = 1 / math.sqrt(q.shape[-1])
        want, want_lse = golden_attention(q, k, v, scale)
        as_layout = {"BNSD": lambda t: t, "BSND": lambda t: t.transpose(1, 2).contiguous(),
                     "BSH": lambda t: t.transpose(1, 2).flatten(2).contiguous(),
                     "NBSD": lambda t: t.transpose(0, 1).contiguous()}
        for layout in ("BNSD", "BSND", "BSH", "BNSD_BSND", "BSH_BNSD", "BSND_BNSD", "BSH_NBSD", "BSND_NBSD",
                       "BNSD_NBSD"):
            q_layout, out_layout = layout.split("_")[0], layout.split("_")[-1]
            out, lse = torch_npu.npu_fused_infer_attention_score_v2(
                as_layout[q_layout](q), as_layout[q_layout](k), as_layout[q_layout](v), num_query_heads=8,
                num_key_value_heads=2, softmax_scale=scale, input_layout=layout, return_softmax_lse=True)
            self.assertRtolEqual(as_layout[out_layout](want).to(out.dtype), out, prec16=5e-3)
            self.assertRtolEqual(want_lse.float(), lse)

    def test_tnd_and_ntd_against_the_golden(self):
        q, k, v = self._qkv(b=1, n=4, n2=4, s1=12, s2=12, d=32, dtype=torch.bfloat16)
        qlen, kvlen = [5, 12], [7, 12]  # cumulative: batches of 5 / 7 rows and 7 / 5 keys
        tnd = [t[0].transpose(0, 1).contiguous() for t in (q, k, v)]  # [T, N, D]
        want = []
        for (q0, q1), (k0, k1) in zip(((0, 5), (5, 12)), ((0, 7), (7, 12))):
            o, _ = golden_attention(*(t[a:b].transpose(0, 1)[None] for t, (a, b) in
                                      zip(tnd, ((q0, q1), (k0, k1), (k0, k1)))), 0.125)
            want.append(o[0].transpose(0, 1))
        want = torch.cat(want)
        for layout in ("TND", "NTD", "NTD_TND", "TND_NTD"):
            inputs = tnd if layout.startswith("TND") else [t.transpose(0, 1).contiguous() for t in tnd]
            out, lse = torch_npu.npu_fused_infer_attention_score_v2(
                *inputs, num_query_heads=4, softmax_scale=0.125, input_layout=layout, actual_seq_qlen=qlen,
                actual_seq_kvlen=kvlen)
            expected = want if layout.endswith("TND") else want.transpose(0, 1)
            self.assertRtolEqual(expected.float(), out.float(), prec=1e-2)  # bf16: compared as f32
            self.assertEqual(lse.numel(), 0)  # no lse asked for: op-plugin's empty tensor

    def test_v2_equals_v1(self):
        """The v2 entry point is the v1 op with its arguments renamed: paged int8 decode, bit for bit."""
        b, n, n2, d, block, blocks = 2, 8, 2, 64, 16, 9
        q = torch.randn(b, 1, n * d, dtype=torch.float16).npu()
        k_cache = torch.randint(-100, 100, (blocks, block, n2 * d), dtype=torch.int8).npu()
        v_cache = torch.randint(-100, 100, (blocks, block, n2 * d), dtype=torch.int8).npu()
        table = torch.tensor([[1, 3, 5, 7], [2, 4, 6, 8]], dtype=torch.int32)
        scale = torch.rand(2, n2 * d, dtype=torch.float16) * 0.02
        lens = [50, 23]
        v1 = torch_npu.npu_fused_infer_attention_score(
            q, k_cache, v_cache, actual_seq_lengths_kv=lens, block_table=table, antiquant_scale=scale,
            num_heads=n, num_key_value_heads=n2, scale=0.125, block_size=block, input_layout="BSH",
            softmax_lse_flag=True)
        v2 = torch_npu.npu_fused_infer_attention_score_v2(
            q, k_cache, v_cache, actual_seq_kvlen=lens, block_table=table, dequant_scale_key=scale[0],
            dequant_scale_value=scale[1], num_query_heads=n, num_key_value_heads=n2, softmax_scale=0.125,
            block_size=block, input_layout="BSH", return_softmax_lse=True)
        self.assertTrue(torch.equal(v1[0], v2[0]) and torch.equal(v1[1], v2[1]))

    def test_unimplemented_arguments_are_refused_by_name(self):
        q, k, v = self._qkv()
        for name, value in (("quant_scale_out", torch.ones(1)),
                            ("dequant_scale_query", torch.ones(1)), ("out_dtype", 1)):
            with self.assertRaisesRegex(NotImplementedError, name):
                torch_npu.npu_fused_infer_attention_score_v2(q, k, v, num_query_heads=8, input_layout="BNSD",
                                                             **{name: value})

    @SupportedDevices(["Ascend910B"])
    def test_skipped_on_another_soc(self):
        raise AssertionError("SupportedDevices must skip a test for another SoC")


class TestFlashAttentionScoreFallback(TestCase):
    def test_prefix_out_of_range_runs_over_the_full_mask(self):
        """sparse_mode 5 with a prefix outside [max(0, S2 - S1), S2]: the device's tiling warns and runs the
        dense path over the mask given; so does attnops (docs/NUMERICS.md, "The device's fallbacks")."""
        b, n, s1, s2, d = 2, 2, 16, 24, 32
        q = torch.randn(b, s1, n, d).npu().requires_grad_()
        k = torch.randn(b, s2, n, d).npu().requires_grad_()
        v = torch.randn(b, s2, n, d).npu().requires_grad_()
        mask = torch.rand(b, 1, s1, s2) < 0.3
        mask[..., 0] = False  # every row attends to something
        out = torch_npu.npu_fusion_attention(q, k, v, n, "BSND", atten_mask=mask.npu(), scale=0.125,
                                             sparse_mode=5, prefix=[s2 + 3, 1])[0]
        want, _ = golden_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), 0.125, mask)
        self.assertRtolEqual(want.transpose(1, 2).float(), out.detach())
        out.sum().backward()  # the backward takes the same fallback
        self.assertTrue(all(torch.isfinite(t.grad).all() for t in (q, k, v)))


class TestFusionAttentionV3(TestCase):
    """npu_fusion_attention_v3 / _grad_v3 (op-plugin's graph-mode forms): tensor lengths, seed and offset as
    tensors, dropout replayed from them, sinks with dsink; the same bits as v1."""

    def test_v3_equals_v1(self):
        q = torch.randn(24, 2, 16).npu()
        k, v = torch.randn(40, 2, 16).npu(), torch.randn(40, 2, 16).npu()
        sink = torch.randn(2)
        qlen, kvlen = torch.tensor([10, 24]), torch.tensor([15, 40])
        torch.npu.manual_seed(5)
        out, smax, ssum, _, seed, offset = torch_npu.npu_fusion_attention_v3(
            q, k, v, 2, "TND", scale=0.25, keep_prob=0.9, actual_seq_qlen=qlen, actual_seq_kvlen=kvlen, sink=sink)
        torch.npu.manual_seed(5)
        v1 = torch_npu.npu_fusion_attention(q, k, v, 2, "TND", scale=0.25, keep_prob=0.9,
                                            actual_seq_qlen=qlen.tolist(), actual_seq_kvlen=kvlen.tolist(), sink=sink)
        self.assertTrue(torch.equal(out, v1[0]) and int(seed) == v1[4] and int(offset) == v1[5])
        dy = torch.randn(out.shape)
        grads = torch_npu.npu_fusion_attention_grad_v3(
            q, k, v, dy, 2, "TND", softmax_max=smax, softmax_sum=ssum, attention_in=out, scale_value=0.25,
            keep_prob=0.9, seed=seed, offset=offset, actual_seq_qlen=qlen, actual_seq_kvlen=kvlen, sink=sink)
        want = torch_npu.npu_fusion_attention_grad(
            q, k, v, dy, 2, "TND", softmax_max=smax, softmax_sum=ssum, attention_in=out, scale_value=0.25,
            keep_prob=0.9, seed=int(seed), offset=int(offset), actual_seq_qlen=qlen.tolist(),
            actual_seq_kvlen=kvlen.tolist(), sink=sink)
        self.assertEqual(len(grads), 5)
        for a, e in zip(grads, want):
            self.assertTrue(torch.equal(a, e))


class TestDeviceEmulation(TestCase):
    def test_device_calls(self):
        torch.npu.set_compile_mode(jit_compile=False)
        torch.npu.config.allow_internal_format = False
        torch_npu.npu.synchronize()
        self.assertEqual(torch.npu.get_device_name(0), torch_npu.npu.get_device_name())
        self.assertTrue(torch.npu.get_device_name().startswith("Ascend"))
        self.assertEqual(torch.npu.memory_allocated(), 0)
        free, total = torch.npu.mem_get_info()
        self.assertTrue(0 < free <= total)
        start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
        start.record()
        torch.npu.current_stream().synchronize()
        end.record()
        end.synchronize()
        self.assertGreaterEqual(start.elapsed_time(end), 0.0)
        lin = torch.nn.Linear(4, 4).npu()
        self.assertIsInstance(lin, torch.nn.Linear)
        self.assertEqual(lin(torch.randn(2, 4).npu()).device, torch.device("npu"))

    def test_rtol_rule_can_fail(self):
        x = np.ones(1000, np.float32)
        self.assertRtolEqual(x, x * (1 + 5e-5))
        with self.assertRaises(AssertionError):
            self.assertRtolEqual(x, x * 1.01)


class TestCompileAfterInstall(TestCase):
    """torch.compile with every backend after install(), with and without attnops ops in the graph."""

    def test_backends(self):
        class Plain(torch.nn.Module):
            def forward(self, x):
                return (x + torch.ones(x.shape[-1], device="npu") + torch.arange(x.shape[-1], device=x.device)).sum()

        class WithAttention(torch.nn.Module):
            def forward(self, x):
                out = torch_npu.npu_fusion_attention(x, x, x, 2, "BSND", scale=0.25)[0]
                return out.sum()

        x = torch.randn(1, 8, 2, 16).npu()
        for model in (Plain(), WithAttention()):
            want = model(x)
            for backend in ("eager", "aot_eager", "inductor"):
                torch._dynamo.reset()
                xg = x.clone().requires_grad_()
                got = torch.compile(model, backend=backend)(xg)
                got.backward()
                self.assertRtolEqual(want.detach(), got.detach(), prec=1e-3)
                self.assertTrue(torch.isfinite(xg.grad).all())

    def test_fx_code_with_a_device_argument(self):
        from torch.fx.experimental.proxy_tensor import make_fx
        graph = make_fx(lambda x: x + torch.ones(4, device="cpu"))(torch.randn(4))
        self.assertEqual(graph(torch.zeros(4)).tolist(), [1.0] * 4)


if __name__ == "__main__":
    warnings.simplefilter("error")
    unittest.main()
    run_tests()
