"""NPU-style test code (written here in the manner of CANN's tests/pytest folders and op-plugin's
test_custom_ops: a CPU golden against the torch_npu call) run unchanged through
attnops.torch_npu.install().  test_npu_style.py runs this folder in its own process, since install()
changes torch for the whole process."""
import attnops.torch_npu

attnops.torch_npu.install()
