#!/usr/bin/env python3
"""Write tests/data/msprobe/: msprobe (mindstudio-probe) dumps of a tiny transformers model, and the HF golden.

Usage:
  python3 golden/tools/gen_msprobe_fixtures.py --harness build/bin/harness [--out tests/data/msprobe]
  python3 golden/tools/gen_msprobe_fixtures.py --model DIR [--name NAME] [--out tests/data/msprobe]

Needs torch, transformers and mindstudio-probe (golden/tools/requirements-msprobe.txt).  The model is
the tiny-llama checkpoint `harness model synth --model configs/models/tiny-llama --seed 0 --shards 1`
makes (with --harness; the one golden/e2e/tiny-llama and golden/models/tiny-llama are made from), or
any causal LM directory (--model).  It is loaded by golden/tools/dump_hf.load_model in float32, eval
mode, eager attention, and run once forward (use_cache=False) on the prompt ids PROMPT (p7 of
golden/models/) under msprobe's PrecisionDebugger:

  <name>-L0-tensor            task "tensor", level "L0", list = the decoder layer, attention, MLP and
                              RMSNorm classes (every other module skipped: the Linear leaves, the
                              embedding and lm_head would add their weights, ~2 MB), data_mode all
  <name>-L0-tensor-perturbed  the same, with model.layers.1.mlp.down_proj.weight *= 1.01 before the run:
                              the first module whose output differs is model.layers.1.mlp
  <name>-L0-statistics        task "statistics", level "L0", every module, summary_mode "statistics"
  <name>-mix-statistics       task "statistics", level "mix" (modules and torch APIs), every module,
                              summary_mode "md5" (a crc32 of each tensor's bytes besides the statistics)
  <name>-hf                   golden/tools/dump_hf.py on the same model and prompt (--portable-cpu,
                              float32, 8 greedy steps): p7.safetensors + probes.json
  pt-forms                    torch.save of single tensors in every form a .pt reader may meet (each
                              dtype, 0-d to 5-d, dims that need BININT2 / BININT / LONG1, requires_grad,
                              a non-contiguous view with a storage offset), with index.json: per file
                              the dtype, shape, stride, storage offset and class, the values, and the
                              pickle opcodes of data.pkl

Each msprobe dump is made in its own process (PrecisionDebugger is a singleton), with a one-process
gloo group (world size 1, file:// rendezvous, no network) so that msprobe names the directory rank0
(without torch.distributed it would be proc<pid>).  dump_path is /tmp/msprobe-fixtures/<fixture>, a
fixed path because dump.json records it ("dump_data_dir"); the tree is then copied to
<out>/<fixture>/ unchanged, with the config.json it was made from next to step0/.  PyTorch is pinned
to its portable kernels (ATEN_CPU_CAPABILITY=default) and one thread.

Checks before anything is written: every dump_hf probe equals (bit for bit) the msprobe tensor of
the same module (see MAPPING), and the first divergent module of the perturbed dump is
model.layers.1.mlp.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("ATEN_CPU_CAPABILITY", "default")
os.environ.setdefault("OMP_NUM_THREADS", "1")  # also for dump_hf.py, which sets no thread count
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(__file__).resolve().parent
PROMPT = [1000, 17, 263, 951, 4, 588, 120]
PROMPT_ID = "p7"
PERTURB = ("model.layers.1.mlp.down_proj.weight", 1.01)
WORK = Path("/tmp/msprobe-fixtures")


def fixtures(classes: dict[str, str]) -> dict[str, dict]:
    """fixture suffix -> (msprobe config.json, perturb?)"""
    modules = [f"{classes[k]}.forward" for k in ("norm", "attn", "mlp", "layer")]
    tensor = {"scope": [], "list": modules, "data_mode": ["all"]}
    common = {"rank": [], "step": [], "async_dump": False}
    return {
        "L0-tensor": ({"task": "tensor", "level": "L0", **common, "tensor": tensor}, False),
        "L0-tensor-perturbed": ({"task": "tensor", "level": "L0", **common, "tensor": tensor}, True),
        "L0-statistics": ({"task": "statistics", "level": "L0", **common,
                           "statistics": {"scope": [], "list": [], "data_mode": ["all"],
                                          "summary_mode": "statistics"}}, False),
        "mix-statistics": ({"task": "statistics", "level": "mix", **common,
                            "statistics": {"scope": [], "list": [], "data_mode": ["all"],
                                           "summary_mode": "md5"}}, False),
    }


# --------------------------------------------------------------------------
# Worker: one msprobe dump in this process
# --------------------------------------------------------------------------


def worker(model_dir: str, config_path: str, perturb: bool) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp, "rendezvous"), rank=0,
                                world_size=1)
        try:
            sys.path.insert(0, str(TOOLS))
            import dump_hf
            from msprobe.pytorch import PrecisionDebugger

            model = dump_hf.load_model(model_dir, torch.float32, "cpu")
            if perturb:
                name, factor = PERTURB
                with torch.no_grad():
                    dict(model.named_parameters())[name].mul_(factor)
            debugger = PrecisionDebugger(config_path=config_path)
            ids = torch.tensor([PROMPT], dtype=torch.int64)
            debugger.start(model)
            with torch.no_grad():
                model(input_ids=ids, use_cache=False)
            debugger.stop()
            debugger.step()
        finally:
            dist.destroy_process_group()


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def classes_of(model_dir: Path) -> dict[str, str]:
    import torch

    sys.path.insert(0, str(TOOLS))
    import dump_hf

    model = dump_hf.load_model(model_dir, torch.float32, "cpu")
    p = dump_hf.text_prefix(model)
    layer = dump_hf._module(model, p + "layers")[0]
    return {"model": type(dump_hf._module(model, p[:-1])).__name__, "layer": type(layer).__name__,
            "attn": type(layer.self_attn).__name__, "mlp": type(layer.mlp).__name__,
            "norm": type(layer.input_layernorm).__name__, "prefix": p,
            "n_layers": len(dump_hf._module(model, p + "layers"))}


def mapping(classes: dict) -> dict[str, str]:
    """dump_hf probe name -> msprobe entry whose output.0 is the same tensor (batch dimension added)."""
    p, c = classes["prefix"], classes
    m = {}
    for i in range(c["n_layers"]):
        q = f"Module.{p}layers.{i}."
        m[f"{p}layers.{i}.input_layernorm"] = f"{q}input_layernorm.{c['norm']}.forward.0"
        m[f"{p}layers.{i}.self_attn"] = f"{q}self_attn.{c['attn']}.forward.0"
        m[f"{p}layers.{i}.post_attention_layernorm"] = f"{q}post_attention_layernorm.{c['norm']}.forward.0"
        m[f"{p}layers.{i}.mlp"] = f"{q}mlp.{c['mlp']}.forward.0"
        m[f"{p}layers.{i}"] = f"Module.{p}layers.{i}.{c['layer']}.forward.0"
    m[f"{p}norm"] = f"Module.{p}norm.{c['norm']}.forward.0"
    return m


def rank_dir(fixture_dir: Path) -> Path:
    return fixture_dir / "step0" / "rank0"


def load_output(fixture_dir: Path, entry: str, which: str = "output", index: int = 0):
    import torch

    d = rank_dir(fixture_dir)
    dump = json.loads((d / "dump.json").read_text())["data"]
    item = dump[entry][which][index]
    return torch.load(d / "dump_tensor_data" / item["data_name"], weights_only=True)


def check_against_hf(tensor_dir: Path, hf_file: Path, classes: dict) -> list[str]:
    import torch
    from safetensors.torch import load_file

    hf = load_file(str(hf_file))
    lines = []
    for probe, entry in mapping(classes).items():
        got = load_output(tensor_dir, entry)[0]
        if not torch.equal(got, hf[probe]):
            raise SystemExit(f"{entry}.output.0 != dump_hf {probe}: max |diff| "
                             f"{float((got - hf[probe]).abs().max())}")
        lines.append(f"{probe} == {entry}.output.0")
    emb = load_output(tensor_dir, mapping(classes)[f"{classes['prefix']}layers.0"], "input_args", 0)[0]
    if not torch.equal(emb, hf[f"{classes['prefix']}embed_tokens"]):
        raise SystemExit("layers.0 input.0 != dump_hf embed_tokens")
    lines.append(f"{classes['prefix']}embed_tokens == {mapping(classes)[classes['prefix'] + 'layers.0']}.input.0")
    return lines


def first_divergent(base: Path, other: Path) -> tuple[str, float]:
    import torch

    a = json.loads((rank_dir(base) / "dump.json").read_text())["data"]
    b = json.loads((rank_dir(other) / "dump.json").read_text())["data"]
    if list(a) != list(b):
        raise SystemExit("the perturbed dump has other entries than the base dump")
    for entry in a:  # dump.json order: the order the modules' forward passes ended
        for i, item in enumerate(a[entry].get("output", [])):
            if not item or "data_name" not in item:
                continue
            x = torch.load(rank_dir(base) / "dump_tensor_data" / item["data_name"], weights_only=True)
            y = torch.load(rank_dir(other) / "dump_tensor_data" / b[entry]["output"][i]["data_name"],
                           weights_only=True)
            if not torch.equal(x, y):
                return f"{entry}.output.{i}", float((x - y).abs().max())
    raise SystemExit("the perturbed dump does not differ")


# --------------------------------------------------------------------------
# pt-forms: torch.save of one tensor, every form
# --------------------------------------------------------------------------


def pt_forms(out: Path) -> None:
    import pickletools
    import zipfile

    import torch

    def ar(n, dtype):
        return torch.arange(n, dtype=torch.float64).sub(n // 2).mul(0.5).to(dtype)

    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    forms = {
        "f32_2d": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.25,
        "f32_0d": torch.tensor(1.5, dtype=torch.float32),
        "f32_1d": ar(5, torch.float32),
        "f32_4d": ar(24, torch.float32).reshape(1, 2, 3, 4),
        "f32_5d": ar(32, torch.float32).reshape(1, 2, 2, 2, 4),
        "f32_dim300": ar(300, torch.float32).reshape(1, 300),  # BININT2 in shape and numel
        "f32_empty_dim70000": torch.zeros(0, 70000, dtype=torch.float32),  # BININT
        "f32_empty_dim3e9": torch.zeros(0, 3_000_000_000, dtype=torch.float32),  # LONG1
        "f32_requires_grad": ar(4, torch.float32).requires_grad_(),
        "f32_view_offset_stride": base[1:, 1::2],  # the whole storage is saved, offset 7, stride (6, 2)
        "f64": ar(4, torch.float64),
        "f16": ar(4, torch.float16),
        "bf16": ar(4, torch.bfloat16),
        "f8_e4m3fn": ar(4, torch.float8_e4m3fn),
        "f8_e5m2": ar(4, torch.float8_e5m2),
        "i64": torch.tensor([-3, 0, 7, 2**40], dtype=torch.int64),
        "i32": torch.tensor([-3, 0, 7, 2**30], dtype=torch.int32),
        "i16": torch.tensor([-3, 0, 7, 2**14], dtype=torch.int16),
        "i8": torch.tensor([-3, 0, 7, 100], dtype=torch.int8),
        "u8": torch.tensor([0, 1, 200, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True], dtype=torch.bool),
    }
    out.mkdir(parents=True, exist_ok=True)
    index = {}
    for name, t in forms.items():
        path = out / f"{name}.pt"
        torch.save(t, path)
        with zipfile.ZipFile(path) as z:
            data = z.read(f"{name}/data.pkl")
            names = z.namelist()
        opcodes = []
        for op, arg, _ in pickletools.genops(data):
            opcodes.append(op.name if arg is None else f"{op.name} {arg}" if op.name in ("GLOBAL", "BINUNICODE") else
                           f"{op.name} {arg}")
        storage = t.untyped_storage()
        index[f"{name}.pt"] = {
            "dtype": str(t.dtype), "shape": list(t.shape), "stride": list(t.stride()),
            "storage_offset": t.storage_offset(), "storage_bytes": storage.nbytes(),
            "requires_grad": t.requires_grad,
            "values": t.detach().to(torch.float64).flatten().tolist() if t.numel() <= 64 else None,
            "zip_entries": names, "data_pkl_opcodes": opcodes,
        }
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def run_dump(model_dir: Path, fixture: str, config: dict, perturb: bool, out: Path) -> Path:
    work = WORK / fixture
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    config = {"task": config["task"], "dump_path": str(work), **{k: v for k, v in config.items() if k != "task"}}
    cfg_path = work.parent / f"{fixture}.config.json"
    cfg_text = json.dumps(config, indent=1) + "\n"
    cfg_path.write_text(cfg_text)
    cmd = [sys.executable, __file__, "--worker", str(cfg_path), "--model", str(model_dir)]
    if perturb:
        cmd.append("--perturb")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dest = out / fixture
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(work, dest)
    (dest / "config.json").write_text(cfg_text)
    return dest


def size_of(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--harness", help="synthesize tiny-llama with it (the default model)")
    ap.add_argument("--model", help="a causal LM directory instead")
    ap.add_argument("--name", help="fixture name prefix (default: tiny-llama, or the model's base name)")
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "msprobe"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--perturb", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.model, args.worker, args.perturb)
        return
    if bool(args.harness) == bool(args.model):
        ap.error("give --harness (tiny-llama) or --model DIR")

    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        if args.harness:
            name = args.name or "tiny-llama"
            model_dir = Path(tmp) / "tiny-llama"
            subprocess.run([args.harness, "model", "synth", "--model", str(ROOT / "configs/models/tiny-llama"),
                            "--out", str(model_dir), "--seed", "0", "--shards", "1"], check=True,
                           stdout=subprocess.DEVNULL)
        else:
            model_dir = Path(args.model)
            name = args.name or model_dir.resolve().name
        classes = classes_of(model_dir)
        staging = Path(tmp) / "out"
        staging.mkdir()
        written = {}
        for suffix, (config, perturb) in fixtures(classes).items():
            written[f"{name}-{suffix}"] = run_dump(model_dir, f"{name}-{suffix}", config, perturb, staging)
        hf = staging / f"{name}-hf"
        subprocess.run([sys.executable, str(TOOLS / "dump_hf.py"), "--model", str(model_dir), "--prompt-ids",
                        ",".join(map(str, PROMPT)), "--prompt-id", PROMPT_ID, "--dtype", "float32",
                        "--portable-cpu", "--out", str(hf)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        written[f"{name}-hf"] = hf
        pt_forms(staging / "pt-forms")
        written["pt-forms"] = staging / "pt-forms"

        for line in check_against_hf(written[f"{name}-L0-tensor"], hf / f"{PROMPT_ID}.safetensors", classes):
            print(f"  {line}")
        entry, diff = first_divergent(written[f"{name}-L0-tensor"], written[f"{name}-L0-tensor-perturbed"])
        want = f"Module.{classes['prefix']}layers.1.mlp.{classes['mlp']}.forward.0.output.0"
        if entry != want:
            raise SystemExit(f"the first divergent module is {entry}, expected {want}")
        print(f"  first divergent output of the perturbed dump: {entry} (max |diff| {diff:.3g})")

        out.mkdir(parents=True, exist_ok=True)
        for fixture, path in written.items():
            dest = out / fixture
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(path, dest)
            print(f"{dest}: {sum(1 for f in dest.rglob('*') if f.is_file())} files, {size_of(dest)} bytes")


if __name__ == "__main__":
    main()
