#!/usr/bin/env python3
"""Generate the long-context goldens (golden/models/<name>/long.safetensors) of the tiny families.

Usage:
  python3 golden/tools/gen_long.py --harness build/bin/harness [--root REPO_ROOT] [--only a,b]

The short goldens (gen_models.py: prompts of 7 and 13 tokens) never reach the positions where
RoPE scaling (llama3, YaRN past original_max_position_embeddings = 256 in the tiny configs),
sliding windows (4 tokens), paged KV over many blocks, chunked prefill of linear-attention state,
or DeepSeek-V3.2's indexer top-k among many keys behave differently. Here each tiny family gets
one prompt of T = min(2048, max_position_embeddings) - 8 tokens (so T + 8 greedy steps stay within
max_position_embeddings): at least 4 x the scaling's original length and hundreds of windows.

The prompt: T ids drawn with numpy's PCG64(seed 0) uniformly from [10, 1000) (every family's
vocabulary holds them; no special tokens). The model: as in gen_models.py (configs/models/<name>:
`harness model synth --seed 0 --shards 2`; tests/data/models/<name>: the checkpoint transformers
wrote), loaded in f32, eager attention, eval mode; dump_hf.dump runs the forward with probes and 8
greedy steps (each a full forward without cache, ties to the lowest id).

Stored (compact: rows at sampled positions, not every row):
  input_ids [T] i64; positions [P] i64 (the sampled rows: around the windows, 255/256/257 and each
  power of two up to T - 1, the last two);
  logits [P, V] and each probe [P, D] at those positions (embed_tokens, every layer's self_attn /
  linear_attn, mlp and output, the final norm; names as in gen_models.py);
  greedy_ids [8], greedy_top5_ids [8, 5], greedy_top5_logprobs [8, 5].
The harness's `kind: model` check compares its rows at `positions` when the golden has them.

For the service, golden/e2e/<name>/long/completion_long.json: the same prompt as a completion of
token ids (max_tokens 8) in gen_e2e.py's format and by its rules (transformers' generate with the
engines' stop tokens; each step checked against a cache-free forward pass).

PyTorch is pinned to its portable CPU kernels and one thread (as gen_models.py), so a rerun writes
the same bytes. golden/manifest.json is updated for every file written. See golden/models/README.md.
"""

from __future__ import annotations

import os
import sys

