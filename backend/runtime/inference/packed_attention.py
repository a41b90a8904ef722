"""Attention for suffixes packed on a shared prefix: the prefix unmasked, the suffixes' own block masked.

Why: the sweep runs the questions of one clip as suffixes packed into one sequence on the cached
prefix (:func:`backend.runtime.inference.reuse.run_suffixes`). Every suffix token sees every prefix
token, and within the suffixes only its own question up to itself. One masked attention over
``prefix + suffixes`` keys adds the mask to every score and copies the keys and values once per
query head (grouped-query attention with a mask takes no shortcut in transformers' SDPA path).
Here, in the language model's layers on the CPU, each attention is two flash attentions merged by
their log-sum-exp:

* the prefix, without a mask, with the query heads that share a key/value head folded into its rows
  (the same keys for all of them: no copy of the prefix's keys and values);
* the suffixes' own keys under their block-causal slice of the mask.

``softmax`` over the union is the two partial results weighted by ``exp(lse_part - lse_all)``, so
the answer is the same attention summed in another order (the tests hold it to float tolerance, the
sweep's paired drift check to the cold answers). About a fifth faster on a 64-frame prefix.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from transformers import AttentionInterface

NAME = "trajaudit_packed_suffixes"
_SPLIT: ContextVar[int] = ContextVar("packed_suffix_split")
_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


def _attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """``(output [B, T, H, D], None)`` as transformers' attention functions return it."""
    if _FLASH is None:  # installed only where the kernel exists (packed_suffix)
        raise RuntimeError("packed attention needs torch's CPU flash-attention kernel")
    split = _SPLIT.get()
    b, heads, t, d = query.shape
    groups = key.shape[1]
    n = heads // groups
    folded = query.reshape(b, groups, n * t, d)  # head g*n + r of the queries reads key/value head g
    own = attention_mask[..., split:]
    own = own.expand(b, 1, t, own.shape[-1]).repeat(1, 1, n, 1) if n > 1 else own
    prefix, lse_prefix = _FLASH(folded, key[:, :, :split], value[:, :, :split], 0.0, False, scale=scaling)
    suffix, lse_suffix = _FLASH(
        folded, key[:, :, split:], value[:, :, split:], 0.0, False, attn_mask=own, scale=scaling
    )
    lse = torch.logaddexp(lse_prefix, lse_suffix)
    out = prefix * (lse_prefix - lse).exp_()[..., None] + suffix * (lse_suffix - lse).exp_()[..., None]
    return out.to(query.dtype).reshape(b, heads, t, d).transpose(1, 2).contiguous(), None  # lse is float32


AttentionInterface.register(NAME, _attention)


@contextmanager
def packed_attention(model, split: int) -> Iterator[bool]:
    """Within the block the language model's attention layers treat the first ``split`` keys as a prefix
    every query sees, and take the pass's 4-D mask for the rest. Applies where the layers run
    transformers' SDPA on the CPU and torch has its CPU flash kernel; yields whether it applied."""
    language = model.model.language_model
    config = language.config
    attends = [getattr(layer, "self_attn", None) for layer in language.layers]
    applies = (
        _FLASH is not None
        and split > 0
        and config._attn_implementation == "sdpa"
        and next(model.parameters()).device.type == "cpu"
        and all(a is not None and a.config is config for a in attends)
    )
    if not applies:
        yield False
        return
    token = _SPLIT.set(split)
    config._attn_implementation = NAME
    try:
        yield True
    finally:
        config._attn_implementation = "sdpa"
        _SPLIT.reset(token)
