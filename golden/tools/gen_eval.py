#!/usr/bin/env python3
"""Per-item reference results of a task (kind: eval) from transformers, on the reference machine.

Usage:
  python3 golden/tools/gen_eval.py --model DIR --task FILE [--out F] [--dtype float32]
      [--harness build/bin/harness] [--name NAME] [--limit N]

DIR is any checkpoint transformers loads as a causal LM; a directory with a config and a
tokenizer but no weights (configs/models/tiny-llama) is first synthesized with
`harness model synth --seed 0` (as the embedded server does) and checked against
golden/models/<name>.json (gen_e2e.py's check).  FILE is a task file (suites/tasks/*.jsonl, or an
lm-evaluation-harness style JSONL with the same header keys).  Writes F (default
golden/eval/<name>/<task>.json): for every scored item its id, answer, whether it is correct and
the evidence the harness stores too (choice logprobs, the continuation's logprob, the completion).

The task file is read by this script's own reader, written from the format's description
(src/eval/task.h), not from the harness's code:
  multiple_choice  each choice's continuation scored by log_softmax of one forward pass over
                   prompt + continuation (the tokenizer's full encode, as a server's text
                   completion encodes it); the continuation's tokens are those whose character span
                   (offset_mapping) ends past the prompt; the highest sum is the answer (its index)
  logprob_target   the same sum for the target; correct when each token is the argmax
  generate         model.generate(do_sample=False, max_new_tokens) from the prompt's encode, the
                   text decoded without special tokens and cut at the first stop string, the
                   answer extracted (exact | last_number | regex) and normalized
PyTorch runs its portable CPU kernels on one thread, so a rerun writes the same bytes.
golden/manifest.json is updated when F lies under golden/.
"""

from __future__ import annotations

import os
import sys

if "torch" in sys.modules:
    raise RuntimeError("gen_eval.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_e2e  # noqa: E402  (it checks that torch is not imported yet)

import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402

import torch  # noqa: E402
import yaml  # noqa: E402
from transformers import AutoTokenizer, GenerationConfig  # noqa: E402

import dump_hf  # noqa: E402
from manifest import update_manifest  # noqa: E402

torch.set_num_threads(1)
PRODUCER = "golden/tools/gen_eval.py"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


# ---------------------------------------------------------------- the task format

def render(template: str, fields: dict) -> str:
    out, i = [], 0
    while i < len(template):
        c = template[i]
        if c in "{}" and template[i + 1:i + 2] == c:
            out.append(c)
            i += 2
            continue
        if c != "{":
            out.append(c)
            i += 1
            continue
        end = template.index("}", i)
        v = fields[template[i + 1:end]]
        out.append(v if isinstance(v, str) else json.dumps(v))
        i = end + 1
    return "".join(out)


def read_task(path: Path) -> tuple[dict, list[dict]]:
    spec = {"scorer": "generate", "template": "{question}", "choices_field": "choices",
            "choice_template": " {choice}", "answer_field": "answer", "target_template": " {answer}",
            "extract": "exact", "max_tokens": 32, "stop": [], "fewshot": 0,
            "fewshot_separator": "\n\n", "id_field": "id"}
    lines = path.read_text().split("\n")
    header = []
    k = 0
    while k < len(lines) and (lines[k] == "" or lines[k].startswith("#")):
        header.append(lines[k][2:] if lines[k].startswith("# ") else lines[k][1:])
        k += 1
    spec.update(yaml.safe_load("\n".join(header)) or {})
    if isinstance(spec["stop"], str):
        spec["stop"] = [spec["stop"]]
    items = []
    for number, line in enumerate(lines[k:], start=k + 1):
        if not line.strip():
            continue
        f = json.loads(line)
        item = {"id": str(f.get(spec["id_field"], f"line {number}")), "fields": f}
        answer = f[spec["answer_field"]]
        if spec["scorer"] == "multiple_choice":
            choices = [c if isinstance(c, str) else json.dumps(c) for c in f[spec["choices_field"]]]
            if isinstance(answer, int):
                gold = answer
            elif answer in choices:
                gold = choices.index(answer)
            else:
                gold = ord(answer) - ord("A")
            item["gold"] = gold
            item["continuations"] = [render(spec["choice_template"], {**f, "choice": c}) for c in choices]
        else:
            target = answer if isinstance(answer, str) else json.dumps(answer)
            if "####" in target:
                target = target[target.rindex("####") + 4:].lstrip(" \t").rstrip(" \t\n")
            item["target"] = target
            if spec["scorer"] == "logprob_target":
                item["continuations"] = [render(spec["target_template"], {**f, spec["answer_field"]: target})]
        item["prompt"] = render(spec["template"], f)
        items.append(item)
    shots = ""
    for e in items[:spec["fewshot"]]:
        solved = " " + e["target"] if spec["scorer"] == "generate" else e["continuations"][max(e.get("gold", 0), 0)]
        shots += e["prompt"] + solved + spec["fewshot_separator"]
    scored = items[spec["fewshot"]:]
    for it in scored:
        it["prompt"] = shots + it["prompt"]
    return spec, scored


def normalize(s: str) -> str:
    out = " ".join(s.split()).lower()
    if out.endswith("."):
        out = out[:-1]
    if re.fullmatch(r"[-+]?[0-9][0-9,]*(\.[0-9]+)?", out):
        out = out.replace(",", "")
        if "." in out:
            out = out.rstrip("0").rstrip(".")
        out = out.lstrip("+")
    return out


def extract(spec: dict, text: str) -> str:
    e = spec["extract"]
    if e == "last_number":
        found = [m.group(0) for m in re.finditer(r"[-+]?[0-9][0-9,]*(\.[0-9]+)?", text)]
        return normalize(found[-1].rstrip(",")) if found else ""
    if e.startswith("regex:"):
        m = re.search(e[len("regex:"):], text)
        if not m:
            return ""
        return normalize(m.group(1) if m.groups() and m.group(1) is not None else m.group(0))
    return normalize(text)


# ---------------------------------------------------------------- scoring with transformers

@torch.no_grad()
def loglikelihood(model, tokenizer, context: str, continuation: str) -> tuple[float, bool]:
    enc = tokenizer(context + continuation, return_offsets_mapping=True)
    ids = enc["input_ids"]
    lp = torch.log_softmax(model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float(), -1)
    total, greedy, n = 0.0, True, 0
    for t in range(1, len(ids)):
        if enc["offset_mapping"][t][1] <= len(context):
            continue
        total += float(lp[t - 1, ids[t]])
        greedy = greedy and int(torch.argmax(lp[t - 1])) == ids[t]
        n += 1
    if n == 0:
        raise SystemExit(f"no token of the continuation {continuation!r}")
    return total, greedy


@torch.no_grad()
def complete(model, tokenizer, prompt: str, max_tokens: int, stop: list[str], eos: list[int]) -> str:
    """Greedy, ending at `eos` (gen_e2e.stop_token_ids: the end tokens engines stop at)."""
    ids = tokenizer(prompt)["input_ids"]
    gc = GenerationConfig(do_sample=False, max_new_tokens=max_tokens, eos_token_id=eos, pad_token_id=eos[0])
    x = torch.tensor([ids])
    out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), generation_config=gc)
    text = tokenizer.decode(out[0, len(ids):].tolist(), skip_special_tokens=True)
    for s in stop:
        if s in text:
            text = text[:text.index(s)]
    return text


