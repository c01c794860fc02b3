"""ctypes bindings of include/attnops.h: the library, its structs, its status codes.

The structs mirror the C declarations field for field (ctypes applies the C
alignment rules of the platform); python/tests/test_abi.py compiles a C
program that prints every sizeof/offsetof and compares them with these, so a
change to the header that is not made here fails the tests.

A failed call raises an exception that carries the library's sentence and
status (AttnopsError and its subclasses); nothing here aborts the process.
"""
import ctypes
import re
from pathlib import Path

from . import _native

_HERE = Path(__file__).resolve().parent
HEADER = _HERE / "include" / "attnops.h"


def _load():
    # The package's own copy, the one the torch binding links ($ORIGIN), so that both share one library and
    # its thread-local error state.
    path = str(_HERE / "_lib" / "libattnops.so.0")
    try:
        return ctypes.CDLL(path)
    except OSError as exc:
        raise ImportError(f"attnops: cannot load the C library {path}: {exc}") from exc


lib = _load()

# ---- status codes and exceptions ---------------------------------------------
SUCCESS = 0
ERR_NULLPTR = 161001
ERR_PARAM_INVALID = 161002
ERR_UNSUPPORTED = 161003
ERR_OUT_OF_MEMORY = 361001
ERR_INTERNAL = 561001


class AttnopsError(Exception):
    """A failed library call: `status` is the C status code, str() the sentence."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class AttnopsValueError(AttnopsError, ValueError):
    """161001 / 161002: a missing or invalid argument."""


class AttnopsNotImplementedError(AttnopsError, NotImplementedError):
    """161003: a valid request this version does not implement."""


class AttnopsMemoryError(AttnopsError, MemoryError):
    """361001."""


class AttnopsInternalError(AttnopsError, RuntimeError):
    """561001: a bug in attnops; please report the sentence."""


_EXCEPTIONS = {
    ERR_NULLPTR: AttnopsValueError,
    ERR_PARAM_INVALID: AttnopsValueError,
    ERR_UNSUPPORTED: AttnopsNotImplementedError,
    ERR_OUT_OF_MEMORY: AttnopsMemoryError,
}


def check(status):
    """Raise the exception for a non-zero status, with the library's sentence."""
    if status == SUCCESS:
        return
    sentence = lib.attnops_last_error().decode("utf-8", "replace")
    name = lib.attnops_status_string(status).decode()
    raise _EXCEPTIONS.get(status, AttnopsInternalError)(f"{sentence} [{name} {status}]", status)


_STATUS_TAG = re.compile(r"\[ATTNOPS_[A-Z_]+ (\d+)\]$")


def error_from_message(message):
    """The AttnopsError of a message the torch binding raised with the library's status at its end
    ("... [ATTNOPS_ERR_PARAM_INVALID 161002]", python/csrc/binding.cpp); None for any other message."""
    match = _STATUS_TAG.search(message)
    if match is None:
        return None
    status = int(match.group(1))
    return _EXCEPTIONS.get(status, AttnopsInternalError)(message, status)


# ---- enums ------------------------------------------------------------------------
IMPL = {"auto": 0, "reference": 1, "cpu": 2, "benchmark": 3}
LAYOUTS = ("BNSD", "BSND", "BSH", "SBH", "TND")
MAX_RANK = 8

# ---- structs ----------------------------------------------------------------------
_i64x8 = ctypes.c_int64 * MAX_RANK
_enum = ctypes.c_int


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", _enum), ("rank", ctypes.c_int32),
                ("shape", _i64x8), ("strides", _i64x8)]


# Tensor pointers are plain addresses (views are packed by _views.Call).
_T = ctypes.c_void_p


class FaParams(ctypes.Structure):
    _fields_ = [(name, _T) for name in (
        "query", "key", "value", "pse", "drop_mask", "padding_mask", "atten_mask", "prefix", "actual_seq_qlen",
        "actual_seq_kvlen", "q_start_idx", "kv_start_idx", "query_rope", "key_rope", "d_scale_q", "d_scale_k",
        "d_scale_v", "d_scale_dy", "d_scale_o", "dropout_seq_qlen", "dropout_seq_kvlen", "dropout_q_start",
        "dropout_kv_start")] + [
        ("scale_value", ctypes.c_double), ("keep_prob", ctypes.c_double), ("softcap", ctypes.c_double),
        ("pre_tokens", ctypes.c_int64),
        ("next_tokens", ctypes.c_int64), ("head_num", ctypes.c_int64), ("input_layout", _enum),
        ("inner_precise", ctypes.c_int64), ("sparse_mode", ctypes.c_int64), ("pse_type", ctypes.c_int64),
        ("seed", ctypes.c_int64), ("offset", ctypes.c_int64), ("dropout_head_num", ctypes.c_int64),
        ("dropout_head_start", ctypes.c_int64), ("out_dtype", ctypes.c_int64),
        ("softmax_in_layout", _enum), ("impl", _enum), ("deterministic", ctypes.c_int32),
        ("num_threads", ctypes.c_int32)]


