// DeepSeek-V3.2 (DeepseekV32ForCausalLM): DeepSeek-V3's blocks plus, in every attention layer,
// the lightning indexer of DeepSeek sparse attention (index_n_heads heads of index_head_dim over
// the q latent, one LayerNorm'd key per token; each query attends to its index_topk best keys).
// mlp_layer_types (transformers 5), when written, says which layers are dense.
#include "base/error.h"
#include "model/families/families.h"

namespace h0::model {

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
  if (f.find("mlp_layer_types") != nullptr) {
    const nlohmann::json& types = f.json()["mlp_layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != t.num_layers) {
      throw InputError(f.where("mlp_layer_types"),
                       "must list \"dense\" or \"sparse\" for each of the " +
                           std::to_string(t.num_layers) + " num_hidden_layers");
    }
    Moe& m = t.moe;
    m.first_k_dense = 0;  // the list is the rule
    m.layer_freq = 1;
    m.dense_layers.clear();
    for (int64_t i = 0; i < t.num_layers; ++i) {
      const nlohmann::json& v = types[static_cast<size_t>(i)];
      if (v != "dense" && v != "sparse") {
        throw InputError(f.where("mlp_layer_types") + "[" + std::to_string(i) + "]",
                         "must be \"dense\" or \"sparse\", got " + v.dump());
      }
      if (v == "dense") m.dense_layers.push_back(i);
    }
  }
  return a;
}

}  // namespace h0::model
