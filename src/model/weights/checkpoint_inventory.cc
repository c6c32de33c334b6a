#include "model/weights/checkpoint_inventory.h"

#include <cctype>
#include <filesystem>
#include <string_view>

#include "base/error.h"

namespace h0::model {
namespace {

using tensor::DType;

struct LeafRule {
  const char* leaf;
  TpSplit split;
  bool heads;  // cut in whole heads (q/k/v projections)
};

// The rule table of the header, in one place.
constexpr LeafRule kRules[] = {
    {"embed_tokens", TpSplit::kVocab, false},
    {"wte", TpSplit::kVocab, false},
    {"word_embeddings", TpSplit::kVocab, false},
    {"lm_head", TpSplit::kVocab, false},
    {"embed_out", TpSplit::kVocab, false},
    {"q_proj", TpSplit::kColumn, true},
    {"k_proj", TpSplit::kColumn, true},
    {"v_proj", TpSplit::kColumn, true},
    {"qkv_proj", TpSplit::kColumn, false},
    {"query_key_value", TpSplit::kColumn, false},
    {"c_attn", TpSplit::kColumn, false},
    {"gate_proj", TpSplit::kColumn, false},
    {"up_proj", TpSplit::kColumn, false},
    {"gate_up_proj", TpSplit::kColumn, false},
    {"w1", TpSplit::kColumn, false},
    {"w3", TpSplit::kColumn, false},
    {"fc1", TpSplit::kColumn, false},
    {"c_fc", TpSplit::kColumn, false},
    {"o_proj", TpSplit::kRow, false},
    {"down_proj", TpSplit::kRow, false},
    {"w2", TpSplit::kRow, false},
    {"fc2", TpSplit::kRow, false},
    {"c_proj", TpSplit::kRow, false},
    {"out_proj", TpSplit::kRow, false},
    {"dense", TpSplit::kRow, false},
};

constexpr const char* kVisionPrefixes[] = {"visual.", "vision_tower.", "vision_model.",
                                           "multi_modal_projector.", "mm_projector."};
constexpr const char* kLayerSegments[] = {"layers.", "h.", "blocks."};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// How one tensor name reads under the rule table.
struct NameParts {
  std::string leaf;
  bool bias = false, scale = false, packed = false;  // packed: "*_blocks" (4-bit pairs in u8)
  int64_t layer = -1, expert = -1;
  bool fused_experts = false, vision = false;
};

// The number at `s[at...]` followed by '.', or -1.
int64_t number_at(std::string_view s, size_t at) {
  size_t end = at;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  if (end == at || end >= s.size() || s[end] != '.' || end - at > 9) return -1;
  return std::stoll(std::string(s.substr(at, end - at)));
}

// The index after the first "<segment><n>." of `name` that starts a component, or -1.
int64_t index_after(std::string_view name, std::string_view segment, size_t* found = nullptr) {
  for (size_t at = name.find(segment); at != std::string_view::npos;
       at = name.find(segment, at + 1)) {
    if (at > 0 && name[at - 1] != '.') continue;
    const int64_t n = number_at(name, at + segment.size());
    if (n >= 0) {
      if (found) *found = at;
      return n;
    }
  }
  return -1;
}

NameParts read_name(const std::string& name) {
  NameParts p;
  const size_t dot = name.rfind('.');
  std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
  std::string before = dot == std::string::npos ? "" : name.substr(0, dot);
  if (last == "weight" || last == "bias" || last.rfind("weight_", 0) == 0 ||
      last == "input_scale") {
    p.bias = last == "bias";
    p.scale = last != "weight" && last != "bias";
    const size_t prev = before.rfind('.');
    p.leaf = prev == std::string::npos ? before : before.substr(prev + 1);
  } else {
    p.leaf = last;
  }
  for (const char* suffix : {"_blocks", "_scales", "_scale_inv", "_scale", "_bias"}) {
    if (ends_with(p.leaf, suffix)) {
      p.leaf = p.leaf.substr(0, p.leaf.size() - std::string_view(suffix).size());
      p.packed = std::string_view(suffix) == "_blocks";
      p.scale = p.scale || std::string_view(suffix).find("scale") != std::string_view::npos;
      p.bias = p.bias || std::string_view(suffix) == "_bias";
      break;
    }
  }
  for (const char* v : kVisionPrefixes) {
    const size_t at = name.find(v);
    if (at != std::string::npos && (at == 0 || name[at - 1] == '.')) p.vision = true;
  }
  for (const char* seg : kLayerSegments) {
    if (p.layer < 0 && !p.vision) p.layer = index_after(name, seg);
  }
  p.expert = index_after(name, "experts.");
  if (p.expert < 0) {
    const size_t at = name.find(".experts.");
    p.fused_experts = at != std::string::npos;
  }
  return p;
}

const LeafRule* rule_of(const std::string& leaf) {
  for (const LeafRule& r : kRules) {
    if (leaf == r.leaf) return &r;
  }
  return nullptr;
}

// The rule table's split for a name already read.
TpSplit split_of(const NameParts& p) {
  if (p.vision) return TpSplit::kReplicated;
  const LeafRule* r = rule_of(p.leaf);
  if (r == nullptr) return TpSplit::kReplicated;
  if (r->split == TpSplit::kRow && p.bias) return TpSplit::kReplicated;
  return r->split;
}

}  // namespace

bool has_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  return fs::is_directory(path, ec) &&
         (fs::exists(fs::path(path) / "model.safetensors", ec) ||
          fs::exists(fs::path(path) / "model.safetensors.index.json", ec));
}

