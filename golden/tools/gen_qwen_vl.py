#!/usr/bin/env python3
"""Goldens of the Qwen2.5-VL image path from transformers (run by hand; CI reads the outputs).

Usage:
  python3 golden/tools/gen_qwen_vl.py [--root REPO_ROOT]

Needs golden/tools/requirements.txt and tests/data/models/tiny-qwen2-5-vl (gen_tiny_hf_models.py
--only tiny-qwen2-5-vl).  Writes:

1. golden/models/images/qvl_*: test images made deterministically here — odd sizes, a tiny one, a
   large JPEG, RGBA and grayscale PNGs, three aspect ratios for the model.
2. golden/models/tiny-qwen2-5-vl/preprocess.json: for each image and each of two processor
   settings (the tiny model's preprocessor_config.json, max_pixels 50176, and Qwen2-VL's class
   defaults, max_pixels 1003520), what Qwen2VLImageProcessorPil makes of it: image_grid_thw,
   the sha256 of pixel_values as little-endian f32 bytes [patches, 3·2·14·14] (the processor's
   flattening order), its sum, and the first 8 values.  The C++ test compares bytes through the
   hash: the preprocessing must be exact, not close.
3. golden/models/tiny-qwen2-5-vl/<image stem>.safetensors for the three model images: a chat
   turn "<image>What is it?" through the chat template (tiny-qwen2-5-vl's), the
   image tokens expanded as Qwen2_5_VLProcessor does (gen_tiny_hf_models.vl_inputs), and the f32
   eager forward pass of Qwen2_5_VLForConditionalGeneration with forward hooks:
     input_ids [T] i64, position_ids [T, 3] f32 (get_rope_index's t/h/w ids, transposed),
     pixel_values.patch_stats [patches, 2] (per patch: sum and sum of squares, f64 then f32),
     model.visual.patch_embed [patches, Dv] (processor order),
     model.visual.blocks.i{.norm1 (block 0),.attn,.norm2 (block 0),.mlp} and model.visual.blocks.i [patches, Dv]
       (in the window order the blocks run in),
     model.visual.merger [tokens, D] (window order), model.visual [tokens, D] (the pooler output:
       the merger's rows put back in image order — the image features),
     inputs_embeds [T, D], model.language_model.{embed_tokens, layers.i..., norm}, logits [T, V],
     greedy_ids / greedy_top5_ids / greedy_top5_logprobs (8 steps, full forward passes).
golden/manifest.json is updated for every file written.  PyTorch's portable CPU kernels, one thread.
"""

from __future__ import annotations

import os
import sys

