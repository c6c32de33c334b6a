// harness load --model DIR [--tp N --pp N --ep N --dp N] [--rank R | --all-ranks] [--sha256]
// [--json] Sharded loading: checks the checkpoint against the model's tensor inventory (every
// missing, extra or misshapen tensor listed), then reads exactly one rank's slices (or every
// rank's, in turn) with parallel threads and reports bytes read, the share of the checkpoint and
// GB/s.
// --all-ranks also proves the split: each slice equals its region of the full tensor and the
// ranks together hold every element (exit 1 otherwise).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "model/weights/model_source.h"
#include "plan/rank_loader.h"

namespace h0::cli {
namespace {

struct LoadOptions {
  std::string model;
  plan::ParallelPlan plan;
  bool dp_given = false;
  int64_t rank = 0;
  bool all = false, sha256 = false, json = false;
};

nlohmann::json rank_json(const plan::RankLoad& r) {
  nlohmann::json j = {{"rank", r.rank},
                      {"tensors", r.report.weights.size()},
                      {"tensors_skipped", r.tensors_skipped},
                      {"bytes_read", r.report.bytes_read},
                      {"checkpoint_bytes", r.report.checkpoint_bytes},
                      {"fraction", double(r.report.bytes_read) /
                                       double(std::max<int64_t>(r.report.checkpoint_bytes, 1))},
                      {"seconds", r.report.seconds},
                      {"gb_per_s", r.report.gb_per_s()}};
  nlohmann::json sums = nlohmann::json::object();
  for (const auto& w : r.report.weights) {
    if (!w.sha256.empty()) sums[w.name] = w.sha256;
  }
  if (!sums.empty()) j["sha256"] = sums;
  return j;
}

int run_load(LoadOptions opt) {
  const model::ModelSource src = model::resolve_model(opt.model);
  const model::Architecture arch = model::load_architecture(src.dir);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
  const model::Inventory inv = plan::checkpoint_inventory(arch, ckpt);
  const std::string dp_note = plan::default_dp(&opt.plan, opt.dp_given);
  std::vector<int64_t> ranks;
  if (opt.all) {
    for (int64_t r = 0; r < opt.plan.world(); ++r) ranks.push_back(r);
  } else {
    ranks.push_back(opt.rank);
  }
  std::vector<plan::RankLoad> loads;
  for (int64_t r : ranks) {
    if (!opt.json && opt.all)
      std::fprintf(stderr, "loading rank %lld of %lld ...\n", (long long)r,
                   (long long)opt.plan.world());
    loads.push_back(plan::load_rank(arch, inv, ckpt, opt.plan, r, {opt.sha256}));
  }
  plan::ShardVerification v;
  if (opt.all) v = plan::verify_rank_shards(inv, ckpt, loads);
  const bool ok = v.problems.empty();
  if (opt.json) {
    nlohmann::json j = {{"model", opt.model},
                        {"checkpoint", src.dir},
                        {"plan", plan::plan_name(opt.plan)},
                        {"ranks", nlohmann::json::array()}};
    for (const auto& l : loads) j["ranks"].push_back(rank_json(l));
    if (opt.all)
      j["verification"] = {
          {"tensors", v.tensors}, {"slices", v.slices}, {"ok", ok}, {"problems", v.problems}};
    if (!loads.empty()) j["dtype_notes"] = loads[0].notes;
    std::printf("%s\n", j.dump(2).c_str());
    return ok ? kExitOk : kExitMismatch;
  }
  std::printf("%s, plan %s%s%s\n", src.dir.c_str(), plan::plan_name(opt.plan).c_str(),
              dp_note.empty() ? "" : ", ", dp_note.c_str());
  std::printf("%-6s %8s %14s %10s %10s %9s\n", "rank", "tensors", "bytes read", "of ckpt",
              "seconds", "GB/s");
  for (const auto& l : loads) {
    const auto& r = l.report;
    std::printf("%-6lld %8zu %14s %9.1f%% %10.4f %9.2f\n", (long long)l.rank, r.weights.size(),
                human_bytes(uint64_t(r.bytes_read)).c_str(),
                100.0 * double(r.bytes_read) / double(std::max<int64_t>(r.checkpoint_bytes, 1)),
                r.seconds, r.gb_per_s());
  }
  if (!loads.empty()) {
    for (const auto& n : loads[0].notes)
      std::printf("note   stored otherwise than the inventory says, read as stored: %s\n",
                  n.c_str());
  }
  if (opt.all) {
    std::printf("shards %s: %lld tensors, %lld slices%s\n",
                ok ? colored("verified", "32").c_str() : colored("WRONG", "31").c_str(),
                (long long)v.tensors, (long long)v.slices, ok ? "" : ":");
    for (const auto& p : v.problems) std::printf("  %s\n", p.c_str());
  }
  return ok ? kExitOk : kExitMismatch;
}

}  // namespace

void register_load(CLI::App& app, Run* run) {
  auto opt = std::make_shared<LoadOptions>();
  CLI::App* sub = app.add_subcommand(
      "load", "Load one rank's shards of a checkpoint (or every rank's, and verify the split)");
  sub->add_option("--model", opt->model,
                  "A checkpoint directory (or a model config directory: synthesized, seed 0)")
      ->required();
  sub->add_option("--tp", opt->plan.tp, "Tensor-parallel ranks")->check(CLI::PositiveNumber);
  sub->add_option("--pp", opt->plan.pp, "Pipeline stages")->check(CLI::PositiveNumber);
  sub->add_option("--ep", opt->plan.ep, "Expert-parallel groups")->check(CLI::PositiveNumber);
  sub->add_option("--dp", opt->plan.dp, "Data-parallel replicas")->check(CLI::PositiveNumber);
  sub->add_option("--rank", opt->rank, "The rank to load (default 0)");
  sub->add_flag("--all-ranks", opt->all,
                "Load every rank in turn and verify the slices against the full tensors");
  sub->add_flag("--sha256", opt->sha256, "Checksum every loaded slice");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt, sub] {
    opt->dp_given = sub->count("--dp") > 0;
    *run = [opt] { return run_load(*opt); };
  });
}

}  // namespace h0::cli
