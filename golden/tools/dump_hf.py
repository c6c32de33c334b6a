#!/usr/bin/env python3
"""Dump HuggingFace transformers' intermediate activations, logits and greedy tokens for one prompt.

Usage:
  python3 golden/tools/dump_hf.py --model DIR (--prompt-ids 1000,5,7 | --prompt "text")
      [--prompt-id NAME] [--image FILE] [--dtype float32|bfloat16] [--device cpu|cuda]
      [--greedy N] [--portable-cpu] [--layers N [--expert-budget GIB]] --out DIR

Loads any HF causal LM (AutoModelForCausalLM) or LLaVA-style model (a config with a
vision_config) from DIR with attn_implementation="eager", in eval mode, and writes
  <out>/<prompt id>.safetensors   (prompt id: --prompt-id, default "prompt")
  <out>/probes.json               {prompt id: [probe names in the order their hooks fired]}
                                  (merged with an existing probes.json in <out>)

Tensors (float tensors are f32 whatever --dtype is; the batch dimension is squeezed):
  input_ids                 [T] i64      the prompt (after image-token expansion, if any)
  <P>embed_tokens           [T, D]       P = "model." or "model.language_model."
  <P>layers.i.input_layernorm, <P>layers.i.self_attn (output[0], after o_proj),
  <P>layers.i.post_attention_layernorm, <P>layers.i.mlp (MLP or MoE block),
  <P>layers.i.pre_feedforward_layernorm, <P>layers.i.post_feedforward_layernorm (Gemma 3),
  <P>layers.i (the layer's output = residual stream)                 [T, D] each
  <P>norm                   [T, D]
  logits                    [T, V]       the model's output logits
  greedy_ids                [N] i64      greedy continuation: N full forward passes on the growing
                                         sequence without KV cache, argmax (ties -> lowest id)
  greedy_top5_ids           [N, 5] i64   top 5 of log_softmax(logits) at each step (ties -> lower id)
  greedy_top5_logprobs      [N, 5] f32
With an image (LLaVA):
  image_rgb                 [H, W, 3] u8 the image as PIL decodes it (convert("RGB"))
  pixel_values              [3, S, S]    the HF image processor's output (PIL backend)
  model.vision_tower.embeddings, model.vision_tower.pre_layrnorm,
  model.vision_tower.encoder.layers.i{,.layer_norm1,.self_attn,.layer_norm2,.mlp}   [1+patches, Dv]
  image_features_selected   [patches, Dv] the vision feature fed to the projector
                                         (hidden state of vision_feature_layer, CLS dropped by "default")
  model.multi_modal_projector [patches, D]
  inputs_embeds             [T, D]       the merged sequence fed to the language model (note:
                                         <P>embed_tokens is the embedding *before* the image merge)
Probes whose module does not exist in a given architecture are skipped.

Safetensors metadata (strings): producer, model, prompt_id, versions (JSON), dtype, device,
attn_implementation, greedy_steps, probes (JSON list, execution order), image (file name, if any).

--layers N builds decoder layer N alone, for a model too big to load whole (a reference machine with
one GPU making layer goldens of a 671B model): only the embedding, layer N's tensors, the final norm
and the head are read from the checkpoint (fp8 ones dequantized by fp8_blocks' rule) into a
temporary checkpoint of N + 1 layers that transformers loads with layers 0..N-1 replaced by
pass-throughs, so layer N keeps its index (its type: sliding, linear attention, dense or MoE, by the
config's own per-layer rules) and reads the embedding output as its input. The dump holds
input_ids, <P>embed_tokens, <P>layers.{N-1} (that same input, named as the harness's layer check
looks for it; absent for N = 0), layer N's sublayer probes and <P>layers.N; no logits or greedy
tokens; metadata "layer" = N and "layer_input" = "embedding". `kind: layer` with `layer: N` checks
the platform against it, as day0's layer stage does for a --golden holding such dumps.
A MoE layer whose routed experts (stored one tensor per expert) pass --expert-budget GiB at --dtype
(DeepSeek-V3: 45 GB in f32) reads only the experts the prompt routes to, into sparse file-mapped
tensors, found by a first forward pass (see _RoutedExperts); the dump is the same.

--portable-cpu pins PyTorch's CPU kernels to the portable scalar ones (ATEN_CPU_CAPABILITY=default)
for results that do not depend on the CPU's vector extensions; it is slow on big models.
golden/tools/gen_models.py imports this file and uses the same functions.
"""

