#!/usr/bin/env python3
"""Write tiny checkpoints of model families with transformers itself (each was unmodelled when it was added; tiny-olmo2 still is).

Usage:
  python3 golden/tools/gen_tiny_hf_models.py [--out tests/data/models] [--only tiny-gemma3,...]

For each family below: the family's config class with tiny sizes, torch.manual_seed(0),
AutoModelForCausalLM.from_config(cfg) (transformers' own _init_weights), then every parameter
that init leaves constant (norm weights of ones or zeros, zero biases) gets a seeded normal
offset so that a reader that drops a bias or a norm weight is caught (turn it off with
--plain-init), model.to(torch.bfloat16) and save_pretrained(dir, safe_serialization=True),
which writes config.json, generation_config.json and model.safetensors.  The tokenizer
(tokenizer.json, tokenizer_config.json, copied byte for byte; vocabulary 1024) is tiny-llama's
for tiny-gemma3, tiny-mistral, tiny-glm4-moe, tiny-glm4-moe-lite, tiny-gpt-oss, tiny-minimax-m2 and tiny-olmo2
(<|begin_of_text|> 1019 = bos, <|eot_id|> 1023 = eos, a Llama-3 style chat template; config.json's
pad is <|end_of_text|> 1020: the tokenizer names no pad token)
and tiny-qwen3-moe's for tiny-qwen2-moe (ChatML template, no bos token, <|im_end|> 1021 = eos,
<|endoftext|> 1019 = pad; config.json's bos is 1019 as in Qwen's own configs).  A Qwen-family model
needs the ChatML template: `transformers serve` picks its Qwen response parser by model_type,
and with a Llama-3 template that parser leaves the prompt's assistant header in the answer.

Each checkpoint is loaded back (AutoModelForCausalLM.from_pretrained, f32, eager) and generates.

  tiny-gemma3     gemma3_text, Gemma3ForCausalLM: layer_types [sliding_attention, full_attention],
                  sliding_window 4, head_dim 32 (!= hidden/heads = 16), query_pre_attn_scalar 24,
                  q/k norms, 4 norms per layer, embed scale sqrt(hidden); initializer_range 0.1,
                  embeddings NOT tied (tied, the scaled embedding dominates the residual stream and
                  greedy decoding repeats one token).
  tiny-qwen2-moe  qwen2_moe: 4 experts (moe_intermediate_size 32), top-2 (norm_topk_prob false), a
                  shared expert (64) with its sigmoid gate, q/k/v biases; initializer_range 0.2,
                  embeddings tied (size).
  tiny-mistral    mistral: sliding_window 4 on every layer (the 7- and 13-token prompts see it cut),
                  GQA 4/2, head_dim 16; initializer_range 0.2, embeddings not tied.
  tiny-glm4-moe   glm4_moe: 3 layers (the first dense), 8 experts in 2 groups (topk_group 1), top-2,
                  sigmoid scores with the correction bias, routed scaling 2.5, one shared expert,
                  q/k/v biases, QK-norm, head_dim 32 with partial rotary 0.5 (16 dims turn);
                  initializer_range 0.2, embeddings not tied.
  tiny-glm4-moe-lite glm4_moe_lite, Glm4MoeLiteForCausalLM (GLM-4.7-Flash): MLA (4 heads, q_lora 32,
                  kv_lora 16, qk_nope 16, qk_rope 8 interleaved, v 16) over GLM-4.5's MoE: 3 layers,
                  mlp_layer_types [dense, sparse, sparse], 8 experts in 2 groups (topk_group 1), top-2,
                  sigmoid scores with the correction bias, routed scaling 1.8, one shared expert;
                  rms_norm_eps 1e-5 (its default); initializer_range 0.24 (at 0.2 a router's top-2
                  boundary on p13 is 0.0015 apart and bf16 routes that token otherwise, transformers'
                  own bf16 too; at 0.24 every choice on p7/p13 is at least 0.014 apart), embeddings
                  not tied.
  tiny-gpt-oss    gpt_oss: 4 fused experts (intermediate_size 32; gate_up_proj interleaved, biases,
                  clamped SwiGLU), top-2 router with bias, attention sinks, attention biases,
                  layer_types [sliding_attention, full_attention], sliding_window 4, head_dim 16,
                  yarn RoPE (factor 8 over 256 positions); initializer_range 0.2, embeddings tied (size).
  tiny-olmo2      olmo2, Olmo2ForCausalLM (a family the executor does not model, for the tests of
                  that path): no pre-norms, RMSNorm on each sublayer's output (post_attention_layernorm,
                  post_feedforward_layernorm) before the residual add, q/k norms over the whole
                  projection (64 and 32 wide, before the split into heads), GQA 4/2, head_dim 16,
                  rms_norm_eps 1e-6; initializer_range 0.3 (0.2 greedily emits <|begin_of_text|> in
                  chat_hello), embeddings not tied.
  tiny-minimax-m2 minimax_m2, MiniMaxM2ForCausalLM: QK-norm over the whole q and k projections (128 and
                  64 wide), head_dim 32 (!= hidden/heads = 16) with rotary_dim 16 (released configs'
                  legacy field; transformers turns it into partial_rotary_factor 0.5), GQA 4/2, 4
                  experts (intermediate_size 32) top-2 by sigmoid scores with the correction bias,
                  renormalized; initializer_range 0.35 (at 0.2 completion_text's first step is 0.003
                  apart; at 0.3 a bf16 decode of p13 routes one token otherwise: here every router's
                  top-2 boundary on p7/p13 is at least 0.006 apart, every e2e step 0.011), embeddings
                  not tied.
  tiny-qwen3-next qwen3_next: layer_types [linear, full, linear]; Gated DeltaNet with 2 key heads and 4
                  value heads of 16, conv kernel 4; gated full attention (head_dim 16, partial rotary
                  0.5, QK-norm); 4 experts top-2 plus the gated shared expert.
  tiny-deepseek-v32 deepseek_v32: MLA (q_lora 32, kv_lora 16), the lightning indexer (8 heads of 16,
                  index_topk 4: prompts longer than 4 tokens attend sparsely; with 2 heads the
                  ReLU's zeros tied at the top-k boundary on the golden prompts, where torch.topk's
                  choice is unspecified), first layer dense, 4 experts top-2 plus a shared one.
  tiny-qwen2-5-vl qwen2_5_vl, Qwen2_5_VLForConditionalGeneration: the language model Qwen2 (2 layers,
                  q/k/v biases) with M-RoPE (mrope_section [2, 3, 3] over head_dim 16), vocabulary
                  1032 (the Qwen tokenizer plus <|vision_start|> 1024, <|vision_end|> 1025,
                  <|image_pad|> 1026, <|video_pad|> 1027); the vision tower 4 blocks of 32 (2 heads),
                  window attention (window_size 112: 4x4 merged tokens) except the full-attention
                  blocks 1 and 3, SwiGLU with biases, the 2x2 PatchMerger to 64; Qwen2-VL's PIL image
                  processor with max_pixels 50176 (at most 64 image tokens); initializer_range 0.2.
The initializer ranges were picked so that greedy decoding of the e2e prompts does not repeat one
token (transformers' default 0.02 does, or gives top1-top2 margins under 1e-3).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, GenerationConfig

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
# name -> (the tokenizer's directory, bos, eos, pad ids for config.json)
LLAMA3_TOKENIZER = ("tiny-llama", 1019, 1023, 1020)
QWEN_TOKENIZER = ("tiny-qwen3-moe", 1019, 1021, 1019)
TOKENIZERS = {"tiny-gemma3": LLAMA3_TOKENIZER, "tiny-qwen2-moe": QWEN_TOKENIZER, "tiny-gpt-oss": LLAMA3_TOKENIZER,
              "tiny-mistral": LLAMA3_TOKENIZER, "tiny-glm4-moe": LLAMA3_TOKENIZER,
              "tiny-glm4-moe-lite": LLAMA3_TOKENIZER, "tiny-olmo2": LLAMA3_TOKENIZER, "tiny-minimax-m2": LLAMA3_TOKENIZER,
              "tiny-qwen3-next": QWEN_TOKENIZER, "tiny-deepseek-v32": LLAMA3_TOKENIZER, "tiny-qwen3-5": QWEN_TOKENIZER,
              "tiny-qwen2-5-vl": QWEN_TOKENIZER}
# tiny-qwen2-5-vl: Qwen's vision tokens added to tiny-qwen3-moe's tokenizer after its 1024 ids.
VISION_TOKENS = {"<|vision_start|>": 1024, "<|vision_end|>": 1025, "<|image_pad|>": 1026, "<|video_pad|>": 1027}
# Qwen2-VL's chat template (its content parts: text, image, video), shortened: no default system prompt.
QWEN_VL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# Its image processor: Qwen2-VL's defaults except max_pixels, kept small for the tiny model (at most
# 64 merged tokens an image).
QWEN_VL_MAX_PIXELS = 28 * 28 * 64
SEED = 0


def base_name(name: str) -> str:
    """A variant's family fixture: tiny-mistral-hd32 -> tiny-mistral; tiny-deepseek-v3-mla -> a Llama-3 tokenizer's."""
    return "tiny-mistral" if name == "tiny-deepseek-v3-mla" else name.removesuffix("-hd32")


def common(name: str) -> dict:
    _, bos, eos, pad = TOKENIZERS[base_name(name)]
    return dict(vocab_size=1024, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=128, max_position_embeddings=2048, bos_token_id=bos, eos_token_id=eos,
                pad_token_id=pad)


def configs():
    from transformers import (DeepseekV32Config, Gemma3TextConfig, Glm4MoeConfig, Glm4MoeLiteConfig, GptOssConfig,
                              MiniMaxM2Config, MistralConfig, Olmo2Config, Qwen2_5_VLConfig, Qwen2MoeConfig, Qwen3_5TextConfig,
                              Qwen3NextConfig)

    return {
        "tiny-glm4-moe": Glm4MoeConfig(
            **{**common("tiny-glm4-moe"), "num_hidden_layers": 3}, head_dim=32, n_routed_experts=8,
            num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1,
            n_group=2, topk_group=1, routed_scaling_factor=2.5, norm_topk_prob=True, use_qk_norm=True,
            attention_bias=True, num_nextn_predict_layers=0, tie_word_embeddings=False, initializer_range=0.2,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
        "tiny-glm4-moe-lite": Glm4MoeLiteConfig(
            **{**common("tiny-glm4-moe-lite"), "num_hidden_layers": 3, "num_key_value_heads": 4}, q_lora_rank=32,
            kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=8,
            num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1,
            mlp_layer_types=["dense", "sparse", "sparse"], n_group=2, topk_group=1, routed_scaling_factor=1.8,
            norm_topk_prob=True, tie_word_embeddings=False, initializer_range=0.24),
        "tiny-mistral": MistralConfig(
            **common("tiny-mistral"), sliding_window=4, tie_word_embeddings=False, initializer_range=0.2),
        "tiny-gemma3": Gemma3TextConfig(
            **common("tiny-gemma3"), head_dim=32, query_pre_attn_scalar=24, sliding_window=4,
            layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False,
            initializer_range=0.1),
        "tiny-qwen2-moe": Qwen2MoeConfig(
            **common("tiny-qwen2-moe"), num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
            shared_expert_intermediate_size=64, decoder_sparse_step=1, norm_topk_prob=False,
            tie_word_embeddings=True, initializer_range=0.2),
        "tiny-gpt-oss": GptOssConfig(
            **{**common("tiny-gpt-oss"), "intermediate_size": 32}, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
            sliding_window=4, layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=True,
            initializer_range=0.2,
            rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 8.0, "beta_fast": 32.0,
                             "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 256}),
        "tiny-qwen3-next": Qwen3NextConfig(
            **{**common("tiny-qwen3-next"), "num_hidden_layers": 3}, head_dim=16,
            layer_types=["linear_attention", "full_attention", "linear_attention"], linear_num_key_heads=2,
            linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4,
            num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=64,
            norm_topk_prob=True, decoder_sparse_step=1, tie_word_embeddings=False, initializer_range=0.2,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
        "tiny-qwen3-5": Qwen3_5TextConfig(
            **{**common("tiny-qwen3-5"), "num_hidden_layers": 3}, head_dim=16,
            layer_types=["linear_attention", "full_attention", "linear_attention"], linear_num_key_heads=2,
            linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4,
            tie_word_embeddings=False, initializer_range=0.25,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                             "mrope_section": [2, 1, 1], "mrope_interleaved": True}),
        "tiny-deepseek-v32": DeepseekV32Config(
            **{**common("tiny-deepseek-v32"), "num_key_value_heads": 4}, q_lora_rank=32, kv_lora_rank=16,
            qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
            moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
            routed_scaling_factor=2.5, index_n_heads=8, index_head_dim=16, index_topk=4,
            tie_word_embeddings=False, initializer_range=0.2),
        "tiny-qwen2-5-vl": Qwen2_5_VLConfig(
            text_config={**common("tiny-qwen2-5-vl"), "vocab_size": 1032, "rms_norm_eps": 1e-6, "initializer_range": 0.2,
                         "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}},
            vision_config={"depth": 4, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                           "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 112,
                           "fullatt_block_indexes": [1, 3], "in_channels": 3, "hidden_act": "silu",
                           "tokens_per_second": 2, "initializer_range": 0.2},
            image_token_id=VISION_TOKENS["<|image_pad|>"], video_token_id=VISION_TOKENS["<|video_pad|>"],
            vision_start_token_id=VISION_TOKENS["<|vision_start|>"], vision_end_token_id=VISION_TOKENS["<|vision_end|>"],
            tie_word_embeddings=False),
        "tiny-minimax-m2": MiniMaxM2Config(
            **{**common("tiny-minimax-m2"), "intermediate_size": 32}, head_dim=32, rotary_dim=16,
            num_local_experts=4, num_experts_per_tok=2, tie_word_embeddings=False, initializer_range=0.35),
        "tiny-olmo2": Olmo2Config(
            **common("tiny-olmo2"), rms_norm_eps=1e-6, tie_word_embeddings=False, initializer_range=0.3),
    }


# Variants a real engine's CPU build can load (vLLM 0.32: its CPU attention takes head sizes 32, 64,
# 80, ... 512; its CPU MLA decode kernel only kv_lora_rank + qk_rope_head_dim = 576; its CPU Gated
# DeltaNet, in bf16 only, refuses heads of 16 ("expect head_dim to be multiples of 32") and of 32
# ("Unexpected head dim size, 32") and takes 64): the same family and blocks with 2 query heads of
# 32 over one kv head (hidden 64), linear-attention heads of 64, and for MLA DeepSeek-V3's own
# latent sizes (kv_lora_rank 512, qk_rope_head_dim 64). Written as <name>-hd32 (tiny-deepseek-v3-mla
# for the MLA one), tokenizers as above.
VLLM_VARIANTS = {"tiny-mistral": "tiny-mistral-hd32", "tiny-olmo2": "tiny-olmo2-hd32",
                 "tiny-qwen2-moe": "tiny-qwen2-moe-hd32", "tiny-qwen3-next": "tiny-qwen3-next-hd32",
                 "tiny-qwen3-5": "tiny-qwen3-5-hd32", "tiny-qwen2-5-vl": "tiny-qwen2-5-vl-hd32"}


def vllm_variant(cfg):
    """`cfg` with head_dim 32: 2 query heads, 1 kv head (the text config of a multimodal one)."""
    text = getattr(cfg, "text_config", None) or cfg
    text.num_attention_heads, text.num_key_value_heads = 2, 1
    old = getattr(text, "head_dim", None) or text.hidden_size // 4
    if getattr(text, "head_dim", None) is not None:
        text.head_dim = 32
    if getattr(text, "linear_key_head_dim", None) is not None:  # vLLM's CPU GDN kernel
        text.linear_key_head_dim = text.linear_value_head_dim = 64
    rope = getattr(text, "rope_parameters", None) or {}
    if "mrope_section" in rope:  # it spans half the rotary dims: scaled with the head
        rope["mrope_section"] = [m * 32 // old for m in rope["mrope_section"]]
    return cfg


def deepseek_v3_mla():
    from transformers import DeepseekV3Config

    return DeepseekV3Config(
        **{**common("tiny-mistral"), "num_key_value_heads": 2, "num_attention_heads": 2}, q_lora_rank=32,
        kv_lora_rank=512, qk_nope_head_dim=32, qk_rope_head_dim=64, v_head_dim=32, n_routed_experts=4,
        num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=1,
        topk_group=1, routed_scaling_factor=2.5, tie_word_embeddings=False, initializer_range=0.2,
        # What DeepSeek-V3's own config.json says and transformers leaves implicit (it always routes
        # so); vLLM reads them and, without topk_method, has no e_score_correction_bias to load.
        topk_method="noaux_tc", scoring_func="sigmoid")


@torch.no_grad()
def offset_constant_params(model, seed: int) -> list[str]:
    """Give every parameter the init left constant (ones, zeros) a seeded N(0, 0.1) offset."""
    g = torch.Generator().manual_seed(seed)
    touched = []
    for name, p in model.named_parameters():
        if p.numel() > 1 and bool((p == p.flatten()[0]).all()):
            p.add_(torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype) * 0.1)
            touched.append(name)
    # The router's correction bias (DeepSeek-V3-style routing: GLM-4.5, GLM-4.7-Flash, DeepSeek-V3.2, MiniMax-M2) is a zero
    # buffer: offset it too, so that a router that ignores it selects other experts.  No other family has one.
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias") and bool((b == 0).all()):
            b.add_(torch.randn(b.shape, generator=g, dtype=torch.float32).to(b.dtype) * 0.1)
            touched.append(name)
    return touched


def model_class(cfg):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText if cfg.model_type == "qwen2_5_vl" else AutoModelForCausalLM


def write_vl_processor(out: Path) -> None:
    """tiny-qwen2-5-vl's tokenizer (tiny-qwen3-moe's plus VISION_TOKENS, its chat template
    QWEN_VL_TEMPLATE) and Qwen2-VL's PIL image processor, saved as a Qwen2_5_VLProcessor."""
    from tokenizers import AddedToken, Tokenizer
    from transformers import PreTrainedTokenizerFast
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    base = ROOT / "configs" / "models" / "tiny-qwen3-moe"
    raw = Tokenizer.from_file(str(base / "tokenizer.json"))
    raw.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in VISION_TOKENS])
    for t, want in VISION_TOKENS.items():
        if raw.token_to_id(t) != want:
            raise SystemExit(f"{t} got id {raw.token_to_id(t)}, expected {want}")
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  model_max_length=4096, chat_template=QWEN_VL_TEMPLATE)
    tok.save_pretrained(out)
    image = Qwen2VLImageProcessorPil(max_pixels=QWEN_VL_MAX_PIXELS)
    image.save_pretrained(out)


