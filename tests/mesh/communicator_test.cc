// The single engine, rank discovery from launcher environments, the world factory, and the
// faulty decorator's options and faults on one rank. (Multi-rank MPI behaviour:
// mpi_collectives_test.cc under mpirun.)
#include "mesh/communicator.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "mesh/faulty_communicator.h"
#include "mesh/nccl_communicator.h"

namespace h0::mesh {
namespace {

using tensor::DType;

// Sets environment variables for one test and restores the launcher variables afterwards.
class EnvGuard {
 public:
  EnvGuard() {
    for (const char* v : kVars) {
      const char* old = getenv(v);
      saved_.push_back(old ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(v);
    }
  }
  ~EnvGuard() {
    for (size_t i = 0; i < std::size(kVars); ++i) {
      if (saved_[i])
        setenv(kVars[i], saved_[i]->c_str(), 1);
      else
        unsetenv(kVars[i]);
    }
  }
  void set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  static constexpr const char* kVars[] = {"OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_SIZE",
                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "PMI_RANK",
                                          "PMI_SIZE",
                                          "MPI_LOCALRANKID",
                                          "SLURM_PROCID",
                                          "SLURM_NTASKS",
                                          "SLURM_LOCALID",
                                          "RANK",
                                          "WORLD_SIZE",
                                          "LOCAL_RANK"};
  std::vector<std::optional<std::string>> saved_;
};

TEST(RankEnv, NoLauncherIsRankZeroOfOne) {
  EnvGuard env;
  const RankEnv e = detect_rank_env();
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.size, 1);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.launcher, "none");
}

TEST(RankEnv, ReadsEachLauncher) {
  struct Row {
    const char *rank, *size, *local, *launcher;
  };
  for (const Row& r :
       {Row{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun"},
        Row{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "mpirun"},
        Row{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "srun"},
        Row{"RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun"}}) {
    EnvGuard env;
    env.set(r.rank, "5");
    env.set(r.size, "8");
    env.set(r.local, "1");
    const RankEnv e = detect_rank_env();
    EXPECT_EQ(e.rank, 5) << r.rank;
    EXPECT_EQ(e.size, 8) << r.size;
    EXPECT_EQ(e.local_rank, 1) << r.local;
    EXPECT_EQ(e.launcher, r.launcher) << r.rank;
  }
}

TEST(RankEnv, MpirunWinsOverTheAllocationAroundIt) {
  EnvGuard env;
  env.set("SLURM_PROCID", "0");
  env.set("SLURM_NTASKS", "1");
  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  const RankEnv e = detect_rank_env();
  EXPECT_EQ(e.launcher, "mpirun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.local_rank, 0);  // not set: 0
}

TEST(RankEnv, NeedsBothRankAndSize) {
  EnvGuard env;
  env.set("RANK", "2");  // WORLD_SIZE missing: not a torchrun launch
  EXPECT_EQ(detect_rank_env().launcher, "none");
}

TEST(RankEnv, BadValuesAreInputErrors) {
  {
    EnvGuard env;
    env.set("RANK", "two");
    env.set("WORLD_SIZE", "4");
    try {
      detect_rank_env();
      FAIL() << "no error";
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(), "environment: RANK='two' is not a non-negative integer");
    }
  }
  EnvGuard env;
  env.set("SLURM_PROCID", "4");
  env.set("SLURM_NTASKS", "4");
  EXPECT_THROW(detect_rank_env(), InputError);
}

TEST(WorldCommunicator, IsSingleWithoutALauncher) {
  EnvGuard env;
  const auto c = make_world_communicator();
  EXPECT_EQ(c->engine(), "single");
  EXPECT_EQ(c->size(), 1);
}

TEST(SingleCommunicator, EveryCollectiveIsACopy) {
  auto c = make_single_communicator();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->size(), 1);
  const std::vector<float> in = {1, -2, 3.5};
  std::vector<float> out(3, 0);
  c->all_reduce(in.data(), out.data(), 3, DType::kF32, ReduceOp::kSum);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0.f);
  c->all_gather(in.data(), out.data(), 3, DType::kF32);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0.f);
  c->reduce_scatter(in.data(), out.data(), 3, DType::kF32, ReduceOp::kMax);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0.f);
  c->all_to_all(in.data(), out.data(), 3, DType::kF32);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0.f);
  c->send_recv(in.data(), 0, out.data(), 0, 3, DType::kF32);
  EXPECT_EQ(out, in);
  out = in;
  c->all_reduce(out.data(), out.data(), 3, DType::kF32, ReduceOp::kSum);  // in place
  EXPECT_EQ(out, in);
  c->broadcast(out.data(), 3, DType::kF32, 0);
  EXPECT_EQ(out, in);
  c->barrier();
  EXPECT_EQ(c->split(7, 0)->size(), 1);
}

