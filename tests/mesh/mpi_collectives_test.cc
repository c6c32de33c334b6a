// The MPI engine across real ranks; run only under mpirun (ctest mesh_mpi_np2, mesh_mpi_np4),
// every rank running every test in the same order. Covers every collective and dtype at several
// sizes (non-powers of two among them), in place and out of place, split(), the faulty
// decorator, the collective check, and last, a peer that exits: the others throw MeshTimeout
// within the timeout instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ostream>
#include <vector>

#include "mesh/collective_suite_util.h"
#include "mesh/communicator.h"
#include "mesh/faulty_communicator.h"
#include "tensor/convert.h"

namespace h0::tensor {
// A dtype in gtest's messages by its name ("bf16"), not by its bytes.
static void PrintTo(DType d, std::ostream* os) { *os << dtype_name(d); }
}  // namespace h0::tensor

namespace h0::mesh {
namespace {

using tensor::DType;

Communicator& world() {
  static const std::unique_ptr<Communicator> c = make_mpi_communicator(30);
  return *c;
}

// Element i of rank r's input: a small integer, exact in every dtype, and so are sums over 4 ranks.
double value(int r, size_t i) { return static_cast<double>((r * 7 + i * 3) % 11) - 5; }

// n elements of `dtype` holding f(i).
template <typename F>
std::vector<std::byte> make(DType dtype, size_t n, F&& f) {
  std::vector<double> wide(n);
  for (size_t i = 0; i < n; ++i) wide[i] = f(i);
  std::vector<std::byte> out(n * tensor::dtype_size(dtype) + 1);
  tensor::convert(wide.data(), DType::kF64, out.data(), dtype, n);
  return out;
}

std::vector<double> read(const std::byte* p, DType dtype, size_t n) {
  std::vector<double> out(n);
  tensor::convert(p, dtype, out.data(), DType::kF64, n);
  return out;
}

// How many of the n elements at p differ from want(i).
template <typename F>
size_t wrong(const std::byte* p, DType dtype, size_t n, F&& want) {
  const std::vector<double> got = read(p, dtype, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += got[i] != want(i);
  return bad;
}

class Collectives : public ::testing::TestWithParam<std::tuple<DType, size_t>> {
 protected:
  DType dt = std::get<0>(GetParam());
  size_t n = std::get<1>(GetParam());
  Communicator& c = world();
  int rank = c.rank(), size = c.size();
  size_t es = tensor::dtype_size(dt);
};

TEST_P(Collectives, AllReduce) {
  const auto in = make(dt, n, [&](size_t i) { return value(rank, i); });
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    auto want = [&](size_t i) {
      double acc = value(0, i);
      for (int r = 1; r < size; ++r)
        acc = op == ReduceOp::kSum ? acc + value(r, i) : std::max(acc, value(r, i));
      return acc;
    };
    std::vector<std::byte> out(in.size());
    c.all_reduce(in.data(), out.data(), n, dt, op);
    EXPECT_EQ(wrong(out.data(), dt, n, want), 0u);
    std::vector<std::byte> buf = in;
    c.all_reduce(buf.data(), buf.data(), n, dt, op);
    EXPECT_EQ(wrong(buf.data(), dt, n, want), 0u) << "in place";
  }
}

TEST_P(Collectives, AllGather) {
  const auto in = make(dt, n, [&](size_t i) { return value(rank, i); });
  auto want = [&](size_t i) { return value(static_cast<int>(i / n), i % n); };
  std::vector<std::byte> out(n * size * es);
  c.all_gather(in.data(), out.data(), n, dt);
  EXPECT_EQ(wrong(out.data(), dt, n * size, want), 0u);
  std::vector<std::byte> buf(n * size * es);
  std::memcpy(buf.data() + rank * n * es, in.data(), n * es);
  c.all_gather(buf.data() + rank * n * es, buf.data(), n, dt);
  EXPECT_EQ(wrong(buf.data(), dt, n * size, want), 0u) << "in place";
  std::memcpy(buf.data(), in.data(), n * es);
  c.all_gather(buf.data(), buf.data(), n, dt);  // overlapping, not the in-place layout: staged
  EXPECT_EQ(wrong(buf.data(), dt, n * size, want), 0u) << "overlapping";
}

TEST_P(Collectives, ReduceScatter) {
  const auto in = make(dt, n * size, [&](size_t i) { return value(rank, i); });
  auto want = [&](size_t i) {
    double acc = 0;
    for (int r = 0; r < size; ++r) acc += value(r, rank * n + i);
    return acc;
  };
  std::vector<std::byte> out(n * es + 1);
  c.reduce_scatter(in.data(), out.data(), n, dt, ReduceOp::kSum);
  EXPECT_EQ(wrong(out.data(), dt, n, want), 0u);
  std::vector<std::byte> buf = in;
  c.reduce_scatter(buf.data(), buf.data() + rank * n * es, n, dt, ReduceOp::kSum);
  EXPECT_EQ(wrong(buf.data() + rank * n * es, dt, n, want), 0u) << "in place";
}

TEST_P(Collectives, AllToAll) {
  const auto in =
      make(dt, n * size, [&](size_t i) { return value(rank, i) + static_cast<double>(i / n); });
  auto want = [&](size_t i) {
    const int from = static_cast<int>(i / n);
    return value(from, rank * n + i % n) + rank;
  };
  std::vector<std::byte> out(in.size());
  c.all_to_all(in.data(), out.data(), n, dt);
  EXPECT_EQ(wrong(out.data(), dt, n * size, want), 0u);
  std::vector<std::byte> buf = in;
  c.all_to_all(buf.data(), buf.data(), n, dt);
  EXPECT_EQ(wrong(buf.data(), dt, n * size, want), 0u) << "in place";
}

TEST_P(Collectives, BroadcastFromEveryRoot) {
  for (int root = 0; root < size; ++root) {
    auto buf = make(dt, n, [&](size_t i) { return value(rank, i); });
    c.broadcast(buf.data(), n, dt, root);
    EXPECT_EQ(wrong(buf.data(), dt, n, [&](size_t i) { return value(root, i); }), 0u)
        << "root " << root;
  }
}

TEST_P(Collectives, RingSendRecv) {
  const auto in = make(dt, n, [&](size_t i) { return value(rank, i); });
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  auto want = [&](size_t i) { return value(prev, i); };
  std::vector<std::byte> out(in.size());
  c.send_recv(in.data(), next, out.data(), prev, n, dt);
  EXPECT_EQ(wrong(out.data(), dt, n, want), 0u);
  std::fill(out.begin(), out.end(), std::byte{0});
  c.Communicator::send_recv(in.data(), next, out.data(), prev, n,
                            dt);  // the default: send / recv by parity
  EXPECT_EQ(wrong(out.data(), dt, n, want), 0u) << "send then recv";
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, Collectives,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF64, DType::kF16, DType::kBF16,
                                         DType::kI32, DType::kI64),
                       ::testing::Values(size_t{1}, size_t{7}, size_t{1000}, size_t{65537})),
    [](const auto& p) {
      return std::string(tensor::dtype_name(std::get<0>(p.param))) + "_" +
             std::to_string(std::get<1>(p.param));
    });