def vl_inputs(out: Path, images: list, messages: list) -> dict:
    """The model inputs of a chat with images, as Qwen2_5_VLProcessor makes them: the chat template,
    each <|image_pad|> repeated grid_t·grid_h·grid_w / merge² times, pixel_values and image_grid_thw
    from Qwen2-VL's PIL image processor, mm_token_type_ids 1 at the image tokens.  (Done here
    because Qwen2_5_VLProcessor loads a video processor, which needs torchvision.)"""
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = AutoTokenizer.from_pretrained(out)
    image_processor = Qwen2VLImageProcessorPil.from_pretrained(out)
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    pixels = image_processor(images=images, return_tensors="pt") if images else {}
    parts = text.split("<|image_pad|>")
    if len(parts) - 1 != len(images):
        raise SystemExit(f"{len(parts) - 1} image placeholders for {len(images)} images")
    merge = image_processor.merge_size ** 2
    expanded = parts[0]
    for i, rest in enumerate(parts[1:]):
        expanded += "<|image_pad|>" * int(pixels["image_grid_thw"][i].prod() // merge) + rest
    ids = tok(expanded, return_tensors="pt", add_special_tokens=False)
    image_id = tok.convert_tokens_to_ids("<|image_pad|>")
    return {**ids, **pixels, "mm_token_type_ids": (ids["input_ids"] == image_id).int()}


def build(name: str, cfg, out: Path, plain: bool) -> None:
    torch.manual_seed(SEED)
    cls = model_class(cfg)
    model = cls.from_config(cfg, dtype=torch.float32)
    model.eval()
    touched = [] if plain else offset_constant_params(model, SEED + 1)
    model.to(torch.bfloat16)
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out, safe_serialization=True)
    if cfg.model_type == "qwen2_5_vl":
        write_vl_processor(out)
    else:
        for f in TOKENIZER_FILES:
            shutil.copyfile(ROOT / "configs" / "models" / TOKENIZERS[base_name(name)][0] / f, out / f)
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{out}: {type(model).__name__}, {sum(p.numel() for p in model.parameters())} parameters, "
          f"{size} bytes; offset {len(touched)} constant parameters: {touched}")


