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

    # device="npu" in factory functions, torch.device("npu") and its comparisons, Module.to("npu")
    device = torch.device("npu")
    x = torch.randn(2, 3, device="npu")
    y = torch.empty(2, device="npu:0")
    z = torch.zeros(2, device=torch.device("npu", 0))
    w = x.new_ones(4, device="npu:0")
    assert isinstance(device, torch.device) and device == torch.device("npu:0") == torch.device(type="npu")
    assert x.device == device and y.device == device and z.device == device and w.device == device
    assert torch.device("cpu").type == "cpu" and torch.device("cpu", 0) != device
    lin = torch.nn.Linear(3, 3).to("npu")
    assert lin(x.to(device)).device == device
    assert torch.arange(3, device="npu").tolist() == [0, 1, 2]
    # torch.npu.manual_seed resets the dropout offset of torch_npu's generator
    torch.npu.manual_seed(2)
    assert torch.npu.initial_seed() == 2
    runs = [torch_npu.npu_fusion_attention(q, k, v, 2, "BSND", keep_prob=0.9)[4:6] for _ in range(2)]
    assert [tuple(r) for r in runs] == [(2, 0), (2, 12)], runs

    attnops.torch_npu.uninstall()
    import sys
    assert "torch_npu" not in sys.modules and not hasattr(torch, "npu")
    try:
        torch.randn(2).to("npu")
    except RuntimeError:
        pass
    else:
        raise AssertionError("uninstall() must restore Tensor.to")
    for make in (lambda: torch.device("npu"), lambda: torch.randn(2, device="npu")):
        try:
            make()
        except RuntimeError:
            pass
        else:
            raise AssertionError("uninstall() must restore torch.device and factory functions")
    print("ok")
''')


def test_npu_style_code_runs_on_the_cpu(tmp_path):
    script = tmp_path / "npu_style.py"
    script.write_text(NPU_STYLE_TEST)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
