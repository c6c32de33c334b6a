// `kind: collective` at world size 1 (every collective a copy): every op and dtype passes with
// its metrics and profile rows, a communicator that gets results wrong fails the right sizes,
// and malformed fields fail at their place.
#include <gtest/gtest.h>

#include "base/error.h"
#include "mesh/collective_suite_util.h"
#include "mesh/communicator.h"
#include "mesh/faulty_communicator.h"

namespace h0::checks {
namespace {

TEST(CollectiveCheck, EveryOpAndDtypePassesOnOneRank) {
  auto world = mesh::make_single_communicator();
  const auto results = test::run_collective_suite(R"(suite: t
defaults: {sizes: {min: 8B, max: 32KiB, factor: 8}, warmup: 1, repeats: 2}
checks:
  - {id: ar, kind: collective, op: all_reduce, matrix: {reduce: [sum, max], dtype: [f32, bf16, f16, i32]}}
  - {id: moves, kind: collective, matrix: {op: [all_gather, reduce_scatter, all_to_all, broadcast, send_recv], dtype: [f32, bf16]}}
)",
                                                  *world);
  ASSERT_EQ(results.size(), 18u);
  for (const CheckResult& r : results) {
    EXPECT_EQ(r.status, Status::kPass) << r.message;
    EXPECT_EQ(test::metric(r, "wrong_total"), 0);
    EXPECT_EQ(test::metric(r, "ranks"), 1);
  }
  const CheckResult& ar = results[0];
  EXPECT_EQ(test::metric(ar, "wrong@8B"), 0);
  EXPECT_EQ(test::metric(ar, "wrong_in_place@32KiB"), 0);
  EXPECT_EQ(test::metric(ar, "busbw_gbps@4KiB"), 0);  // 2(n-1)/n = 0 at n = 1
  EXPECT_GT(test::metric(ar, "algbw_gbps@32KiB"), 0);
  ASSERT_EQ(ar.profile.size(), 10u);  // 8B, 64B, 512B, 4KiB, 32KiB x 2 forms
  EXPECT_EQ(ar.profile[0].phase, "collective");
  EXPECT_EQ(ar.profile[0].name, "all_reduce[8B]");
  EXPECT_EQ(ar.profile[1].name, "all_reduce[8B,in_place]");
  EXPECT_EQ(ar.profile[0].count, 2);
  EXPECT_EQ(ar.details["sizes"].size(), 5u);
  const CheckResult& bcast = results[14];  // broadcast f32: in place only, no suffix
  EXPECT_EQ(test::metric(bcast, "wrong@512B"), 0);
  EXPECT_EQ(test::metric(bcast, "wrong_in_place@512B"), -1);
}

TEST(CollectiveCheck, WrongResultsFailTheirSizes) {
  auto world = mesh::make_faulty_communicator(
      mesh::make_single_communicator(), {{"op", "all_reduce"}, {"fault", "scale"}, {"call", 3}});
  const auto results = test::run_collective_suite(R"(suite: t
checks:
  - {id: ar, kind: collective, op: all_reduce, dtype: f32, sizes: [64B, 1KiB], warmup: 0, repeats: 1}
)",
                                                  *world);
  ASSERT_EQ(results.size(), 1u);
  const CheckResult& r = results[0];
  // Calls: 64B check, 64B timed (1), 64B in place check, ... The 3rd is the in-place check at 64B.
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_GT(test::metric(r, "wrong_in_place@64B"), 0);
  EXPECT_EQ(test::metric(r, "wrong@64B"), 0);
  EXPECT_EQ(test::metric(r, "wrong@1KiB"), 0);
  EXPECT_NE(r.message.find("all_reduce(sum) f32 over 1 ranks: "), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("wrong at 64B in place"), std::string::npos) << r.message;
}

std::string prepare_error(const std::string& fields) {
  auto world = mesh::make_single_communicator();
  try {
    test::run_collective_suite("suite: t\nchecks:\n  - id: a\n    kind: collective\n" + fields,
                               *world);
  } catch (const InputError& e) {
    const std::string m = e.what();
    return m.substr(m.find("s.yaml"));
  }
  return "";
}

TEST(CollectiveCheck, MalformedFieldsNameTheirPlace) {
  EXPECT_EQ(prepare_error("    op: allreduce\n"),
            "s.yaml:5:9: unknown op 'allreduce' (expected one of: all_reduce, all_gather, "
            "reduce_scatter, all_to_all, "
            "broadcast, send_recv)");
  EXPECT_EQ(prepare_error("    sizes: 8B\n"),
            "s.yaml:3:5: kind collective needs `op` (one of: all_reduce, all_gather, "
            "reduce_scatter, all_to_all, broadcast, send_recv)");
  EXPECT_EQ(prepare_error("    op: all_gather\n    reduce: sum\n"),
            "s.yaml:6:13: all_gather takes no `reduce`");
  EXPECT_EQ(prepare_error("    op: all_reduce\n    reduce: min\n"),
            "s.yaml:6:13: unknown reduce 'min' (expected one of: sum, max)");
  EXPECT_EQ(prepare_error("    op: all_reduce\n    dtype: i8\n"),
            "s.yaml:6:12: all_reduce is checked in f64, f32, f16, bf16, i64, i32, not i8");
  EXPECT_EQ(prepare_error("    op: all_reduce\n    sizes: {min: 8B, max: 1MiB, factor: 1}\n"),
            "s.yaml:6:41: factor must be a number > 1");
  EXPECT_EQ(prepare_error("    op: all_reduce\n    sizes: {min: 8B}\n"),
            "s.yaml:6:12: sizes needs min and max, e.g. {min: 8B, max: 64MiB, factor: 2}");
  EXPECT_EQ(prepare_error("    op: all_reduce\n    sizes: [8B, lots]\n"),
            "s.yaml:6:17: bad size 'lots' (expected a number of "
            "bytes, or a number with a unit: B, KB, MB, GB, "
            "TB, KiB, MiB, GiB, TiB; e.g. 24GiB)");
  EXPECT_EQ(prepare_error("    op: all_reduce\n    engine: gloo\n"),
            "s.yaml:6:13: unknown engine 'gloo' (expected one of: world, nccl)");
  EXPECT_EQ(prepare_error("    op: all_reduce\n    repeats: 0\n"),
            "s.yaml:6:14: repeats must be >= 1");
}

TEST(CollectiveCheck, RootOutsideTheMeshIsAnError) {
  auto world = mesh::make_single_communicator();
  const auto results = test::run_collective_suite(
      "suite: t\nchecks:\n  - {id: b, kind: collective, op: broadcast, root: 1, sizes: 8B}\n",
      *world);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, Status::kError);
  EXPECT_EQ(results[0].message, "root 1 is not a rank of a mesh of 1");
}

}  // namespace
}  // namespace h0::checks
