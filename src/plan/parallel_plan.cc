#include "plan/parallel_plan.h"

#include "base/check.h"
#include "base/error.h"
#include "model/config/block.h"

namespace h0::plan {
namespace {

using model::TpSplit;
using model::WeightInfo;

std::string str(int64_t v) { return std::to_string(v); }

bool is_tied_embedding(const WeightInfo& w, const model::Architecture& arch) {
  return arch.text.tie_word_embeddings && !w.mtp && w.layer < 0 &&
         w.name == arch.text.prefix + "embed_tokens.weight";
}

bool on_stage(const WeightInfo& w, const model::Architecture& arch, const ParallelPlan& plan,
              int64_t pp_rank) {
  if (pp_rank == plan.pp - 1 && is_tied_embedding(w, arch)) return true;  // the LM head's copy
  return stage_of(w, arch, plan) == pp_rank;
}

// Cuts `w` along `axis` into `parts`, keeping part `index`, in whole units of w.tp_unit; a weight
// with tp_parts cuts each part so (axis 0).
Slice cut(const WeightInfo& w, const model::Architecture& arch, int axis, int64_t parts,
          int64_t index) {
  if (!w.tp_parts.empty()) {
    H0_CHECK(axis == 0) << w.name << ": parts are cut along axis 0";
    if (w.quantized) {
      throw InputError("tp " + str(parts),
                       w.name +
                           " is fp8 block-quantized and cut into q|k|v parts: not run yet "
                           "(run it with tp 1, or pp)");
    }
    Slice s;
    s.axis = 0;
    s.shape = w.shape;
    s.shape[0] = 0;
    int64_t offset = 0;
    for (const WeightInfo::TpPart& p : w.tp_parts) {
      if (p.size % p.unit != 0 || (p.size / p.unit) % parts != 0) {
        throw InputError("tp " + str(parts), w.name + ": a part of " + str(p.size / p.unit) +
                                                 " heads does not split over " + str(parts) +
                                                 " ranks");
      }
      const auto [b, e] = split(p.size / p.unit, parts, index);
      s.pieces.emplace_back(offset + b * p.unit, offset + e * p.unit);
      s.shape[0] += (e - b) * p.unit;
      offset += p.size;
    }
    H0_CHECK(offset == w.shape[0])
        << w.name << ": its parts cover " << offset << " of " << w.shape[0] << " rows";
    return s;
  }
  const int64_t dim = w.shape[static_cast<size_t>(axis)], unit = w.tp_unit;
  H0_CHECK(unit >= 1 && dim % unit == 0)
      << w.name << ": dim " << dim << " is not whole units of " << unit;
  const int64_t units = dim / unit;
  std::pair<int64_t, int64_t> range;
  if (w.kv_heads && units < parts) {
    // Fewer kv heads than ranks: consecutive groups of parts/units ranks share one head.
    H0_CHECK(parts % units == 0) << w.name << ": " << units << " kv heads over " << parts
                                 << " ranks";
    const int64_t head = index / (parts / units);
    range = {head, head + 1};
  } else {
    if ((unit > 1 || w.kv_heads) && units % parts != 0) {
      throw InputError("tp " + str(parts), w.name + ": its " + str(units) +
                                               " heads do not split over " + str(parts) + " ranks");
    }
    range = split(units, parts, index);
  }
  Slice s;
  s.axis = axis;
  s.begin = range.first * unit;
  s.end = range.second * unit;
  s.shape = w.shape;
  s.shape[static_cast<size_t>(axis)] = s.end - s.begin;
  if (w.quantized) {
    model::require_whole_blocks(
        w.name, parts, s.begin, s.end, dim,
        axis == 0 ? arch.quantization.block_rows : arch.quantization.block_cols);
  }
  return s;
}

}  // namespace

std::string plan_name(const ParallelPlan& p) {
  return "tp=" + str(p.tp) + " pp=" + str(p.pp) + " ep=" + str(p.ep) + " dp=" + str(p.dp);
}

std::string default_dp(ParallelPlan* plan, bool dp_given) {
  if (dp_given || plan->ep <= plan->tp || plan->tp < 1 || plan->ep % plan->tp != 0) return "";
  plan->dp = plan->ep / plan->tp;
  return "dp=" + str(plan->dp) + " (from ep " + str(plan->ep) + " over tp " + str(plan->tp) + ")";
}

std::optional<PlanIssue> check_plan(const model::Architecture& arch, const ParallelPlan& plan) {
  const std::pair<const char*, int64_t> dims[] = {
      {"tp", plan.tp}, {"pp", plan.pp}, {"ep", plan.ep}, {"dp", plan.dp}};
  for (const auto& [name, value] : dims) {
    if (value < 1) return PlanIssue{name, std::string(name) + " must be >= 1, got " + str(value)};
  }
  const model::TextModel& t = arch.text;
  const int64_t heads = t.attn.num_heads, tp = plan.tp;
  if (heads % tp != 0) {
    return PlanIssue{"tp",
                     "num_attention_heads " + str(heads) + " is not divisible by tp " + str(tp)};
  }
  for (const model::Block* b : model::blocks()) {  // what a block's own split needs
    if (model::layers_running(t, *b) == 0) continue;
    if (std::string issue = b->tp_issue(t, tp); !issue.empty()) return PlanIssue{"tp", issue};
  }
  if (plan.pp > 1 && t.layers_per_stored_layer > 1) {  // stages would split the wrong index
    return PlanIssue{"pp", "the config's layer count is derived (" + str(t.num_layers) + " = " +
                               str(t.layers_per_stored_layer) +
                               " x the checkpoint's layers): pipeline stages are not planned "
                               "for it (pp must be 1)"};
  }
  if (plan.pp > t.num_layers) {
    return PlanIssue{
        "pp", "pp " + str(plan.pp) + " is more than the model's " + str(t.num_layers) + " layers"};
  }
  if (plan.ep > 1 && !arch.is_moe())
    return PlanIssue{"ep", "the model has no routed experts; ep must be 1"};
  if (plan.ep > t.moe.num_experts && arch.is_moe()) {
    return PlanIssue{"ep", "ep " + str(plan.ep) + " is more than the model's " +
                               str(t.moe.num_experts) + " experts"};
  }
  if ((tp * plan.dp) % plan.ep != 0) {
    return PlanIssue{"ep",
                     "ep " + str(plan.ep) + " does not divide tp·dp = " + str(tp * plan.dp) +
                         " (expert groups are formed from the tp·dp ranks of a stage; raise dp)"};
  }
  return std::nullopt;
}

RankCoord coord_of(const ParallelPlan& plan, int64_t rank) {
  H0_CHECK(rank >= 0 && rank < plan.world()) << "rank " << rank << " of " << plan.world();
  RankCoord c;
  c.rank = rank;
  c.tp_rank = rank % plan.tp;
  c.dp_rank = rank / plan.tp % plan.dp;
  c.pp_rank = rank / (plan.tp * plan.dp);
  if (plan.ep == 1) {
    c.etp_rank = c.tp_rank;
  } else {
    const int64_t in_stage = c.tp_rank + plan.tp * c.dp_rank, etp = plan.etp();
    c.ep_rank = in_stage / etp;
    c.etp_rank = in_stage % etp;
  }
  return c;
}

std::pair<int64_t, int64_t> split(int64_t n, int64_t parts, int64_t index) {
  H0_CHECK(parts >= 1 && index >= 0 && index < parts) << "part " << index << " of " << parts;
  const int64_t q = n / parts, r = n % parts;
  const int64_t begin = index * q + std::min(index, r);
  return {begin, begin + q + (index < r ? 1 : 0)};
}

std::pair<int64_t, int64_t> stage_layers(const model::Architecture& arch, const ParallelPlan& plan,
                                         int64_t pp_rank) {
  return split(arch.text.num_layers, plan.pp, pp_rank);
}

std::pair<int64_t, int64_t> rank_experts(const model::Architecture& arch, const ParallelPlan& plan,
                                         int64_t ep_rank) {
  if (!arch.is_moe()) return {0, 0};
  return split(arch.text.moe.num_experts, plan.ep, ep_rank);
}

std::pair<int64_t, int64_t> rank_vocab(const model::Architecture& arch, const ParallelPlan& plan,
                                       int64_t tp_rank) {
  return split(arch.text.vocab_size, plan.tp, tp_rank);
}

int64_t stage_of(const WeightInfo& w, const model::Architecture& arch, const ParallelPlan& plan) {
  const int64_t layers = arch.text.num_layers;
  if (w.layer < 0) return 0;
  if (w.layer >= layers) return plan.pp - 1;
  // The inverse of split(layers, pp, ·): the first `r` stages hold q + 1 layers.
  const int64_t q = layers / plan.pp, r = layers % plan.pp;
  return w.layer < r * (q + 1) ? w.layer / (q + 1) : r + (w.layer - r * (q + 1)) / q;
}

int64_t kv_head_replication(const model::Architecture& arch, const ParallelPlan& plan) {
  const int64_t kv = arch.text.attn.num_kv_heads;
  if (!model::kv_split_by_heads(arch.text) || kv >= plan.tp || kv < 1) return 1;
  return plan.tp / kv;
}

int64_t kv_heads_per_rank(const model::Architecture& arch, const ParallelPlan& plan) {
  const int64_t kv = arch.text.attn.num_kv_heads;
  if (!model::kv_split_by_heads(arch.text)) return 1;  // one latent, held whole by every rank
  return kv >= plan.tp ? kv / plan.tp : 1;
}

int64_t Slice::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::optional<Slice> shard_of(const WeightInfo& w, const model::Architecture& arch,
                              const ParallelPlan& plan, const RankCoord& at) {
  if (!on_stage(w, arch, plan, at.pp_rank)) return std::nullopt;
  int64_t parts = plan.tp, index = at.tp_rank;
  if (w.all_experts && plan.ep > 1) {  // GPT-OSS's fused experts: this rank's experts along axis 0
    const auto [first, last] = rank_experts(arch, plan, at.ep_rank);
    if (plan.etp() > 1 && w.tp != TpSplit::kReplicated) {
      throw InputError("mesh " + plan_name(plan),
                       w.name +
                           " holds every expert in one tensor: it is cut by ep or by tp, "
                           "not both (etp " +
                           str(plan.etp()) + "; use ep = tp x dp)");
    }
    Slice s;
    s.axis = 0;
    s.begin = first;
    s.end = last;
    s.shape = w.shape;
    s.shape[0] = last - first;
    return s;
  }
  if (w.all_experts) {  // ep 1: cut along F like one expert's weight
    parts = plan.etp();
    index = at.etp_rank;
  }
  if (w.expert >= 0) {
    const auto [first, last] = rank_experts(arch, plan, at.ep_rank);
    if (w.expert < first || w.expert >= last) return std::nullopt;
    parts = plan.etp();
    index = at.etp_rank;
  }
  if (w.tp == TpSplit::kReplicated || parts == 1) {
    Slice s;
    s.shape = w.shape;
    s.end = w.shape.empty() ? 1 : w.shape[0];
    return s;
  }
  return cut(w, arch, w.tp_axis >= 0 ? w.tp_axis : w.tp == TpSplit::kRow ? 1 : 0, parts, index);
}

}  // namespace h0::plan
