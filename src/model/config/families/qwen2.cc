// Qwen2 (Qwen2ForCausalLM): Llama with q/k/v biases always and no o_proj bias.
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_qwen2(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.attn.qkv_bias = true;  // Qwen2 always has q/k/v biases, never an o_proj bias
  return a;
}

}  // namespace h0::model
