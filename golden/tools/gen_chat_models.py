#!/usr/bin/env python3
"""Write the chat fixtures tests/data/chat-models/<name>/ (no weights) from the tiny models' configs.

Usage:
  python3 golden/tools/gen_chat_models.py [--root REPO_ROOT]

Each fixture is a tiny model of configs/models/<base> whose chat template carries tools, tool
calls, multi-turn history and a thinking switch, for the prompt-rendering goldens of
gen_chat.py (golden/chat/).  The script writes, per fixture:

  config.json             the base's config with the fixture's architecture and vocab_size
                          (tiny-qwen3-chat: tiny-qwen3-moe's sizes as a dense Qwen3ForCausalLM);
  tokenizer.json          the base's tokenizer with the fixture's tokens added after its ids
                          (tokenizers' AddedToken, declared like the base's own tokens of that kind);
  tokenizer_config.json   bos / eos / pad; the template is not in it but beside it;
  generation_config.json  bos, eos_token_id (all the tokens that end a turn), pad; no sampling
                          defaults (an engine would apply them to every request).

chat_template.jinja in each fixture is written by hand (the family's format, not a published
file) and only read here: the script checks that transformers loads the fixture (AutoConfig,
AutoTokenizer with that template) and that every added token encodes as one id below
vocab_size.  Weights are synthesized later by
`harness model synth --model DIR --out OUT --seed 0 --shards 1`, which copies the tokenizer
files, generation_config.json and chat_template.jinja beside them.  A rerun writes
byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tokenizers import AddedToken, Tokenizer

ROOT = Path(__file__).resolve().parents[2]

# Keys of tiny-qwen3-moe's config that a dense Qwen3 has no use for.
MOE_KEYS = ("decoder_sparse_step", "mlp_only_layers", "moe_intermediate_size", "norm_topk_prob",
            "num_experts", "num_experts_per_tok")

# Added-token declarations, copied from the base tokenizers: tiny-qwen3-moe's <think> (not special,
# not normalized), tiny-llama's <|eot_id|> (special), tiny-deepseek-v3's <｜User｜> (not special,
# normalized).
QWEN_PLAIN = dict(special=False, normalized=False)
LLAMA_SPECIAL = dict(special=True, normalized=False)
DEEPSEEK_PLAIN = dict(special=False, normalized=True)

DEEPSEEK_TOOL_TOKENS = ["<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                        "<｜tool▁call▁end｜>", "<｜tool▁sep｜>", "<｜tool▁outputs▁begin｜>",
                        "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>"]

# name -> how the fixture differs from configs/models/<base>.
FIXTURES = {
    "tiny-qwen3-chat": {
        "base": "tiny-qwen3-moe",
        "config": {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 1040},
        "drop": MOE_KEYS,
        "added": [(t, QWEN_PLAIN) for t in ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")],
        "tokenizer_config": {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
        "generation": {"bos_token_id": "<|endoftext|>", "eos_token_id": ["<|im_end|>", "<|endoftext|>"],
                       "pad_token_id": "<|endoftext|>"},
    },
    "tiny-llama3-chat": {
        "base": "tiny-llama",
        "config": {"vocab_size": 1032},
        "drop": (),
        "added": [(t, LLAMA_SPECIAL) for t in ("<|eom_id|>", "<|python_tag|>")],
        "tokenizer_config": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
        "generation": {"bos_token_id": "<|begin_of_text|>",
                       "eos_token_id": ["<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"]},
    },
    "tiny-deepseek-v3-chat": {
        "base": "tiny-deepseek-v3",
        "config": {"vocab_size": 1040},
        "drop": (),
        "added": [(t, DEEPSEEK_PLAIN) for t in ["<think>", "</think>"] + DEEPSEEK_TOOL_TOKENS],
        "tokenizer_config": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
        "generation": {"bos_token_id": "<｜begin▁of▁sentence｜>", "eos_token_id": "<｜end▁of▁sentence｜>"},
    },
}


def write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8", newline="\n")


def ids_of(tok: Tokenizer, value):
    """A token string (or a list of them) as its id(s)."""
    if isinstance(value, list):
        return [ids_of(tok, v) for v in value]
    got = tok.token_to_id(value)
    if got is None:
        raise SystemExit(f"{value!r} is not a token")
    return got


def build(name: str, spec: dict) -> Path:
    base = ROOT / "configs" / "models" / spec["base"]
    out = ROOT / "tests" / "data" / "chat-models" / name
    if not (out / "chat_template.jinja").is_file():
        raise SystemExit(f"{out}/chat_template.jinja: missing (it is written by hand, not by this script)")

    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    first = tok.get_vocab_size(with_added_tokens=True)
    for i, (content, kind) in enumerate(spec["added"]):
        tok.add_tokens([AddedToken(content, single_word=False, lstrip=False, rstrip=False, **kind)])
        if tok.token_to_id(content) != first + i:
            raise SystemExit(f"{name}: {content} got id {tok.token_to_id(content)}, expected {first + i}")
    tok.save(str(out / "tokenizer.json"), pretty=True)

    config = json.loads((base / "config.json").read_text("utf-8"))
    for key in spec["drop"]:
        del config[key]
    config.update(spec["config"])
    if tok.get_vocab_size(with_added_tokens=True) > config["vocab_size"]:
        raise SystemExit(f"{name}: {tok.get_vocab_size(with_added_tokens=True)} token ids do not fit "
                         f"vocab_size {config['vocab_size']}")
    write_json(out / "config.json", dict(sorted(config.items(), key=lambda kv: kv[0] not in
                                                ("architectures", "model_type"))))
    write_json(out / "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast",
                                               "model_max_length": 4096, **spec["tokenizer_config"]})
    write_json(out / "generation_config.json", {k: ids_of(tok, v) for k, v in spec["generation"].items()})
    return out


def check(name: str, spec: dict, out: Path) -> None:
    """transformers loads the fixture; each added token is one id below vocab_size."""
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    if not tok.chat_template or tok.chat_template != (out / "chat_template.jinja").read_text("utf-8"):
        raise SystemExit(f"{name}: AutoTokenizer did not take chat_template.jinja as the chat template")
    for content, _ in spec["added"]:
        ids = tok(content, add_special_tokens=False).input_ids
        if len(ids) != 1 or ids[0] >= config.vocab_size:
            raise SystemExit(f"{name}: {content} encodes as {ids}")
    added = {t: tok.convert_tokens_to_ids(t) for t, _ in spec["added"]}
    print(f"{out.relative_to(ROOT)}: {config.architectures[0]}, vocab_size {config.vocab_size}, "
          f"{len(tok)} token ids, added {added}")


def main() -> int:
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root")
    args = parser.parse_args()
    ROOT = args.root.resolve()
    for name, spec in FIXTURES.items():
        check(name, spec, build(name, spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