from __future__ import annotations

import os
import sys

if "--portable-cpu" in sys.argv and "torch" not in sys.modules:
    os.environ["ATEN_CPU_CAPABILITY"] = "default"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
TOPK = 5
# In execution order (src/model/exec/probes.h kDecoderSublayers); Gemma 3's sandwich norms add the
# pre/post-feedforward ones, and its post_attention_layernorm is the attention output's norm.
# A linear-attention layer (Qwen3-Next) has linear_attn in place of self_attn.
LAYER_PROBES = ("input_layernorm", "self_attn", "linear_attn", "post_attention_layernorm", "pre_feedforward_layernorm", "mlp",
                "post_feedforward_layernorm")
VISION_LAYER_PROBES = ("layer_norm1", "self_attn", "layer_norm2", "mlp")


# --------------------------------------------------------------------------
# Versions and loading
# --------------------------------------------------------------------------


def versions() -> dict[str, str]:
    """python and the versions of the packages involved (PEP 440 local labels dropped)."""
    import importlib

    out = {"python": platform.python_version()}
    for name, module in (("torch", "torch"), ("transformers", "transformers"), ("safetensors", "safetensors"),
                         ("numpy", "numpy"), ("tokenizers", "tokenizers"), ("pillow", "PIL")):
        try:
            v = getattr(importlib.import_module(module), "__version__", None)
        except ImportError:
            continue
        if v is not None:
            out[name] = str(v).split("+", 1)[0]
    return out


def load_model(model_dir, dtype=torch.float32, device="cpu"):
    """The model, in eval mode, with eager attention. LLaVA (or any config with a vision_config)
    is loaded as an image-text-to-text model, everything else as a causal LM. An fp8
    block-quantized checkpoint (quantization_config fp8, DeepSeek-V3's layout) is loaded with its
    weights dequantized in torch by fp8_blocks' documented rule, then cast to `dtype`."""
    from transformers import AutoConfig, AutoModelForCausalLM

    import fp8_blocks

    config = AutoConfig.from_pretrained(model_dir)
    if config.model_type == "llava":
        from transformers import LlavaForConditionalGeneration as cls
    elif getattr(config, "vision_config", None) is not None:
        from transformers import AutoModelForImageTextToText as cls
    else:
        cls = AutoModelForCausalLM
    if fp8_blocks.block_size(json.loads((Path(model_dir) / "config.json").read_text())) is not None:
        model = fp8_blocks.load_dequantized(model_dir, cls, dtype, attn_implementation="eager")
    else:
        model = cls.from_pretrained(model_dir, dtype=dtype, attn_implementation="eager")
    model.to(device)
    model.eval()
    return model


_LAYER_KEY = re.compile(r"^(?:model\.(?:language_model\.)?)?layers\.(\d+)\.")


