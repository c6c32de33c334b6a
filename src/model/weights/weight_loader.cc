#include "model/weights/weight_loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "base/error.h"
#include "base/input_file.h"
#include "base/parallel.h"
#include "base/sha256.h"

namespace h0::model {
namespace {

// Open file descriptors of the shards, one per file, shared by the reading threads (pread is
// thread-safe on one descriptor).
class ShardFiles {
 public:
  int fd(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = fds_.find(path);
    if (it != fds_.end()) return it->second;
    const int f = base::open_regular_file(path);
    fds_[path] = f;
    return f;
  }
  ~ShardFiles() {
    for (auto& [path, f] : fds_) ::close(f);
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> fds_;
};

int64_t read_at(int fd, const std::string& path, std::byte* out, size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw InputError(path, "read failed at offset " + std::to_string(offset + done) + ": " +
                                 (n < 0 ? std::strerror(errno) : "end of file"));
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

// Reads entry[slice] into `out`: one pread per contiguous run (a dim-0 slice is one run; a
// slice of axis k is outer(k) runs of (end-begin)·inner(k) elements).
int64_t read_slice(int fd, const io::SafetensorsFile& file, const io::TensorEntry& e,
                   const std::optional<WeightSlice>& slice, std::byte* out) {
  const uint64_t base = file.header_bytes() + 8 + e.begin;
  const size_t esize = tensor::dtype_size(e.dtype);
  if (!slice) return read_at(fd, file.path(), out, e.nbytes(), base);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < slice->axis; ++i) outer *= e.shape[size_t(i)];
  for (size_t i = size_t(slice->axis) + 1; i < e.shape.size(); ++i) inner *= e.shape[i];
  const int64_t extent = e.shape[size_t(slice->axis)], taken = slice->extent();
  int64_t total = 0;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = 0;  // rows of the slice written for this outer index
    for (const auto& [b, end] : slice->ranges()) {
      const size_t run = size_t((end - b) * inner) * esize;
      const uint64_t offset = base + uint64_t((o * extent + b) * inner) * esize;
      total +=
          read_at(fd, file.path(), out + size_t((o * taken + at) * inner) * esize, run, offset);
      at += end - b;
    }
  }
  return total;
}

void check_slice(const std::string& path, const io::TensorEntry& e, const WeightSlice& s) {
  for (const auto& [begin, end] : s.ranges()) {
    if (s.axis < 0 || size_t(s.axis) >= e.shape.size() || begin < 0 || end < begin ||
        end > e.shape[size_t(s.axis)]) {
      throw InputError(path, "tensor '" + e.name + "': slice [" + std::to_string(begin) + ", " +
                                 std::to_string(end) + ") of axis " + std::to_string(s.axis) +
                                 " is outside its shape " + tensor::shape_string(e.shape));
    }
  }
}

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < 20; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > 20) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

}  // namespace

