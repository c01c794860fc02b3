"""flash_attn.bert_padding's helpers: between a padded batch [B, S, ...] and the packed rows [total, ...]
varlen functions take (flash-attn 2.8.3's meaning and return values; written here from its docstrings).

    rows, indices, cu_seqlens, max_seqlen, seqused = unpad_input(hidden, attention_mask)
    hidden_again = pad_input(rows, indices, batch, seqlen)        # zeros where attention_mask is 0

Both are differentiable (index_select / index_put on the flattened batch).
"""
import torch


def index_first_axis(tensor, indices):
    """tensor[indices] along the first axis (tensor [N, ...], indices int64 [M]) -> [M, ...]."""
    return tensor.index_select(0, indices)


def unpad_input(hidden_states, attention_mask, unused_mask=None):
    """hidden_states [B, S, ...], attention_mask [B, S] (bool or int, 1 = a real token), unused_mask [B, S]
    (allocated but unused tokens, kept in the rows) -> (rows [total, ...], indices int64 [total] into the
    flattened [B * S], cu_seqlens int32 [B + 1] from 0, max_seqlen_in_batch int, seqused int32 [B]: the real
    tokens per sequence)."""
    kept = attention_mask if unused_mask is None else attention_mask + unused_mask
    seqlens = kept.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(kept.flatten(), as_tuple=False).flatten()
    cu_seqlens = torch.nn.functional.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    rows = index_first_axis(hidden_states.reshape(-1, *hidden_states.shape[2:]), indices)
    return rows, indices, cu_seqlens, int(seqlens.max()), attention_mask.sum(dim=-1, dtype=torch.int32)


def pad_input(hidden_states, indices, batch, seqlen):
    """rows [total, ...] back to [batch, seqlen, ...] at `indices` (unpad_input's), zeros elsewhere."""
    rest = hidden_states.shape[1:]
    out = hidden_states.new_zeros(batch * seqlen, *rest).index_put((indices,), hidden_states)
    return out.view(batch, seqlen, *rest)
