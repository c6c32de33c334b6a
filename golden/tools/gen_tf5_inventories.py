#!/usr/bin/env python3
"""What transformers 5 saves for every family it ships with a CausalLM class, built from the
family's default config: each tensor of the checkpoint save_pretrained would write, whether the
model holds it as a parameter or a buffer, and num_parameters() (issue 50).

Usage:  python3 golden/tools/gen_tf5_inventories.py [TYPE ...]   (golden/tools/requirements.txt's venv)

For each model type of MODEL_FOR_CAUSAL_LM_MAPPING_NAMES: AutoConfig.for_model(type) (the
library's defaults: real-model sizes), saved with save_pretrained and read back as a user's
config.json; the CausalLM model built on the meta device (no memory); its state_dict put through
what save_pretrained does before writing (tied weights removed, transformers' weight conversions
reverted to the original checkpoint format, _keys_to_ignore_on_save dropped). Each tensor is
recorded with its dtype and shape and its kind: "parameter" (a name of named_parameters()) or
"buffer" (a persistent buffer). Tensor names are folded: every numeric path component becomes
"*", and equal (pattern, dtype, shape, kind) rows are counted, so a 61-layer, 256-expert model
is tens of rows.

Writes src/model/weights/transformers5_converted.inc (the model types whose saved parameters are not
num_parameters(): transformers converts them on load), src/model/weights/transformers5_buffers.inc, the buffers the harness's stage 1 counts apart
(model/weights/checkpoint_inventory.cc): {model_type, the name's tail from its first index} for
each buffer row of each family, and {"*", leaf} for a leaf that is a buffer in at least 3 families
and in more families than it is a parameter (the rule for a family transformers 5.24 does not
have); and golden/models/transformers5-inventories.json.gz:
  {"families": {type: {"config": <saved config.json>, "num_parameters": n, "class": name,
                       "tensors": [[pattern, dtype, [shape], count, kind], ...]}},
   "failed": {type: "config: ..." | "build: ..."}, versions}
The harness's test (tests/model/tf5_inventory_test.cc) parses each config and counts each
inventory by its own rules against num_parameters().
"""
from __future__ import annotations

import gzip
import json
import math
import re
import sys
import tempfile
import time
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.core_model_loading import revert_weight_conversion
from transformers.modeling_utils import remove_tied_weights_from_state_dict
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_inc import write_inc  # noqa: E402
from manifest import update_manifest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "golden/models/transformers5-inventories.json.gz"
DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
          torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
          torch.float64: "F64"}


def saved_json(cfg) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg.save_pretrained(tmp)
        return json.loads((Path(tmp) / "config.json").read_text())


def saved_state(model) -> tuple[dict, set]:
    """The tensors save_pretrained would write, by name (meta tensors), and the names among them
    that come from buffers (the buffers reverted alone: a conversion may rename them too)."""
    sd = model.state_dict()
    for key in getattr(model, "_keys_to_ignore_on_save", None) or []:
        sd.pop(key, None)
    sd = remove_tied_weights_from_state_dict(sd, model)
    params = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    buffers = {k: v for k, v in sd.items() if k not in params}
    return revert_weight_conversion(model, sd), set(revert_weight_conversion(model, buffers))


def fold(state: dict, buffers: set) -> list:
    rows: dict[tuple, int] = {}
    for name, t in state.items():
        kind = "buffer" if name in buffers else "parameter"
        pattern = re.sub(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.)", "*", name)
        key = (pattern, DTYPES.get(t.dtype, str(t.dtype)), tuple(t.shape), kind)
        rows[key] = rows.get(key, 0) + 1
    return [[p, d, list(s), n, k] for (p, d, s, k), n in sorted(rows.items())]


def tail(pattern: str) -> str:
    """A buffer's name from its first folded index on ("*.mlp.gate.e_score_correction_bias"), so
    a multimodal checkpoint's prefix does not matter; the last three components without one."""
    parts = pattern.split(".")
    first = parts.index("*") if "*" in parts else max(0, len(parts) - 3)
    return ".".join(parts[first:])


def buffer_rows(families: dict) -> list:
    rows = []
    for model_type, fam in sorted(families.items()):
        tails = sorted({tail(r[0]) for r in fam["tensors"] if r[4] == "buffer"})
        rows += [(model_type, t) for t in tails or [""]]  # "": a family that saves no buffer
    as_buffer, as_param = {}, {}
    for model_type, fam in families.items():
        for r in fam["tensors"]:
            leaf = r[0].rsplit(".", 1)[-1]
            (as_buffer if r[4] == "buffer" else as_param).setdefault(leaf, set()).add(model_type)
    for leaf in sorted(as_buffer):
        if len(as_buffer[leaf]) >= 3 and len(as_buffer[leaf]) > len(as_param.get(leaf, ())):
            rows.append(("*", leaf))
    return rows


def write_tables(families: dict) -> None:
    """src/model/weights/transformers5_buffers.inc and transformers5_converted.inc."""
    producer = "golden/tools/gen_tf5_inventories.py"
    write_inc(ROOT / "src/model/weights/transformers5_buffers.inc", producer,
              ['{model_type, the buffer name from its first layer index ("": the family saves none)};',
               '{"*", leaf}: a buffer in most families that have the leaf.'],
              [f'{{"{m}", "{t}"}},' for m, t in buffer_rows(families)])
    converted = [t for t, f in sorted(families.items())
                 if sum(math.prod(r[2]) * r[3] for r in f["tensors"] if r[4] == "parameter") != f["num_parameters"]]
    write_inc(ROOT / "src/model/weights/transformers5_converted.inc", producer,
              ["The model types whose saved parameters are not num_parameters() (converted on load)."],
              [f'"{t}",' for t in converted])


def one(model_type: str) -> dict:
    cfg = AutoConfig.for_model(model_type)
    saved = saved_json(cfg)
    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg)
    except Exception as e:  # noqa: BLE001
        raise RuntimeError(f"build: {type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    state, buffers = saved_state(model)
    return {"config": saved, "num_parameters": model.num_parameters(), "class": type(model).__name__,
            "tensors": fold(state, buffers)}


def main() -> None:
    types = sys.argv[1:] or sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    out = {"producer": "golden/tools/gen_tf5_inventories.py", "transformers": transformers.__version__,
           "torch": torch.__version__.split("+")[0], "families": {}, "failed": {}}
    for model_type in types:
        start = time.time()
        try:
            out["families"][model_type] = one(model_type)
            what = f'{out["families"][model_type]["num_parameters"]:,} parameters'
        except Exception as e:  # noqa: BLE001 - a family whose default config or model does not build
            msg = str(e) if str(e).startswith("build: ") else f"config: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            out["failed"][model_type] = msg
            what = msg
        print(f"{model_type}: {what} ({time.time() - start:.1f} s)", flush=True)
    if not sys.argv[1:]:
        write_tables(out["families"])
    text = json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n"
    OUT.write_bytes(gzip.compress(text.encode(), mtime=0))
    update_manifest(ROOT / "golden", [OUT], "golden/tools/gen_tf5_inventories.py")
    print(f"{len(out['families'])} families, {len(out['failed'])} failed; {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
