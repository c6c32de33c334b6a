"""Tokenizer pipelines that the four tiny models do not use, for golden/tokenizer/variants/.

Each variant keeps tiny-llama's vocabulary and merges and swaps the other components, so the
harness's tokenizer is checked against HF on GPT-2's ByteLevel regex, add_prefix_space, Digits,
every Split behaviour, invert, String patterns, NFKC/NFD, lstrip/rstrip/single_word added
tokens, a bos+eos template, no decoder, and merges written as "a b" strings (the older format
of Llama 3's own file).
"""

from __future__ import annotations

import json

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers,
                        processors)


def _gpt2_bytelevel(tok: Tokenizer) -> None:
    tok.model.ignore_merges = False
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    tok.add_tokens([AddedToken("[MASK]", special=True, lstrip=True, normalized=False),
                    AddedToken("<sep>", special=True, rstrip=True, normalized=False),
                    AddedToken("zqx", special=False, single_word=True, normalized=True),
                    AddedToken("QQ", special=False, normalized=True)])


def _digits_nfkc(tok: Tokenizer) -> None:
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Split(" ", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[,.;:!?]"), behavior="merged_with_previous"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} $B:1 {eos}:1",
        special_tokens=[(bos, tok.token_to_id(bos)), (eos, tok.token_to_id(eos))])


def _split_behaviours(tok: Tokenizer) -> None:
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.NFC()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), behavior="removed"),
        pre_tokenizers.Split("-", behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"\p{Lu}"), behavior="merged_with_next", invert=True),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.post_processor = None
    tok.decoder = None


VARIANTS = {
    "variant-gpt2-bytelevel": (_gpt2_bytelevel, "strings"),
    "variant-digits-nfkc": (_digits_nfkc, "pairs"),
    "variant-split-behaviours": (_split_behaviours, "pairs"),
}


def build(base: dict) -> dict[str, dict]:
    """name -> tokenizer.json content, each derived from `base` (tiny-llama's)."""
    out = {}
    for name, (edit, merges_format) in VARIANTS.items():
        tok = Tokenizer.from_str(json.dumps(base))
        vocab = tok.get_vocab(with_added_tokens=True)
        edit(tok)
        for token in tok.get_added_tokens_decoder().values():
            if token.content not in vocab:
                assert tok.model.token_to_id(token.content) is None, (name, token.content)
        doc = json.loads(tok.to_str())
        if merges_format == "strings":
            doc["model"]["merges"] = [f"{a} {b}" for a, b in doc["model"]["merges"]]
        out[name] = doc
    return out