TpSplit tp_rule(const std::string& name) { return split_of(read_name(name)); }

Inventory inventory_from_checkpoint(const Architecture& arch, const io::ShardedCheckpoint& ckpt) {
  const TextModel& t = arch.text;
  Inventory inv;
  for (const std::string& name : ckpt.names()) {
    const io::TensorEntry* e = ckpt.find(name);
    const NameParts p = read_name(name);
    WeightInfo w;
    w.name = name;
    w.shape = std::vector<int64_t>(e->shape.begin(), e->shape.end());
    w.dtype = e->dtype;
    w.role = p.scale ? WeightRole::kQuantScale : WeightRole::kParameter;
    w.layer = p.vision ? -1 : p.layer;
    w.expert = p.expert;
    w.mtp = t.num_layers > 0 && w.layer >= t.num_layers;
    w.tp = split_of(p);
    if (w.expert >= 0 && w.expert >= t.moe.num_experts) {
      throw InputError(ckpt.path() + ": " + name,
                       "routed expert " + std::to_string(w.expert) + ", but the config has " +
                           std::to_string(t.moe.num_experts) +
                           " experts (num_experts / num_local_experts / n_routed_experts)");
    }
    if (p.fused_experts && w.expert < 0 && w.shape.size() >= 2 && rule_of(p.leaf) != nullptr) {
      w.tp = TpSplit::kColumn;  // the expert axis first: each rank holds whole experts
    }
    if (w.tp == TpSplit::kRow && w.shape.size() < 2) w.tp = TpSplit::kReplicated;
    if (w.shape.empty()) w.tp = TpSplit::kReplicated;
    const LeafRule* rule = rule_of(p.leaf);
    const int64_t rows = w.shape.empty() ? 0 : w.shape[0];
    if (rule && rule->heads && !p.scale && w.tp == TpSplit::kColumn && !p.fused_experts &&
        w.expert < 0 && t.attn.head_dim > 0 && rows % t.attn.head_dim == 0) {
      const bool kv = p.leaf != "q_proj";
      if (!kv || rows == t.attn.num_kv_heads * t.attn.head_dim) {
        w.tp_unit = t.attn.head_dim;
        w.kv_heads = kv;
      }
    }
    inv.weights.push_back(std::move(w));
  }
  const CheckpointTally tally = tally_checkpoint(ckpt);
  inv.counts.total = tally.parameters;
  inv.counts.active = tally.parameters;
  return inv;
}

CheckpointTally tally_checkpoint(const io::ShardedCheckpoint& ckpt) {
  CheckpointTally out;
  for (const std::string& name : ckpt.names()) {
    const io::TensorEntry* e = ckpt.find(name);
    int64_t n = 1;
    for (int64_t d : e->shape) n *= d;
    DtypeTally& d = out.by_dtype[tensor::dtype_name(e->dtype)];
    ++d.tensors;
    d.elements += n;
    d.bytes += static_cast<int64_t>(e->nbytes());
    ++out.tensors;
    out.bytes += static_cast<int64_t>(e->nbytes());
    const NameParts p = read_name(name);
    if (p.scale) {
      out.scale_elements += n;
    } else if (p.packed && !tensor::is_float(e->dtype)) {
      out.parameters += 2 * n;
    } else {
      out.parameters += n;
    }
  }
  return out;
}

}  // namespace h0::model