def load_layer_model(model_dir, layer: int, dtype=torch.float32, device="cpu", expert_budget=4.0):
    """Decoder layer `layer` of a causal LM alone (see --layers): the model class built for
    layer + 1 layers, layers 0..layer-1 pass-throughs; the embedding, that layer, the final norm and
    the head loaded from the checkpoint, nothing else read. Routed experts stored one per tensor
    whose bytes at `dtype` pass `expert_budget` GiB are not loaded: see _RoutedExperts."""
    import tempfile

    from safetensors import safe_open
    from safetensors.torch import save_file as save_plain
    from transformers import AutoConfig, AutoModelForCausalLM

    import fp8_blocks

    raw = json.loads((Path(model_dir) / "config.json").read_text())
    if raw.get("vision_config") is not None:
        raise SystemExit("dump_hf: --layers takes a text model (this config has a vision_config)")
    text = raw.get("text_config", raw)
    n = int(text["num_hidden_layers"])
    if not 0 <= layer < n:
        raise SystemExit(f"dump_hf: --layers {layer}: the model has layers 0..{n - 1}")
    text["num_hidden_layers"] = layer + 1
    for key in ("layer_types", "mlp_layer_types"):  # per-layer lists follow the cut
        if isinstance(text.get(key), list):
            text[key] = text[key][: layer + 1]
    blocks = fp8_blocks.block_size(raw)
    if blocks is not None:  # written dequantized
        del raw["quantization_config"]

    def wanted(key: str) -> bool:
        m = _LAYER_KEY.match(key)
        return m is None or int(m.group(1)) == layer

    experts = _RoutedExperts.scan(model_dir, layer, dtype, expert_budget, blocks)
    tensors = {}
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        with safe_open(str(f), "pt") as st:
            for key in st.keys():
                if wanted(key) and (experts is None or not experts.holds(key)):
                    tensors[key] = st.get_tensor(key)
    if blocks is not None:
        for key in [k for k, t in tensors.items() if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)]:
            scale = tensors.pop(key + fp8_blocks.SCALE_SUFFIX, None)
            if scale is None:
                raise SystemExit(f"dump_hf: {model_dir}: {key} is fp8 with no {key}{fp8_blocks.SCALE_SUFFIX}")
            tensors[key] = fp8_blocks.dequantize(tensors[key], scale, *blocks)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(raw))
        save_plain({k: v.contiguous() for k, v in tensors.items()}, str(Path(tmp) / "model.safetensors"),
                   metadata={"format": "pt"})
        del tensors
        config = AutoConfig.from_pretrained(tmp)
        with torch.device("meta"):
            shape = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
        meta_layers = list(_module(shape, text_prefix(shape) + "layers"))
        layer_cls = type(meta_layers[layer])
        home = sys.modules[layer_cls.__module__]

        class PassThrough(torch.nn.Module):
            """A decoder layer before `layer`: its output is its input. Keeps the real layer's plain
            attributes (attention_type, layer_type, ...) that the model's loop reads."""

            def __init__(self, like):
                super().__init__()
                for k, v in vars(like).items():
                    if not k.startswith("_") and k != "training" and isinstance(v, (str, int, float, bool)):
                        setattr(self, k, v)

            def forward(self, hidden_states, *args, **kwargs):
                return hidden_states

        class OnlyLayer(layer_cls):
            def __new__(cls, config, layer_idx, *args, **kwargs):
                if layer_idx < layer:
                    return PassThrough(meta_layers[layer_idx])
                return layer_cls(config, layer_idx, *args, **kwargs)

        setattr(home, layer_cls.__name__, OnlyLayer)
        restore = experts.placeholders(meta_layers[layer]) if experts is not None else None
        try:
            model, info = AutoModelForCausalLM.from_pretrained(tmp, dtype=dtype, attn_implementation="eager",
                                                               output_loading_info=True)
        finally:
            setattr(home, layer_cls.__name__, layer_cls)
            if restore is not None:
                restore()
    missing = set(info["missing_keys"])
    if experts is not None:
        missing -= experts.attach(model, text_prefix(model))
    if missing or info["mismatched_keys"]:
        raise SystemExit(f"dump_hf: {model_dir}: layer {layer} did not load: {info}")
    model.to(device)
    model.eval()
    return model