TEST(Mpi, RanksMatchTheLauncher) {
  const RankEnv env = detect_rank_env();
  EXPECT_EQ(world().engine(), "mpi");
  EXPECT_EQ(world().rank(), env.rank);
  EXPECT_EQ(world().size(), env.size);
  EXPECT_EQ(make_world_communicator(30)->engine(), "mpi");
  world().barrier();
}

TEST(Mpi, SplitGroupsByColorOrdersByKey) {
  Communicator& w = world();
  auto half = w.split(w.rank() % 2, -w.rank());  // key reverses the order
  const int members = (w.size() + 1 - w.rank() % 2) / 2;
  EXPECT_EQ(half->size(), members);
  EXPECT_EQ(half->rank(), members - 1 - w.rank() / 2);
  int32_t mine = w.rank(), sum = 0;
  half->all_reduce(&mine, &sum, 1, DType::kI32, ReduceOp::kSum);
  int32_t want = 0;
  for (int r = w.rank() % 2; r < w.size(); r += 2) want += r;
  EXPECT_EQ(sum, want);
}

TEST(Mpi, MistakesAreMeshErrorsOnEveryRank) {
  float x = 0;
  EXPECT_THROW(world().broadcast(&x, 1, DType::kF32, world().size()), MeshError);
  EXPECT_THROW(world().all_reduce(&x, &x, 1, DType::kU8, ReduceOp::kSum), MeshError);
  world().barrier();  // still usable
}

