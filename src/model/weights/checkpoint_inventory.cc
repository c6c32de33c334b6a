#include "model/weights/checkpoint_inventory.h"

#include <cctype>
#include <filesystem>
#include <string_view>
#include <unordered_set>

#include "base/error.h"
#include "base/text_format.h"
#include "tensor/tensor.h"

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

// The buffers transformers 5.24 saves, by family (gen_tf5_inventories.py).
struct BufferRow {
  const char* model_type;
  const char* tail;  // the name from its first layer index; "": the family saves none
};
constexpr BufferRow kTransformers5Buffers[] = {
#include "model/weights/transformers5_buffers.inc"
};

// The model types whose saved parameters are not num_parameters(): transformers 5.24 converts
// them on load (gen_tf5_inventories.py).
constexpr const char* kTransformers5Converted[] = {
#include "model/weights/transformers5_converted.inc"
};

// The weight a quantization companion `name` belongs to, for each form it may take (or none).
std::vector<std::string> companion_owners(const std::string& name) {
  const size_t dot = name.rfind('.');
  const std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
  const std::string before = dot == std::string::npos ? "" : name.substr(0, dot + 1);
  if (last.rfind("weight_", 0) == 0 || last.rfind("input_", 0) == 0) return {before + "weight"};
  if (last == "qzeros" || last == "g_idx" || last == "scales") return {before + "qweight"};
  for (const char* suffix : {"_scale_inv", "_scales", "_scale", "_zero_point"}) {
    if (!ends_with(name, suffix)) continue;
    const std::string stem = name.substr(0, name.size() - std::string_view(suffix).size());
    return {stem, stem + "_blocks", stem + ".weight"};
  }
  return {};
}

// The class of each saved tensor (the rules of the header's CheckpointTally).
class Classifier {
 public:
  Classifier(const Architecture& a, const std::vector<SavedTensor>& all) {
    quantized_ = !a.quantization.method.empty();
    for (const SavedTensor& t : all) {
      names_.insert(t.name);
      quantized_ = quantized_ || tensor::is_fp8(t.dtype) ||
                   (ends_with(t.name, "_blocks") && !tensor::is_float(t.dtype));
    }
    for (const BufferRow& r : kTransformers5Buffers) {
      if (a.family != r.model_type) continue;
      known_ = true;
      if (*r.tail != '\0') tails_.push_back(r.tail);
    }
    if (known_) {
      rule_ = tails_.empty() ? "transformers 5.24's " + a.family + " saves no buffer"
                             : "the buffers transformers 5.24's " + a.family + " saves";
      return;
    }
    for (const BufferRow& r : kTransformers5Buffers) {
      if (std::string_view(r.model_type) == "*") leaves_.push_back(r.tail);
    }
    rule_ = a.family +
            " is not in transformers 5.24: buffers by dtype and by the names most "
            "families save as buffers (";
    for (size_t i = 0; i < leaves_.size(); ++i) rule_ += (i ? ", " : "") + leaves_[i];
    rule_ += ")";
  }

  WeightRole role(const SavedTensor& t, const NameParts& p) const {
    if (quantized_) {
      for (const std::string& owner : companion_owners(t.name)) {
        if (names_.count(owner)) return WeightRole::kQuantScale;
      }
    }
    const bool quantized_weight =
        quantized_ && (p.packed || ends_with(t.name, ".weight") || ends_with(t.name, ".qweight"));
    if (!tensor::is_float(t.dtype) && !quantized_weight) return WeightRole::kBuffer;
    const std::string folded = fold_indices(t.name);
    for (const std::string& tail : tails_) {
      if (folded == tail || ends_with(folded, "." + tail)) return WeightRole::kBuffer;
    }
    for (const std::string& leaf : leaves_) {
      if (ends_with(folded, "." + leaf)) return WeightRole::kBuffer;
    }
    return WeightRole::kParameter;
  }
  const std::string& rule() const { return rule_; }

 private:
  std::unordered_set<std::string> names_;
  bool quantized_ = false, known_ = false;
  std::vector<std::string> tails_, leaves_;
  std::string rule_;
};

}  // namespace

bool has_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  return fs::is_directory(path, ec) &&
         (fs::exists(fs::path(path) / "model.safetensors", ec) ||
          fs::exists(fs::path(path) / "model.safetensors.index.json", ec));
}

TpSplit tp_rule(const std::string& name) { return split_of(read_name(name)); }

namespace {

// The class of each of `tensors` (into `roles`, when given) and their tally, in one pass.
CheckpointTally classify(const Architecture& arch, const std::vector<SavedTensor>& tensors,
                         std::vector<WeightRole>* roles) {
  const Classifier classes(arch, tensors);
  CheckpointTally out;
  out.buffer_rule = classes.rule();
  for (const char* type : kTransformers5Converted) {
    if (arch.family == type)
      out.count_note = "transformers 5.24 converts " + arch.family +
                       "'s saved tensors on load: its num_parameters() is not this count";
  }
  for (const SavedTensor& t : tensors) {
    const int64_t n = tensor::numel(t.shape);
    const int64_t bytes = n * static_cast<int64_t>(tensor::dtype_size(t.dtype));
    DtypeTally& d = out.by_dtype[tensor::dtype_name(t.dtype)];
    d.tensors += t.copies;
    d.elements += n * t.copies;
    d.bytes += bytes * t.copies;
    out.tensors += t.copies;
    out.bytes += bytes * t.copies;
    const NameParts p = read_name(t.name);
    const WeightRole role = classes.role(t, p);
    if (roles != nullptr) roles->push_back(role);
    ClassTally& c = role == WeightRole::kQuantScale ? out.companions
                    : role == WeightRole::kBuffer   ? out.buffers
                                                    : out.params;
    c.tensors += t.copies;
    c.elements += n * t.copies;
    c.bytes += bytes * t.copies;
    if (role == WeightRole::kParameter) {
      out.parameters += (p.packed && !tensor::is_float(t.dtype) ? 2 : 1) * n * t.copies;
    } else {
      c.names[fold_indices(t.name)] += t.copies;
    }
  }
  return out;
}

}  // namespace

