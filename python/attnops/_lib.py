"""ctypes bindings of include/attnops.h: the library, its structs, its status codes.

The structs are built from the layouts attnops._native reads off the header
with offsetof / sizeof (python/native/layouts.c), and checked against them
at import: no struct is described here.

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

# CANN's "unbounded" for pre_tokens / next_tokens (the attributes' defaults), the one definition in the package.
INT32_MAX = 2 ** 31 - 1


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
# ctypes kinds of attnops._native.layouts()'s fields (python/native/layouts.c).
_KINDS = {"P": ctypes.c_void_p, "z": ctypes.c_char_p, "B*": ctypes.POINTER(ctypes.c_uint8), "d": ctypes.c_double,
          "q": ctypes.c_int64, "i": ctypes.c_int32, "?": ctypes.c_bool, "Q": ctypes.c_size_t}


def struct_class(name, size, fields, structs):
    """The ctypes struct of one entry of attnops._native.layouts(): (name, sizeof, ((field, offset, size, kind),
    ...)), kind a _KINDS key or an earlier struct's name (in `structs`).  ctypes lays the fields out by the
    platform's C rules; every offset and size must then be the C compiler's, else the table misses a field of
    the header (ImportError, naming it)."""
    members = []
    for field, _offset, fsize, kind in fields:
        base = structs[kind] if kind in structs else _KINDS[kind]
        count = fsize // ctypes.sizeof(base)
        members.append((field, base * count if count > 1 else base))
    cls = type(name, (ctypes.Structure,), {"_fields_": members})
    for (field, offset, fsize, _kind), (_, ctype) in zip(fields, members):
        if getattr(cls, field).offset != offset or ctypes.sizeof(ctype) != fsize:
            raise ImportError(f"attnops: {name}.{field} is at byte {offset} ({fsize} bytes) in C but "
                              f"{getattr(cls, field).offset} ({ctypes.sizeof(ctype)}) in the table's layout: "
                              "python/native/layouts.c misses a field of the header before it")
    if ctypes.sizeof(cls) != size:
        raise ImportError(f"attnops: {name} has {size} bytes in C but {ctypes.sizeof(cls)} in the table's layout: "
                          "python/native/layouts.c misses a field of the header at its end")
    return cls


def _structs():
    structs = {}
    for name, size, fields in _native.layouts():
        structs[name] = struct_class(name, size, fields, structs)
    return structs


# Every C struct the package fills or reads, by its C name, laid out from the header (attnops._native).
STRUCTS = _structs()
Tensor = STRUCTS["attnops_tensor"]
FaParams, FaFwdArgs, FaBwdArgs = (STRUCTS[f"attnops_fa_{n}"] for n in ("params", "fwd_args", "bwd_args"))
DropoutMaskArgs, KeyPoolArgs = STRUCTS["attnops_dropout_mask_args"], STRUCTS["attnops_key_pool_args"]
DropoutGenMaskArgs = STRUCTS["attnops_dropout_gen_mask_args"]
AttnResFwdArgs, AttnResBwdArgs = STRUCTS["attnops_attn_res_fwd_args"], STRUCTS["attnops_attn_res_bwd_args"]
FiaArgs, DtypeTraits = STRUCTS["attnops_fia_args"], STRUCTS["attnops_dtype_traits"]
OutputShape = STRUCTS["attnops_output_shape"]

# ---- functions --------------------------------------------------------------------


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, list(argtypes)


for _name in ("attnops_last_error", "attnops_version", "attnops_cpu_isa", "attnops_cpu_model"):
    _declare(_name, ctypes.c_char_p)
_declare("attnops_status_string", ctypes.c_char_p, ctypes.c_int)
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
_declare("attnops_dropout_gen_mask", ctypes.c_int, ctypes.POINTER(DropoutGenMaskArgs))
_declare("attnops_alibi_slopes", ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_float))
_declare("attnops_fp8_quantize_blocks", ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_void_p,
         ctypes.c_void_p)
_declare("attnops_key_pool_valid_rows", ctypes.c_int, ctypes.POINTER(KeyPoolArgs), ctypes.POINTER(ctypes.c_int64))
_declare("attnops_key_pool_output_shape", ctypes.c_int, ctypes.POINTER(KeyPoolArgs), ctypes.POINTER(ctypes.c_int32),
         ctypes.POINTER(ctypes.c_int64))
_declare("attnops_flash_attention_score_output_shapes", ctypes.c_int, ctypes.POINTER(FaFwdArgs),
         ctypes.POINTER(OutputShape), ctypes.POINTER(OutputShape))
_declare("attnops_fused_infer_attention_score_output_shapes", ctypes.c_int, ctypes.POINTER(FiaArgs),
         ctypes.POINTER(OutputShape), ctypes.POINTER(OutputShape))


def output_shapes(name, args):
    """The two output shapes the library's attnops_<name>_output_shapes gives for args (its inputs' shapes)."""
    shapes = (OutputShape(), OutputShape())
    check(getattr(lib, f"attnops_{name}_output_shapes")(ctypes.byref(args), *map(ctypes.byref, shapes)))
    return tuple(tuple(s.dims[i].extent for i in range(s.rank)) for s in shapes)


def shape_only(x):
    """An attnops_tensor of x's shape and no data (the output-shape queries read shapes alone; x: anything
    with .shape, a numpy array or a torch tensor)."""
    t = Tensor()
    t.rank = len(x.shape)
    for i, n in enumerate(x.shape):
        t.shape[i] = n
    return t


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


def run(op, args):
    """The two-phase call of `op` ("flash_attention_score", ...): workspace query, allocation, run.
    `args`: the op's ctypes args struct, or a ctypes buffer holding it packed.

    The library never allocates; the workspace (uninitialised: the run writes
    before it reads) is allocated and freed in attnops._native, which
    releases the GIL for the whole call."""
    status = _native.run(_OP_INDEX[op], ctypes.addressof(args))
    if status:
        check(status)
