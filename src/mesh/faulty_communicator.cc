#include "mesh/faulty_communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/error.h"
#include "mesh/mesh_util.h"
#include "tensor/convert.h"

namespace h0::mesh {
namespace {

using tensor::DType;

enum class FaultKind { kDrop, kScale, kDelay, kExit };

constexpr const char* kOps[] = {"all_reduce", "all_gather", "reduce_scatter",
                                "all_to_all", "broadcast",  "send",
                                "recv",       "send_recv",  "barrier"};
constexpr const char* kFaults[] = {"drop", "scale", "delay", "exit"};

struct Fault {
  std::string op;
  int rank = 0;
  long call = 1;  // 0: every call
  FaultKind kind = FaultKind::kDrop;
  double factor = 2, seconds = 10;
  int exit_code = 0;
};

[[noreturn]] void bad(const std::string& message) { throw InputError("mesh_fault", message); }

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

template <typename T>
T number(const nlohmann::json& o, const char* key, T fallback) {
  if (!o.contains(key)) return fallback;
  if (!o[key].is_number()) bad(std::string(key) + " must be a number, not " + o[key].dump());
  return o[key].get<T>();
}

// Index of `value` in `names`, or a failure listing them.
template <size_t N>
size_t one_of(const nlohmann::json& o, const char* key, const char* const (&names)[N]) {
  const std::vector<std::string> list(std::begin(names), std::end(names));
  if (!o.contains(key) || !o[key].is_string())
    bad(std::string(key) + " is required: one of " + join(list));
  for (size_t i = 0; i < N; ++i) {
    if (o[key] == names[i]) return i;
  }
  bad("unknown " + std::string(key) + " '" + o[key].get<std::string>() +
      "' (expected one of: " + join(list) + ")");
}

Fault parse_fault(const nlohmann::json& o) {
  if (!o.is_object())
    bad("expected a mapping {op: ..., rank: ..., call: ..., fault: ...}, not " + o.dump());
  for (const auto& [key, value] : o.items()) {
    static const std::vector<std::string> kKeys = {"op",     "rank",    "call",     "fault",
                                                   "factor", "seconds", "exit_code"};
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
      bad("unknown key '" + key + "' (expected one of: " + join(kKeys) + ")");
  }
  Fault f;
  f.op = kOps[one_of(o, "op", kOps)];
  f.kind = static_cast<FaultKind>(one_of(o, "fault", kFaults));
  f.rank = number<int>(o, "rank", 0);
  if (o.contains("call") && o["call"] == "every") {
    f.call = 0;
  } else if ((f.call = number<long>(o, "call", 1)) < 1) {
    bad("call counts from 1 (or is \"every\"), not " + o["call"].dump());
  }
  f.factor = number<double>(o, "factor", 2.0);
  f.seconds = number<double>(o, "seconds", 10.0);
  f.exit_code = number<int>(o, "exit_code", 0);
  if (f.rank < 0) bad("rank must be >= 0");
  const bool has_result = f.op != "send" && f.op != "barrier";
  if ((f.kind == FaultKind::kDrop || f.kind == FaultKind::kScale) && !has_result) {
    bad(std::string(kFaults[static_cast<int>(f.kind)]) + " needs an operation with a result, not " +
        f.op);
  }
  return f;
}

// Multiplies n elements of `dtype` at `p` by `factor`, through f64.
void scale(void* p, size_t n, DType dtype, double factor) {
  std::vector<double> wide(n);
  tensor::convert(p, dtype, wide.data(), DType::kF64, n);
  for (double& x : wide) x *= factor;
  tensor::convert(wide.data(), DType::kF64, p, dtype, n);
}

class FaultyCommunicator final : public Communicator {
 public:
  // `world_rank` is this process's rank in the communicator the fault was given for; the calls
  // are counted over it and every communicator split from it (the fault follows the rank into
  // its tensor-parallel or pipeline group).
  FaultyCommunicator(std::unique_ptr<Communicator> inner, Fault f, int world_rank,
                     std::shared_ptr<long> calls)
      : inner_(std::move(inner)),
        f_(std::move(f)),
        world_rank_(world_rank),
        calls_(std::move(calls)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string engine() const override { return inner_->engine(); }
  double timeout_s() const override { return inner_->timeout_s(); }

  void all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    run("all_reduce", recv, count, dtype, send,
        [&] { inner_->all_reduce(send, recv, count, dtype, op); });
  }
  void all_gather(const void* send, void* recv, size_t count, DType dtype) override {
    const size_t n = count * size();
    run("all_gather", recv, n, dtype, recv, [&] { inner_->all_gather(send, recv, count, dtype); });
  }
  void reduce_scatter(const void* send, void* recv, size_t count, DType dtype,
                      ReduceOp op) override {
    const void* own = static_cast<const std::byte*>(send) + byte_size(count, dtype) * rank();
    run("reduce_scatter", recv, count, dtype, own,
        [&] { inner_->reduce_scatter(send, recv, count, dtype, op); });
  }
  void all_to_all(const void* send, void* recv, size_t count, DType dtype) override {
    const size_t n = count * size();
    run("all_to_all", recv, n, dtype, recv, [&] { inner_->all_to_all(send, recv, count, dtype); });
  }
  void broadcast(void* buf, size_t count, DType dtype, int root) override {
    run("broadcast", buf, count, dtype, buf, [&] { inner_->broadcast(buf, count, dtype, root); });
  }
  void send(const void* buf, size_t count, DType dtype, int peer) override {
    run("send", nullptr, 0, dtype, nullptr, [&] { inner_->send(buf, count, dtype, peer); });
  }
  void recv(void* buf, size_t count, DType dtype, int peer) override {
    run("recv", buf, count, dtype, buf, [&] { inner_->recv(buf, count, dtype, peer); });
  }
  void send_recv(const void* send_buf, int dst, void* recv_buf, int src, size_t count,
                 DType dtype) override {
    run("send_recv", recv_buf, count, dtype, recv_buf,
        [&] { inner_->send_recv(send_buf, dst, recv_buf, src, count, dtype); });
  }
  void barrier() override {
    run("barrier", nullptr, 0, DType::kU8, nullptr, [&] { inner_->barrier(); });
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return std::make_unique<FaultyCommunicator>(inner_->split(color, key), f_, world_rank_, calls_);
  }

