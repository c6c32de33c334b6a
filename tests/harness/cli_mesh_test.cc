// Multi-rank `harness run` under mpirun: the sharded model checks of suites/mesh.yaml pass on 2
// and 4 ranks against the single-rank goldens; a dropped all-reduce on one rank fails the check
// and names that rank and layer; a rank that leaves stops the others within the collective
// timeout and the store shows the run incomplete.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/cli_util.h"
#include "store/sqlite_store.h"

namespace h0 {
namespace {

using test::run_harness;

// `harness ARGS` on `np` ranks; the result of rank 0's output.
test::Result mpirun(int np, const std::string& args) {
  return run_harness("run " + args,
                     "mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(np) + " ");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

const nlohmann::json& find_case(const nlohmann::json& run, const std::string& id) {
  for (const auto& c : run["cases"]) {
    if (c["id"] == id) return c;
  }
  ADD_FAILURE() << "no case " << id;
  static const nlohmann::json none = nlohmann::json::object();
  return none;
}

TEST(CliMesh, ShardedModelsMatchTheSingleRankGoldensOnTwoAndFourRanks) {
  test::TempDir dir;
  for (int np : {2, 4}) {
    const std::string out = dir.file("np" + std::to_string(np) + ".json");
    const auto r = mpirun(np, "suites/mesh.yaml --no-db -q --filter 'tiny-*' --json " + out);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const nlohmann::json run = read_json(out);
    EXPECT_EQ(run["run"]["mesh"], "mpi x" + std::to_string(np));
    const std::vector<std::string> must_pass =
        np == 2 ? std::vector<std::string>{"tiny-llama/tp2[prompt=p13]",
                                           "tiny-llama/pp2",
                                           "tiny-qwen3-moe/ep2[prompt=p13]",
                                           "tiny-deepseek-v3/tp2-ep2",
                                           "tiny-llama/layer-tp2",
                                           "tiny-gpt-oss/tp2[prompt=p13]",
                                           "tiny-gpt-oss/ep2",
                                           "tiny-gpt-oss-mxfp4/tp2",
                                           "tiny-gpt-oss-mxfp4/ep2",
                                           "tiny-deepseek-v32/tp2",
                                           "tiny-deepseek-v32/tp2-ep2",
                                           "tiny-qwen3-next/tp2",
                                           "tiny-qwen3-next/tp2-ep2",
                                           "tiny-qwen3-next/layer-tp2[layer=0]",
                                           "tiny-qwen3-next/layer-tp2[layer=1]",
                                           "tiny-qwen3-5/tp2",
                                           "tiny-qwen2-5-vl/image-tp2",
                                           "tiny-qwen2-5-vl/image-pp2",
                                           "tiny-minimax-m2/tp2[prompt=p13]",
                                           "tiny-minimax-m2/tp2-ep2"}
                : std::vector<std::string>{"tiny-llama/tp4[prompt=p13]", "tiny-llama/tp2-pp2",
                                           "tiny-qwen3-moe/ep4", "tiny-minimax-m2/tp4"};
    for (const std::string& id : must_pass) EXPECT_EQ(find_case(run, id)["status"], "pass") << id;
  }
}

// Under mpirun a rank's stdout is the launcher's pty, not the user's terminal: its collected
// output carries no ANSI colors and no redrawn progress lines (it did both: issue 49).
TEST(CliMesh, OutputUnderALauncherHasNoColorsOrProgressRedraws) {
  const auto r = mpirun(2, "suites/mesh.yaml --no-db --filter 'tiny-llama/tp2*'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS    tiny-llama/tp2[prompt=p7]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
}

TEST(CliMesh, ADroppedAllReduceNamesTheRankAndLayer) {
  test::TempDir dir;
  // tiny-llama on tp 2: all-reduces 1 (embedding), 2 and 3 (layer 0 attention, MLP), 4 (layer 1
  // attention): rank 1 keeps its own partial sum there.
  const auto r = mpirun(
      2, "suites/mesh.yaml --no-db --filter 'tiny-llama/tp2[prompt=p13]' --json " +
             dir.file("o.json") +
             " --mesh-fault '{\"op\":\"all_reduce\",\"rank\":1,\"call\":4,\"fault\":\"drop\"}'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const nlohmann::json c = read_json(dir.file("o.json"))["cases"].at(0);
  EXPECT_EQ(c["status"], "fail");
  EXPECT_NE(c["message"].get<std::string>().find("rank 1 diverged first in layer 1"),
            std::string::npos)
      << c["message"];
  EXPECT_EQ(c["details"]["first_divergent_rank"], 1);
}

// One NaN written once by one rank's swiglu (the faulty plugin's rank option): over a pipeline
// split, the NaN's origin is named by rank and layer, from that rank's own probes.
TEST(CliMesh, ANanMadeOnOneRankIsLocalizedToThatRankAndLayer) {
  test::TempDir dir;
  std::ofstream(dir.file("nan.yaml"))
      << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
      << ", options: {op: swiglu, fault: nan, call: 0, rank: 1, index: 5}}\n";
  const auto r = mpirun(2, "suites/mesh.yaml --no-db --filter 'tiny-llama/pp2' --platform " +
                               dir.file("nan.yaml") + " --json " + dir.file("run.json"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const nlohmann::json c = find_case(read_json(dir.file("run.json")), "tiny-llama/pp2");
  EXPECT_EQ(c["details"]["nan_origin_rank"], 1) << c["details"].dump();
  const std::string message = c["message"];
  EXPECT_EQ(message.rfind("NaN/Inf made first on rank 1 in layer 1", 0), 0u) << message;
}

TEST(CliMesh, ARankThatLeavesStopsTheOthersAndTheRunStaysIncomplete) {
  test::TempDir dir;
  const auto r = mpirun(
      2, "suites/mesh.yaml --db " + dir.file("r.db") +
             " --filter 'tiny-llama/tp2*' --mesh-timeout 5" +
             " --mesh-fault '{\"op\":\"all_reduce\",\"rank\":1,\"call\":2,\"fault\":\"exit\"}'");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("mesh error"), std::string::npos) << r.err;
  const auto db = store::SqliteStore::open(dir.file("r.db"));
  ASSERT_EQ(db->interrupted_runs().size(), 1u);
}

// `harness day0` under mpirun: every rank runs the checks, the mesh stage runs the sharded cases
// of suites/mesh.yaml that span 2 ranks, rank 0 alone prints and serves; both exit 0.
TEST(CliMesh, Day0OnTwoRanksRunsTheShardedStage) {
  const auto r = run_harness("day0 --json --no-db --no-report --model configs/models/tiny-llama",
                             "mpirun --allow-run-as-root --oversubscribe -np 2 ");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);  // rank 0's output only
  EXPECT_EQ(j["ready"], true);
  for (const auto& s : j["stages"]) {
    if (s["id"] == "mesh") {
      EXPECT_EQ(s["status"], "pass");
      EXPECT_NE(s["summary"].get<std::string>().find("sharded cases, 0 failed"), std::string::npos)
          << s["summary"];
    }
  }
}

}  // namespace
}  // namespace h0