class _RoutedExperts:
    """A MoE layer's routed experts loaded only where the prompt routes to them, for a layer whose
    experts do not fit in memory at the dump's dtype (DeepSeek-V3's 256 experts of layer 3 are 45 GB
    in f32). Checkpoints storing one tensor per expert (mlp.experts.<e>.{gate,up,down}_proj.weight,
    fp8 with their scales or not) and models fusing them (transformers 5's experts.gate_up_proj
    [E, 2I, H] = gate over up, experts.down_proj [E, H, I]): the fused tensors are sparse files
    mapped into memory (zeros, no disk or memory, where not written); one forward pass finds the
    experts the prompt routes to (the router runs before the experts and does not read them), those
    are read and dequantized into the fused tensors, and the dump's pass is the second, which
    checks that it routed to no other expert. Unrouted experts never enter transformers' sums,
    so the dump is the one a machine holding every expert would make."""

    _KEY = r"^((?:model\.(?:language_model\.)?)?layers\.{layer}\.mlp\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$"

    def __init__(self, layer, pattern, dtype, blocks, where, shapes):
        self.layer, self.pattern, self.dtype, self.blocks = layer, pattern, dtype, blocks
        self.where = where  # (expert, proj) -> (file, key)
        self.count = 1 + max(e for e, _ in where)
        self.inter, self.hidden = shapes["gate_proj"]
        self.filled: set[int] = set()
        self.routed: set[int] = set()

    @classmethod
    def scan(cls, model_dir, layer, dtype, budget_gib, blocks):
        """The layer's per-expert tensors when they pass `budget_gib` at `dtype`, else None."""
        from safetensors import safe_open

        pattern = re.compile(cls._KEY.replace("{layer}", str(layer)))
        where, shapes, numel = {}, {}, 0
        for f in sorted(Path(model_dir).glob("*.safetensors")):
            with safe_open(str(f), "pt") as st:
                for key in st.keys():
                    m = pattern.match(key)
                    if m is None:
                        continue
                    shape = st.get_slice(key).get_shape()
                    where[(int(m.group(2)), m.group(3))] = (f, key)
                    shapes[m.group(3)] = tuple(shape)
                    numel += int(np.prod(shape))
        size = numel * torch.tensor([], dtype=dtype).element_size()
        if not where or size <= budget_gib * 2**30:
            return None
        experts = cls(layer, pattern, dtype, blocks, where, shapes)
        expected = {(e, p) for e in range(experts.count) for p in ("gate_proj", "up_proj", "down_proj")}
        if set(where) != expected or shapes["down_proj"] != (experts.hidden, experts.inter):
            raise SystemExit(f"dump_hf: {model_dir}: layer {layer}'s experts are not {experts.count} x "
                             f"(gate, up [{experts.inter}, {experts.hidden}], down [{experts.hidden}, {experts.inter}])")
        print(f"dump_hf: layer {layer}: {experts.count} routed experts, "
              f"{size / 2**30:.1f} GiB at {dtype}, "
              f"over --expert-budget {budget_gib} GiB: read only where the prompt routes", file=sys.stderr)
        return experts

    def holds(self, key: str) -> bool:
        """Whether `key` is one of the experts' weights or their fp8 scales."""
        import fp8_blocks

        return self.pattern.match(key.removesuffix(fp8_blocks.SCALE_SUFFIX)) is not None

    def placeholders(self, meta_layer):
        """Makes the layer's fused experts class hold 1-expert tensors while transformers loads the
        rest (it would otherwise allocate and initialise every expert); returns the undo."""
        module = _module(meta_layer, "mlp.experts")
        if module is None or getattr(module, "gate_up_proj", None) is None or module.gate_up_proj.dim() != 3:
            raise SystemExit("dump_hf: routed experts read on demand need transformers' fused experts "
                             "(mlp.experts.gate_up_proj [E, 2I, H]); this model has none")
        real = type(module)
        home = sys.modules[real.__module__]

        class OneExpert(real):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.gate_up_proj = torch.nn.Parameter(torch.zeros(1, *self.gate_up_proj.shape[1:]),
                                                       requires_grad=False)
                self.down_proj = torch.nn.Parameter(torch.zeros(1, *self.down_proj.shape[1:]),
                                                    requires_grad=False)

        setattr(home, real.__name__, OneExpert)
        return lambda: setattr(home, real.__name__, real)

    def attach(self, model, prefix: str) -> set[str]:
        """Puts sparse, file-mapped fused tensors in the loaded model; returns their names (which
        transformers reported missing)."""
        import atexit
        import shutil
        import tempfile

        name = f"{prefix}layers.{self.layer}.mlp.experts"
        self.module = _module(model, name)
        scratch = tempfile.mkdtemp(prefix="dump_hf_experts.")
        atexit.register(shutil.rmtree, scratch, True)

        def sparse(name, shape):
            n = int(np.prod(shape))
            path = Path(scratch) / name
            with open(path, "wb") as f:
                f.truncate(n * torch.tensor([], dtype=self.dtype).element_size())
            t = torch.from_file(str(path), shared=True, size=n, dtype=self.dtype).view(*shape)
            return torch.nn.Parameter(t, requires_grad=False)

        self.module.gate_up_proj = sparse("gate_up_proj", (self.count, 2 * self.inter, self.hidden))
        self.module.down_proj = sparse("down_proj", (self.count, self.hidden, self.inter))
        self.module.register_forward_pre_hook(self._record, with_kwargs=True)
        model._h0_routed_experts = self
        return {name + ".gate_up_proj", name + ".down_proj"}

    def _record(self, module, args, kwargs):
        index = kwargs.get("top_k_index", args[1] if len(args) > 1 else None)
        if index is None:
            raise SystemExit("dump_hf: cannot see the experts' routing (no top_k_index argument)")
        self.routed.update(int(e) for e in index.unique().tolist())

    def fill(self):
        """Reads the routed experts not yet read into the fused tensors (each file opened once)."""
        from safetensors import safe_open

        import fp8_blocks

        files = {}
        for e in sorted(self.routed - self.filled):
            for proj in ("gate_proj", "up_proj", "down_proj"):
                f, key = self.where[(e, proj)]
                if f not in files:
                    files[f] = safe_open(str(f), "pt")
                st = files[f]
                w = st.get_tensor(key)
                if w.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
                    if self.blocks is None or key + fp8_blocks.SCALE_SUFFIX not in st.keys():
                        raise SystemExit(f"dump_hf: {f}: {key} is fp8 with no {key}{fp8_blocks.SCALE_SUFFIX}")
                    w = fp8_blocks.dequantize(w, st.get_tensor(key + fp8_blocks.SCALE_SUFFIX), *self.blocks)
                w = w.to(self.dtype)
                with torch.no_grad():
                    if proj == "down_proj":
                        self.module.down_proj[e].copy_(w)
                    else:
                        row = 0 if proj == "gate_proj" else self.inter
                        self.module.gate_up_proj[e, row:row + self.inter].copy_(w)
            self.filled.add(e)


