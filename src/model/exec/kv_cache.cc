#include "model/exec/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/error.h"

namespace h0::model {

PagedKvCache::PagedKvCache(backend::Backend& backend, const KvGeometry& geometry,
                           tensor::DType dtype)
    : backend_(backend), g_(geometry), dtype_(dtype) {
  for (int64_t l = 0; l < g_.layers; ++l) {
    k_host_.push_back(
        tensor::Tensor::zeros(dtype, {g_.num_blocks, g_.block_size, g_.kv_heads, g_.k_dim}));
    v_host_.push_back(
        tensor::Tensor::zeros(dtype, {g_.num_blocks, g_.block_size, g_.kv_heads, g_.v_dim}));
    if (g_.index_dim > 0)
      i_host_.push_back(tensor::Tensor::zeros(dtype, {g_.num_blocks, g_.block_size, g_.index_dim}));
  }
  k_dev_.resize(size_t(g_.layers));
  v_dev_.resize(size_t(g_.layers));
  i_dev_.resize(i_host_.size());
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
      ensure_device(
          std::min(g_.num_blocks, std::max<int64_t>(s.blocks.back() + 1, 2 * device_blocks_)));
    }
  }
}

void PagedKvCache::ensure_device(int64_t blocks) {
  if (blocks <= device_blocks_) return;
  device_blocks_ = blocks;
  for (size_t l = 0; l < size_t(g_.layers); ++l) {
    k_dev_[l] = backend_.upload(k_host_[l].slice_rows(0, blocks));
    v_dev_[l] = backend_.upload(v_host_[l].slice_rows(0, blocks));
    if (!i_host_.empty()) i_dev_[l] = backend_.upload(i_host_[l].slice_rows(0, blocks));
  }
}

void PagedKvCache::write_slots(const Sequence& s, const tensor::Tensor& src, int64_t width,
                               tensor::Tensor* dst) const {
  H0_CHECK(src.dtype() == dtype_) << "cache dtype";
  const size_t row = size_t(width) * tensor::dtype_size(dtype_);
  auto* d = static_cast<std::byte*>(dst->mutable_data());
  for (int64_t t = 0; t < src.dim(0); ++t) {
    const int64_t pos = s.length + t;
    const int64_t slot =
        int64_t(s.blocks.at(size_t(pos / g_.block_size))) * g_.block_size + pos % g_.block_size;
    std::memcpy(d + size_t(slot) * row, static_cast<const std::byte*>(src.data()) + size_t(t) * row,
                row);
  }
}

void PagedKvCache::stage(int seq, int64_t layer, const tensor::Tensor& k, const tensor::Tensor& v) {
  const Sequence& s = seqs_.at(size_t(seq));
  write_slots(s, k, g_.kv_heads * g_.k_dim, &k_host_[size_t(layer)]);
  write_slots(s, v, g_.kv_heads * g_.v_dim, &v_host_[size_t(layer)]);
}

void PagedKvCache::stage_index(int seq, int64_t layer, const tensor::Tensor& k) {
  H0_CHECK(g_.index_dim > 0) << "the cache holds no indexer keys";
  write_slots(seqs_.at(size_t(seq)), k, g_.index_dim, &i_host_[size_t(layer)]);
}

void PagedKvCache::upload(int64_t layer) {
  backend_.upload_into(k_host_[size_t(layer)].slice_rows(0, device_blocks_),
                       &k_dev_[size_t(layer)]);
  backend_.upload_into(v_host_[size_t(layer)].slice_rows(0, device_blocks_),
                       &v_dev_[size_t(layer)]);
  if (!i_host_.empty())
    backend_.upload_into(i_host_[size_t(layer)].slice_rows(0, device_blocks_),
                         &i_dev_[size_t(layer)]);
}

backend::DeviceTensor PagedKvCache::block_table(int seq) {
  const Sequence& s = seqs_.at(size_t(seq));
  return backend_.upload(
      tensor::Tensor::copy_of(tensor::DType::kI32, {int64_t(s.blocks.size())}, s.blocks.data()));
}

}  // namespace h0::model
