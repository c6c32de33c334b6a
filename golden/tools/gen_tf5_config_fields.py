#!/usr/bin/env python3
"""How transformers 5 derives the decoder fields every planner needs, for every family it ships
with a CausalLM class: the table of aliases and derived fields the harness reads a config.json
with when the executor does not model its family (issue 50).

Usage:  python3 golden/tools/gen_tf5_config_fields.py      (golden/tools/requirements.txt's venv)

For each model type of MODEL_FOR_CAUSAL_LM_MAPPING_NAMES: AutoConfig.for_model(type) (the
library's defaults), saved with save_pretrained as a user's checkpoint would hold it, and read back
as JSON. For each field the harness needs (num_hidden_layers, hidden_size, num_attention_heads,
num_key_value_heads, vocab_size) the config object's value (its text config's, for a multimodal
one) is compared with what the saved JSON holds under that name. Where the JSON lacks it, the saved
key the value comes from is looked for: the class's attribute_map first (an alias), then a key
holding value / k for k in 1..4 (a field derived by a property: LongCat-Flash's num_hidden_layers
is 2 × num_layers, two attention sublayers per layer). Writes

  src/model/config/transformers5_fields.inc   {"model_type", "field", "saved_key", factor}
                                              (factor 0: the length of the saved list or string),
  golden/models/transformers5-fields.json     the same rows, the families that failed to build a
                                              config (and why), and the fields no key explains

The .inc is compiled into the harness (config/generic_architecture.cc); the JSON is the evidence.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_inc import write_inc  # noqa: E402
from manifest import update_manifest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Default configs saved for the harness's tests (tests/data/configs/transformers5-fields/): a field
# derived by a factor (longcat_flash), aliases (gpt2), a layer count from a per-layer list
# (nemotron_h).
SAMPLES = ["longcat_flash", "gpt2", "nemotron_h"]
FIELDS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "vocab_size"]


def saved_json(cfg) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg.save_pretrained(tmp)
        return json.loads((Path(tmp) / "config.json").read_text())


def text_parts(cfg, saved: dict):
    """The config object and saved dict of the language model (text_config where nested)."""
    if isinstance(saved.get("text_config"), dict):
        sub = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg.text_config
        return sub, saved["text_config"], "text_config."
    return cfg, saved, ""


# A saved key can only stand for a field when its name says what it counts (a value that merely
# coincides, nemotron_h's conv_kernel for its layer count, is no evidence).
KEYWORDS = {"num_hidden_layers": ("layer",), "hidden_size": ("embd", "model", "hidden", "dim"),
            "num_attention_heads": ("head",), "num_key_value_heads": ("head", "kv", "group"),
            "vocab_size": ("vocab",)}


def explain(field: str, value, obj, saved: dict):
    """(saved_key, factor) that gives `value`, or None. Factor 0: the length of the saved list or
    string (a layer count derived from a per-layer pattern)."""
    amap = getattr(type(obj), "attribute_map", {}) or {}
    key = amap.get(field)
    if key and isinstance(saved.get(key), int) and saved[key] == value:
        return key, 1
    named = {k: v for k, v in saved.items() if k != field and any(w in k for w in KEYWORDS[field])}
    for factor in (1, 2, 3, 4):
        hits = [k for k, v in named.items()
                if isinstance(v, int) and not isinstance(v, bool) and v * factor == value]
        # A unique key only: several keys with that value decide nothing.
        if len(hits) == 1:
            return hits[0], factor
    if field == "num_hidden_layers":
        hits = [k for k, v in saved.items() if isinstance(v, (list, str)) and len(v) == value
                and any(w in k for w in ("pattern", "layer", "types", "block"))]
        if len(hits) == 1:
            return hits[0], 0
    return None


def main() -> None:
    rows, failed, unexplained = [], {}, {}
    for model_type in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        try:
            cfg = AutoConfig.for_model(model_type)
            saved = saved_json(cfg)
        except Exception as e:  # noqa: BLE001 - a family whose default config does not build
            failed[model_type] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            continue
        if model_type in SAMPLES:
            sample = ROOT / "tests/data/configs/transformers5-fields" / f"{model_type}.json"
            sample.parent.mkdir(parents=True, exist_ok=True)
            sample.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
        obj, text, prefix = text_parts(cfg, saved)
        for field in FIELDS:
            try:
                value = getattr(obj, field, None)
            except Exception as e:  # noqa: BLE001 - e.g. a field that differs per layer
                unexplained.setdefault(model_type, []).append(f"{field}: {type(e).__name__}")
                continue
            if not isinstance(value, int) or isinstance(value, bool) or field in text:
                continue
            how = explain(field, value, obj, text)
            if how is None:
                unexplained.setdefault(model_type, []).append(f"{field}={value}")
                continue
            rows.append({"model_type": model_type, "field": field, "saved_key": prefix + how[0],
                         "factor": how[1]})
    out = {"producer": "golden/tools/gen_tf5_config_fields.py", "transformers": transformers.__version__,
           "torch": torch.__version__.split("+")[0], "families": len(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES),
           "rows": rows, "config_failed": failed, "unexplained": unexplained}
    path = ROOT / "golden/models/transformers5-fields.json"
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    write_inc(ROOT / "src/model/config/transformers5_fields.inc", "golden/tools/gen_tf5_config_fields.py",
              ["{model_type, field, the saved config.json key it comes from, factor}."],
              [f'{{"{r["model_type"]}", "{r["field"]}", "{r["saved_key"]}", {r["factor"]}}},' for r in rows])
    update_manifest(ROOT / "golden", [path], "golden/tools/gen_tf5_config_fields.py")
    print(f"{len(rows)} derived fields over {len(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)} families; "
          f"{len(failed)} configs failed to build; {len(unexplained)} families with an unexplained field")


if __name__ == "__main__":
    main()