@torch.no_grad()
def dump_layer(model, input_ids: list[int], layer: int, device="cpu") -> tuple[dict[str, torch.Tensor], list[str]]:
    """One forward pass of a load_layer_model model; the probes of layer `layer` and its input."""
    ids = torch.tensor(input_ids, dtype=torch.int64, device=device)
    p = text_prefix(model)
    names = [n for n in probe_names(model, with_vision=False)
             if n == p + "embed_tokens" or n == f"{p}layers.{layer - 1}" or n.startswith(f"{p}layers.{layer}")]
    experts = getattr(model, "_h0_routed_experts", None)
    if experts is not None:  # a first pass finds the routed experts, read before the dump's pass
        _forward_logits(model, ids, None)
        experts.fill()
        routed = set(experts.routed)
        print(f"dump_hf: layer {layer}: the prompt routes to {len(routed)} of {experts.count} experts",
              file=sys.stderr)
    rec = ProbeRecorder(model, names)
    try:
        _forward_logits(model, ids, None)
    finally:
        rec.remove()
    if experts is not None and experts.routed != routed:
        raise SystemExit(f"dump_hf: layer {layer}: the second pass routed to experts the first did not "
                         f"({sorted(experts.routed - routed)}): the dump is not valid")
    out = {"input_ids": ids.cpu().clone()}
    out.update(rec.tensors)
    return out, list(rec.order)


def load_image_processor(model_dir):
    """The model's image processor, PIL backend (the slow, numpy/PIL one: use_fast=False)."""
    from transformers import AutoImageProcessor

    return AutoImageProcessor.from_pretrained(model_dir, backend="pil")


def decode_image(path) -> "PIL.Image.Image":  # noqa: F821
    from PIL import Image

    with Image.open(path) as im:
        im.load()
        return im.convert("RGB")


def preprocess_image(processor, path) -> tuple[np.ndarray, torch.Tensor]:
    """(image_rgb [H,W,3] u8 as PIL decodes it, pixel_values [1,3,S,S] f32 from the processor)."""
    image = decode_image(path)
    rgb = np.asarray(image, dtype=np.uint8).copy()
    pixel_values = processor(images=image, return_tensors="pt")["pixel_values"]
    return rgb, pixel_values.to(torch.float32)


# --------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------


def _module(root, dotted):
    m = root
    for part in dotted.split("."):
        if not hasattr(m, part):
            return None
        m = getattr(m, part)
    return m


def text_prefix(model) -> str:
    """HF module-name prefix of the decoder stack: "model.language_model." or "model."."""
    for p in ("model.language_model", "model", "language_model.model", "language_model"):
        m = _module(model, p)
        if m is not None and hasattr(m, "layers") and hasattr(m, "embed_tokens"):
            return p + "."
    raise SystemExit("dump_hf: cannot find the decoder layers (model.layers / model.language_model.layers)")


