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
The output is golden/models/<name>.json.

Then, with the same checkpoint loaded again in f32 (from_pretrained(..., dtype=torch.float32): the
bf16 weights are upcast exactly; eval mode, attn_implementation="eager"), it writes for each of the
fixed prompts below golden/models/<name>/<prompt_id>.safetensors: the probe activations (forward
hooks on HF modules, named by module name), the logits and a greedy continuation, in the format of
golden/tools/dump_hf.py (whose functions do the work).  tiny-llava has a text-only prompt and one
with 16 image tokens and golden/models/images/checker.png.

It also makes three small test images deterministically, golden/models/images/{gradient.png,
checker.png,noise.jpg}, and for each golden/models/tiny-llava/pixels_<stem>.safetensors (the image as
PIL decodes it and the pixel_values the HF image processor makes of it).

The checkpoints transformers itself wrote (HF_MODELS: tests/data/models/<name>/, made by
gen_tiny_hf_models.py with from_config + save_pretrained) get the same activation files and a
golden/models/<name>.json of their num_parameters() and state-dict shapes; nothing is synthesized.
`--only a,b` regenerates those models alone.

PyTorch is pinned to its portable CPU kernels and one thread, so the files are reproducible.
golden/manifest.json is updated for every file written.  See golden/models/README.md.
"""

from __future__ import annotations

import os
import sys

# Pin PyTorch's portable scalar CPU kernels (see gen_foundation.py): the activations then do not
# depend on the vector extensions of the machine that generated them.  Before torch is imported.
if "torch" in sys.modules:
    raise RuntimeError("gen_models.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, LlavaForConditionalGeneration  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from manifest import update_manifest  # noqa: E402
import dump_hf  # noqa: E402

torch.set_num_threads(1)

MODELS = ["tiny-llama", "tiny-qwen3-moe", "tiny-deepseek-v3", "tiny-llava",
          # tiny-llava at head_dim 32 (2 text heads over 1, one vision head of 32) with
          # image_token_index the tokenizer's <image> (1023): the LLaVA fixture vLLM's CPU build serves
          "tiny-llava-hd32"]
# Checkpoints written by transformers itself (gen_tiny_hf_models.py: from_config + save_pretrained),
# under tests/data/models/: their goldens come from the checkpoint as it is, no synth.
HF_MODELS = ["tiny-mistral", "tiny-qwen2-moe", "tiny-glm4-moe", "tiny-glm4-moe-lite", "tiny-minimax-m2", "tiny-gemma3",
             "tiny-gpt-oss", "tiny-gpt-oss-mxfp4", "tiny-qwen3-next", "tiny-deepseek-v32", "tiny-qwen3-5", "tiny-qwen2-5-vl",
             # gen_tiny_hf_models.py --vllm-variants: the same families at sizes vLLM's CPU build takes
             "tiny-mistral-hd32", "tiny-qwen2-moe-hd32", "tiny-qwen3-next-hd32",
             "tiny-qwen3-5-hd32", "tiny-qwen2-5-vl-hd32", "tiny-deepseek-v3-mla"]
SEED = 0
TORCH_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
                "F8_E4M3": torch.float8_e4m3fn}
SHARDS = 2
PRODUCER = "golden/tools/gen_models.py"

# The fixed prompts (token ids): the bos id 1000 first, all others < 1000.
PROMPT_7 = [1000, 17, 263, 951, 4, 588, 120]
PROMPT_13 = [1000, 42, 7, 999, 318, 64, 512, 3, 870, 233, 101, 676, 45]
IMAGE_TOKEN = 1003  # tiny-llava's image_token_index (tiny-llava-hd32's: 1023, its tokenizer's <image>)
IMAGE_SEQ = 16      # its image_seq_length: (32 / 8)^2 patches, CLS dropped ("default" strategy)
PROMPTS = {"p7": PROMPT_7, "p13": PROMPT_13}


def llava_prompts(image_token: int) -> dict:
    """A LLaVA fixture's prompts: the 7-token prompt text only, and the 13 text tokens of PROMPT_13
    with 16 image tokens after the 4th (29 tokens), with LLAVA_IMAGE."""
    return {"p7": PROMPT_7, "p13_image": PROMPT_13[:4] + [image_token] * IMAGE_SEQ + PROMPT_13[4:]}


LLAVA_PROMPTS = llava_prompts(IMAGE_TOKEN)
LLAVA_IMAGE = "checker.png"
GREEDY = 8
IMAGE_SEED = 20240607


def model_class(config):
    if config.model_type == "llava":
        return LlavaForConditionalGeneration
    if getattr(config, "vision_config", None) is not None:  # Qwen2.5-VL
        from transformers import AutoModelForImageTextToText
        return AutoModelForImageTextToText
    return AutoModelForCausalLM


def tensor_sha256(t: torch.Tensor) -> str:
    t = t.detach().contiguous().cpu()
    return hashlib.sha256(t.view(torch.uint8).numpy().tobytes()).hexdigest()


def instantiate(model_dir: Path):
    config = AutoConfig.from_pretrained(model_dir)
    cls = model_class(config)
    with torch.device("meta"):
        model = cls(config) if cls is LlavaForConditionalGeneration else cls.from_config(config)
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


def golden_for(harness: str, root: Path, name: str, with_checkpoint=None) -> dict:
    """The golden JSON of model `name`; with_checkpoint(checkpoint_dir), if given, is called while
    the synthesized checkpoint exists."""
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
        if with_checkpoint is not None:
            with_checkpoint(out)
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


def golden_for_hf(ckpt: Path, name: str) -> dict:
    """The golden JSON of a checkpoint transformers wrote: its count and state-dict shapes."""
    config, meta_model = instantiate(ckpt)
    return {
        "model": name,
        "architecture": config.architectures[0],
        "num_parameters": meta_model.num_parameters(),
        "state_dict": {k: list(v.shape) for k, v in meta_model.state_dict().items()},
        "checkpoint": str(ckpt.relative_to(ckpt.parents[3])),
    }


def is_mtp(config, key: str) -> bool:
    layers = getattr(config, "num_hidden_layers", None)
    extra = getattr(config, "num_nextn_predict_layers", 0) or 0
    return any(key.startswith(f"model.layers.{layers + i}.") for i in range(extra))


# --------------------------------------------------------------------------
# Test images
# --------------------------------------------------------------------------


def _smooth(a: np.ndarray, passes: int) -> np.ndarray:
    """Separable binomial [1,4,6,4,1]/16 blur over axes 0 and 1, wrapping around."""
    k = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0
    for _ in range(passes):
        for axis in (0, 1):
            a = sum(w * np.roll(a, s, axis=axis) for w, s in zip(k, range(-2, 3)))
    return a


def make_images(images_dir: Path) -> list[Path]:
    """gradient.png (48x40 W x H), checker.png (37x53), noise.jpg (40x40, q90, baseline, 4:2:0)."""
    from PIL import Image

    images_dir.mkdir(parents=True, exist_ok=True)
    written = []

    w, h = 48, 40
    y, x = np.mgrid[0:h, 0:w]
    grad = np.stack([(255 * x + (w - 1) // 2) // (w - 1),
                     (255 * y + (h - 1) // 2) // (h - 1),
                     255 - (255 * (x + y) + (w + h - 2) // 2) // (w + h - 2)], axis=-1).astype(np.uint8)
    path = images_dir / "gradient.png"
    Image.fromarray(grad, "RGB").save(path, format="PNG")
    written.append(path)

    w, h, cell = 37, 53, 5
    y, x = np.mgrid[0:h, 0:w]
    odd = ((x // cell + y // cell) % 2)[..., None]
    light = np.stack([230 - 2 * (y // cell), 200 + 3 * (x // cell), np.full_like(x, 40)], axis=-1)
    dark = np.stack([np.full_like(x, 25), 40 + 2 * (y // cell), 140 + 4 * (x // cell)], axis=-1)
    checker = np.where(odd == 1, dark, light).astype(np.uint8)
    path = images_dir / "checker.png"
    Image.fromarray(checker, "RGB").save(path, format="PNG")
    written.append(path)

    rng = np.random.default_rng(IMAGE_SEED)
    n = 40
    noise = _smooth(rng.standard_normal((n, n, 3)), passes=3)
    noise = (noise - noise.mean(axis=(0, 1))) / noise.std(axis=(0, 1))
    y, x = np.mgrid[0:n, 0:n]
    base = np.stack([90 + 2.0 * x, 70 + 1.5 * y, 160 - 1.0 * (x + y)], axis=-1)
    photo = np.clip(np.rint(base + 35.0 * noise), 0, 255).astype(np.uint8)
    path = images_dir / "noise.jpg"
    Image.fromarray(photo, "RGB").save(path, format="JPEG", quality=90, subsampling="4:2:0",
                                       progressive=False, optimize=False)
    written.append(path)
    return written


# --------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------


def write_pixels(ckpt: Path, images: list[Path], out_dir: Path) -> list[Path]:
    """pixels_<stem>.safetensors: image_rgb [H,W,3] u8 and pixel_values [3,S,S] f32."""
    processor = dump_hf.load_image_processor(ckpt)
    written = []
    for image in images:
        rgb, pixel_values = dump_hf.preprocess_image(processor, image)
        path = out_dir / f"pixels_{image.stem}.safetensors"
        md = {"producer": PRODUCER, "model": out_dir.name, "image": image.name,
              "versions": json.dumps(dump_hf.versions(), sort_keys=True, separators=(",", ":"))}
        dump_hf.save(path, {"image_rgb": torch.from_numpy(rgb), "pixel_values": pixel_values[0]}, md)
        written.append(path)
    return written


def write_activations(ckpt: Path, name: str, out_dir: Path, images_dir: Path) -> list[Path]:
    model = dump_hf.load_model(ckpt, torch.float32, "cpu")
    llava = name.startswith("tiny-llava")
    image_token = model.config.image_token_index if llava else None
    prompts = llava_prompts(image_token) if llava else PROMPTS
    written = []
    for prompt_id, ids in prompts.items():
        image = pixel_values = rgb = None
        if llava and image_token in ids:
            image = LLAVA_IMAGE
            rgb, pixel_values = dump_hf.preprocess_image(dump_hf.load_image_processor(ckpt), images_dir / image)
        tensors, probes = dump_hf.dump(model, ids, pixel_values, GREEDY)
        if rgb is not None:
            tensors["image_rgb"] = torch.from_numpy(rgb)
        md = dump_hf.metadata(PRODUCER, name, prompt_id, probes, "float32", "cpu", GREEDY, image)
        path = out_dir / f"{prompt_id}.safetensors"
        dump_hf.save(path, tensors, md)
        written.append(path)
        print(f"  {name}/{prompt_id}: T={len(ids)}, {len(probes)} probes, greedy {tensors['greedy_ids'].tolist()}")
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--only", help="comma-separated model names (default: all)")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    root = Path(args.root)
    out_dir = root / "golden" / "models"
    out_dir.mkdir(parents=True, exist_ok=True)
    images_dir = out_dir / "images"
    images = make_images(images_dir)
    written = list(images)
    for name in HF_MODELS:
        if only and name not in only:
            continue
        ckpt = root / "tests" / "data" / "models" / name
        written.extend(write_activations(ckpt, name, out_dir / name, images_dir))
        g = golden_for_hf(ckpt, name)
        path = out_dir / f"{name}.json"
        path.write_text(json.dumps(g, indent=1, sort_keys=True) + "\n")
        written.append(path)
        print(f"{name}: {g['num_parameters']} parameters (checkpoint {g['checkpoint']})")
    for name in MODELS:
        if only and name not in only:
            continue
        def activations(ckpt: Path, name=name) -> None:
            written.extend(write_activations(ckpt, name, out_dir / name, images_dir))
            if name.startswith("tiny-llava"):
                written.extend(write_pixels(ckpt, images, out_dir / name))

        g = golden_for(args.harness, root, name, with_checkpoint=activations)
        path = out_dir / f"{name}.json"
        path.write_text(json.dumps(g, indent=1, sort_keys=True) + "\n")
        written.append(path)
        print(f"{name}: {g['num_parameters']} parameters, {len(g['synth']['tensor_sha256'])} tensors "
              f"checked, unused by HF: {len(g['unused_by_hf'])}")
    update_manifest(root / "golden", written, producer=PRODUCER)


if __name__ == "__main__":
    main()
