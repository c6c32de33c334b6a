#include "plan/plan_report.h"

#include <cstdio>
#include <tuple>

namespace h0::plan {
namespace {

// What a table row shows; ranks with equal keys in one stage share a row.
auto row_key(const RankMemory& r) {
  return std::make_tuple(r.coord.pp_rank, r.layers, r.experts.second - r.experts.first,
                         r.vocab.second - r.vocab.first, r.weights, r.kv_bytes_per_token,
                         r.activations, r.comm, r.reserve, r.state, r.kv_tokens);
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / kGiB);
  return buf;
}

std::string range(std::pair<int64_t, int64_t> r) {
  if (r.second <= r.first) return "-";
  return std::to_string(r.first) + "-" + std::to_string(r.second - 1);
}

std::string count(std::pair<int64_t, int64_t> r) {
  return r.second > r.first ? std::to_string(r.second - r.first) : "-";
}

nlohmann::json rank_json(const RankMemory& r) {
  return {{"rank", r.coord.rank},
          {"tp_rank", r.coord.tp_rank},
          {"pp_rank", r.coord.pp_rank},
          {"dp_rank", r.coord.dp_rank},
          {"ep_rank", r.coord.ep_rank},
          {"etp_rank", r.coord.etp_rank},
          {"layers", {r.layers.first, r.layers.second}},
          {"experts", {r.experts.first, r.experts.second}},
          {"vocab", {r.vocab.first, r.vocab.second}},
          {"kv_heads", r.kv_heads},
          {"weights_bytes", r.weights},
          {"activations_bytes", r.activations},
          {"vision_activations_bytes", r.vision_activations},
          {"comm_bytes", r.comm},
          {"reserve_bytes", r.reserve},
          {"kv_bytes_per_token", r.kv_bytes_per_token},
          {"index_bytes_per_token", r.index_bytes_per_token},
          {"state_bytes_per_sequence", r.state_bytes_per_sequence},
          {"state_bytes", r.state},
          {"free_for_kv_bytes", r.free_for_kv},
          {"kv_blocks", r.kv_blocks},
          {"kv_tokens", r.kv_tokens}};
}

}  // namespace

std::vector<std::vector<size_t>> group_ranks(const MemoryPlan& plan) {
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < plan.ranks.size(); ++i) {
    bool placed = false;
    for (auto& g : groups) {
      if (row_key(plan.ranks[g.front()]) == row_key(plan.ranks[i])) {
        g.push_back(i);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({i});
  }
  return groups;
}

std::string rank_list(const MemoryPlan& plan, const std::vector<size_t>& group) {
  std::string out;
  for (size_t i = 0; i < group.size();) {
    size_t j = i;
    while (j + 1 < group.size() &&
           plan.ranks[group[j + 1]].coord.rank == plan.ranks[group[j]].coord.rank + 1)
      ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(plan.ranks[group[i]].coord.rank);
    if (j > i) out += '-';
    if (j > i) out += std::to_string(plan.ranks[group[j]].coord.rank);
    i = j + 1;
  }
  return out;
}

std::string plan_table(const MemoryPlan& plan) {
  // The hybrid parts get columns only when some rank has them: the indexer keys' share of the
  // KV bytes per token, and the linear-attention state set aside for the concurrent sequences.
  bool index = false, state = false;
  for (const RankMemory& r : plan.ranks) {
    index |= r.index_bytes_per_token > 0;
    state |= r.state > 0;
  }
  char line[320];
  std::string out;
  std::snprintf(line, sizeof line, "%-14s %5s %7s %7s %6s %9s %9s", "ranks", "stage", "layers",
                "experts", "vocab", "weights", "KV B/tok");
  out += line;
  if (index) out += "  idx B/tok";
  std::snprintf(line, sizeof line, " %8s %8s %8s", "activ.", "comm", "reserve");
  out += line;
  if (state) out += "    state";
  std::snprintf(line, sizeof line, " %10s %11s\n", "KV blocks", "KV tokens");
  out += line;
  for (const auto& g : group_ranks(plan)) {
    const RankMemory& r = plan.ranks[g.front()];
    const std::string ranks =
        rank_list(plan, g) + (g.size() > 1 ? " x" + std::to_string(g.size()) : "");
    std::snprintf(line, sizeof line, "%-14s %5lld %7s %7s %6s %9s %9s", ranks.c_str(),
                  static_cast<long long>(r.coord.pp_rank), range(r.layers).c_str(),
                  count(r.experts).c_str(), count(r.vocab).c_str(), gib(r.weights).c_str(),
                  with_commas(r.kv_bytes_per_token).c_str());
    out += line;
    if (index) {
      std::snprintf(line, sizeof line, " %10s", with_commas(r.index_bytes_per_token).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, " %8s %8s %8s", gib(r.activations).c_str(),
                  gib(r.comm).c_str(), gib(r.reserve).c_str());
    out += line;
    if (state) {
      std::snprintf(line, sizeof line, " %8s", gib(r.state).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, " %10s %11s\n", with_commas(r.kv_blocks).c_str(),
                  with_commas(r.kv_tokens).c_str());
    out += line;
  }
  out += "(sizes in GiB; usable " + gib(plan.usable) + " GiB per device";
  if (state) {
    const int64_t seqs = (plan.options.concurrency + plan.plan.dp - 1) / plan.plan.dp;
    out += "; state: the linear-attention state of " + std::to_string(seqs) +
           " concurrent sequence" + (seqs == 1 ? "" : "s") +
           (plan.plan.dp > 1 ? " per replica" : "");
  }
  return out + ")\n";
}

std::string plan_verdict(const MemoryPlan& plan) {
  if (!plan.fits) return "does not fit: " + plan.reason;
  std::string s = "fits: KV cache holds " + with_commas(plan.kv_tokens) + " tokens";
  if (plan.plan.dp > 1) s += " per replica (x dp " + std::to_string(plan.plan.dp) + ")";
  return s + ", " + with_commas(plan.required_tokens) + " needed (max_model_len " +
         with_commas(plan.options.max_model_len) + " x concurrency " +
         std::to_string(plan.options.concurrency) + ")";
}

nlohmann::json plan_json(const MemoryPlan& plan) {
  const MemoryOptions& o = plan.options;
  const ParallelPlan& pl = plan.plan;
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankMemory& r : plan.ranks) ranks.push_back(rank_json(r));
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : group_ranks(plan)) groups.push_back(rank_list(plan, g));
  return {{"plan",
           {{"tp", pl.tp},
            {"pp", pl.pp},
            {"ep", pl.ep},
            {"dp", pl.dp},
            {"etp", pl.etp()},
            {"world", pl.world()}}},
          {"weight_dtype", weight_format_name(o.weights)},
          {"kv_dtype", tensor::dtype_name(o.kv_dtype)},
          {"block_size", o.block_size},
          {"max_model_len", o.max_model_len},
          {"concurrency", o.concurrency},
          {"max_batch_tokens", o.max_batch_tokens},
          {"device_memory_bytes", o.device_memory},
          {"utilization", o.utilization},
          {"usable_bytes", plan.usable},
          {"notes", plan.notes},
          {"kv_bytes_per_token", plan.kv_bytes_per_token},
          {"weights_bytes_total", plan.total_weights},
          {"kv_tokens", plan.kv_tokens},
          {"required_tokens", plan.required_tokens},
          {"headroom_bytes", plan.headroom},
          {"fits", plan.fits},
          {"reason", plan.reason},
          {"groups", groups},
          {"ranks", ranks}};
}

}  // namespace h0::plan