def vision_prefix(model) -> str | None:
    for p in ("model.vision_tower", "vision_tower"):
        if _module(model, p) is not None:
            return p + "."
    return None


def probe_names(model, with_vision: bool) -> list[str]:
    """Probe module names in the order a forward pass normally reaches them (the order actually
    recorded is the one the hooks fire in)."""
    modules = dict(model.named_modules())
    names = []
    if with_vision:
        v = vision_prefix(model)
        if v is not None:
            names += [v + "embeddings", v + "pre_layrnorm"]
            layers = _module(model, v + "encoder.layers") or []
            for i in range(len(layers)):
                names += [f"{v}encoder.layers.{i}.{s}" for s in VISION_LAYER_PROBES] + [f"{v}encoder.layers.{i}"]
        for p in ("model.multi_modal_projector", "multi_modal_projector"):
            if p in modules:
                names.append(p)
                break
    p = text_prefix(model)
    names.append(p + "embed_tokens")
    for i in range(len(_module(model, p + "layers"))):
        names += [f"{p}layers.{i}.{s}" for s in LAYER_PROBES] + [f"{p}layers.{i}"]
    names.append(p + "norm")
    return [n for n in names if n in modules]


def _first_tensor(x):
    while isinstance(x, (tuple, list)):
        x = x[0]
    if not isinstance(x, torch.Tensor):  # a ModelOutput
        x = x[0]
    return x


def _squeeze_batch(t: torch.Tensor) -> torch.Tensor:
    if t.dim() >= 2 and t.shape[0] == 1:
        t = t[0]
    return t


def _store(t: torch.Tensor) -> torch.Tensor:
    t = _squeeze_batch(t.detach())
    if t.is_floating_point():
        t = t.to(torch.float32)
    return t.cpu().contiguous().clone()


class ProbeRecorder:
    """Forward hooks on the probe modules; records each output once, in execution order."""

    def __init__(self, model, names: list[str]):
        modules = dict(model.named_modules())
        self.tensors: dict[str, torch.Tensor] = {}
        self.order: list[str] = []
        self.handles = []
        for n in names:
            self.handles.append(modules[n].register_forward_hook(self._hook(n)))
        proj = next((modules[p] for p in ("model.multi_modal_projector", "multi_modal_projector") if p in modules),
                    None)
        if proj is not None:
            self.handles.append(proj.register_forward_pre_hook(self._pre_hook("image_features_selected")))
        if text_prefix(model) != "model.":  # multimodal: the merged sequence fed to the decoder
            lm = modules[text_prefix(model)[:-1]]
            self.handles.append(lm.register_forward_pre_hook(self._lm_pre_hook("inputs_embeds"), with_kwargs=True))

    def _record(self, name, t):
        if name in self.tensors:
            raise SystemExit(f"dump_hf: probe {name} fired twice in one forward pass")
        self.tensors[name] = _store(_first_tensor(t))
        self.order.append(name)

    def _hook(self, name):
        def hook(_module, _inputs, output):
            self._record(name, output)
        return hook

    def _pre_hook(self, name):
        def hook(_module, inputs):
            self._record(name, inputs[0])
        return hook

    def _lm_pre_hook(self, name):
        def hook(_module, args, kwargs):
            emb = kwargs.get("inputs_embeds")
            if emb is not None:
                self._record(name, emb)
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []


# --------------------------------------------------------------------------
# Forward passes
# --------------------------------------------------------------------------