std::vector<std::string> verify_checkpoint(const io::ShardedCheckpoint& ckpt,
                                           const Inventory& inventory) {
  std::vector<std::string> missing, unexpected, misshapen, converted;
  std::map<std::string, const WeightInfo*, std::less<>> expected;
  for (const WeightInfo& w : inventory.weights) expected[w.name] = &w;
  const auto is_wide = [](tensor::DType d) {
    return tensor::is_float(d) && !tensor::is_fp8(d);
  };  // computes as stored
  const auto scale_of = [](const std::string& weight) { return weight + "_scale_inv"; };
  std::set<std::string> extra_scales;  // of weights quantized where the reference layout has none
  for (const auto& [name, w] : expected) {
    const io::TensorEntry* e = ckpt.find(name);
    const bool float_pair = e != nullptr && is_wide(e->dtype) && is_wide(w->dtype) &&
                            !w->quantized && w->role != WeightRole::kQuantScale;
    if (e == nullptr) {
      // The scale of a projection the checkpoint keeps unquantized is not expected.
      const std::string weight = name.substr(0, name.size() - std::string("_scale_inv").size());
      const io::TensorEntry* we = w->role == WeightRole::kQuantScale ? ckpt.find(weight) : nullptr;
      if (we == nullptr || !is_wide(we->dtype)) missing.push_back(name);
    } else if (e->shape == w->shape && e->dtype != w->dtype && float_pair) {
      converted.push_back(name + ": " + tensor::dtype_name(e->dtype) + " (the inventory's " +
                          tensor::dtype_name(w->dtype) + ")");
    } else if (e->shape == w->shape && w->quantized && is_wide(e->dtype) &&
               ckpt.find(scale_of(name)) == nullptr) {
      converted.push_back(name + ": " + tensor::dtype_name(e->dtype) +
                          ", not quantized (the config's layout stores it fp8)");
    } else if (e->shape == w->shape && !w->quantized && w->role == WeightRole::kParameter &&
               w->shape.size() == 2 && tensor::is_fp8(e->dtype) &&
               ckpt.find(scale_of(name)) != nullptr) {
      const io::TensorEntry* s = ckpt.find(scale_of(name));
      const int64_t br = inventory.block_rows, bc = inventory.block_cols;
      const tensor::Shape want = {br > 0 ? (e->shape[0] + br - 1) / br : 0,
                                  bc > 0 ? (e->shape[1] + bc - 1) / bc : 0};
      if (br <= 0 || bc <= 0) {
        misshapen.push_back(name + ": " + tensor::dtype_name(e->dtype) +
                            " with block scales, but the config has no fp8 "
                            "quantization_config (weight_block_size)");
      } else if (s->dtype != tensor::DType::kF32 || s->shape != want) {
        misshapen.push_back(scale_of(name) + ": " + tensor::dtype_name(s->dtype) + " " +
                            tensor::shape_string(s->shape) + " (expected f32 " +
                            tensor::shape_string(want) + ": " + tensor::shape_string(e->shape) +
                            " in " + std::to_string(br) + "x" + std::to_string(bc) + " blocks)");
      } else {
        converted.push_back(name + ": " + tensor::dtype_name(e->dtype) +
                            " with block scales (the reference layout keeps it " +
                            tensor::dtype_name(w->dtype) + ")");
      }
      extra_scales.insert(scale_of(name));
    } else if (e->shape != w->shape || e->dtype != w->dtype) {
      misshapen.push_back(name + ": " + tensor::dtype_name(e->dtype) + " " +
                          tensor::shape_string(e->shape) + " (expected " +
                          tensor::dtype_name(w->dtype) + " " + tensor::shape_string(w->shape) +
                          ")");
    }
  }
  for (const std::string& name : ckpt.names()) {
    if (expected.count(name) == 0 && extra_scales.count(name) == 0) unexpected.push_back(name);
  }
  if (missing.empty() && unexpected.empty() && misshapen.empty()) return converted;
  std::string msg = "does not match the model's tensor inventory:";
  if (!missing.empty())
    msg += "\n  missing (" + std::to_string(missing.size()) + "): " + list(missing);
  if (!unexpected.empty())
    msg += "\n  unexpected (" + std::to_string(unexpected.size()) + "): " + list(unexpected);
  if (!misshapen.empty())
    msg +=
        "\n  wrong shape or dtype (" + std::to_string(misshapen.size()) + "): " + list(misshapen);
  throw InputError(ckpt.path(), msg);
}

LoadReport load_weights(const io::ShardedCheckpoint& ckpt, const std::vector<LoadRequest>& requests,
                        const LoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  LoadReport report;
  for (size_t s = 0; s < ckpt.num_shards(); ++s) {
    for (const auto& e : ckpt.shard(s).entries()) report.checkpoint_bytes += int64_t(e.nbytes());
  }
  report.weights.resize(requests.size());
  std::vector<std::pair<tensor::DType, tensor::Shape>> descs(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const WeightInfo& w = *requests[i].weight;
    const io::SafetensorsFile& file = ckpt.shard_of(w.name);
    const io::TensorEntry& e = *file.find(w.name);
    tensor::Shape shape = e.shape;
    if (requests[i].slice) {
      check_slice(file.path(), e, *requests[i].slice);
      shape[size_t(requests[i].slice->axis)] = requests[i].slice->extent();
    }
    report.weights[i] = {w.name, requests[i].slice, tensor::Tensor(), ""};
    descs[i] = {e.dtype, std::move(shape)};
  }
  ShardFiles files;
  std::atomic<int64_t> bytes{0};
  base::parallel_for(requests.size(), 1, [&](size_t, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      LoadedWeight& out = report.weights[i];
      out.tensor = tensor::Tensor::empty(descs[i].first,
                                         descs[i].second);  // first touch on the reading thread
      const io::SafetensorsFile& file = ckpt.shard_of(out.name);
      auto* dst = static_cast<std::byte*>(out.tensor.mutable_data());
      bytes += read_slice(files.fd(file.path()), file, *file.find(out.name), out.slice, dst);
      if (options.sha256) out.sha256 = base::sha256_hex(dst, out.tensor.nbytes());
    }
  });
  report.bytes_read = bytes.load();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace h0::model