 private:
  // Whether this call of `op` is the faulty one (counting calls on the faulty rank only).
  bool due(const std::string& op) {
    if (op != f_.op || world_rank_ != f_.rank) return false;
    const long n = ++*calls_;
    return f_.call == 0 || n == f_.call;
  }

  // Runs `call`, with the fault when due. `out` (n elements) is the rank's result; `keep`, what
  // drop leaves there (read before the call, as in-place calls overwrite it).
  void run(const char* op, void* out, size_t n, DType dtype, const void* keep,
           const std::function<void()>& call) {
    if (!due(op)) return call();
    if (f_.kind == FaultKind::kDelay)
      std::this_thread::sleep_for(std::chrono::duration<double>(f_.seconds));
    if (f_.kind == FaultKind::kExit) std::exit(f_.exit_code);
    const size_t bytes = byte_size(n, dtype);
    std::vector<std::byte> kept;
    if (f_.kind == FaultKind::kDrop && bytes > 0)
      kept.assign(static_cast<const std::byte*>(keep), static_cast<const std::byte*>(keep) + bytes);
    call();
    if (f_.kind == FaultKind::kDrop && bytes > 0) std::memcpy(out, kept.data(), bytes);
    if (f_.kind == FaultKind::kScale) scale(out, n, dtype, f_.factor);
  }

  std::unique_ptr<Communicator> inner_;
  Fault f_;
  int world_rank_;
  std::shared_ptr<long> calls_;  // calls of f_.op so far on this rank, over all its communicators
};

}  // namespace

std::unique_ptr<Communicator> make_faulty_communicator(std::unique_ptr<Communicator> inner,
                                                       const nlohmann::json& options) {
  Fault f = parse_fault(options);
  if (f.rank >= inner->size())
    bad("rank " + std::to_string(f.rank) + " is not a rank of a mesh of " +
        std::to_string(inner->size()));
  const int world_rank = inner->rank();
  return std::make_unique<FaultyCommunicator>(std::move(inner), std::move(f), world_rank,
                                              std::make_shared<long>(0));
}

}  // namespace h0::mesh
