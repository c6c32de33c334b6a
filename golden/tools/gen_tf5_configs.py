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
         "gemma3_text", "gpt_oss", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "deepseek_v32"]
ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    out = ROOT / "tests/data/configs/transformers5"
    out.mkdir(parents=True, exist_ok=True)
    counts = {"producer": "golden/tools/gen_tf5_configs.py", "transformers": transformers.__version__,
              "torch": torch.__version__.split("+")[0], "models": {}}
    for t in TYPES:
        cfg = AutoConfig.for_model(t)
        with tempfile.TemporaryDirectory() as tmp:
            cfg.save_pretrained(tmp)
            text = (Path(tmp) / "config.json").read_text()
        (out / f"{t}.json").write_text(text)
        with torch.device("meta"):
            cls = AutoModelForImageTextToText if t == "llava" else AutoModelForCausalLM
            model = cls.from_config(cfg)
        n = model.num_parameters()
        counts["models"][t] = {"config": f"tests/data/configs/transformers5/{t}.json", "num_parameters": n,
                               "architectures": type(model).__name__}
        print(f"{t}: {type(model).__name__} {n:,} parameters")
    path = ROOT / "golden/models/transformers5-counts.json"
    path.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
    update_manifest(ROOT / "golden", [path], producer="golden/tools/gen_tf5_configs.py")


if __name__ == "__main__":
    main()
