#include "io/msprobe_dump.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_depth.h"
#include "base/json_read.h"
#include "io/torch_tensor_file.h"

namespace h0::io {
namespace {

namespace fs = std::filesystem;
using ordered = nlohmann::ordered_json;

using base::kMaxJsonDepth;

std::string find_dump_json(const std::string& dir) {
  if (!fs::is_directory(dir)) return "";
  if (fs::is_regular_file(fs::path(dir) / "dump.json"))
    return (fs::path(dir) / "dump.json").string();
  std::vector<std::string> found;  // step*/rank*/dump.json
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    if (it.depth() > 2) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() == "dump.json" && it->is_regular_file())
      found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.front();
}

// msprobe writes Python's json: the statistics of a masked tensor are the bare tokens -Infinity,
// Infinity and NaN, which JSON has not. Outside strings they become null (no statistic); the
// nesting is bounded by parse_ordered_json (the replacement changes no bracket).
ordered parse_dump_json(const std::string& file) {
  const std::string raw = base::read_regular_file(file);
  std::string text;
  text.reserve(raw.size());
  size_t copied = 0;  // raw[0, copied) is in `text`
  base::for_each_outside_strings(raw, [&](size_t i) {
    for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
      if (raw.compare(i, token.size(), token) == 0) {
        text.append(raw, copied, i - copied).append("null");
        copied = i + token.size();
        return copied;
      }
    }
    return i + 1;
  });
  text.append(raw, copied, std::string::npos);
  return base::parse_ordered_json(text, file);
}

bool is_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '.') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// "Module.model.layers.0.self_attn.LlamaAttention.forward.0" -> {"model.layers.0.self_attn", 0};
// nullopt for another kind of entry (an API, a backward pass).
std::optional<std::pair<std::string, int64_t>> module_probe(const std::string& key) {
  const std::vector<std::string> parts = split_dots(key);
  if (parts.size() < 5 || parts[0] != "Module" || parts[parts.size() - 2] != "forward" ||
      !is_digits(parts.back()))
    return std::nullopt;
  std::string name;
  for (size_t i = 1; i + 3 < parts.size(); ++i) name += (name.empty() ? "" : ".") + parts[i];
  if (name.empty() || parts.back().size() > 9) return std::nullopt;
  return std::make_pair(name, std::stoll(parts.back()));
}

// The first tensor record of an output (a record, or lists / maps of them).
const ordered* first_tensor(const ordered& v, int depth = 0) {
  if (depth > 16) return nullptr;
  if (v.is_object()) {
    if (v.contains("type") && v["type"].is_string() &&
        v["type"].get<std::string>().find("Tensor") != std::string::npos)
      return &v;
    for (const auto& [k, e] : v.items()) {
      if (const ordered* t = first_tensor(e, depth + 1)) return t;
    }
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (const ordered* t = first_tensor(e, depth + 1)) return t;
    }
  }
  return nullptr;
}

std::optional<TensorStats> record_stats(const ordered& r) {
  auto num = [&](const char* k) -> std::optional<double> {
    if (!r.contains(k) || !r[k].is_number()) return std::nullopt;
    return r[k].get<double>();
  };
  const auto mx = num("Max"), mn = num("Min"), mean = num("Mean"), norm = num("Norm");
  if (!mx || !mn || !mean || !norm) return std::nullopt;
  return TensorStats{*mx, *mn, *mean, *norm};
}

}  // namespace

tensor::Tensor MsprobeProbe::load() const { return io::read_tensor_file(tensor_file); }

const MsprobeProbe* MsprobeDump::find(const std::string& name) const {
  const auto it = index.find(name);
  return it == index.end() ? nullptr : &probes[it->second];
}

bool is_msprobe_dump(const std::string& dir) { return !find_dump_json(dir).empty(); }