class FaFwdArgs(ctypes.Structure):
    _fields_ = [("p", FaParams), ("softmax_max", _T), ("softmax_sum", _T), ("softmax_out", _T),
                ("attention_out", _T)]


class FaBwdArgs(ctypes.Structure):
    _fields_ = [("p", FaParams)] + [(name, _T) for name in (
        "dy", "attention_in", "softmax_max", "softmax_sum", "softmax_in", "dq", "dk", "dv", "dpse", "dq_rope",
        "dk_rope")]


class DropoutMaskArgs(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_int64), ("offset", ctypes.c_int64), ("keep_prob", ctypes.c_double),
                ("batch", ctypes.c_int64), ("head_num", ctypes.c_int64), ("seq_q", ctypes.c_int64),
                ("seq_kv", ctypes.c_int64), ("actual_seq_qlen", _T), ("actual_seq_kvlen", _T),
                ("byte_mask", _T), ("bit_mask", _T)]


class KeyPoolArgs(ctypes.Structure):
    _fields_ = [(name, _T) for name in (
        "hidden_states", "wk", "gate_weight", "ape", "state_cache", "cache_block_table", "start_pos",
        "norm_weight", "norm_bias", "cos", "sin", "cu_seqlens", "seqused")] + [
        ("cmp_ratio", ctypes.c_int64), ("norm_eps", ctypes.c_double), ("rotary_mode", ctypes.c_int64),
        ("capacity", _enum), ("pooled_key", _T), ("impl", _enum), ("num_threads", ctypes.c_int32)]


_TT = ctypes.c_void_p  # const attnops_tensor *const *


class AttnResFwdArgs(ctypes.Structure):
    _fields_ = [("blocks", _TT), ("num_blocks", ctypes.c_int64), ("partial_block", _T), ("proj_weight", _T),
                ("rmsnorm_gamma", _T), ("scale", ctypes.c_double), ("rmsnorm_eps", ctypes.c_double),
                ("enable_rmsnorm", ctypes.c_int32), ("h", _T), ("rms", _T), ("alpha", _T), ("impl", _enum),
                ("num_threads", ctypes.c_int32)]


class AttnResBwdArgs(ctypes.Structure):
    _fields_ = [("grad_h", _T), ("blocks", _TT), ("num_blocks", ctypes.c_int64), ("partial_block", _T),
                ("proj_weight", _T), ("rmsnorm_gamma", _T), ("alpha", _T), ("rms", _T),
                ("scale", ctypes.c_double), ("enable_rmsnorm", ctypes.c_int32), ("grad_blocks", _TT),
                ("grad_partial_block", _T), ("grad_proj_weight", _T), ("grad_rmsnorm_gamma", _T),
                ("impl", _enum), ("num_threads", ctypes.c_int32)]


class FiaArgs(ctypes.Structure):
    _fields_ = [(name, _T) for name in (
        "query", "key", "value", "pse_shift", "atten_mask", "actual_seq_lengths", "actual_seq_lengths_kv",
        "block_table", "query_rope", "key_rope", "key_antiquant_scale", "key_antiquant_offset",
        "value_antiquant_scale", "value_antiquant_offset", "antiquant_scale", "antiquant_offset", "dequant_scale1",
        "quant_scale1", "dequant_scale2", "quant_scale2", "quant_offset2", "query_padding_size", "kv_padding_size",
        "key_shared_prefix", "value_shared_prefix", "actual_shared_prefix_len")] + [
        ("num_heads", ctypes.c_int64), ("scale_value", ctypes.c_double), ("pre_tokens", ctypes.c_int64),
        ("next_tokens", ctypes.c_int64), ("input_layout", _enum), ("output_layout", _enum),
        ("num_key_value_heads", ctypes.c_int64), ("sparse_mode", ctypes.c_int64), ("inner_precise", ctypes.c_int64),
        ("block_size", ctypes.c_int64), ("antiquant_mode", ctypes.c_int64), ("key_antiquant_mode", ctypes.c_int64),
        ("value_antiquant_mode", ctypes.c_int64), ("softmax_lse_flag", ctypes.c_bool), ("softcap", ctypes.c_double),
        ("alibi_slopes", _T), ("attention_out", _T),
        ("softmax_lse", _T), ("impl", _enum), ("deterministic", ctypes.c_int32), ("num_threads", ctypes.c_int32)]


