#!/usr/bin/env python3
"""Train the tiny models' tokenizers and write the tokenizer goldens.

Usage:  python3 golden/tools/gen_tokenizers.py

Writes (paths relative to the repository root):

  configs/models/<name>/tokenizer.json         byte-level BPE trained with the `tokenizers`
  configs/models/<name>/tokenizer_config.json  package on golden/tools/tokenizer_training.txt;
                                               bos/eos/pad and a small chat template
  golden/tokenizer/corpus.json                 the strings of tokenizer_corpus.py
  golden/tokenizer/<name>.json                 per tokenizer: HF's ids for every corpus string
                                               (add_special_tokens true and false), HF's decode of
                                               those ids (skip_special_tokens false and true), and
                                               HF's decode of every single id
  golden/tokenizer/variants/<v>.tokenizer.json pipelines the four models do not use (GPT-2's
  golden/tokenizer/<v>.json                    ByteLevel regex, Digits, Split behaviours, NFKC,
                                               lstrip/rstrip added tokens, "a b" merges), built on
                                               tiny-llama's vocabulary, with the same goldens

The four tokenizers follow the pipelines of real tokenizer.json files: the pre-tokenizer
regexes are copied from them (see the *_REGEX constants), the specials sit where the real
models put them (after the merges for Llama 3 and Qwen, ids 0 and 1 for DeepSeek-V3). Each
has exactly 1024 ids. Training is deterministic: the same text, the same `tokenizers` version,
the same files (golden/manifest.json records the versions).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one training thread: no ordering questions

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models,  # noqa: E402
                        normalizers, pre_tokenizers, processors, trainers)

TOOLS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS_DIR))
from manifest import update_manifest  # noqa: E402
from tokenizer_corpus import corpus  # noqa: E402
import tokenizer_variants  # noqa: E402

REPO_ROOT = TOOLS_DIR.parent.parent
GOLDEN_ROOT = TOOLS_DIR.parent
TRAINING_TEXT = TOOLS_DIR / "tokenizer_training.txt"
PRODUCER = "golden/tools/gen_tokenizers.py"
VOCAB_SIZE = 1024

# meta-llama/Meta-Llama-3-8B tokenizer.json, pre_tokenizer.pretokenizers[0].pattern.Regex
# (the tiktoken cl100k pattern); also Llama 3.1/3.2/3.3.
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Qwen/Qwen2-7B (and Qwen2.5, Qwen3) tokenizer.json, pre_tokenizer.pretokenizers[0]: Llama 3's
# pattern with single digits.
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# deepseek-ai/DeepSeek-V3 tokenizer.json, pre_tokenizer.pretokenizers[0..2]. The file has raw
# CR/LF characters inside the classes of the third pattern; so do these.
DEEPSEEK_V3_REGEXES = [
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    ("[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
     " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"),
]

LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                   "<|end_header_id|>", "<|eot_id|>"]
LLAMA3_CHAT = ("{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}"
               "<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>{% endfor %}"
               "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
QWEN_CHAT = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
             "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
DEEPSEEK_CHAT = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                 "<｜User｜>{{ message['content'] }}{% elif message['role'] == 'assistant' %}"
                 "<｜Assistant｜>{{ message['content'] }}<｜end▁of▁sentence｜>{% else %}"
                 "{{ message['content'] }}{% endif %}{% endfor %}"
                 "{% if add_generation_prompt %}<｜Assistant｜>{% endif %}")
# LLaVA's: a list content renders its parts joined by newlines, an image part as "<image>"
# (golden/e2e/README.md); string content as LLAMA3_CHAT.
LLAMA3_CHAT_PARTS = "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{% if message['content'] is string %}{{ message['content'] | trim }}{% else %}{% set ns = namespace(parts=[]) %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{% set ns.parts = ns.parts + [part['text']] %}{% else %}{% set ns.parts = ns.parts + ['<image>'] %}{% endif %}{% endfor %}{{ ns.parts | join('\n') | trim }}{% endif %}<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"


def split_then_bytes(regexes: list[str]) -> pre_tokenizers.PreTokenizer:
    """Split(regex, Isolated) for each regex, then ByteLevel without its own regex."""
    steps = [pre_tokenizers.Split(Regex(r), behavior="isolated", invert=False) for r in regexes]
    steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False))
    return pre_tokenizers.Sequence(steps)


def train(tok: Tokenizer, vocab_size: int, specials: list[str]) -> None:
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([str(TRAINING_TEXT)], trainer)


def bos_template(tok: Tokenizer, bos: str) -> processors.TemplateProcessing:
    return processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B:1",
                                         special_tokens=[(bos, tok.token_to_id(bos))])


def llama_style(extra_specials: list[str]) -> Tokenizer:
    """Llama 3: Split(regex) + ByteLevel, ignore_merges, specials after the merges, bos template."""
    specials = LLAMA3_SPECIALS + extra_specials
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = split_then_bytes([LLAMA3_REGEX])
    tok.decoder = decoders.ByteLevel()
    train(tok, VOCAB_SIZE - len(specials), [])
    tok.add_special_tokens(specials)
    tok.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False),
                                              bos_template(tok, "<|begin_of_text|>")])
    return tok


def qwen3_style() -> Tokenizer:
    """Qwen2/3: NFC, Split(regex) + ByteLevel, specials after the merges, <think> not special."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    plain = [AddedToken("<think>", special=False, normalized=False),
             AddedToken("</think>", special=False, normalized=False)]
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = split_then_bytes([QWEN2_REGEX])
    tok.decoder = decoders.ByteLevel()
    train(tok, VOCAB_SIZE - len(specials) - len(plain), [])
    tok.add_special_tokens(specials)
    tok.add_tokens(plain)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def deepseek_v3_style() -> Tokenizer:
    """DeepSeek-V3: three Splits + ByteLevel, bos/eos at ids 0/1, <｜User｜> normalized, not special."""
    specials = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"]
    plain = [AddedToken("<｜User｜>", special=False, normalized=True),
             AddedToken("<｜Assistant｜>", special=False, normalized=True)]
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([])
    tok.pre_tokenizer = split_then_bytes(DEEPSEEK_V3_REGEXES)
    tok.decoder = decoders.ByteLevel()
    train(tok, VOCAB_SIZE - len(plain), specials)
    tok.add_tokens(plain)
    tok.post_processor = bos_template(tok, specials[0])
    return tok


