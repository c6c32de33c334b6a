#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/error.h"

namespace h0::model {

PagedKvCache::PagedKvCache(backend::Backend& backend, const KvGeometry& geometry, tensor::DType dtype)
    : backend_(backend), g_(geometry), dtype_(dtype) {
  for (int64_t l = 0; l < g_.layers; ++l) {
    k_host_.push_back(tensor::Tensor::zeros(dtype, {g_.num_blocks, g_.block_size, g_.kv_heads, g_.k_dim}));
    v_host_.push_back(tensor::Tensor::zeros(dtype, {g_.num_blocks, g_.block_size, g_.kv_heads, g_.v_dim}));
  }
  k_dev_.resize(size_t(g_.layers));
  v_dev_.resize(size_t(g_.layers));
  ensure_device(std::min<int64_t>(g_.num_blocks, 4));
  for (int64_t b = g_.num_blocks - 1; b >= 0; --b) free_blocks_.push_back(int32_t(b));
}

int PagedKvCache::new_sequence() {
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (!seqs_[i].live) {
      seqs_[i] = {{}, 0, true};
      return int(i);
    }
  }
  seqs_.push_back({{}, 0, true});
  return int(seqs_.size() - 1);
}

void PagedKvCache::free_sequence(int seq) {
  Sequence& s = seqs_.at(size_t(seq));
  for (int32_t b : s.blocks) free_blocks_.push_back(b);
  s = {};
}

void PagedKvCache::reserve(int seq, int64_t tokens) {
  Sequence& s = seqs_.at(size_t(seq));
  const int64_t need = (s.length + tokens + g_.block_size - 1) / g_.block_size;
  while (int64_t(s.blocks.size()) < need) {
    if (free_blocks_.empty()) {
      throw InputError("kv cache", "full: " + std::to_string(g_.num_blocks) + " blocks of " +
                                       std::to_string(g_.block_size) + " tokens are in use");
    }
    s.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
    if (s.blocks.back() >= device_blocks_) {
      ensure_device(std::min(g_.num_blocks, std::max<int64_t>(s.blocks.back() + 1, 2 * device_blocks_)));
    }
  }
}

void PagedKvCache::ensure_device(int64_t blocks) {
  if (blocks <= device_blocks_) return;
  device_blocks_ = blocks;
  for (size_t l = 0; l < size_t(g_.layers); ++l) {
    k_dev_[l] = backend_.upload(k_host_[l].slice_rows(0, blocks));
    v_dev_[l] = backend_.upload(v_host_[l].slice_rows(0, blocks));
  }
}

void PagedKvCache::stage(int seq, int64_t layer, const tensor::Tensor& k, const tensor::Tensor& v) {
  const Sequence& s = seqs_.at(size_t(seq));
  H0_CHECK(k.dtype() == dtype_ && v.dtype() == dtype_) << "cache dtype";
  const int64_t tokens = k.dim(0);
  const size_t esize = tensor::dtype_size(dtype_);
  const size_t k_row = size_t(g_.kv_heads * g_.k_dim) * esize, v_row = size_t(g_.kv_heads * g_.v_dim) * esize;
  auto* kd = static_cast<std::byte*>(k_host_[size_t(layer)].mutable_data());
  auto* vd = static_cast<std::byte*>(v_host_[size_t(layer)].mutable_data());
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t pos = s.length + t;
    const int64_t slot = int64_t(s.blocks.at(size_t(pos / g_.block_size))) * g_.block_size + pos % g_.block_size;
    std::memcpy(kd + size_t(slot) * k_row, static_cast<const std::byte*>(k.data()) + size_t(t) * k_row, k_row);
    std::memcpy(vd + size_t(slot) * v_row, static_cast<const std::byte*>(v.data()) + size_t(t) * v_row, v_row);
  }
}

void PagedKvCache::upload(int64_t layer) {
  backend_.upload_into(k_host_[size_t(layer)].slice_rows(0, device_blocks_), &k_dev_[size_t(layer)]);
  backend_.upload_into(v_host_[size_t(layer)].slice_rows(0, device_blocks_), &v_dev_[size_t(layer)]);
}

backend::DeviceTensor PagedKvCache::block_table(int seq) {
  const Sequence& s = seqs_.at(size_t(seq));
  return backend_.upload(tensor::Tensor::copy_of(tensor::DType::kI32, {int64_t(s.blocks.size())}, s.blocks.data()));
}

}  // namespace h0::model
