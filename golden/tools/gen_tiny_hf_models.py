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
for tiny-gemma3, tiny-mistral, tiny-glm4-moe, tiny-gpt-oss and tiny-olmo2 (<|begin_of_text|> 1019 =
bos, <|eot_id|> 1023 = eos, a Llama-3 style chat template; config.json's pad is <|end_of_text|> 1020:
the tokenizer names no pad token)
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
  tiny-qwen3-next qwen3_next: layer_types [linear, full, linear]; Gated DeltaNet with 2 key heads and 4
                  value heads of 16, conv kernel 4; gated full attention (head_dim 16, partial rotary
                  0.5, QK-norm); 4 experts top-2 plus the gated shared expert.
  tiny-deepseek-v32 deepseek_v32: MLA (q_lora 32, kv_lora 16), the lightning indexer (8 heads of 16,
                  index_topk 4: prompts longer than 4 tokens attend sparsely; with 2 heads the
                  ReLU's zeros tied at the top-k boundary on the golden prompts, where torch.topk's
                  choice is unspecified), first layer dense, 4 experts top-2 plus a shared one.
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
              "tiny-mistral": LLAMA3_TOKENIZER, "tiny-glm4-moe": LLAMA3_TOKENIZER, "tiny-olmo2": LLAMA3_TOKENIZER,
              "tiny-qwen3-next": QWEN_TOKENIZER, "tiny-deepseek-v32": LLAMA3_TOKENIZER, "tiny-qwen3-5": QWEN_TOKENIZER}
SEED = 0


def common(name: str) -> dict:
    _, bos, eos, pad = TOKENIZERS[name]
    return dict(vocab_size=1024, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=128, max_position_embeddings=2048, bos_token_id=bos, eos_token_id=eos,
                pad_token_id=pad)


def configs():
    from transformers import (DeepseekV32Config, Gemma3TextConfig, Glm4MoeConfig, GptOssConfig, MistralConfig, Olmo2Config,
                              Qwen2MoeConfig, Qwen3_5TextConfig, Qwen3NextConfig)

    return {
        "tiny-glm4-moe": Glm4MoeConfig(
            **{**common("tiny-glm4-moe"), "num_hidden_layers": 3}, head_dim=32, n_routed_experts=8,
            num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1,
            n_group=2, topk_group=1, routed_scaling_factor=2.5, norm_topk_prob=True, use_qk_norm=True,
            attention_bias=True, num_nextn_predict_layers=0, tie_word_embeddings=False, initializer_range=0.2,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}),
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
        "tiny-olmo2": Olmo2Config(
            **common("tiny-olmo2"), rms_norm_eps=1e-6, tie_word_embeddings=False, initializer_range=0.3),
    }


@torch.no_grad()
def offset_constant_params(model, seed: int) -> list[str]:
    """Give every parameter the init left constant (ones, zeros) a seeded N(0, 0.1) offset."""
    g = torch.Generator().manual_seed(seed)
    touched = []
    for name, p in model.named_parameters():
        if p.numel() > 1 and bool((p == p.flatten()[0]).all()):
            p.add_(torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype) * 0.1)
            touched.append(name)
    # The router's correction bias (DeepSeek-V3-style routing, GLM-4.5) is a zero buffer: offset it
    # too, so that a router that ignores it selects other experts.  No other family has one.
    for name, b in model.named_buffers():
        if name.endswith("e_score_correction_bias") and bool((b == 0).all()):
            b.add_(torch.randn(b.shape, generator=g, dtype=torch.float32).to(b.dtype) * 0.1)
            touched.append(name)
    return touched


def build(name: str, cfg, out: Path, plain: bool) -> None:
    torch.manual_seed(SEED)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.eval()
    touched = [] if plain else offset_constant_params(model, SEED + 1)
    model.to(torch.bfloat16)
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out, safe_serialization=True)
    for f in TOKENIZER_FILES:
        shutil.copyfile(ROOT / "configs" / "models" / TOKENIZERS[name][0] / f, out / f)
    size = sum(f.stat().st_size for f in out.iterdir())
    print(f"{out}: {type(model).__name__}, {sum(p.numel() for p in model.parameters())} parameters, "
          f"{size} bytes; offset {len(touched)} constant parameters: {touched}")


@torch.no_grad()
def check(name: str, out: Path) -> None:
    from transformers import AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(out)
    ids = tok.apply_chat_template([{"role": "user", "content": "Hello! Who are you?"}], add_generation_prompt=True,
                                  tokenize=True, return_dict=True, return_tensors="pt")
    eos = TOKENIZERS[name][2]
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
    args = ap.parse_args()
    torch.set_num_threads(1)
    only = set(args.only.split(",")) if args.only else None
    for name, cfg in configs().items():
        if only and name not in only:
            continue
        out = Path(args.out) / name
        build(name, cfg, out, args.plain_init)
        check(name, out)


if __name__ == "__main__":
    main()
