#!/usr/bin/env python3
"""Generate the end-to-end serving goldens (golden/e2e/<model>/<case>.json) for the tiny models.

Usage:
  python3 golden/tools/gen_e2e.py --harness build/bin/harness [--root REPO_ROOT]
  python3 golden/tools/gen_e2e.py --model DIR --out G [--name NAME] [--dtype float32] [--max-tokens 16]
      [--root REPO_ROOT]

Each file is one OpenAI-compatible request (chat or completion, greedy) and what an independent
implementation, HuggingFace transformers' `generate`, answers to it: the prompt's token ids, the
generated token ids, their logprobs and top 5 alternatives, the text and the finish reason.  The
harness's serving checks send the same request to a server running the same model and compare.

For every model this script
  1. runs `harness model synth --model configs/models/<name> --out <tmp> --seed 0 --shards 1`,
     the checkpoint `resolve_model` synthesizes for a server given configs/models/<name>, and
     checks that every tensor is byte-identical to the one golden/models/<name>.json records
     (gen_models.py's goldens of `synth --seed 0`);
  2. loads it with transformers in f32 (the bf16 weights upcast exactly), eval mode,
     attn_implementation="eager" (dump_hf.load_model);
  3. for each case below builds the prompt by the rules in golden/e2e/README.md (the tokenizer's
     own chat template; image tokens expanded to image_seq_length copies of image_token_index)
     and runs model.generate(do_sample=False) with a fresh GenerationConfig whose end tokens are
     those engines stop at (stop_token_ids: the tokenizer's eos_token and the generation config's
     eos_token_id, as vLLM takes them), recording log_softmax of the raw logits (output_logits)
     per step.
Every step is checked against a cache-free recomputation (full forward pass on the prompt plus the
tokens so far, as dump_hf.dump does): same argmax.

PyTorch is pinned to its portable CPU kernels and one thread, so a rerun writes byte-identical
files.  golden/manifest.json is updated for every file written.  See golden/e2e/README.md.

With --model DIR (any checkpoint transformers can load as a causal LM, of any family, e.g.
tests/data/models/tiny-gemma3; Qwen2.5-VL, e.g. tiny-qwen2-5-vl, also gets two image cases through
its processor: qwen_vl_cases) the script needs no harness: it loads DIR as it is (no
synthesis, no checkpoint check) in --dtype and writes G/<case>.json, in the same format, for the
cases of model_cases() (chat_hello, chat_system, completion_text, completion_ids; the chat cases are
skipped when the tokenizer has no chat template).  "model" is --name (default: DIR's base name),
"model_dir" is DIR as given.  golden/manifest.json is updated only when G lies under golden/.
"""

from __future__ import annotations

import os
import sys

# Portable scalar CPU kernels (see gen_foundation.py / gen_models.py).  Before torch is imported.
if "torch" in sys.modules:
    raise RuntimeError("gen_e2e.py must set ATEN_CPU_CAPABILITY before torch is imported")
os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import AutoConfig, AutoTokenizer, GenerationConfig  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from manifest import update_manifest  # noqa: E402
import dump_hf  # noqa: E402

torch.set_num_threads(1)

PRODUCER = "golden/tools/gen_e2e.py"
SEED = 0
TOPK = 5
IMAGE_TEXT = "<image>"  # what an image part renders as in the chat template
TEXT_TOKENS = 16
IMAGE_TOKENS = 12
P7 = [1000, 17, 263, 951, 4, 588, 120]  # gen_models.py's p7


def image_part(stem: str) -> dict:
    return {"type": "image_url", "image_url": {"url": f"golden/models/images/{stem}"}}


def text_part(text: str) -> dict:
    return {"type": "text", "text": text}


def chat(*messages, max_tokens=TEXT_TOKENS) -> dict:
    return {"messages": [{"role": r, "content": c} for r, c in messages], "max_tokens": max_tokens}


