"""attnops as an attention implementation of HuggingFace transformers (5.x).

    import attnops.transformers
    attnops.transformers.register()          # once per process
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="attnops")

register() adds an attention function and its mask function under one name
(transformers' AttentionInterface / AttentionMaskInterface, the documented way
to plug in an attention).  The mask function is transformers' own flash-attention
one: it hands the attention a 2-D padding mask [B, S_kv] (1 = a real token), or
None when nothing is padded.  The attention function then does what the
flash_attention_2 path does with the flash_attn package, on attnops.flash_attn:
  - padded batches: the real tokens are unpadded into one varlen call
    (bert_padding.unpad_input) and padded back; queries are the last S_q
    columns of the mask (decode steps and chunked prefill);
  - packed sequences (one row, position_ids restarting at 0, no mask): one
    varlen call with a sequence per restart, so no token attends across a
    boundary;
  - a decode step or a short speculative block (S_q <= 16 new tokens after a cache, no padding, no
    window, no dropout or softcap, no gradient wanted): FusedInferAttentionScore's split-KV kernel,
    reading the cache [B, H_kv, S_kv, D] in place (BNSD in, BSND out);
  - otherwise one dense call;
  - causal is bottom-right aligned; sliding_window w keeps the w most recent
    keys (window_size (w - 1, 0), transformers' convention); the module's
    scaling and dropout; softcap (Gemma 2's attn_logit_softcapping) as flash-attn's softcap, computed by
    the C library forward and backward; s_aux (GPT-OSS's learnable attention sinks, [H]) as the library's
    sinks on every path, forward and backward (docs/NUMERICS.md "Attention sinks").
Shapes: query [B, H, S_q, D], key / value [B, H_kv, S_kv, D] in, the output
[B, S_q, H, D] (the flash convention the models reshape) and no weights.
"""
import torch

from . import flash_attn, ops
from .flash_attn.bert_padding import index_first_axis, pad_input, unpad_input

NAME = "attnops"


def _window(sliding_window, key_length):
    if sliding_window is None or key_length <= sliding_window:
        return (-1, -1)
    return (sliding_window - 1, sliding_window - 1)


def _packed_starts(position_ids, batch, q_len, kv_len):
    """cu_seqlens int32 of a packed row (position_ids restarting at 0), or None when not packed."""
    if position_ids is None or batch != 1 or q_len != kv_len or position_ids.shape[-1] != q_len:
        return None
    pos = position_ids.reshape(-1)
    if pos.numel() < 2 or bool((pos[1:] - pos[:-1] == 1).all()):
        return None
    starts = torch.nonzero(pos == 0, as_tuple=False).flatten()
    if starts.numel() == 0 or int(starts[0]) != 0:
        raise ValueError("attnops.transformers: packed position_ids must start each sequence at 0; got "
                         f"{pos[:16].tolist()}...")
    return torch.cat([starts, torch.tensor([q_len])]).to(torch.int32)


def attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, sliding_window=None,
                      softcap=None, is_causal=None, position_ids=None, **kwargs):
    """transformers' attention function signature (AttentionInterface) -> (output [B, S_q, H, D], None)."""
    s_aux = kwargs.get("s_aux")
    q, k, v = (t.transpose(1, 2) for t in (query, key, value))  # [B, S, H, D] views
    batch, q_len, kv_len = q.shape[0], q.shape[1], k.shape[1]
    causal = module.is_causal if is_causal is None else is_causal
    args = dict(dropout_p=dropout, softmax_scale=scaling, causal=causal, window_size=_window(sliding_window, kv_len),
                softcap=0.0 if softcap is None else softcap, s_aux=s_aux)
    if attention_mask is not None:
        if attention_mask.dim() != 2:
            raise ValueError("attnops.transformers: expected the 2-D padding mask of the flash mask function, got "
                             f"shape {tuple(attention_mask.shape)} (was the model built with attn_implementation="
                             f"\"{NAME}\" after register()?)")
        mask = attention_mask[:, -kv_len:].bool()
        k_rows, k_index, cu_k, max_k, _ = unpad_input(k, mask)
        v_rows = index_first_axis(v.reshape(-1, *v.shape[2:]), k_index)
        if q_len == kv_len:  # the same tokens: the keys' indices serve
            q_rows, q_index, cu_q, max_q = index_first_axis(q.reshape(-1, *q.shape[2:]), k_index), k_index, cu_k, max_k
        else:
            q_rows, q_index, cu_q, max_q, _ = unpad_input(q, mask[:, -q_len:])
        out = flash_attn.flash_attn_varlen_func(q_rows, k_rows, v_rows, cu_q, cu_k, max_q, max_k, **args)
        return pad_input(out, q_index, batch, q_len), None
    grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (query, key, value, s_aux))
    if (q_len <= 16 and q_len < kv_len and not dropout and not args["softcap"] and args["window_size"] == (-1, -1)
            and not grad):
        masks = dict(sparse_mode=3, atten_mask=flash_attn._compressed_mask()) if causal and q_len > 1 else {}
        if s_aux is not None:
            masks["learnable_sink"] = s_aux
        out, _ = ops.fused_infer_attention_score(query, key, value, num_heads=query.shape[1],
                                                 num_key_value_heads=key.shape[1],
                                                 scale=scaling if scaling is not None else query.shape[-1] ** -0.5,
                                                 input_layout="BNSD_BSND", **masks)
        return out, None
    cu = _packed_starts(position_ids, batch, q_len, kv_len)
    if cu is not None:
        longest = int((cu[1:] - cu[:-1]).max())
        out = flash_attn.flash_attn_varlen_func(q[0], k[0], v[0], cu, cu, longest, longest, **args)
        return out.unsqueeze(0), None
    return flash_attn.flash_attn_func(q, k, v, **args), None


def register(name=NAME):
    """Register attnops with transformers under `name` (attention and mask function); idempotent."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, flash_attention_mask
    AttentionInterface.register(name, attention_forward)
    AttentionMaskInterface.register(name, flash_attention_mask)
    return name
