#include "plan/rank_loader.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/error.h"

namespace h0::plan {
namespace {

// Whether `loaded` holds the bytes of `slice` of the full tensor (none: all of it): its ranges
// of the axis one after another. Compared range by range; only an axis > 0 range is copied.
bool region_equals(const tensor::Tensor& full, const std::optional<model::WeightSlice>& slice,
                   const tensor::Tensor& loaded) {
  const auto* got = static_cast<const char*>(loaded.data());
  if (!slice) {
    return full.nbytes() == loaded.nbytes() && std::memcmp(full.data(), got, full.nbytes()) == 0;
  }
  size_t at = 0;
  for (const auto& [b, e] : slice->ranges()) {
    const tensor::Tensor part = full.slice(slice->axis, b, e);
    if (at + part.nbytes() > loaded.nbytes() || std::memcmp(part.data(), got + at, part.nbytes()))
      return false;
    at += part.nbytes();
  }
  return at == loaded.nbytes();
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
    // A slice covers whole (outer, range, inner) blocks along its axis, and the plan cuts a
    // tensor along one axis: the ranks cover it when the union of their ranges spans that axis.
    // Counted from the ranges (a per-element map of an LM head is 600 MB); ranks cutting one
    // tensor along two axes would count as the better covered axis, and be reported short.
    std::map<int, std::vector<std::pair<int64_t, int64_t>>> by_axis;
    bool whole = false;
    for (const auto& [rank, loaded] : it->second) {
      ++v.slices;
      if (!region_equals(full, loaded->slice, loaded->tensor)) {
        v.problems.push_back(w.name + ": rank " + std::to_string(rank) +
                             " slice differs from the full tensor");
      }
      if (!loaded->slice) {
        whole = true;
      } else {
        for (const auto& r : loaded->slice->ranges()) by_axis[loaded->slice->axis].push_back(r);
      }
    }
    int64_t covered_count = whole ? full.numel() : 0;
    for (auto& [axis, ranges] : by_axis) {
      if (whole) break;
      std::sort(ranges.begin(), ranges.end());
      int64_t covered_rows = 0, end = 0;
      for (const auto& [b, e] : ranges) {
        covered_rows += std::max<int64_t>(0, e - std::max(b, end));
        end = std::max(end, e);
      }
      if (full.dim(axis) > 0)
        covered_count = std::max(covered_count, full.numel() / full.dim(axis) * covered_rows);
    }
    ckpt.release(w.name);  // its pages were read to compare; the loaded copies stay
    if (covered_count != full.numel()) {
      v.problems.push_back(w.name + ": the ranks hold " + std::to_string(covered_count) +
                           " of its " + std::to_string(full.numel()) + " elements");
    }
  }
  return v;
}

}  // namespace h0::plan
