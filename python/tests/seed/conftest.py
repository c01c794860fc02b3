"""The seed's own Block Attention Residuals test (../shared/seeds/002_*.txt, its
indentation restored and nothing else changed) imports torch_npu and the
PyPTO kernel module block_attn_res_impl: the shim provides both."""
import attnops.torch_npu

attnops.torch_npu.install()