Inventory inventory_from_checkpoint(const Architecture& arch, const io::ShardedCheckpoint& ckpt,
                                    CheckpointTally* tally) {
  const TextModel& t = arch.text;
  const std::vector<SavedTensor> saved = saved_tensors(ckpt);
  std::vector<WeightRole> roles;
  const CheckpointTally counted = classify(arch, saved, &roles);
  Inventory inv;
  for (size_t i = 0; i < saved.size(); ++i) {
    const SavedTensor& st = saved[i];
    const std::string& name = st.name;
    const NameParts p = read_name(name);
    WeightInfo w;
    w.name = name;
    w.shape = st.shape;
    w.dtype = st.dtype;
    w.role = roles[i];
    w.layer = p.vision ? -1 : p.layer;
    w.expert = p.expert;
    w.mtp = t.num_layers > 0 && w.layer >= t.num_layers;
    w.tp = split_of(p);
    if (w.expert >= 0 && w.expert >= t.moe.num_experts + t.moe.identity_experts) {
      throw InputError(
          ckpt.path() + ": " + name,
          "routed expert " + std::to_string(w.expert) + ", but the config has " +
              std::to_string(t.moe.num_experts) +
              " experts (num_experts / num_local_experts / n_routed_experts)" +
              (t.moe.identity_experts > 0 ? " and " + std::to_string(t.moe.identity_experts) +
                                                " zero-computation experts (zero_expert_num)"
                                          : ""));
    }
    // LongCat-Flash's zero-computation experts: identity, but transformers 5.24 saves rows for
    // them; held by every expert-parallel rank (they are no routed expert's weights to place).
    if (w.expert >= t.moe.num_experts) w.expert = -1;
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
  inv.counts.total = counted.parameters;
  inv.counts.active = counted.parameters;
  if (tally != nullptr) *tally = counted;
  return inv;
}

std::vector<SavedTensor> saved_tensors(const io::ShardedCheckpoint& ckpt) {
  std::vector<SavedTensor> out;
  for (const std::string& name : ckpt.names()) {
    const io::TensorEntry* e = ckpt.find(name);
    out.push_back({name, e->dtype, std::vector<int64_t>(e->shape.begin(), e->shape.end()), 1});
  }
  return out;
}

std::string fold_indices(const std::string& name) {
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string_view part(name.data() + start, end - start);
    const bool number = !part.empty() && part.find_first_not_of("0123456789") == part.npos;
    out += number ? std::string_view("*") : part;
    if (end == name.size()) break;
    out += '.';
    start = end + 1;
  }
  return out;
}

CheckpointTally tally_tensors(const Architecture& arch, const std::vector<SavedTensor>& tensors) {
  return classify(arch, tensors, nullptr);
}

namespace {

std::string class_line(const char* what, const ClassTally& c, const std::string& why) {
  std::string line = std::string(what) + ": " + with_commas(c.elements) + " elements in " +
                     with_commas(c.tensors) + (c.tensors == 1 ? " tensor, " : " tensors, ") +
                     human_bytes(uint64_t(c.bytes));
  std::string names;
  size_t shown = 0;
  for (const auto& [name, n] : c.names) {
    if (++shown > 4) {
      names += ", ... " + std::to_string(c.names.size() - 4) + " more";
      break;
    }
    names += (names.empty() ? "" : ", ") + name + (n > 1 ? " x" + with_commas(n) : "");
  }
  if (!names.empty()) line += " (" + names + ")";
  return why.empty() ? line : line + "; " + why;
}

nlohmann::json class_entry(const ClassTally& c) {
  nlohmann::json j = {{"tensors", c.tensors}, {"elements", c.elements}, {"bytes", c.bytes}};
  if (!c.names.empty()) j["names"] = c.names;
  return j;
}

}  // namespace

std::vector<std::string> class_lines(const CheckpointTally& t) {
  std::vector<std::string> out = {class_line("parameters", t.params, "")};
  if (t.parameters != t.params.elements) {
    out[0] += "; " + with_commas(t.parameters) + " parameters (a packed 4-bit byte holds two)";
  }
  if (!t.count_note.empty()) out[0] += "; " + t.count_note;
  if (t.buffers.tensors > 0) out.push_back(class_line("buffers", t.buffers, t.buffer_rule));
  if (t.companions.tensors > 0)
    out.push_back(class_line("quantization companions", t.companions, ""));
  return out;
}

nlohmann::json class_json(const CheckpointTally& t) {
  return {{"parameters", class_entry(t.params)},
          {"buffers", class_entry(t.buffers)},
          {"quant_companions", class_entry(t.companions)},
          {"buffer_rule", t.buffer_rule},
          {"count_note", t.count_note}};
}

}  // namespace h0::model