if "torch" in sys.modules:
    raise RuntimeError("gen_long.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_e2e  # noqa: E402  (before torch: it pins the CPU kernels too)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoConfig, AutoTokenizer  # noqa: E402

torch.set_num_threads(1)

import dump_hf  # noqa: E402
from manifest import update_manifest  # noqa: E402

PRODUCER = "golden/tools/gen_long.py"
SEED = 0
GREEDY = 8
MAX_T = 2048
# The families, by where their checkpoint comes from. Left out: tiny-olmo2 (the executor does not
# model it: README, the vLLM table) and tiny-deepseek-v32: over 2,040 keys its lightning indexer's
# ReLU scores tie exactly at 0 on the top-k boundary (query 942 first), where transformers' choice
# among tied keys is unspecified (dump_hf refuses such an input as a golden).
SYNTHESIZED = ("tiny-llama", "tiny-qwen3-moe", "tiny-deepseek-v3", "tiny-llava", "tiny-mistral-w512")
# A config-only fixture outside configs/models: tiny-mistral with a window of 512, so that the
# window's boundary falls inside the long prompt and beyond every short one (synthesized weights).
CONFIG_DIRS = {"tiny-mistral-w512": "tests/data/models/tiny-mistral-w512"}
# Short goldens (p13, gen_models.py's prompt) for a fixture gen_models.py does not cover, so that
# the short suite runs the same family.
SHORT = {"tiny-mistral-w512": [1000, 42, 7, 999, 318, 64, 512, 3, 870, 233, 101, 676, 45]}
HF_MODELS = ("tiny-gemma3", "tiny-mistral", "tiny-gpt-oss", "tiny-qwen2-moe", "tiny-glm4-moe",
             "tiny-glm4-moe-lite", "tiny-qwen3-next", "tiny-qwen3-5")
# Probes kept (suffixes of the HF module names); the norms inside a layer are left out.
KEEP = (".self_attn", ".linear_attn", ".mlp", "embed_tokens", "norm")


def prompt_length(config) -> int:
    text = getattr(config, "text_config", None) or config
    return min(MAX_T, int(text.max_position_embeddings)) - GREEDY


def sampled_positions(t: int) -> list[int]:
    """Around the tiny windows (4), RoPE scaling's original length (256), powers of two (block
    counts of 16-token pages: 32, 64, 128 blocks), and the last two rows."""
    want = {0, 3, 4, 15, 16, 255, 256, 257, t - 2, t - 1}
    p = 512
    while p < t:
        want.update({p - 1, p})
        p *= 2
    return sorted(x for x in want if 0 <= x < t)


def kept(name: str, layer_names: set[str]) -> bool:
    return name in layer_names or name.endswith(KEEP)


def write_long(root: Path, model_dir: Path, name: str, model_dir_text: str, out: Path) -> list[Path]:
    model = dump_hf.load_model(model_dir, torch.float32, "cpu")
    t = prompt_length(model.config)
    ids = np.random.Generator(np.random.PCG64(SEED)).integers(10, 1000, size=t).tolist()
    # The service's golden: the same prompt as a completion of token ids, gen_e2e's rules (HF
    # generate with the engines' stop tokens, greedy, logprobs per step).
    e2e = gen_e2e.case_golden(root, name, model_dir, model, AutoTokenizer.from_pretrained(model_dir),
                              AutoConfig.from_pretrained(model_dir), "completion_long", "completions",
                              {"prompt_ids": ids, "max_tokens": GREEDY}, model_dir_text=model_dir_text)
    e2e_path = root / "golden" / "e2e" / name / "long" / "completion_long.json"
    gen_e2e.write_case(e2e_path, e2e)
    tensors, probes = dump_hf.dump(model, ids, None, GREEDY)
    positions = sampled_positions(t)
    index = torch.tensor(positions, dtype=torch.int64)
    prefix = dump_hf.text_prefix(model)
    layer_names = {f"{prefix}layers.{i}" for i in range(model.config.get_text_config().num_hidden_layers)}
    out_tensors = {"input_ids": tensors["input_ids"], "positions": index,
                   "logits": tensors["logits"].index_select(0, index).contiguous()}
    order = []
    for p in probes:
        if kept(p, layer_names):
            out_tensors[p] = tensors[p].index_select(0, index).contiguous()
            order.append(p)
    for k in ("greedy_ids", "greedy_top5_ids", "greedy_top5_logprobs"):
        out_tensors[k] = tensors[k]
    md = dump_hf.metadata(PRODUCER, name, "long", order, "float32", "cpu", GREEDY)
    md["prompt"] = f"numpy PCG64({SEED}) integers [10, 1000), {t} tokens"
    path = out / name / "long.safetensors"
    dump_hf.save(path, out_tensors, md)
    print(f"{name}: T={t}, {len(positions)} positions, {len(order)} probes, "
          f"greedy {tensors['greedy_ids'].tolist()}, {path.stat().st_size // 1024} KiB")
    return [path, e2e_path]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("--only", default="", help="comma-separated model names")
    args = ap.parse_args()
    root = args.root.resolve()
    only = set(filter(None, args.only.split(",")))
    out = root / "golden" / "models"
    written = []
    for name in SYNTHESIZED + HF_MODELS:
        if only and name not in only:
            continue
        if name in SYNTHESIZED:
            config_dir = CONFIG_DIRS.get(name, f"configs/models/{name}")
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([args.harness, "model", "synth", "--model", str(root / config_dir),
                                "--out", tmp, "--seed", str(SEED), "--shards", "2"], check=True,
                               stdout=subprocess.DEVNULL)
                written += write_long(root, Path(tmp), name, config_dir, out)
                if name in SHORT:
                    model = dump_hf.load_model(Path(tmp), torch.float32, "cpu")
                    tensors, probes = dump_hf.dump(model, SHORT[name], None, GREEDY)
                    path = out / name / "p13.safetensors"
                    dump_hf.save(path, tensors, dump_hf.metadata(PRODUCER, name, "p13", probes, "float32",
                                                                  "cpu", GREEDY))
                    written.append(path)
        else:
            written += write_long(root, root / "tests" / "data" / "models" / name, name,
                                  f"tests/data/models/{name}", out)
    update_manifest(root / "golden", written, PRODUCER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
