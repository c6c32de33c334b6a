// Mistral (MistralForCausalLM): Llama's decoder with sliding-window attention on every layer
// (`sliding_window`: Mistral-7B-v0.1's 4096; null from v0.2 on: full attention).
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_mistral(const ConfigFields& f) {
  Architecture a;
  read_decoder(f, &a.text, false);
  a.text.attn.sliding_window = f.opt_int("sliding_window", 0);
  a.text.layer_kinds = read_layer_kinds(f, a.text.num_layers, a.text.attn.sliding_window);
  return a;
}

}  // namespace h0::model