# model -> [(case, endpoint, request)]
CASES = {
    "tiny-llama": [
        ("chat_hello", "chat", chat(("user", "Hello! Who are you?"))),
        ("chat_system", "chat", chat(("system", "You are a helpful assistant."),
                                     ("user", "What is the capital of France?"))),
        ("completion_ids_p7", "completions", {"prompt_ids": P7, "max_tokens": TEXT_TOKENS}),
        ("completion_text", "completions", {"prompt": "The capital of France is", "max_tokens": TEXT_TOKENS}),
    ],
    "tiny-qwen3-moe": [
        ("chat_hello", "chat", chat(("user", "Hello! Who are you?"))),
        ("completion_ids_p7", "completions", {"prompt_ids": P7, "max_tokens": TEXT_TOKENS}),
    ],
    "tiny-deepseek-v3": [
        ("chat_hello", "chat", chat(("user", "Hello! Who are you?"))),
    ],
    # fp8 block-quantized (golden/tools/fp8_blocks.py): HF runs the weights dequantized by the rule
    "tiny-deepseek-v3-fp8": [
        ("chat_hello", "chat", chat(("user", "Hello! Who are you?"))),
        ("completion_ids_p7", "completions", {"prompt_ids": P7, "max_tokens": TEXT_TOKENS}),
    ],
    "tiny-llava": [
        ("chat_image_checker", "chat", chat(("user", [image_part("checker.png"), text_part("What is in this image?")]),
                                            max_tokens=IMAGE_TOKENS)),
        ("chat_image_gradient", "chat", chat(("user", [text_part("Describe this picture."), image_part("gradient.png")]),
                                             max_tokens=IMAGE_TOKENS)),
        ("chat_text", "chat", chat(("user", "Hello! Who are you?"))),
    ],
}
CASES["tiny-llava-hd32"] = CASES["tiny-llava"]  # the LLaVA fixture vLLM's CPU build serves


QUICK_BROWN_FOX = "The quick brown fox"  # completion_ids: its encode without special tokens


def model_cases(tokenizer, max_tokens: int) -> list[tuple[str, str, dict]]:
    """The --model mode's cases (chat ones only when the tokenizer has a chat template)."""
    cases = []
    if tokenizer.chat_template:
        cases += [
            ("chat_hello", "chat", chat(("user", "Hello! Who are you?"), max_tokens=max_tokens)),
            ("chat_system", "chat", chat(("system", "You are a helpful assistant."),
                                         ("user", "What is the capital of France?"), max_tokens=max_tokens)),
        ]
    ids = tokenizer(QUICK_BROWN_FOX, add_special_tokens=False)["input_ids"]
    cases += [
        ("completion_text", "completions", {"prompt": "The capital of France is", "max_tokens": max_tokens}),
        ("completion_ids", "completions", {"prompt_ids": list(ids), "max_tokens": max_tokens}),
    ]
    return cases


def qwen_vl_cases() -> list[tuple[str, str, dict]]:
    """A Qwen2.5-VL model's image cases (--model mode): two aspect ratios, the image before and
    after the text."""
    return [
        ("chat_image_wide", "chat", chat(("user", [image_part("qvl_wide.png"), text_part("What is in this image?")]),
                                         max_tokens=IMAGE_TOKENS)),
        ("chat_image_tall", "chat", chat(("user", [text_part("Describe this picture."), image_part("qvl_tall.jpg")]),
                                         max_tokens=IMAGE_TOKENS)),
    ]


def qwen_vl_inputs(root: Path, model_dir: Path, messages: list[dict]) -> dict:
    """Qwen2_5_VLProcessor's inputs for a chat (gen_tiny_hf_models.vl_inputs: the template, each
    <|image_pad|> expanded to its grid's tokens, Qwen2-VL's PIL image processor)."""
    from PIL import Image
    from gen_tiny_hf_models import vl_inputs

    images = [Image.open(root / p) for p in image_paths(messages)]
    return vl_inputs(model_dir, images, messages)


# --------------------------------------------------------------------------
# Checkpoint
# --------------------------------------------------------------------------


def synth(harness: str, model_dir: Path, out: Path) -> None:
    subprocess.run([harness, "model", "synth", "--model", str(model_dir), "--out", str(out),
                    "--seed", str(SEED), "--shards", "1"], check=True, stdout=subprocess.DEVNULL)


