// A Hugging Face checkpoint: one `model.safetensors`, or shards listed by
// `model.safetensors.index.json` ({"metadata": {...}, "weight_map": {tensor: shard file}}).
// Every shard is memory-mapped on open (cheap: headers only); reads go to the right shard.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors_reader.h"

namespace h0::io {

class ShardedCheckpoint {
 public:
  // `path`: an index .json, a single .safetensors file, or a directory holding
  // model.safetensors.index.json or model.safetensors. Validates that the index and the shards
  // agree: every listed tensor is in its shard, no shard holds an unlisted tensor, no tensor is
  // in two shards. Throws InputError naming the file and the tensors.
  static ShardedCheckpoint open(const std::string& path);

  // Tensor names, sorted.
  const std::vector<std::string>& names() const { return names_; }
  size_t num_shards() const { return shards_.size(); }
  const SafetensorsFile& shard(size_t i) const { return *shards_[i]; }
  // Returns nullptr if absent.
  const TensorEntry* find(std::string_view name) const;
  // The shard holding `name`; throws InputError if absent.
  const SafetensorsFile& shard_of(std::string_view name) const;
  tensor::Tensor get(std::string_view name) const { return shard_of(name).get(name); }
  // SafetensorsFile::release of the tensor's shard (no-op for an absent name).
  void release(std::string_view name) const {
    if (find(name) != nullptr) shard_of(name).release(name);
  }
  // SafetensorsFile::release_range on the shard whose map holds [p, p + bytes), if any.
  void release_range(const void* p, size_t bytes) const {
    for (const auto& s : shards_) {
      if (s->release_range(p, bytes)) return;
    }
  }
  tensor::Tensor slice(std::string_view name, int axis, int64_t begin, int64_t end) const {
    return shard_of(name).slice(name, axis, begin, end);
  }
  // The index file's "metadata" object as JSON text ("{}" without an index).
  const std::string& index_metadata_json() const { return index_metadata_; }
  // The file the checkpoint was opened from.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string index_metadata_ = "{}";
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, size_t, std::less<>> shard_index_;  // tensor -> shard
  std::vector<std::string> names_;
};

}  // namespace h0::io
