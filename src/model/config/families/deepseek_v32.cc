// DeepSeek-V3.2 (DeepseekV32ForCausalLM): DeepSeek-V3's blocks plus, in every attention layer,
// the lightning indexer of DeepSeek sparse attention (index_n_heads heads of index_head_dim over
// the q latent, one LayerNorm'd key per token; each query attends to its index_topk best keys).
// mlp_layer_types (transformers 5), when written, says which layers are dense.
#include "base/error.h"
#include "model/config/families/families.h"

namespace h0::model {

Architecture arch_deepseek_v3(
    const ConfigFields& f);  // families/deepseek_v3.cc: the family this one extends

Architecture arch_deepseek_v32(const ConfigFields& f) {
  Architecture a = arch_deepseek_v3(f);
  TextModel& t = a.text;
  Indexer& x = t.indexer;
  x.n_heads = f.opt_int("index_n_heads", 64);  // DeepseekV32Config's defaults
  x.head_dim = f.opt_int("index_head_dim", 128);
  x.topk = f.opt_int("index_topk", 2048);
  require_positive(
      f, {{"index_n_heads", x.n_heads}, {"index_head_dim", x.head_dim}, {"index_topk", x.topk}});
  if (t.attn.q_lora_rank <= 0)
    throw InputError(f.where("q_lora_rank"),
                     "the indexer's queries come from the q latent: must be set");
  read_mlp_layer_types(f, &t);
  return a;
}

}  // namespace h0::model