def check_checkpoint(root: Path, name: str, ckpt: Path) -> int:
    """Every tensor golden/models/<name>.json hashes must have the same bytes in `ckpt`."""
    expected = json.loads((root / "golden" / "models" / f"{name}.json").read_text())["synth"]
    if expected["seed"] != SEED:
        raise SystemExit(f"{name}: golden/models/{name}.json was made with seed {expected['seed']}")
    got = {}
    for f in sorted(ckpt.glob("*.safetensors")):
        with safe_open(str(f), "pt") as s:
            for k in s.keys():
                t = s.get_tensor(k).contiguous()
                got[k] = hashlib.sha256(t.view(torch.uint8).numpy().tobytes()).hexdigest()
    bad = [k for k, h in expected["tensor_sha256"].items() if got.get(k) != h]
    if bad:
        raise SystemExit(f"{name}: the synthesized checkpoint differs from golden/models/{name}.json "
                         f"in {len(bad)} tensors, e.g. {bad[:3]}")
    return len(expected["tensor_sha256"])


# --------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------


def image_paths(messages: list[dict]) -> list[str]:
    return [p["image_url"]["url"] for m in messages if not isinstance(m["content"], str)
            for p in m["content"] if p["type"] == "image_url"]


def chat_prompt(tokenizer, config, messages: list[dict]) -> list[int]:
    """The chat template's text, tokenized without special-token additions; each "<image>" of the
    text becomes image_seq_length copies of image_token_index (the text is never tokenized there)."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    pieces = text.split(IMAGE_TEXT)
    if len(pieces) - 1 != len(image_paths(messages)):
        raise SystemExit(f"the chat template rendered {len(pieces) - 1} {IMAGE_TEXT} for "
                         f"{len(image_paths(messages))} images: {text!r}")
    ids = []
    for i, piece in enumerate(pieces):
        if i:
            ids += [config.image_token_index] * config.image_seq_length
        ids += tokenizer(piece, add_special_tokens=False)["input_ids"] if piece else []
    return ids


def prompt_for(tokenizer, config, endpoint: str, request: dict) -> list[int]:
    if endpoint == "chat":
        return chat_prompt(tokenizer, config, request["messages"])
    if "prompt_ids" in request:
        return list(request["prompt_ids"])
    # A text completion: the tokenizer's full encode, its post-processor included (tiny-llama's
    # and tiny-llava's add <|begin_of_text|>, Qwen's adds nothing), as vLLM does.
    return tokenizer(request["prompt"])["input_ids"]


def pixel_values_for(root: Path, model_dir: Path, messages: list[dict]) -> torch.Tensor | None:
    paths = image_paths(messages)
    if not paths:
        return None
    processor = dump_hf.load_image_processor(model_dir)
    return torch.cat([dump_hf.preprocess_image(processor, root / p)[1] for p in paths])


# --------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------


def step_entry(logits: torch.Tensor, chosen: int) -> dict:
    lp = torch.log_softmax(logits.to(torch.float32), dim=-1)
    top_ids, top_lp = dump_hf.top_k_stable(lp, TOPK)
    return {"id": chosen, "logprob": float(lp[chosen]),
            "top": [[int(i), float(v)] for i, v in zip(top_ids, top_lp)]}


def stop_token_ids(tokenizer, model_dir, config) -> list[int]:
    """The end tokens engines stop at: the tokenizer's eos_token and the generation config's
    eos_token_id (an int or a list) -- generation_config.json's, else the one transformers derives
    from config.json (GenerationConfig.from_model_config), as vLLM reads it."""
    ids = {tokenizer.convert_tokens_to_ids(tokenizer.eos_token)} if tokenizer.eos_token else set()
    if (Path(model_dir) / "generation_config.json").exists():
        gen = GenerationConfig.from_pretrained(model_dir)
    else:
        gen = GenerationConfig.from_model_config(config)
    eos = gen.eos_token_id
    ids |= set(eos if isinstance(eos, list) else [] if eos is None else [eos])
    return sorted(ids)


@torch.no_grad()
def generate(model, prompt: list[int], pixel_values, max_new_tokens: int, eos: list[int],
             vision: dict | None = None) -> tuple[list[int], list[dict]]:
    """(generated ids, the end token included if generated; one logprob entry per generated id).
    `eos`: the end tokens (stop_token_ids). `vision`: Qwen2.5-VL's pixel_values, image_grid_thw
    and mm_token_type_ids (qwen_vl_inputs)."""
    gc = GenerationConfig(do_sample=False, max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=eos[0],
                          output_logits=True, return_dict_in_generate=True)
    ids = torch.tensor([prompt], dtype=torch.int64)
    kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "generation_config": gc}
    if pixel_values is not None:
        kwargs["pixel_values"] = pixel_values.to(model.dtype)
    if vision is not None:
        kwargs.update(vision)
    out = model.generate(**kwargs)
    generated = out.sequences[0, len(prompt):].tolist()
    if len(generated) != len(out.logits):
        raise SystemExit(f"generate returned {len(generated)} tokens and {len(out.logits)} logits")
    steps = []
    for i, (tok, logits) in enumerate(zip(generated, out.logits)):
        logits = logits[0]
        if int(torch.argmax(logits)) != tok:
            raise SystemExit(f"step {i}: generate chose {tok}, the raw logits' argmax is {int(torch.argmax(logits))}")
        # The same step without a KV cache (a full forward pass, as dump_hf.dump does).
        seq = torch.tensor(prompt + generated[:i], dtype=torch.int64)
        if vision is not None:
            mm = torch.cat([vision["mm_token_type_ids"], torch.zeros((1, i), dtype=vision["mm_token_type_ids"].dtype)], 1)
            nocache = model(input_ids=seq[None], pixel_values=vision["pixel_values"], image_grid_thw=vision["image_grid_thw"],
                            mm_token_type_ids=mm, use_cache=False).logits[0]
        else:
            nocache = dump_hf._forward_logits(model, seq, None if pixel_values is None else pixel_values.to(model.dtype))
        if int(torch.argmax(nocache[-1])) != tok:
            raise SystemExit(f"step {i}: with the KV cache {tok}, without it {int(torch.argmax(nocache[-1]))}")
        steps.append(step_entry(logits, tok))
    return generated, steps


def case_golden(root, name, model_dir, model, tokenizer, config, case, endpoint, request,
                model_dir_text: str | None = None) -> dict:
    eos = stop_token_ids(tokenizer, model_dir, config)
    if endpoint == "chat" and config.model_type == "qwen2_5_vl" and image_paths(request["messages"]):
        inputs = qwen_vl_inputs(root, model_dir, request["messages"])
        prompt = inputs["input_ids"][0].tolist()
        vision = {k: inputs[k] for k in ("pixel_values", "image_grid_thw", "mm_token_type_ids")}
        generated, steps = generate(model, prompt, None, request["max_tokens"], eos, vision)
    else:
        prompt = prompt_for(tokenizer, config, endpoint, request)
        pixel_values = pixel_values_for(root, model_dir, request["messages"]) if endpoint == "chat" else None
        generated, steps = generate(model, prompt, pixel_values, request["max_tokens"], eos)
    stop = bool(generated) and generated[-1] in eos
    token_ids = generated[:-1] if stop else generated
    return {
        "model": name,
        "model_dir": f"configs/models/{name}" if model_dir_text is None else model_dir_text,
        "case": case,
        "endpoint": endpoint,
        "request": request,
        "prompt_token_ids": prompt,
        "token_ids": token_ids,
        "text": tokenizer.decode(token_ids, skip_special_tokens=True),
        "finish_reason": "stop" if stop else "length",
        "stop_token_id": generated[-1] if stop else None,
        "logprobs": steps[:len(token_ids)],
        "stop_logprob": steps[-1] if stop else None,
        "producer": PRODUCER,
        "versions": dump_hf.versions(),
    }


def dumps(g: dict) -> str:
    """Sorted keys, one line per logprob step."""
    lines = []
    for k in sorted(g):
        if k == "logprobs":
            inner = ",\n  ".join(json.dumps(s, sort_keys=True, ensure_ascii=False) for s in g[k])
            v = f"[\n  {inner}\n ]" if g[k] else "[]"
        else:
            v = json.dumps(g[k], sort_keys=True, ensure_ascii=False)
        lines.append(f" {json.dumps(k)}: {v}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def margins(g: dict) -> list[float]:
    steps = g["logprobs"] + ([g["stop_logprob"]] if g["stop_logprob"] else [])
    return [s["top"][0][1] - s["top"][1][1] for s in steps]


def write_case(path: Path, g: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(g), encoding="utf-8", newline="\n")
    m = margins(g)
    print(f"  {g['case']}: prompt {len(g['prompt_token_ids'])} tokens, {g['finish_reason']}, "
          f"ids {g['token_ids']}, text {g['text']!r}, min top1-top2 margin {min(m):.3g} "
          f"(step {m.index(min(m))})" if m else f"  {g['case']}: no tokens generated")


def main_tiny(args, root: Path) -> None:
    out_dir = root / "golden" / "e2e"
    written = []
    for name, cases in CASES.items():
        if args.only and name not in args.only:
            continue
        model_dir = root / "configs" / "models" / name
        config = AutoConfig.from_pretrained(model_dir)
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = Path(tmp) / name
            synth(args.harness, model_dir, ckpt)
            n = check_checkpoint(root, name, ckpt)
            model = dump_hf.load_model(ckpt, torch.float32, "cpu")
            print(f"{name}: checkpoint matches golden/models/{name}.json ({n} tensors)")
            for case, endpoint, request in cases:
                g = case_golden(root, name, model_dir, model, tokenizer, config, case, endpoint, request)
                path = out_dir / name / f"{case}.json"
                write_case(path, g)
                written.append(path)
    update_manifest(root / "golden", written, producer=PRODUCER)


def main_model(args, root: Path) -> None:
    """--model DIR --out G: the checkpoint in DIR as it is, MODEL_CASES, G/<case>.json."""
    model_dir = Path(args.model)
    name = args.name or model_dir.resolve().name
    config = AutoConfig.from_pretrained(model_dir)
    # A multimodal model (Qwen2.5-VL) gets the text cases and its image cases (qwen_vl_cases).
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = dump_hf.load_model(model_dir, dump_hf.DTYPES[args.dtype], "cpu")
    print(f"{name}: {type(model).__name__} from {args.model} in {args.dtype}")
    out_dir = Path(args.out)
    written = []
    cases = model_cases(tokenizer, args.max_tokens)
    if config.model_type == "qwen2_5_vl":
        cases += qwen_vl_cases()
    for case, endpoint, request in cases:
        g = case_golden(root, name, model_dir, model, tokenizer, config, case, endpoint, request,
                        model_dir_text=args.model)
        path = out_dir / f"{case}.json"
        write_case(path, g)
        written.append(path.resolve())
    golden = (root / "golden").resolve()
    if out_dir.resolve().is_relative_to(golden):
        update_manifest(golden, written, producer=PRODUCER)
        print(f"golden/manifest.json: {len(written)} entries updated")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", help="the harness binary (the tiny models' mode)")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--only", nargs="+", help="the tiny models' mode: only these models")
    ap.add_argument("--model", help="a model directory (the --model mode; no harness needed)")
    ap.add_argument("--out", help="--model mode: the output directory G (G/<case>.json)")
    ap.add_argument("--name", help="--model mode: the golden's \"model\" (default: DIR's base name)")
    ap.add_argument("--dtype", choices=sorted(dump_hf.DTYPES), default="float32", help="--model mode")
    ap.add_argument("--max-tokens", type=int, default=TEXT_TOKENS, help="--model mode (default 16)")
    args = ap.parse_args()
    root = Path(args.root)
    if args.model is not None:
        if args.out is None:
            ap.error("--model needs --out")
        if args.harness is not None:
            ap.error("--model and --harness are two modes; give one")
        main_model(args, root)
    else:
        if args.harness is None:
            ap.error("give --harness (the tiny models) or --model DIR --out G")
        main_tiny(args, root)


if __name__ == "__main__":
    main()
