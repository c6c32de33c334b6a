// Qwen3 (Qwen3ForCausalLM): Llama with RMSNorm over each q and k head before RoPE (QK-norm).
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_qwen3(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.attn.qkv_bias = a.text.attn.o_bias = f.opt_bool("attention_bias", false);
  a.text.attn.qk_norm = true;
  return a;
}

}  // namespace h0::model