@torch.no_grad()
def check(name: str, out: Path) -> None:
    from transformers import AutoConfig, AutoTokenizer

    cls = model_class(AutoConfig.from_pretrained(out))
    model = cls.from_pretrained(out, dtype=torch.float32, attn_implementation="eager").eval()
    if cls is AutoModelForCausalLM:
        tok = AutoTokenizer.from_pretrained(out)
        ids = tok.apply_chat_template([{"role": "user", "content": "Hello! Who are you?"}], add_generation_prompt=True,
                                      tokenize=True, return_dict=True, return_tensors="pt")
    else:  # an image and a question, through the processor
        from PIL import Image

        tok = AutoTokenizer.from_pretrained(out)
        image = Image.open(ROOT / "golden" / "models" / "images" / "gradient.png")
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"}]}]
        ids = vl_inputs(out, [image], messages)
    eos = TOKENIZERS[base_name(name)][2]
    gc = GenerationConfig(do_sample=False, max_new_tokens=8, eos_token_id=eos, pad_token_id=eos)
    seq = model.generate(**ids, generation_config=gc)[0, ids["input_ids"].shape[1]:].tolist()
    logits = model(**ids).logits[0, -1]
    top2 = torch.topk(torch.log_softmax(logits.float(), -1), 2).values
    print(f"  reload ok: {type(model).__name__}, generated {seq} {tok.decode(seq)!r}, "
          f"first-step top1-top2 margin {float(top2[0] - top2[1]):.3g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "models"))
    ap.add_argument("--only", help="comma-separated names")
    ap.add_argument("--plain-init", action="store_true", help="keep transformers' init as it is")
    ap.add_argument("--vllm-variants", action="store_true",
                    help="write the VLLM_VARIANTS (head_dim 32) and tiny-deepseek-v3-mla instead")
    args = ap.parse_args()
    torch.set_num_threads(1)
    only = set(args.only.split(",")) if args.only else None
    every = configs()
    if args.vllm_variants:
        every = {VLLM_VARIANTS[n]: vllm_variant(c) for n, c in every.items() if n in VLLM_VARIANTS}
        every["tiny-deepseek-v3-mla"] = deepseek_v3_mla()
    for name, cfg in every.items():
        if only and name not in only:
            continue
        out = Path(args.out) / name
        build(name, cfg, out, args.plain_init)
        check(name, out)


if __name__ == "__main__":
    main()