def score(model, tokenizer, spec: dict, item: dict, eos: list[int]) -> dict:
    r = {"id": item["id"]}
    if spec["scorer"] == "generate":
        text = complete(model, tokenizer, item["prompt"], spec["max_tokens"], spec["stop"], eos)
        r["answer"] = extract(spec, text)
        r["correct"] = r["answer"] != "" and r["answer"] == normalize(item["target"])
        r["text"] = text
    elif spec["scorer"] == "multiple_choice":
        lps = [loglikelihood(model, tokenizer, item["prompt"], c)[0] for c in item["continuations"]]
        best = max(range(len(lps)), key=lambda i: (lps[i], -i))
        r["answer"], r["correct"], r["choice_logprobs"] = str(best), best == item["gold"], lps
    else:
        lp, greedy = loglikelihood(model, tokenizer, item["prompt"], item["continuations"][0])
        r["answer"], r["correct"], r["logprob"] = ("greedy" if greedy else "not greedy"), greedy, lp
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--out")
    ap.add_argument("--name")
    ap.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    ap.add_argument("--harness", help="synthesizes DIR's weights when it has none")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    root = Path(args.root)
    model_dir, task = Path(args.model), Path(args.task)
    name = args.name or model_dir.resolve().name
    spec, items = read_task(task)
    if args.limit:
        items = items[:args.limit]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = model_dir
        if not list(model_dir.glob("*.safetensors")):
            if not args.harness:
                raise SystemExit(f"{model_dir} has no weights: give --harness to synthesize them")
            ckpt = Path(tmp) / name
            gen_e2e.synth(args.harness, model_dir, ckpt)
            print(f"{name}: synthesized, {gen_e2e.check_checkpoint(root, name, ckpt)} tensors match golden/models/{name}.json")
        model = dump_hf.load_model(ckpt, DTYPES[args.dtype], "cpu")
        eos = gen_e2e.stop_token_ids(tokenizer, ckpt, model.config)
        results = []
        for i, item in enumerate(items):
            results.append(score(model, tokenizer, spec, item, eos))
            if (i + 1) % 25 == 0:
                print(f"  {i + 1}/{len(items)}", flush=True)
    out = Path(args.out) if args.out else root / "golden" / "eval" / name / f"{task.stem}.json"
    task_rel = os.path.relpath(task.resolve(), root) if task.resolve().is_relative_to(root) else str(task)
    doc = {"task": task_rel, "task_sha256": hashlib.sha256(task.read_bytes()).hexdigest(),
           "model": name, "scorer": spec["scorer"], "dtype": args.dtype, "producer": PRODUCER,
           "score": sum(r["correct"] for r in results) / len(results)}
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = ",\n".join("  " + json.dumps(r, sort_keys=True, ensure_ascii=False) for r in results)
    head = json.dumps(doc, sort_keys=True, ensure_ascii=False)[:-1]
    out.write_text(head + ', "items": [\n' + rows + "\n]}\n")
    print(f"wrote {out}: {len(results)} items, score {doc['score']:.3f}")
    golden = (root / "golden").resolve()
    if out.resolve().is_relative_to(golden):
        update_manifest(golden, [out.resolve()], PRODUCER)


if __name__ == "__main__":
    main()