# name -> (builder, tokenizer_config.json fields)
MODELS = {
    "tiny-llama": (lambda: llama_style([]),
                   {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
                    "chat_template": LLAMA3_CHAT}),
    "tiny-qwen3-moe": (qwen3_style,
                       {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                        "chat_template": QWEN_CHAT}),
    "tiny-deepseek-v3": (deepseek_v3_style,
                         {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>",
                          "chat_template": DEEPSEEK_CHAT}),
    "tiny-llava": (lambda: llama_style(["<image>"]),
                   {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
                    "image_token": "<image>", "chat_template": LLAMA3_CHAT_PARTS}),
}


def write_json(path: Path, value, indent: int | None = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=False) + "\n"
    path.write_text(text, encoding="utf-8", newline="\n")


def goldens(tok: Tokenizer, tokenizer_rel: str, texts: list[str]) -> dict:
    """HF's encode/decode of every corpus string and its decode of every single id."""
    cases = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=True).ids
        cases.append({
            "ids": ids,
            "ids_no_special": tok.encode(text, add_special_tokens=False).ids,
            "decode": tok.decode(ids, skip_special_tokens=False),
            "decode_skip_special": tok.decode(ids, skip_special_tokens=True),
        })
    size = tok.get_vocab_size(with_added_tokens=True)
    return {
        "tokenizer": tokenizer_rel,
        "tokenizer_sha256": hashlib.sha256((REPO_ROOT / tokenizer_rel).read_bytes()).hexdigest(),
        "vocab_size": size,
        "cases": cases,
        "vocab_decode": [tok.decode([i], skip_special_tokens=False) for i in range(size)],
    }


def write_golden(tok: Tokenizer, name: str, tokenizer_rel: str, texts: list[str]) -> str:
    rel = f"tokenizer/{name}.json"
    write_json(GOLDEN_ROOT / rel, goldens(tok, tokenizer_rel, texts), indent=None)
    return rel


def main() -> int:
    texts = corpus()
    written = ["tokenizer/corpus.json"]
    write_json(GOLDEN_ROOT / written[0], texts)
    for name, (build, config) in MODELS.items():
        tok = build()
        assert tok.get_vocab_size(with_added_tokens=True) == VOCAB_SIZE, name
        model_dir = REPO_ROOT / "configs" / "models" / name
        model_dir.mkdir(parents=True, exist_ok=True)
        tok.save(str(model_dir / "tokenizer.json"), pretty=True)
        write_json(model_dir / "tokenizer_config.json",
                   {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096, **config},
                   indent=2)
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))  # exactly what was written
        written.append(write_golden(tok, name, f"configs/models/{name}/tokenizer.json", texts))
        specials = {t.content: i for i, t in tok.get_added_tokens_decoder().items()}
        print(f"{name}: {tok.get_vocab_size(with_added_tokens=True)} ids, added {specials}")
    base = json.loads((REPO_ROOT / "configs/models/tiny-llama/tokenizer.json").read_text("utf-8"))
    for name, variant in tokenizer_variants.build(base).items():
        rel = f"tokenizer/variants/{name}.tokenizer.json"
        write_json(GOLDEN_ROOT / rel, variant, indent=1)
        tok = Tokenizer.from_file(str(GOLDEN_ROOT / rel))
        written += [rel, write_golden(tok, name, f"golden/{rel}", texts)]
    update_manifest(GOLDEN_ROOT, written, PRODUCER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