TensorStats stats_of(const tensor::Tensor& t) {
  const tensor::Tensor f = t.to(tensor::DType::kF64);
  const double* v = f.data_as<double>();
  TensorStats s;
  const int64_t n = f.numel();
  if (n == 0) return s;
  s.max = -INFINITY;
  s.min = INFINITY;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    s.max = std::max(s.max, v[i]);
    s.min = std::min(s.min, v[i]);
    sum += v[i];
    sq += v[i] * v[i];
  }
  s.mean = sum / double(n);
  s.norm = std::sqrt(sq);
  return s;
}

MsprobeDump read_msprobe_dump(const std::string& dir) {
  MsprobeDump d;
  d.dump_json = find_dump_json(dir);
  if (d.dump_json.empty())
    throw InputError(dir, "not an msprobe dump (no dump.json in it or under step*/rank*/)");
  const ordered j = parse_dump_json(d.dump_json);
  if (!j.is_object() || !j.contains("data") || !j["data"].is_object())
    throw InputError(d.dump_json, "not an msprobe dump.json: no `data` object");
  d.task = j.value("task", "");
  const fs::path tensors = fs::path(d.dump_json).parent_path() / "dump_tensor_data";
  // One tensor record of entry `key` as the probe `name`.
  auto probe_of = [&](const std::string& name, const std::string& key, const ordered& rec) {
    MsprobeProbe p;
    p.name = name;
    p.entry = key;
    if (rec.contains("shape") && rec["shape"].is_array()) {
      for (const auto& v : rec["shape"]) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0)
          throw InputError(d.dump_json, "data." + key + ": shape is not a list of sizes");
        p.shape.push_back(v.get<int64_t>());
      }
    }
    p.stats = record_stats(rec);
    const std::string data_name = rec.contains("data_name") && rec["data_name"].is_string()
                                      ? rec["data_name"].get<std::string>()
                                      : "";
    if (!data_name.empty() && data_name != "-1") {
      if (data_name.find("..") != std::string::npos || data_name.find('/') != std::string::npos)
        throw InputError(d.dump_json,
                         "data." + key + ": data_name '" + data_name + "' is not a file name");
      const fs::path file = tensors / data_name;
      if (!fs::exists(file))
        throw InputError(d.dump_json, "data." + key + ": data_name " + data_name + " is not in " +
                                          tensors.string());
      p.tensor_file = file.string();
    }
    return p;
  };
  std::optional<MsprobeProbe> first_layer_input;  // the embedding's output, when it is not dumped
  for (const auto& [key, entry] : j["data"].items()) {
    const auto probe = module_probe(key);
    if (!probe || probe->second != 0 || d.find(probe->first) != nullptr)
      continue;  // the first call only
    if (!entry.is_object()) throw InputError(d.dump_json, "data." + key + ": not an object");
    const ordered* rec = entry.contains("output") ? first_tensor(entry["output"]) : nullptr;
    if (rec == nullptr) continue;  // a module whose output holds no tensor
    d.index[probe->first] = d.probes.size();
    d.probes.push_back(probe_of(probe->first, key, *rec));
    const std::string& name = probe->first;
    const size_t at = name.rfind("layers.0");
    if (!first_layer_input && at != std::string::npos && at + 8 == name.size() &&
        entry.contains("input_args")) {
      if (const ordered* in = first_tensor(entry["input_args"])) {
        first_layer_input = probe_of(name.substr(0, at) + "embed_tokens", key + " input.0", *in);
      }
    }
  }
  if (first_layer_input && d.find(first_layer_input->name) == nullptr) {
    d.index[first_layer_input->name] = d.probes.size();
    d.probes.push_back(*first_layer_input);
  }
  // The LM head's output is the model's logits, as dump_hf.py names them.
  if (d.find("logits") == nullptr) {
    if (const MsprobeProbe* head = d.find("lm_head")) {
      MsprobeProbe logits = *head;
      logits.name = "logits";
      d.index["logits"] = d.probes.size();
      d.probes.push_back(std::move(logits));
    }
  }
  return d;
}

}  // namespace h0::io
