#include "io/sharded_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_read.h"

namespace h0::io {
namespace fs = std::filesystem;
namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

std::string list(const std::vector<std::string>& names, size_t max = 5) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > max) out += " and " + std::to_string(names.size() - max) + " more";
  return out;
}

}  // namespace

ShardedCheckpoint ShardedCheckpoint::open(const std::string& path) {
  ShardedCheckpoint ckpt;
  fs::path p(path);
  if (fs::is_directory(p)) {
    if (fs::exists(p / kIndexName))
      p /= kIndexName;
    else if (fs::exists(p / kSingleName))
      p /= kSingleName;
    else
      throw InputError(path,
                       std::string("directory has neither ") + kIndexName + " nor " + kSingleName);
  }
  ckpt.path_ = p.string();

  if (p.extension() != ".json") {
    ckpt.shards_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(ckpt.path_)));
    for (const auto& e : ckpt.shards_[0]->entries()) ckpt.shard_index_.emplace(e.name, 0);
  } else {
    const nlohmann::json index = base::parse_json(base::read_regular_file(ckpt.path_), ckpt.path_);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw InputError(ckpt.path_, "expected an object with a \"weight_map\" object");
    }
    if (index.contains("metadata")) ckpt.index_metadata_ = index["metadata"].dump();
    std::map<std::string, size_t> shard_of_file;
    std::map<size_t, std::vector<std::string>> listed;  // shard -> tensors the index puts there
    for (const auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string()) {
        throw InputError(ckpt.path_, "weight_map['" + name + "'] must be a file name");
      }
      const auto shard_name = file.get<std::string>();
      auto [it, inserted] = shard_of_file.emplace(shard_name, ckpt.shards_.size());
      if (inserted) {
        const fs::path shard_path = p.parent_path() / shard_name;
        if (!fs::exists(shard_path)) {
          throw InputError(ckpt.path_,
                           "shard '" + shard_name + "' (of tensor '" + name + "') does not exist");
        }
        ckpt.shards_.push_back(
            std::make_unique<SafetensorsFile>(SafetensorsFile::open(shard_path.string())));
      }
      ckpt.shard_index_.emplace(name, it->second);
      listed[it->second].push_back(name);
    }
    for (const auto& [file, s] : shard_of_file) {
      const SafetensorsFile& shard = *ckpt.shards_[s];
      std::vector<std::string> missing, unlisted;
      for (const auto& name : listed[s]) {
        if (shard.find(name) == nullptr) missing.push_back(name);
      }
      for (const auto& e : shard.entries()) {
        auto it = ckpt.shard_index_.find(e.name);
        if (it == ckpt.shard_index_.end() || it->second != s) unlisted.push_back(e.name);
      }
      if (!missing.empty()) {
        throw InputError(ckpt.path_, "the index puts " + list(missing) + " in '" + file +
                                         "', which does not hold them");
      }
      if (!unlisted.empty()) {
        throw InputError(shard.path(), "holds " + list(unlisted) +
                                           " that the index does not list for this shard");
      }
    }
  }
  for (const auto& [name, s] : ckpt.shard_index_) ckpt.names_.push_back(name);
  return ckpt;
}

const TensorEntry* ShardedCheckpoint::find(std::string_view name) const {
  auto it = shard_index_.find(name);
  return it == shard_index_.end() ? nullptr : shards_[it->second]->find(name);
}

const SafetensorsFile& ShardedCheckpoint::shard_of(std::string_view name) const {
  auto it = shard_index_.find(name);
  if (it == shard_index_.end()) {
    throw InputError(path_, "no tensor '" + std::string(name) + "' in this checkpoint");
  }
  return *shards_[it->second];
}

}  // namespace h0::io
