#!/usr/bin/env python3
"""Layer goldens made as a reference machine makes them for a model too big to load whole:
`dump_hf.py --layers N` (decoder layer N alone, its input the embedding output, only its tensors
read) for one layer of each block type of the tiny models.

Usage (by hand, needs torch and transformers: golden/tools/requirements.txt):
  python3 golden/tools/gen_layer_goldens.py --harness build/bin/harness

Writes golden/layers/<model>/l<N>.safetensors and their manifest entries. A model under
configs/models/ is synthesized first (`harness model synth`, seed 0, as the harness synthesizes it
when a check names it); one under tests/data/models/ is used as it is. suites/layers.yaml checks
each against the platform (`<model>/layer-alone`).
"""

from __future__ import annotations

import os
import sys

# Portable scalar CPU kernels, as gen_models.py (before torch is imported).
if "torch" in sys.modules:
    raise RuntimeError("gen_layer_goldens.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dump_hf  # noqa: E402
from manifest import update_manifest  # noqa: E402

torch.set_num_threads(1)

PRODUCER = "golden/tools/gen_layer_goldens.py"
PROMPT = [1000, 17, 256, 3, 999, 42, 511, 8, 77]
# (model directory, layer): one of each block type.
CASES = [
    ("tests/data/models/tiny-qwen2-moe", 1),        # MoE with a gated shared expert
    ("configs/models/tiny-deepseek-v3-fp8", 2),     # MLA + fp8 routed experts (layer 0 is dense)
    ("tests/data/models/tiny-qwen3-next", 2),       # Gated DeltaNet (linear attention)
    ("tests/data/models/tiny-gemma3", 1),           # sliding window, sandwich norms
    ("tests/data/models/tiny-gpt-oss-mxfp4", 1),    # MXFP4 fused experts, attention sinks
    ("tests/data/models/tiny-deepseek-v32", 1),     # lightning indexer + sparse attention
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", required=True)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    root = Path(args.root)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel, layer in CASES:
            src = root / rel
            name = src.name
            if rel.startswith("configs/"):
                out = Path(tmp) / name
                subprocess.run([args.harness, "model", "synth", "--model", str(src), "--out", str(out),
                                "--seed", "0"], check=True, stdout=subprocess.DEVNULL)
                src = out
            model = dump_hf.load_layer_model(src, layer)
            tensors, probes = dump_hf.dump_layer(model, PROMPT, layer)
            md = dump_hf.metadata("golden/tools/dump_hf.py --layers", name, f"l{layer}", probes, "float32", "cpu", 0)
            md["layer"] = str(layer)
            md["layer_input"] = "embedding"
            path = root / "golden" / "layers" / name / f"l{layer}.safetensors"
            dump_hf.save(path, tensors, md)
            written.append(path.relative_to(root / "golden"))
            print(f"{path.relative_to(root)}: {len(probes)} probes")
    update_manifest(root / "golden", written, producer=PRODUCER)


if __name__ == "__main__":
    main()