if "torch" in sys.modules:
    raise RuntimeError("gen_qwen_vl.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dump_hf  # noqa: E402
from gen_tiny_hf_models import vl_inputs  # noqa: E402
from manifest import update_manifest  # noqa: E402

torch.set_num_threads(1)
PRODUCER = "golden/tools/gen_qwen_vl.py"
MODEL = "tiny-qwen2-5-vl"
GREEDY = 8
SEED = 20261204
QUESTION = "What is it?"
# The model's images: three aspect ratios, three window layouts (merged grids 2x5, 9x2, 5x5
# against windows of 4x4 merged tokens).
MODEL_IMAGES = ["qvl_wide.png", "qvl_tall.jpg", "qvl_square_rgba.png"]


def make_images(d: Path) -> list[Path]:
    """Deterministic test images (seeded numpy, written by PIL)."""
    rng = np.random.default_rng(SEED)
    d.mkdir(parents=True, exist_ok=True)

    def smooth(h, w, channels=3, noisy=True, period=1.0):
        y, x = np.mgrid[0:h, 0:w] / period
        planes = [(127 + 120 * np.sin(x / (7 + 3 * c) + y / (11 + 2 * c) + c)) for c in range(channels)]
        noise = rng.integers(-12, 13, size=(h, w, channels)) if noisy else 0
        return np.clip(np.stack(planes, -1) + noise, 0, 255).astype(np.uint8)

    out = []
    specs = [
        ("qvl_wide.png", smooth(60, 150), "RGB", {}),
        ("qvl_tall.jpg", smooth(260, 50), "RGB", {"quality": 90}),
        ("qvl_square_rgba.png", np.concatenate([smooth(140, 140), smooth(140, 140, 1, False)], -1),
         "RGBA", {}),
        ("qvl_odd.png", smooth(37, 91), "RGB", {}),
        ("qvl_tiny.png", smooth(3, 5), "RGB", {}),
        ("qvl_gray.png", smooth(45, 70, 1)[..., 0], "L", {}),
        ("qvl_large.jpg", smooth(900, 1200, 3, False, 20.0), "RGB", {"quality": 75}),
    ]
    for name, arr, mode, kw in specs:
        path = d / name
        Image.fromarray(arr, mode=mode).save(path, **kw)
        out.append(path)
    return out


def pixel_record(pv: np.ndarray, grid) -> dict:
    pv = np.ascontiguousarray(pv, dtype="<f4")
    return {"grid_thw": [int(v) for v in grid], "shape": list(pv.shape),
            "sha256": hashlib.sha256(pv.tobytes()).hexdigest(), "sum": float(pv.astype(np.float64).sum()),
            "head": [float(v) for v in pv.reshape(-1)[:8]]}


def write_preprocess(ckpt: Path, images: list[Path], out: Path) -> Path:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    settings = {"model": Qwen2VLImageProcessorPil.from_pretrained(ckpt), "defaults": Qwen2VLImageProcessorPil()}
    data = {"producer": PRODUCER, "versions": dump_hf.versions(),
            "settings": {k: {"min_pixels": p.size["shortest_edge"], "max_pixels": p.size["longest_edge"]}
                         for k, p in settings.items()},
            "images": {}}
    for path in images:
        rec = {}
        for key, proc in settings.items():
            enc = proc(images=[Image.open(path)])
            rec[key] = pixel_record(np.asarray(enc["pixel_values"]), enc["image_grid_thw"][0])
        data["images"][path.name] = rec
        print(f"  {path.name}: {Image.open(path).size} -> {rec['model']['grid_thw']} / {rec['defaults']['grid_thw']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return out


class Probes:
    """Forward hooks recording module outputs once each, in execution order."""

    def __init__(self, model, names):
        modules = dict(model.named_modules())
        self.tensors, self.order, self.handles = {}, [], []
        for n in names:
            self.handles.append(modules[n].register_forward_hook(self._hook(n)))
        self.handles.append(modules["model.language_model"].register_forward_pre_hook(self._embeds, with_kwargs=True))

    def record(self, name, t):
        if name in self.tensors:
            raise SystemExit(f"probe {name} fired twice")
        self.tensors[name] = dump_hf._store(t)
        self.order.append(name)

    def _hook(self, name):
        def hook(_m, _i, out):
            if name == "model.visual":
                self.record(name, out.pooler_output)
            else:
                self.record(name, dump_hf._first_tensor(out))
        return hook

    def _embeds(self, _m, _args, kwargs):
        self.record("inputs_embeds", kwargs["inputs_embeds"])

    def remove(self):
        for h in self.handles:
            h.remove()


def probe_names(model) -> list[str]:
    names = ["model.visual.patch_embed"]
    for i in range(len(model.model.visual.blocks)):
        # The norms of the first block only: the goldens stay small.
        subs = ("norm1", "attn", "norm2", "mlp") if i == 0 else ("attn", "mlp")
        names += [f"model.visual.blocks.{i}.{s}" for s in subs] + [f"model.visual.blocks.{i}"]
    names += ["model.visual.merger", "model.visual", "model.language_model.embed_tokens"]
    for i in range(len(model.model.language_model.layers)):
        names += [f"model.language_model.layers.{i}.{s}" for s in ("input_layernorm", "self_attn",
                                                                   "post_attention_layernorm", "mlp")]
        names.append(f"model.language_model.layers.{i}")
    return names + ["model.language_model.norm"]


def forward(model, inputs: dict, ids: torch.Tensor) -> torch.Tensor:
    extra = ids.shape[0] - inputs["input_ids"].shape[1]
    mm = torch.cat([inputs["mm_token_type_ids"][0], torch.zeros(extra, dtype=torch.int32)])
    return model(input_ids=ids[None], pixel_values=inputs["pixel_values"], image_grid_thw=inputs["image_grid_thw"],
                 mm_token_type_ids=mm[None], use_cache=False).logits[0]


@torch.no_grad()
def write_model_golden(model, ckpt: Path, image: Path, out: Path) -> Path:
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTION}]}]
    inputs = vl_inputs(ckpt, [Image.open(image)], messages)
    ids = inputs["input_ids"][0]
    rec = Probes(model, probe_names(model))
    try:
        logits = forward(model, inputs, ids)
    finally:
        rec.remove()
    positions, _ = model.model.get_rope_index(inputs["input_ids"], inputs["mm_token_type_ids"], inputs["image_grid_thw"])
    pv = inputs["pixel_values"].to(torch.float64)
    tensors = {"input_ids": ids.clone(), "position_ids": positions[:, 0, :].T.to(torch.float32).contiguous(),
               "pixel_values.patch_stats": torch.stack([pv.sum(-1), (pv * pv).sum(-1)], -1).to(torch.float32)}
    tensors.update(rec.tensors)
    tensors["logits"] = dump_hf._store(logits)
    seq, g_ids, g_top, g_lp = ids, [], [], []
    for _ in range(GREEDY):
        last = forward(model, inputs, seq)[-1].float()
        nxt = int(torch.argmax(last))
        top_ids, top_lp = dump_hf.top_k_stable(torch.log_softmax(last, -1), dump_hf.TOPK)
        g_ids.append(nxt)
        g_top.append(top_ids)
        g_lp.append(top_lp)
        seq = torch.cat([seq, torch.tensor([nxt])])
    tensors["greedy_ids"] = torch.tensor(g_ids, dtype=torch.int64)
    tensors["greedy_top5_ids"] = torch.stack(g_top).to(torch.int64)
    tensors["greedy_top5_logprobs"] = torch.stack(g_lp).to(torch.float32)
    order = ["pixel_values.patch_stats"] + rec.order
    md = dump_hf.metadata(PRODUCER, ckpt.name, image.stem, order, "float32", "cpu", GREEDY, image.name)
    md["image_grid_thw"] = json.dumps(inputs["image_grid_thw"][0].tolist())
    md["question"] = QUESTION
    path = out / f"{image.stem}.safetensors"
    dump_hf.save(path, tensors, md)
    print(f"  {path.name}: T={ids.shape[0]}, grid {inputs['image_grid_thw'][0].tolist()}, greedy {g_ids}")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--model", default=MODEL,
                    help="another Qwen2.5-VL fixture under tests/data/models (e.g. tiny-qwen2-5-vl-hd32): "
                         "its model goldens (3.) only, the images and the preprocessing being the same")
    args = ap.parse_args()
    root = Path(args.root)
    ckpt = root / "tests" / "data" / "models" / args.model
    out = root / "golden" / "models" / args.model
    images = make_images(root / "golden" / "models" / "images")
    written = list(images) if args.model == MODEL else []
    if args.model == MODEL:
        written.append(write_preprocess(ckpt, images, out / "preprocess.json"))
    model = dump_hf.load_model(ckpt, torch.float32, "cpu")
    by_name = {p.name: p for p in images}
    for name in MODEL_IMAGES:
        written.append(write_model_golden(model, ckpt, by_name[name], out))
    update_manifest(root / "golden", written, producer=PRODUCER)


if __name__ == "__main__":
    main()
