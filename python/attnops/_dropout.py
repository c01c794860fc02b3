"""The dropout keep mask of FlashAttentionScore(Grad) (attnops_dropout_mask): the
Ascend 950 in-kernel Philox stream of (seed, offset), as numpy arrays."""
import ctypes

import numpy as np

from . import _lib
from ._views import Call


def dropout_mask(seed, offset, keep_prob, head_num, *, batch=None, seq_q=None, seq_kv=None, actual_seq_qlen=None,
                 actual_seq_kvlen=None, packed=False):
    """The keep mask a call with these arguments applies (1 = kept).

    Padded layouts: give batch, seq_q, seq_kv; the result is u8 [B, N1, S1, S2].
    TND: give the cumulative actual_seq_qlen / actual_seq_kvlen (no leading 0);
    the result is flat u8 [N1 * sum S1_b * S2_b], per batch [N1, S1_b, S2_b]
    blocks.  packed=True returns the bit-packed form CANN's drop_mask input
    takes instead (element e in bit e % 8 of byte e / 8, LSB first)."""
    args = _lib.DropoutMaskArgs(seed=seed, offset=offset, keep_prob=keep_prob, head_num=head_num)
    call = Call()
    tnd = actual_seq_qlen is not None or actual_seq_kvlen is not None
    if tnd:
        if actual_seq_qlen is None or actual_seq_kvlen is None:
            raise ValueError("attnops.dropout_mask: TND needs both actual_seq_qlen and actual_seq_kvlen")
        q = np.asarray(actual_seq_qlen, np.int64)
        kv = np.asarray(actual_seq_kvlen, np.int64)
        args.actual_seq_qlen, args.actual_seq_kvlen = call.view(q, "actual_seq_qlen"), call.view(kv, "actual_seq_kvlen")
        lq, lkv = np.diff(q, prepend=0), np.diff(kv, prepend=0)
        shape = (int(head_num * np.sum(lq * lkv)),)
    else:
        if None in (batch, seq_q, seq_kv):
            raise ValueError("attnops.dropout_mask: give batch, seq_q and seq_kv (or the TND lengths)")
        args.batch, args.seq_q, args.seq_kv = batch, seq_q, seq_kv
        shape = (batch, head_num, seq_q, seq_kv)
    count = int(np.prod(shape))
    out = np.empty((count + 7) // 8 if packed else shape, np.uint8)
    view = call.view(out.reshape(-1), "mask")
    if packed:
        args.bit_mask = view
    else:
        args.byte_mask = view
    _lib.check(_lib.lib.attnops_dropout_mask(ctypes.byref(args)))
    return out


def dropout_gen_mask(count, prob, seed, offset, dtype="float32"):
    """The packed keep mask aclnnDropoutGenMaskV2 draws on Ascend A2/A3 (attnops_dropout_gen_mask): u8
    [ceil(count / 128) * 16] as CANN allocates it, element e in bit e % 8 of byte e / 8 (LSB first), kept iff
    the element's uniform draw in `dtype` ("float32", "float16" or "bfloat16") is >= prob rounded to it."""
    if dtype not in ("float32", "float16", "bfloat16"):
        raise ValueError(f"attnops.dropout_gen_mask: dtype is {dtype!r}; it must be float32, float16 or bfloat16")
    out = np.empty(-(-count // 128) * 16, np.uint8)
    call = Call()
    args = _lib.DropoutGenMaskArgs(seed=seed, offset=offset, prob=prob, prob_dtype=_lib.DTYPES[dtype], count=count,
                                   bit_mask=call.view(out, "bit_mask"))
    _lib.check(_lib.lib.attnops_dropout_gen_mask(ctypes.byref(args)))
    return out
