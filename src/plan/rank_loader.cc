#include "plan/rank_loader.h"

#include <cstring>
#include <map>

#include "base/error.h"

namespace h0::plan {
namespace {

// The bytes of `slice` of the full tensor (none: all of it), contiguous: its ranges of the axis
// one after another.
std::string region_bytes(const tensor::Tensor& full,
                         const std::optional<model::WeightSlice>& slice) {
  if (!slice) return std::string(static_cast<const char*>(full.data()), full.nbytes());
  std::string out;
  for (const auto& [b, e] : slice->ranges()) {
    const tensor::Tensor part = full.slice(slice->axis, b, e);
    out.append(static_cast<const char*>(part.data()), part.nbytes());
  }
  return out;
}

}  // namespace

model::Inventory checkpoint_inventory(const model::Architecture& arch,
                                      const io::ShardedCheckpoint& ckpt) {
  bool has_mtp = false;
  const model::Inventory full = model::build_inventory(arch);
  for (const auto& w : full.weights) has_mtp = has_mtp || (w.mtp && ckpt.find(w.name) != nullptr);
  model::InventoryOptions o;
  o.include_mtp = has_mtp;
  // The config's reference layout (fp8 projections where quantization_config says so);
  // verify_checkpoint reads a checkpoint that quantizes other tensors, tensor by tensor, as stored.
  return model::build_inventory(arch, o);
}

RankLoad load_rank(const model::Architecture& arch, const model::Inventory& inventory,
                   const io::ShardedCheckpoint& ckpt, const ParallelPlan& plan, int64_t rank,
                   const model::LoadOptions& options) {
  if (rank < 0 || rank >= plan.world()) {
    throw InputError("--rank", std::to_string(rank) + " is outside the plan's " +
                                   std::to_string(plan.world()) + " ranks");
  }
  if (const auto issue = check_plan(arch, plan))
    throw InputError("--" + issue->dimension, issue->message);
  const std::vector<std::string> notes = model::verify_checkpoint(ckpt, inventory);
  const RankCoord at = coord_of(plan, rank);
  std::vector<model::LoadRequest> requests;
  RankLoad out;
  out.rank = rank;
  out.notes = notes;
  for (const model::WeightInfo& w : inventory.weights) {
    // the scale of a projection the checkpoint keeps unquantized (verify_checkpoint allowed it)
    if (w.role == model::WeightRole::kQuantScale && ckpt.find(w.name) == nullptr) continue;
    const std::optional<Slice> s = shard_of(w, arch, plan, at);
    if (!s) {
      ++out.tensors_skipped;
      continue;
    }
    model::LoadRequest r{&w, std::nullopt};
    if (!s->whole()) r.slice = model::WeightSlice{s->axis, s->begin, s->end, s->pieces};
    requests.push_back(r);
  }
  out.report = model::load_weights(ckpt, requests, options);
  return out;
}

ShardVerification verify_rank_shards(const model::Inventory& inventory,
                                     const io::ShardedCheckpoint& ckpt,
                                     const std::vector<RankLoad>& ranks) {
  ShardVerification v;
  std::map<std::string, std::vector<std::pair<int64_t, const model::LoadedWeight*>>> by_name;
  for (const RankLoad& r : ranks) {
    for (const auto& w : r.report.weights) by_name[w.name].emplace_back(r.rank, &w);
  }
  for (const model::WeightInfo& w : inventory.weights) {
    if (w.role == model::WeightRole::kQuantScale && ckpt.find(w.name) == nullptr)
      continue;  // as load_rank
    ++v.tensors;
    const tensor::Tensor full = ckpt.get(w.name);
    auto it = by_name.find(w.name);
    if (it == by_name.end()) {
      v.problems.push_back(w.name + ": no rank holds it");
      continue;
    }
    std::vector<char> covered(size_t(full.dim(0) > 0 && full.ndim() > 0 ? full.numel() : 1), 0);
    int64_t covered_count = 0;
    for (const auto& [rank, loaded] : it->second) {
      ++v.slices;
      const std::string want = region_bytes(full, loaded->slice);
      if (want.size() != loaded->tensor.nbytes() ||
          std::memcmp(want.data(), loaded->tensor.data(), want.size()) != 0) {
        v.problems.push_back(w.name + ": rank " + std::to_string(rank) +
                             " slice differs from the full tensor");
      }
      int64_t outer = 1, inner = full.numel(), extent = 1;
      std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 1}};
      if (loaded->slice) {
        const int axis = loaded->slice->axis;
        inner = 1;
        for (int i = 0; i < axis; ++i) outer *= full.dim(i);
        for (int i = axis + 1; i < full.ndim(); ++i) inner *= full.dim(i);
        extent = full.dim(axis);
        ranges = loaded->slice->ranges();
      }
      for (int64_t o = 0; o < outer; ++o) {
        for (const auto& [b, e] : ranges) {
          for (int64_t i = (o * extent + b) * inner; i < (o * extent + e) * inner; ++i) {
            covered_count += covered[size_t(i)] == 0;
            covered[size_t(i)] = 1;
          }
        }
      }
    }
    if (covered_count != full.numel()) {
      v.problems.push_back(w.name + ": the ranks hold " + std::to_string(covered_count) +
                           " of its " + std::to_string(full.numel()) + " elements");
    }
  }
  return v;
}

}  // namespace h0::plan
