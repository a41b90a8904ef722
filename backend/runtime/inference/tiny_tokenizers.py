"""Offline tokenizers for the tiny models: byte-level BPE (Qwen-like) and Metaspace (SentencePiece-like).

Why two styles: the option letter a model emits is a different token in each (a bare ``A`` after
Qwen's ``assistant\\n``, ``▁A`` after LLaVA's ``ASSISTANT:``), and letter scoring must find the right
id in both (INFERENCE.md). Both carry merges that make `` A`` one token, as the real vocabularies do,
so a rule that picks the wrong variant is caught by the tests instead of happening to work.
Nothing here downloads anything; the vocabularies are generated.
"""

from __future__ import annotations

import string

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from store.answers import LETTERS


def bytelevel_tokenizer(
    specials: list[str],
    *,
    eos_token: str,
    pad_token: str,
    named_tokens: dict[str, str] | None = None,
) -> PreTrainedTokenizerFast:
    """A GPT-2/Qwen-style byte-level BPE: the 256 byte symbols, ``Ġ<letter>`` merges, then ``specials``.

    ``named_tokens`` become tokenizer attributes (``tok.video_token``, ``tok.video_token_id``), the
    way InternVL's processor expects ``start_image_token`` and friends.
    """
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: i for i, symbol in enumerate(alphabet)}
    merges = [("Ġ", letter) for letter in LETTERS]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    return _wrap(backend, specials, eos_token=eos_token, pad_token=pad_token, named_tokens=named_tokens)


def metaspace_tokenizer(
    specials: list[str],
    *,
    bos_token: str = "<s>",
    eos_token: str = "</s>",
    unk_token: str = "<unk>",
    named_tokens: dict[str, str] | None = None,
) -> PreTrainedTokenizerFast:
    """A Llama/SentencePiece-style BPE: ``▁`` marks a preceding space, byte fallback for the rest.

    Like Llama's fast tokenizer it prepends ``▁`` to the first word and adds ``<s>`` in front.
    """
    symbols = ["▁", *string.ascii_letters, *string.digits, *string.punctuation]
    vocab = {unk_token: 0, bos_token: 1, eos_token: 2}
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    for symbol in symbols:
        vocab.setdefault(symbol, len(vocab))
    merges = [("▁", letter) for letter in LETTERS]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=unk_token, byte_fallback=True))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    backend.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    backend.post_processor = processors.TemplateProcessing(
        single=f"{bos_token} $A", pair=f"{bos_token} $A {bos_token} $B", special_tokens=[(bos_token, 1)]
    )
    return _wrap(
        backend,
        specials,
        eos_token=eos_token,
        pad_token=unk_token,
        named_tokens=named_tokens,
        bos_token=bos_token,
        unk_token=unk_token,
    )


def _wrap(
    backend: Tokenizer,
    specials: list[str],
    *,
    eos_token: str,
    pad_token: str,
    named_tokens: dict[str, str] | None,
    **extra: str,
) -> PreTrainedTokenizerFast:
    backend.add_special_tokens([AddedToken(tok, special=True, normalized=False) for tok in specials])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=eos_token,
        pad_token=pad_token,
        extra_special_tokens=named_tokens or {},
        model_input_names=["input_ids", "attention_mask"],
        **extra,
    )
    return tokenizer
