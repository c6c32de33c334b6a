// Llama (LlamaForCausalLM): GQA with optional biases (attention_bias), a dense SwiGLU MLP.
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_llama(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.attn.qkv_bias = a.text.attn.o_bias = f.opt_bool("attention_bias", false);
  return a;
}

}  // namespace h0::model
