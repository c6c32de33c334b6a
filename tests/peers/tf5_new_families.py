#!/usr/bin/env python3
"""Stage 1 on tiny checkpoints transformers itself writes, for the 2026 families the executor does
not model (issue 50): DeepSeek-V4, Gemma 4, MiniMax-M2, GLM-5's DSA, Kimi Linear, MiMo-V2-Flash,
Hunyuan-V3, LongCat-Flash.

Run by hand (needs torch and transformers 5.24: golden/tools/requirements.txt's venv), after a build:

    python3 tests/peers/tf5_new_families.py [--harness build/bin/harness] [--out /tmp/tf5-tiny] [TYPE ...]

Each family's default config shrunk to a tiny model (the overrides below; per-layer lists cut to
the new layer count, first and last kept), built with from_config and written by save_pretrained;
then `harness model info --json` and `harness day0 --dry-run` (its stage 1) read it. Compared with transformers:
the parameters (num_parameters()), the buffers (the persistent buffers the checkpoint holds).
Exit 1 when any family's counts differ.

--record DIR also writes DIR/<type>.json for the harness's CI test (tests/model/tf5_inventory_test.cc,
which writes the checkpoint again from it, zeros for the values): the saved config.json, every
saved tensor's name, dtype and shape, num_parameters() and the buffers' elements.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

SMALL = {"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 512, "max_position_embeddings": 512}
TINY = {
    "deepseek_v4": {"num_hidden_layers": 2, "head_dim": 32, "num_key_value_heads": 1, "q_lora_rank": 32,
                    "o_lora_rank": 32, "o_groups": 2, "qk_rope_head_dim": 8, "index_head_dim": 16,
                    "index_n_heads": 2, "index_topk": 4, "moe_intermediate_size": 32, "n_routed_experts": 4,
                    "num_experts_per_tok": 2, "sliding_window": 8},
    "gemma4_text": {"num_hidden_layers": 2, "head_dim": 16, "num_key_value_heads": 2, "intermediate_size": 128,
                    "hidden_size_per_layer_input": 16, "vocab_size_per_layer_input": 512, "sliding_window": 16},
    "minimax_m2": {"num_hidden_layers": 2, "head_dim": 16, "num_key_value_heads": 2, "intermediate_size": 32,
                   "num_local_experts": 4, "num_experts_per_tok": 2},
    "glm_moe_dsa": {"num_hidden_layers": 2, "first_k_dense_replace": 1, "index_head_dim": 16, "index_n_heads": 2,
                    "index_topk": 4, "intermediate_size": 128, "kv_lora_rank": 16, "q_lora_rank": 32,
                    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "qk_head_dim": 24, "v_head_dim": 16,
                    "head_dim": 8, "moe_intermediate_size": 32, "n_routed_experts": 4, "num_experts_per_tok": 2,
                    "num_key_value_heads": 4},
    "kimi_linear": {"num_hidden_layers": 2, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "linear_head_dim": 16, "linear_num_heads": 4, "kv_lora_rank": 16,
                    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "qk_head_dim": 24, "v_head_dim": 16,
                    "head_dim": 16, "num_key_value_heads": 4, "moe_intermediate_size": 32, "num_experts": 4,
                    "num_experts_per_token": 2, "intermediate_size": 128},
    "mimo_v2_flash": {"num_hidden_layers": 2, "head_dim": 16, "v_head_dim": 16, "num_key_value_heads": 2,
                      "intermediate_size": 128, "moe_intermediate_size": 32, "n_routed_experts": 4,
                      "num_experts_per_tok": 2, "sliding_window": 16},
    "hy_v3": {"num_hidden_layers": 2, "head_dim": 16, "num_key_value_heads": 2, "intermediate_size": 128,
              "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2},
    "longcat_flash": {"num_layers": 2, "ffn_hidden_size": 128, "expert_ffn_hidden_size": 32, "n_routed_experts": 4,
                      "zero_expert_num": 2, "moe_topk": 2, "kv_lora_rank": 16, "q_lora_rank": 32,
                      "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "qk_head_dim": 24, "v_head_dim": 16,
                      "head_dim": 8, "num_key_value_heads": 4},
}


def tiny_config(model_type: str, extra: dict):
    base = AutoConfig.for_model(model_type).to_dict()
    layers = base.get("num_hidden_layers") or base.get("num_layers")
    kw = dict(SMALL, **TINY[model_type], **extra)
    n = kw.get("num_hidden_layers") or kw.get("num_layers")
    for key, value in base.items():  # per-layer lists cut to n layers, the last kept
        if isinstance(value, list) and len(value) == layers and key not in kw:
            kw[key] = value[: n - 1] + value[-1:]
    return AutoConfig.for_model(model_type, **kw)


def record(where: Path, model_type: str, out: Path, params: int, buffers: int) -> None:
    from safetensors import safe_open
    tensors = []
    with safe_open(out / "model.safetensors", "pt") as f:
        for name in sorted(f.keys()):
            sl = f.get_slice(name)
            tensors.append([name, sl.get_dtype(), list(sl.get_shape())])
    where.mkdir(parents=True, exist_ok=True)
    doc = {"producer": "tests/peers/tf5_new_families.py", "transformers": transformers.__version__,
           "config": json.loads((out / "config.json").read_text()), "num_parameters": params,
           "buffer_elements": buffers, "tensors": tensors}
    (where / f"{model_type}.json").write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")


def harness_json(harness: str, *args: str) -> dict:
    run = subprocess.run([harness, *args, "--json"], capture_output=True, text=True)
    if run.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(args)}: exit {run.returncode}: {run.stderr.strip()[:400]}")
    return json.loads(run.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", default="build/bin/harness")
    ap.add_argument("--out", default="/tmp/tf5-tiny")
    ap.add_argument("--record", help="write each family's config, tensor headers and counts here")
    ap.add_argument("--tokenizer", help="a model directory whose tokenizer the checkpoints get (its vocab_size "
                    "and special ids too), so that an engine can serve them: tests/data/models/tiny-minimax-m2")
    ap.add_argument("--initializer-range", type=float,
                    help="wider initial weights, so greedy decoding has margins an engine reproduces (0.3)")
    ap.add_argument("types", nargs="*", default=sorted(TINY))
    args = ap.parse_args()
    bad = 0
    extra = {}
    if args.tokenizer:
        tok = json.loads((Path(args.tokenizer) / "config.json").read_text())
        extra = {k: tok[k] for k in ("vocab_size", "bos_token_id", "eos_token_id", "pad_token_id") if k in tok}
    if args.initializer_range:
        extra["initializer_range"] = args.initializer_range
    for model_type in args.types:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(tiny_config(model_type, extra))
        out = Path(args.out) / model_type
        model.save_pretrained(out)
        for name in ("tokenizer.json", "tokenizer_config.json") if args.tokenizer else ():
            shutil.copy(Path(args.tokenizer) / name, out / name)
        want_params = model.num_parameters()
        params = {n for n, _ in model.named_parameters(remove_duplicate=False)}
        want_buffers = sum(b.numel() for n, b in model.state_dict().items() if n not in params)
        if args.record:
            record(Path(args.record), model_type, out, want_params, want_buffers)
        info = harness_json(args.harness, "model", "info", "--model", str(out))
        got = info["parameters"]["total"]
        # A modelled family (MiniMax-M2) counts from its family file: no classes to compare.
        buffers = info["classes"]["buffers"]["elements"] if "classes" in info else want_buffers
        ok = got == want_params and buffers == want_buffers
        bad += not ok
        print(f"{model_type:16} {'ok ' if ok else 'BAD'} parameters {got:,} (transformers {want_params:,}); "
              f"buffers {buffers:,} (transformers {want_buffers:,}) "
              f"{info.get('classes', {}).get('buffers', {}).get('names', '')}")
        day0 = harness_json(args.harness, "day0", "--model", str(out), "--dry-run")
        stage = next(s for s in day0["stages"] if s["id"] == "config")
        print(f"{'':16} stage 1: {stage['status']}: {stage['summary']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