class _IndexerTies(torch.overrides.TorchFunctionMode):
    """Active inside a DeepSeek-V3.2 indexer's forward: refuses an exact tie at the boundary of its
    top-k among the keys a query may see.  transformers leaves the order of equal scores to
    torch.topk (unspecified), so the keys it picked would be one arbitrary choice of several."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (torch.topk, torch.Tensor.topk):
            scores, k = args[0], out.values.shape[-1]
            if k < scores.shape[-1]:
                ranked = torch.sort(scores, dim=-1, descending=True).values
                kth, nxt = ranked[..., k - 1], ranked[..., k]
                visible = kth > torch.finfo(scores.dtype).min / 2  # masked keys score the mask's minimum
                tied = (kth == nxt) & visible
                if bool(tied.any()):
                    where = [int(i) for i in torch.nonzero(tied)[0]]
                    raise SystemExit(f"the lightning indexer's top-{k} has an exact tie at its boundary (query {where}, "
                                     f"score {float(kth[tuple(where)])}): transformers' choice among tied keys is "
                                     f"unspecified, so this input cannot be a golden")
        return out


def _indexers(model) -> list:
    return [m for m in model.modules() if type(m).__name__ == "DeepseekV32Indexer"]


def _forward_logits(model, ids: torch.Tensor, pixel_values) -> torch.Tensor:
    kwargs = {"input_ids": ids[None], "use_cache": False}
    if pixel_values is not None:
        kwargs["pixel_values"] = pixel_values
    mode = _IndexerTies()

    def enter(*_):
        mode.__enter__()  # a pre-hook's return value would replace the module's inputs

    def leave(*_):
        mode.__exit__(None, None, None)

    hooks = [h for m in _indexers(model) for h in (m.register_forward_pre_hook(enter), m.register_forward_hook(leave))]
    try:
        return model(**kwargs).logits[0]
    finally:
        for h in hooks:
            h.remove()


def top_k_stable(logprobs: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top k of a 1-D tensor, largest first, ties -> lower index."""
    values, ids = torch.sort(logprobs, descending=True, stable=True)
    return ids[:k], values[:k]


@torch.no_grad()
def dump(model, input_ids: list[int], pixel_values: torch.Tensor | None = None, greedy: int = 8,
         device="cpu") -> tuple[dict[str, torch.Tensor], list[str]]:
    """Run the probe forward pass and the greedy loop. Returns (tensors, probe order)."""
    ids = torch.tensor(input_ids, dtype=torch.int64, device=device)
    pv = None
    if pixel_values is not None:
        pv = pixel_values.to(device=device, dtype=model.dtype)
    rec = ProbeRecorder(model, probe_names(model, with_vision=pv is not None))
    try:
        logits = _forward_logits(model, ids, pv)
    finally:
        rec.remove()
    out = {"input_ids": ids.cpu().clone()}
    if pixel_values is not None:
        out["pixel_values"] = _store(pixel_values)
    out.update(rec.tensors)
    out["logits"] = _store(logits)

    seq = ids
    g_ids, g_top_ids, g_top_lp = [], [], []
    for _ in range(greedy):
        last = _forward_logits(model, seq, pv)[-1].to(torch.float32)
        nxt = int(torch.argmax(last))  # the first maximum: ties -> lowest id
        top_ids, top_lp = top_k_stable(torch.log_softmax(last, dim=-1), TOPK)
        g_ids.append(nxt)
        g_top_ids.append(top_ids.cpu())
        g_top_lp.append(top_lp.cpu())
        seq = torch.cat([seq, torch.tensor([nxt], dtype=torch.int64, device=device)])
    out["greedy_ids"] = torch.tensor(g_ids, dtype=torch.int64)
    out["greedy_top5_ids"] = (torch.stack(g_top_ids) if g_top_ids else torch.zeros(0, TOPK)).to(torch.int64)
    out["greedy_top5_logprobs"] = (torch.stack(g_top_lp) if g_top_lp else torch.zeros(0, TOPK)).to(torch.float32)
    return out, list(rec.order)


def metadata(producer: str, model_name: str, prompt_id: str, probes: list[str], dtype: str, device: str,
             greedy: int, image: str | None = None) -> dict[str, str]:
    md = {
        "producer": producer,
        "model": model_name,
        "prompt_id": prompt_id,
        "versions": json.dumps(versions(), sort_keys=True, separators=(",", ":")),
        "dtype": dtype,
        "device": device,
        "attn_implementation": "eager",
        "greedy_steps": str(greedy),
        "probes": json.dumps(probes, separators=(",", ":")),
    }
    if image is not None:
        md["image"] = image
    return md


