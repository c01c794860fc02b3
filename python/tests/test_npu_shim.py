"""The torch_npu shim: NPU-style test code runs unchanged on the CPU."""
import subprocess
import sys
import textwrap


NPU_STYLE_TEST = textwrap.dedent('''
    import attnops.torch_npu
    attnops.torch_npu.install()

    import torch
    import torch_npu

    torch.npu.set_device(0)
    q = torch.randn(1, 32, 2, 16).npu()
    k = torch.randn(1, 40, 2, 16).to("npu:0")
    v = torch.randn(1, 40, 2, 16).to(device="npu")
    out = torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", scale=0.25)[0]
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale=0.25).transpose(1, 2)
    assert out.device.type == "cpu" and (out - ref).abs().max() < 1e-5
    torch.npu.synchronize()
    torch.npu.empty_cache()
    assert torch.npu.device_count() == 1 and torch.npu.current_device() == 0
    from block_attn_res_impl import ai_infra_block_attn_res
    assert ai_infra_block_attn_res is torch_npu.ai_infra_block_attn_res

    attnops.torch_npu.uninstall()
    import sys
    assert "torch_npu" not in sys.modules and not hasattr(torch, "npu")
    try:
        torch.randn(2).to("npu")
    except RuntimeError:
        pass
    else:
        raise AssertionError("uninstall() must restore Tensor.to")
    print("ok")
''')


def test_npu_style_code_runs_on_the_cpu(tmp_path):
    script = tmp_path / "npu_style.py"
    script.write_text(NPU_STYLE_TEST)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
