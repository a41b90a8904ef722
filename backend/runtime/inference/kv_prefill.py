"""The last decoder layer computes only what is read: keys and values for the cache, one query for the logits.

Why: the sweep prefills the question-independent prefix once and runs each question's suffix on
its cache, and only the last position of a suffix is scored (``logits_to_keep=1``). In the last
decoder layer no token's *output* is read except that last position's, and other tokens are read
only through the layer's cached keys and values. So:

* :func:`last_layer_kv_only` (the prefix prefill): the last layer computes the prefix tokens' key /
  value projections (with the key norm and the rotary embedding where the family has them) and
  writes them to the cache; their queries, attention, output projection and MLP, and the final norm
  over every position, are work nobody reads;
* :func:`last_layer_rows` (a suffix pass): the last layer writes the keys and values of every suffix
  token the same way, then runs in full for the scored tokens alone (the last one; with several
  questions packed into one pass, the last of each), each attending to the cache through its own row
  of the mask.

The cached keys and values are computed by the same modules on the same inputs as in a full
forward, and the last token's output by the layer's own ``forward``, so every answer is unchanged
(the sweep's paired drift check runs on it; matrix products over fewer rows may round differently
in the last float bit). The cache stays complete, so a suffix may still be continued by greedy
generation or cropped back to the prefix. What it saves is about ``1 / depth`` of each pass (half
of a 2-layer tiny model's, about 3% of a 28-layer 7B model's).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch


def _kv_parts(layer) -> tuple | None:
    """(self-attention, rotary function) of a decoder layer this applies to, or None."""
    attn = getattr(layer, "self_attn", None)
    rope = getattr(sys.modules[type(attn).__module__], "apply_rotary_pos_emb", None) if attn is not None else None
    needed = ("k_proj", "v_proj", "head_dim", "layer_idx")
    if rope is None or not hasattr(layer, "input_layernorm") or not all(hasattr(attn, n) for n in needed):
        return None
    return attn, rope


def _kv_writer(layer, attn, rope) -> Callable[..., None]:
    """Writes the layer's keys and values of ``hidden_states`` to the cache, as its attention would."""

    def write(hidden_states: torch.Tensor, cache, position_embeddings, kwargs) -> None:
        h = layer.input_layernorm(hidden_states)
        shape = (*h.shape[:-1], -1, attn.head_dim)
        keys = attn.k_proj(h).view(shape)
        if hasattr(attn, "k_norm"):
            keys = attn.k_norm(keys)
        keys = keys.transpose(1, 2)
        values = attn.v_proj(h).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        _, keys = rope(keys, keys, cos, sin)
        cache.update(keys, values, attn.layer_idx, kwargs=kwargs)

    return write


@contextmanager
def _last_layer(model, make: Callable) -> Iterator[bool]:
    layer = model.model.language_model.layers[-1]
    parts = _kv_parts(layer)
    if parts is None:
        yield False
        return
    layer.forward = make(layer, _kv_writer(layer, *parts), layer.forward)
    try:
        yield True
    finally:
        del layer.forward


@contextmanager
def last_layer_kv_only(model) -> Iterator[bool]:
    """Within the block the language model's last decoder layer only writes its keys and values to the
    cache and passes its input through, and its final norm passes its input through too: such a pass
    is for its cache, its logits are nobody's. Yields whether it applied (False: the layer runs in full)."""

    def make(layer, write, full):
        def kv_only(hidden_states, *args, cache=None, position_embeddings=None, **kwargs):
            write(hidden_states, cache, position_embeddings, kwargs)
            return hidden_states

        return kv_only

    norm = getattr(model.model.language_model, "norm", None)
    with _last_layer(model, make) as applied:
        if not applied or norm is None:
            yield applied
            return
        norm.forward = lambda hidden_states, *args, **kwargs: hidden_states
        try:
            yield applied
        finally:
            del norm.forward


class _Written:
    """The cache as the last layer's attention sees it once every key and value of the pass is written:
    ``update`` returns the layer's cached keys and values and adds nothing (the rows that run in full
    compute exactly the keys and values already written for them)."""

    def __init__(self, cache):
        self.cache = cache

    def update(self, keys, values, layer_idx, *args, **kwargs):
        layer = self.cache.layers[layer_idx]
        return layer.keys, layer.values


@contextmanager
def last_layer_rows(model, rows: torch.Tensor | None = None) -> Iterator[bool]:
    """Within the block the last decoder layer writes every token's keys and values to the cache but runs
    in full only for ``rows`` (positions along the sequence; default the last), the only ones scored; the
    other positions pass their input through. For a pass on a cache whose logits are read at ``rows``
    only (``logits_to_keep``). Rows other than the last need the pass's 4-D attention mask (their own
    row of it says what they see). Yields whether it applied."""

    def make(layer, write, full):
        def read_rows(
            hidden_states, attention_mask=None, position_ids=None, cache=None, position_embeddings=None, **kwargs
        ):
            length = hidden_states.shape[1]
            idx = torch.tensor([length - 1], device=hidden_states.device) if rows is None else rows
            if cache is None or len(idx) == length:
                return full(
                    hidden_states,
                    attention_mask=attention_mask,
                    position_ids=position_ids,
                    cache=cache,
                    position_embeddings=position_embeddings,
                    **kwargs,
                )
            if attention_mask is None and rows is not None:
                raise ValueError("last_layer_rows: rows other than the last need the pass's attention mask")
            write(hidden_states, cache, position_embeddings, kwargs)
            cos, sin = position_embeddings
            out = full(
                hidden_states[:, idx],
                attention_mask=None if attention_mask is None else attention_mask[..., idx, :],
                position_ids=None if position_ids is None else position_ids[..., idx],
                cache=_Written(cache),
                position_embeddings=(cos[..., idx, :], sin[..., idx, :]),
                **kwargs,
            )
            result = hidden_states.clone()
            result[:, idx] = out
            return result

        return read_rows

    with _last_layer(model, make) as applied:
        yield applied