class DtypeTraits(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("cann_name", ctypes.c_char_p), ("torch_name", ctypes.c_char_p),
                ("size", ctypes.c_size_t), ("is_float", ctypes.c_bool), ("to_f64", ctypes.c_void_p),
                ("from_f64", ctypes.c_void_p)]


STRUCTS = {"attnops_dtype_traits": DtypeTraits, "attnops_tensor": Tensor, "attnops_fa_params": FaParams,
           "attnops_fa_fwd_args": FaFwdArgs, "attnops_fa_bwd_args": FaBwdArgs,
           "attnops_dropout_mask_args": DropoutMaskArgs, "attnops_key_pool_args": KeyPoolArgs,
           "attnops_attn_res_fwd_args": AttnResFwdArgs, "attnops_attn_res_bwd_args": AttnResBwdArgs,
           "attnops_fia_args": FiaArgs}

# ---- functions --------------------------------------------------------------------


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, list(argtypes)


for _name in ("attnops_last_error", "attnops_version", "attnops_cpu_isa", "attnops_cpu_model"):
    _declare(_name, ctypes.c_char_p)
_declare("attnops_status_string", ctypes.c_char_p, ctypes.c_int)
_declare("attnops_gemm_backend", ctypes.c_char_p, ctypes.c_int)
_declare("attnops_dtype_traits_of", ctypes.POINTER(DtypeTraits), ctypes.c_int)


def _dtype_codes():
    codes, code = {}, 1
    while lib.attnops_dtype_traits_of(code):
        codes[lib.attnops_dtype_traits_of(code).contents.torch_name.decode()] = code
        code += 1
    return codes


# torch's (= numpy's, ml_dtypes') dtype name -> attnops_dtype, read from the library's traits table.
DTYPES = _dtype_codes()
# The two-phase ops, called through attnops._native (python/native/attnops_native.c) by index, with the
# addresses of the functions this library resolved.
TWO_PHASE_OPS = ("flash_attention_score", "flash_attention_varlen_score", "flash_attention_score_grad",
                 "flash_attention_unpadding_score_grad", "key_pool", "attn_res", "attn_res_grad",
                 "fused_infer_attention_score")
_OP_INDEX = {name: i for i, name in enumerate(TWO_PHASE_OPS)}
_declare("attnops_fa_params_init", None, ctypes.POINTER(FaParams))
_declare("attnops_fa_fwd_args_init", None, ctypes.POINTER(FaFwdArgs))
_declare("attnops_fa_bwd_args_init", None, ctypes.POINTER(FaBwdArgs))
_declare("attnops_key_pool_args_init", None, ctypes.POINTER(KeyPoolArgs))
_declare("attnops_attn_res_fwd_args_init", None, ctypes.POINTER(AttnResFwdArgs))
_declare("attnops_attn_res_bwd_args_init", None, ctypes.POINTER(AttnResBwdArgs))
_declare("attnops_fia_args_init", None, ctypes.POINTER(FiaArgs))
_declare("attnops_dropout_mask", ctypes.c_int, ctypes.POINTER(DropoutMaskArgs))
_declare("attnops_alibi_slopes", ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_float))
_declare("attnops_fp8_quantize_blocks", ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_void_p,
         ctypes.c_void_p)
_declare("attnops_key_pool_valid_rows", ctypes.c_int, ctypes.POINTER(KeyPoolArgs), ctypes.POINTER(ctypes.c_int64))
_declare("attnops_key_pool_output_shape", ctypes.c_int, ctypes.POINTER(KeyPoolArgs), ctypes.POINTER(ctypes.c_int32),
         ctypes.POINTER(ctypes.c_int64))


# An array without elements may have no storage (address 0); the library
# still wants a pointer, and never reads or writes through it.
_EMPTY = ctypes.create_string_buffer(64)
_native.init(tuple((ctypes.cast(getattr(lib, f"attnops_{name}_workspace_size"), ctypes.c_void_p).value,
                    ctypes.cast(getattr(lib, f"attnops_{name}"), ctypes.c_void_p).value) for name in TWO_PHASE_OPS),
             ctypes.addressof(_EMPTY))


def version():
    return lib.attnops_version().decode()


def cpu_isa():
    return lib.attnops_cpu_isa().decode()


def cpu_model():
    return lib.attnops_cpu_model().decode()


def gemm_backend(dtype_code):
    name = lib.attnops_gemm_backend(dtype_code)
    return name.decode() if name else None


def run(op, args):
    """The two-phase call of `op` ("flash_attention_score", ...): workspace query, allocation, run.
    `args`: the op's ctypes args struct, or a ctypes buffer holding it packed.

    The library never allocates; the workspace (uninitialised: the run writes
    before it reads) is allocated and freed in attnops._native, which
    releases the GIL for the whole call."""
    status = _native.run(_OP_INDEX[op], ctypes.addressof(args))
    if status:
        check(status)
