// The paged KV cache (vLLM's layout): per layer, k_cache[NB, B, Hkv, Dk] and
// v_cache[NB, B, Hkv, Dv] in backend memory, shared by all sequences; a sequence owns a list
// of blocks (its block table) and key j of it lives at block table[j / B], slot j % B.
// New keys are written into a host mirror and the cache uploaded before attention reads it
// (the plugin ABI has no partial device writes). DeepSeek-V3.2's lightning indexer keys, when
// index_dim > 0, live in the same blocks: i_cache[NB, B, index_dim] per layer. Blocks are handed
// out lowest id first, so the device holds only blocks [0, high-water mark): uploads cost the peak
// use, not the capacity.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace h0::model {

struct KvGeometry {
  int64_t layers = 0, num_blocks = 0, block_size = 16, kv_heads = 0, k_dim = 0, v_dim = 0;
  int64_t index_dim = 0;  // the indexer's key width (one key head); 0: no indexer keys
};

class PagedKvCache {
 public:
  PagedKvCache(backend::Backend& backend, const KvGeometry& geometry, tensor::DType dtype);

  int new_sequence();
  void free_sequence(int seq);
  int64_t length(int seq) const { return seqs_.at(size_t(seq)).length; }
  // Reserves room for `tokens` more keys of `seq`. Throws InputError when the cache is full.
  void reserve(int seq, int64_t tokens);
  // Writes k[T, Hkv, Dk] and v[T, Hkv, Dv] (host, cache dtype) of `layer` at positions
  // [length, length + T) of `seq` into the host mirror; upload(layer) makes them visible.
  void stage(int seq, int64_t layer, const tensor::Tensor& k, const tensor::Tensor& v);
  // The same for the indexer keys k[T, index_dim] (index_dim > 0).
  void stage_index(int seq, int64_t layer, const tensor::Tensor& k);
  // Copies the layer's host mirror to the backend (whole layer: the ABI has no partial writes).
  void upload(int64_t layer);
  // Blocks not held by any sequence.
  int64_t free_blocks() const { return int64_t(free_blocks_.size()); }
  // Advances the sequence's length by `tokens` once every layer has written them.
  void advance(int seq, int64_t tokens) { seqs_.at(size_t(seq)).length += tokens; }

  // The device cache of `layer`: [M, B, Hkv, D] with M the high-water mark of blocks in use
  // (every block of every block table is below it).
  const backend::DeviceTensor& k(int64_t layer) const { return k_dev_[size_t(layer)]; }
  const backend::DeviceTensor& v(int64_t layer) const { return v_dev_[size_t(layer)]; }
  // The indexer keys of `layer`: [M, B, index_dim] (index_dim > 0).
  const backend::DeviceTensor& index_k(int64_t layer) const { return i_dev_[size_t(layer)]; }
  // The sequence's block table as a device tensor (i32).
  backend::DeviceTensor block_table(int seq);
  const KvGeometry& geometry() const { return g_; }

 private:
  struct Sequence {
    std::vector<int32_t> blocks;
    int64_t length = 0;
    bool live = false;
  };
  // Copies rows [T, width] of `src` to the slots of positions [length, length + T) of `seq` in
  // `dst`.
  void write_slots(const Sequence& s, const tensor::Tensor& src, int64_t width,
                   tensor::Tensor* dst) const;
  // Makes the device caches hold blocks [0, blocks) (grown geometrically, never shrunk).
  void ensure_device(int64_t blocks);

  backend::Backend& backend_;
  KvGeometry g_;
  int64_t device_blocks_ = 0;
  tensor::DType dtype_;
  std::vector<tensor::Tensor> k_host_, v_host_, i_host_;  // i_: the indexer keys (empty without)
  std::vector<backend::DeviceTensor> k_dev_, v_dev_, i_dev_;
  std::vector<int32_t> free_blocks_;
  std::vector<Sequence> seqs_;
};

}  // namespace h0::model
