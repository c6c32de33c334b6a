#!/usr/bin/env python3
"""Generate the model goldens (golden/models/<name>.json) for the tiny synthetic models.

Usage:
  python3 golden/tools/gen_models.py --harness build/bin/harness [--root REPO_ROOT]

For every configs/models/<name>/ this script, with HuggingFace transformers (not the
harness's code):
  1. instantiates the model from its config.json (on the meta device: no weights) and
     records `num_parameters()` and every parameter/buffer name and shape of its state dict;
  2. runs `harness model synth --model configs/models/<name> --out <tmp> --seed 0 --shards 2`
     and loads the result with `from_pretrained`: every HF tensor must come from the
     checkpoint (no missing keys, none left at initialization), and the keys HF does not use
     must be exactly the multi-token-prediction layers (DeepSeek-V3);
  3. records the sha256 of each checkpoint tensor's bytes *as HF loaded it* (the state dict
     of the loaded model, in the checkpoint dtype), so the C++ tests can check that the
     harness synthesizes the same bytes and reads the same tensors HF does.
The output is golden/models/<name>.json; golden/manifest.json is updated.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModelForCausalLM, LlavaForConditionalGeneration

sys.path.insert(0, str(Path(__file__).resolve().parent))
from manifest import update_manifest  # noqa: E402

MODELS = ["tiny-llama", "tiny-qwen3-moe", "tiny-deepseek-v3", "tiny-llava"]
SEED = 0
TORCH_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
                "F8_E4M3": torch.float8_e4m3fn}
SHARDS = 2


def model_class(config):
    return LlavaForConditionalGeneration if config.model_type == "llava" else AutoModelForCausalLM


def tensor_sha256(t: torch.Tensor) -> str:
    t = t.detach().contiguous().cpu()
    return hashlib.sha256(t.view(torch.uint8).numpy().tobytes()).hexdigest()


def instantiate(model_dir: Path):
    config = AutoConfig.from_pretrained(model_dir)
    cls = model_class(config)
    with torch.device("meta"):
        model = cls.from_config(config) if cls is AutoModelForCausalLM else cls(config)
    return config, model


def synth(harness: str, model_dir: Path, out: Path) -> None:
    subprocess.run([harness, "model", "synth", "--model", str(model_dir), "--out", str(out),
                    "--seed", str(SEED), "--shards", str(SHARDS)], check=True, stdout=subprocess.DEVNULL)


def checkpoint_dtypes(out: Path) -> dict[str, torch.dtype]:
    dtypes = {}
    for f in sorted(out.glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for k in s.keys():
                dtypes[k] = TORCH_DTYPES[s.get_slice(k).get_dtype()]
    return dtypes


def golden_for(harness: str, root: Path, name: str) -> dict:
    model_dir = root / "configs" / "models" / name
    config, meta_model = instantiate(model_dir)
    expected = {k: list(v.shape) for k, v in meta_model.state_dict().items()}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / name
        synth(harness, model_dir, out)
        cls = model_class(config)
        model, info = cls.from_pretrained(out, dtype=torch.bfloat16, output_loading_info=True)
        if info["missing_keys"] or info["mismatched_keys"] or info.get("error_msgs"):
            raise SystemExit(f"{name}: HF could not load the synthesized checkpoint: {info}")
        ckpt = checkpoint_dtypes(out)
        # HF may keep some weights in another dtype (DeepSeek's router in f32) and renames or
        # fuses others on load (LLaVA's nesting, fused experts); save_pretrained writes the
        # checkpoint names back. Hash each tensor as HF holds it, cast to the checkpoint's dtype
        # (exact: the checkpoint dtype is the narrower one).
        saved = {}
        with tempfile.TemporaryDirectory() as tmp2:
            model.save_pretrained(tmp2)
            for f in sorted(Path(tmp2).glob("*.safetensors")):
                with safe_open(str(f), "pt") as s:
                    for k in s.keys():
                        if k not in ckpt:
                            raise SystemExit(f"{name}: HF saves {k}, which the harness did not synthesize")
                        saved[k] = tensor_sha256(s.get_tensor(k).to(ckpt[k]))
    unused = sorted(set(ckpt) - set(saved))
    not_mtp = [k for k in unused if not is_mtp(config, k)]
    if not_mtp:
        raise SystemExit(f"{name}: checkpoint tensors HF does not use: {not_mtp[:10]}")
    return {
        "model": name,
        "architecture": config.architectures[0],
        "num_parameters": meta_model.num_parameters(),
        "state_dict": expected,
        "unused_by_hf": unused,
        "synth": {"seed": SEED, "shards": SHARDS, "tensor_sha256": dict(sorted(saved.items()))},
    }


def is_mtp(config, key: str) -> bool:
    layers = getattr(config, "num_hidden_layers", None)
    extra = getattr(config, "num_nextn_predict_layers", 0) or 0
    return any(key.startswith(f"model.layers.{layers + i}.") for i in range(extra))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    root = Path(args.root)
    out_dir = root / "golden" / "models"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in MODELS:
        g = golden_for(args.harness, root, name)
        path = out_dir / f"{name}.json"
        path.write_text(json.dumps(g, indent=1, sort_keys=True) + "\n")
        written.append(path)
        print(f"{name}: {g['num_parameters']} parameters, {len(g['synth']['tensor_sha256'])} tensors "
              f"checked, unused by HF: {len(g['unused_by_hf'])}")
    update_manifest(root / "golden", written, producer="golden/tools/gen_models.py")


if __name__ == "__main__":
    main()
