#!/usr/bin/env python3
"""Write the default config of every family the executor models as transformers 5 saves it, and
transformers' own parameter count of each (golden/models/transformers5-counts.json).

Usage:  python3 golden/tools/gen_tf5_configs.py

transformers 5 renames some config fields (Qwen3-MoE writes `num_local_experts`, not `num_experts`;
`rope_parameters` replaces `rope_theta` + `rope_scaling`); the harness must read both majors. For
each model type below: AutoConfig.for_model(type) (the library's defaults: real-model sizes),
save_pretrained into tests/data/configs/transformers5/<type>.json, and the model built on the meta
device (no memory) for num_parameters().  Not in the manifest: tests/data/.  The counts file is.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

import sys
sys.path.insert(0, str(Path(__file__).resolve().parent))
from manifest import update_manifest  # noqa: E402

TYPES = ["llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3", "llava", "mistral", "qwen2_moe", "glm4_moe",
         "gemma3_text", "gpt_oss", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "deepseek_v32", "qwen2_5_vl",
         "glm4_moe_lite", "minimax_m2"]
ROOT = Path(__file__).resolve().parents[2]
# Defaults that describe no runnable model, aligned before saving and recorded in the counts file.
# Qwen2_5_VLConfig() pairs the vision merger's out_hidden_size 3584 (7B) with an 8192-wide language
# model (72B): transformers builds it and fails only at the first image; the harness refuses it at
# parse time, so the saved config takes the language model's width.
ADJUST = {"qwen2_5_vl": lambda cfg: setattr(cfg.vision_config, "out_hidden_size", cfg.text_config.hidden_size)}
NOTES = {"qwen2_5_vl": "vision_config.out_hidden_size set to text_config.hidden_size (default 3584 vs 8192)"}


def main() -> None:
    out = ROOT / "tests/data/configs/transformers5"
    out.mkdir(parents=True, exist_ok=True)
    counts = {"producer": "golden/tools/gen_tf5_configs.py", "transformers": transformers.__version__,
              "torch": torch.__version__.split("+")[0], "models": {}}
    for t in TYPES:
        cfg = AutoConfig.for_model(t)
        if t in ADJUST:
            ADJUST[t](cfg)
        with tempfile.TemporaryDirectory() as tmp:
            cfg.save_pretrained(tmp)
            text = (Path(tmp) / "config.json").read_text()
        (out / f"{t}.json").write_text(text)
        with torch.device("meta"):
            cls = AutoModelForImageTextToText if t in ("llava", "qwen2_5_vl") else AutoModelForCausalLM
            model = cls.from_config(cfg)
        n = model.num_parameters()
        counts["models"][t] = {"config": f"tests/data/configs/transformers5/{t}.json", "num_parameters": n,
                               "architectures": type(model).__name__}
        if t in NOTES:
            counts["models"][t]["adjusted"] = NOTES[t]
        print(f"{t}: {type(model).__name__} {n:,} parameters")
    path = ROOT / "golden/models/transformers5-counts.json"
    path.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
    update_manifest(ROOT / "golden", [path], producer="golden/tools/gen_tf5_configs.py")


if __name__ == "__main__":
    main()