TEST(SingleCommunicator, SendToItselfIsReceivedInOrder) {
  auto c = make_single_communicator();
  const int32_t a[2] = {1, 2}, b[2] = {3, 4};
  c->send(a, 2, DType::kI32, 0);
  c->send(b, 2, DType::kI32, 0);
  int32_t got[2] = {};
  c->recv(got, 2, DType::kI32, 0);
  EXPECT_EQ(got[1], 2);
  c->recv(got, 2, DType::kI32, 0);
  EXPECT_EQ(got[1], 4);
  EXPECT_THROW(c->recv(got, 2, DType::kI32, 0), MeshError);  // nothing sent: an error, not a hang
}

TEST(SingleCommunicator, MistakesAreMeshErrors) {
  auto c = make_single_communicator();
  uint8_t buf[4] = {};
  EXPECT_THROW(c->broadcast(buf, 4, DType::kU8, 1), MeshError);
  EXPECT_THROW(c->send(buf, 4, DType::kU8, 1), MeshError);
  try {
    c->all_reduce(buf, buf, 4, DType::kU8, ReduceOp::kSum);
    FAIL() << "no error";
  } catch (const MeshError& e) {
    EXPECT_STREQ(e.what(),
                 "all_reduce: dtype u8 cannot be reduced (f64, f32, f16, bf16, i64, i32)");
  }
}

TEST(MissingEngines, SayWhatTheBuildLacks) {
#if !HARNESS_HAVE_MPI
  EXPECT_THROW(make_mpi_communicator(), MeshError);
#endif
#if !HARNESS_HAVE_NCCL
  auto single = make_single_communicator();
  try {
    make_nccl_communicator(*single, 0);
    FAIL() << "no error";
  } catch (const MeshError& e) {
    EXPECT_STREQ(e.what(), "this build has no NCCL");
  }
#endif
  SUCCEED();
}

std::string fault_error(const nlohmann::json& options) {
  try {
    make_faulty_communicator(make_single_communicator(), options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FaultyCommunicator, BadOptionsAreInputErrors) {
  EXPECT_EQ(fault_error({{"op", "all_reduce"}, {"fault", "drop"}}), "");
  EXPECT_EQ(fault_error({{"op", "allreduce"}, {"fault", "drop"}}),
            "mesh_fault: unknown op 'allreduce' (expected one of: all_reduce, all_gather, "
            "reduce_scatter, all_to_all, "
            "broadcast, send, recv, send_recv, barrier)");
  EXPECT_EQ(fault_error({{"op", "all_reduce"}}),
            "mesh_fault: fault is required: one of drop, scale, delay, exit");
  EXPECT_EQ(fault_error({{"op", "all_reduce"}, {"fault", "drop"}, {"call", 0}}),
            "mesh_fault: call counts from 1 (or is \"every\"), not 0");
  EXPECT_EQ(fault_error({{"op", "barrier"}, {"fault", "scale"}}),
            "mesh_fault: scale needs an operation with a result, not barrier");
  EXPECT_EQ(fault_error({{"op", "all_reduce"}, {"fault", "drop"}, {"rank", 1}}),
            "mesh_fault: rank 1 is not a rank of a mesh of 1");
  EXPECT_EQ(fault_error({{"op", "all_reduce"}, {"fault", "drop"}, {"factor", "x"}}),
            "mesh_fault: factor must be a number, not \"x\"");
  EXPECT_EQ(fault_error({{"op", "all_reduce"}, {"fault", "drop"}, {"when", 1}}),
            "mesh_fault: unknown key 'when' (expected one of: op, rank, call, fault, factor, "
            "seconds, exit_code)");
  EXPECT_EQ(fault_error(nlohmann::json::array()),
            "mesh_fault: expected a mapping {op: ..., rank: ..., call: ..., fault: ...}, not []");
}

TEST(FaultyCommunicator, ScalesOnlyTheNamedCall) {
  auto c = make_faulty_communicator(
      make_single_communicator(),
      {{"op", "all_reduce"}, {"fault", "scale"}, {"call", 2}, {"factor", 3}});
  const std::vector<int32_t> in = {1, 2};
  std::vector<int32_t> out(2);
  c->all_reduce(in.data(), out.data(), 2, DType::kI32, ReduceOp::kSum);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2}));
  c->all_gather(in.data(), out.data(), 2, DType::kI32);  // another op: not counted
  c->all_reduce(in.data(), out.data(), 2, DType::kI32, ReduceOp::kSum);
  EXPECT_EQ(out, (std::vector<int32_t>{3, 6}));
  c->all_reduce(in.data(), out.data(), 2, DType::kI32, ReduceOp::kSum);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2}));
}

TEST(FaultyCommunicator, DropLeavesTheBufferAsBefore) {
  auto c = make_faulty_communicator(make_single_communicator(),
                                    {{"op", "all_gather"}, {"fault", "drop"}, {"call", "every"}});
  const std::vector<float> in = {1, 2};
  std::vector<float> out = {9, 9};
  c->all_gather(in.data(), out.data(), 2, DType::kF32);
  EXPECT_EQ(out, (std::vector<float>{9, 9}));
  c->all_gather(in.data(), out.data(), 2, DType::kF32);
  EXPECT_EQ(out, (std::vector<float>{9, 9}));
}

}  // namespace
}  // namespace h0::mesh