def save(path, tensors: dict[str, torch.Tensor], md: dict[str, str]) -> None:
    """save_file, then the header rewritten canonically: safetensors keeps the metadata in a hash
    map, so its key order (and so the file's bytes) would change from run to run.  The data and
    its layout are save_file's; the header becomes {"__metadata__": sorted, tensors by offset}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path), metadata=md)
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None)
    canon = {}
    if meta:
        canon["__metadata__"] = dict(sorted(meta.items()))
    for k in sorted(header, key=lambda k: (header[k]["data_offsets"][0], k)):
        canon[k] = header[k]
    text = json.dumps(canon, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + n:])


def write_probes_json(out_dir, prompt_id: str, probes: list[str]) -> Path:
    path = Path(out_dir) / "probes.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[prompt_id] = probes
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _prompt_from_text(model_dir, text: str, image_path):
    if image_path is not None:
        try:
            from transformers import AutoProcessor

            proc = AutoProcessor.from_pretrained(model_dir, backend="pil")
            enc = proc(text=text, images=decode_image(image_path), return_tensors="pt")
            return enc["input_ids"][0].tolist(), enc["pixel_values"].to(torch.float32)
        except Exception as e:  # noqa: BLE001
            print(f"dump_hf: no processor for text+image ({e}); using the tokenizer and image processor "
                  f"separately (the prompt must then contain the expanded image tokens)", file=sys.stderr)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)(text)["input_ids"], None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="HF model directory")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt-ids", help="comma-separated token ids")
    src.add_argument("--prompt", help="text, tokenized with the model's tokenizer (or processor with --image)")
    ap.add_argument("--prompt-id", default="prompt", help="output file stem (default: prompt)")
    ap.add_argument("--image", help="image file (LLaVA-style models)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--greedy", type=int, default=8, help="greedy steps (default 8)")
    ap.add_argument("--portable-cpu", action="store_true",
                    help="pin the portable scalar CPU kernels (ATEN_CPU_CAPABILITY=default)")
    ap.add_argument("--layers", type=int, metavar="N",
                    help="decoder layer N alone, its input the embedding output (see above)")
    ap.add_argument("--expert-budget", type=float, default=4.0, metavar="GIB",
                    help="--layers: routed experts stored one per tensor that pass GIB at --dtype are read "
                         "only where the prompt routes (default 4; 0: always)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)

    if args.layers is not None:
        if args.image is not None:
            raise SystemExit("dump_hf: --layers takes a text prompt (no --image)")
        model = load_layer_model(args.model, args.layers, DTYPES[args.dtype], args.device, args.expert_budget)
        input_ids = ([int(x) for x in args.prompt_ids.split(",") if x.strip()] if args.prompt is None
                     else _prompt_from_text(args.model, args.prompt, None)[0])
        tensors, probes = dump_layer(model, input_ids, args.layers, args.device)
        out = Path(args.out)
        md = metadata("golden/tools/dump_hf.py --layers", Path(args.model).resolve().name, args.prompt_id, probes,
                      args.dtype, args.device, 0)
        md["layer"] = str(args.layers)
        md["layer_input"] = "embedding"
        save(out / f"{args.prompt_id}.safetensors", tensors, md)
        write_probes_json(out, args.prompt_id, probes)
        print(f"{out / (args.prompt_id + '.safetensors')}: layer {args.layers}, {len(probes)} probes, "
              f"T={len(tensors['input_ids'])}")
        return

    model = load_model(args.model, DTYPES[args.dtype], args.device)
    pixel_values, rgb = None, None
    if args.prompt is not None:
        input_ids, pixel_values = _prompt_from_text(args.model, args.prompt, args.image)
    else:
        input_ids = [int(x) for x in args.prompt_ids.split(",") if x.strip()]
    if args.image is not None:
        rgb_pv = preprocess_image(load_image_processor(args.model), args.image)
        rgb = rgb_pv[0]
        if pixel_values is None:
            pixel_values = rgb_pv[1]
    tensors, probes = dump(model, input_ids, pixel_values, args.greedy, args.device)
    if rgb is not None:
        tensors["image_rgb"] = torch.from_numpy(rgb)
    out = Path(args.out)
    md = metadata("golden/tools/dump_hf.py", Path(args.model).resolve().name, args.prompt_id, probes,
                  args.dtype, args.device, args.greedy, Path(args.image).name if args.image else None)
    save(out / f"{args.prompt_id}.safetensors", tensors, md)
    write_probes_json(out, args.prompt_id, probes)
    print(f"{out / (args.prompt_id + '.safetensors')}: {len(probes)} probes, T={len(tensors['input_ids'])}, "
          f"greedy {tensors['greedy_ids'].tolist()}")


if __name__ == "__main__":
    main()
