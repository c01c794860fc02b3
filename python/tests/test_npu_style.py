"""NPU test code, written as CANN's and op-plugin's test folders write it (npu_style/: `import torch_npu`,
.npu(), TestCase.assertRtolEqual, SupportedDevices), runs unchanged through attnops.torch_npu.install().
Its own process: install() changes torch for the whole process."""
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent


def test_npu_style_suite_runs_unchanged(tmp_path):
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
                          "python_files=npu_case_*.py", "-rs", str(HERE / "npu_style")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    # the one test marked for another SoC is skipped, and says why; everything else ran
    assert " passed" in run.stdout and "1 skipped" in run.stdout and "Ascend910B" in run.stdout, run.stdout[-3000:]