TEST(Mpi, DroppedAllReduceIsWrongOnThatRankOnly) {
  auto c =
      make_faulty_communicator(make_mpi_communicator(30),
                               {{"op", "all_reduce"}, {"rank", 1}, {"call", 2}, {"fault", "drop"}});
  const std::vector<float> in = {1.f + c->rank(), 2};
  for (int call = 1; call <= 3; ++call) {
    std::vector<float> out(2);
    c->all_reduce(in.data(), out.data(), 2, DType::kF32, ReduceOp::kSum);
    const bool dropped = call == 2 && c->rank() == 1;
    const float want0 = dropped ? in[0] : c->size() * (c->size() + 1) / 2.f;
    EXPECT_EQ(out[0], want0) << "call " << call;
  }
}

TEST(Mpi, CollectiveCheckCountsWrongElementsOverRanks) {
  const std::string suite = R"(suite: t
defaults: {sizes: [8B, 4KiB, 1000000B], warmup: 1, repeats: 2}
checks:
  - {id: c, kind: collective, matrix: {op: [all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv], dtype: [bf16, i32]}}
)";
  for (const auto& r : test::run_collective_suite(suite, world())) {
    EXPECT_EQ(r.status, checks::Status::kPass) << r.message;
    EXPECT_EQ(test::metric(r, "ranks"), world().size());
  }
  auto faulty = make_faulty_communicator(make_mpi_communicator(30),
                                         {{"op", "all_reduce"}, {"rank", 1}, {"fault", "scale"}});
  const auto results = test::run_collective_suite(
      "suite: t\nchecks:\n  - {id: c, kind: collective, op: all_reduce, sizes: 4KiB, warmup: 0, "
      "repeats: 1}\n",
      *faulty);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, checks::Status::kFail);
  EXPECT_GT(test::metric(results[0], "wrong@4KiB"), 0);  // rank 1's, summed on every rank
  EXPECT_EQ(test::metric(results[0], "wrong_in_place@4KiB"), 0);
  EXPECT_GT(test::metric(results[0], "busbw_gbps@4KiB"), 0);
}

TEST(Mpi, SlowPeerTimesOut) {
  auto c = make_faulty_communicator(
      make_mpi_communicator(1),
      {{"op", "barrier"}, {"rank", 1}, {"fault", "delay"}, {"seconds", 3}});
  EXPECT_EQ(c->timeout_s(), 1);  // what an NCCL communicator made from it waits at most
  const auto t0 = std::chrono::steady_clock::now();
  if (c->rank() != 1) {
    EXPECT_THROW(c->barrier(), MeshTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    EXPECT_THROW(c->barrier(), MeshError);  // failed for good
  } else {
    try {  // the late rank may or may not find its peers' abandoned barrier
      c->barrier();
    } catch (const MeshTimeout&) {
    }
  }
  world().barrier();
}

// Rank 1 leaves (std::exit(0) finalizes MPI, so mpirun lets the others go on), and the others'
// all_reduce throws within the 5 s timeout. Registered by main() after every other test.
class PeerThatExits : public ::testing::Test {
 public:
  void TestBody() override {
    auto c = make_faulty_communicator(make_mpi_communicator(5),
                                      {{"op", "all_reduce"}, {"rank", 1}, {"fault", "exit"}});
    float x = 1;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      c->all_reduce(&x, &x, 1, DType::kF32, ReduceOp::kSum);
      ADD_FAILURE() << "no error";
    } catch (const MeshTimeout& e) {
      EXPECT_EQ(std::string(e.what()), "all_reduce: rank " + std::to_string(c->rank()) + " of " +
                                           std::to_string(c->size()) +
                                           " timed out after 5 s waiting for its peers");
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
  }
};

}  // namespace
}  // namespace h0::mesh

// gtest registers parameterized tests in InitGoogleTest, after every TEST; the peer-death test
// goes after all of them, since the mesh has one rank less afterwards.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::RegisterTest("MeshLast", "PeerThatExitsMakesTheOthersThrow", nullptr, nullptr,
                          __FILE__, __LINE__,
                          []() -> ::testing::Test* { return new h0::mesh::PeerThatExits; });
  return RUN_ALL_TESTS();
}
