#include "compare/model_compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compare/metrics.h"
#include "tensor/convert.h"

namespace h0::compare {
namespace {

std::vector<double> row_f64(const tensor::Tensor& t, int64_t row, int64_t width) {
  std::vector<double> out(static_cast<size_t>(width));
  for (int64_t i = 0; i < width; ++i) out[size_t(i)] = t.at(row * width + i);
  return out;
}

std::vector<double> log_softmax(const std::vector<double>& x) {
  const double m = *std::max_element(x.begin(), x.end());
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  const double lse = m + std::log(s);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] - lse;
  return out;
}

std::vector<int64_t> top_ids(const std::vector<double>& x, size_t k) {
  std::vector<int64_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + long(k), idx.end(), [&](int64_t a, int64_t b) {
    return x[size_t(a)] != x[size_t(b)] ? x[size_t(a)] > x[size_t(b)] : a < b;
  });
  idx.resize(k);
  return idx;
}

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

LogitsMetrics compare_logits(const tensor::Tensor& actual, const tensor::Tensor& golden) {
  LogitsMetrics m;
  const compare::Metrics base = compare::compute_metrics(actual, golden, {0, 0, false});
  m.cosine = base.cosine;
  m.max_abs_err = base.max_abs_err;
  const int64_t T = golden.dim(0), V = golden.numel() / T;
  int64_t agree = 0;
  double overlap = 0, kl_sum = 0;
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> a = row_f64(actual, t, V), g = row_f64(golden, t, V);
    const std::vector<double> la = log_softmax(a), lg = log_softmax(g);
    double kl = 0;
    for (int64_t i = 0; i < V; ++i) kl += std::exp(lg[size_t(i)]) * (lg[size_t(i)] - la[size_t(i)]);
    kl_sum += kl;
    m.kl_max = std::max(m.kl_max, kl);
    const std::vector<int64_t> ta = top_ids(a, 5), tg = top_ids(g, 5);
    if (ta[0] == tg[0]) {
      ++agree;
    } else if (m.first_top1_mismatch < 0) {
      m.first_top1_mismatch = t;
    }
    int common = 0;
    for (int64_t id : ta) common += contains(tg, id);
    overlap += double(common) / double(tg.size());
  }
  m.kl_mean = kl_sum / double(T);
  m.top1_agreement = double(agree) / double(T);
  m.top5_overlap = overlap / double(T);
  return m;
}

GreedyResult compare_greedy(const std::vector<int64_t>& ours,
                            const std::vector<std::vector<int64_t>>& ours_top5,
                            const std::vector<int64_t>& golden,
                            const std::vector<std::vector<int64_t>>& golden_top5) {
  GreedyResult r;
  const size_t n = std::min(ours.size(), golden.size());
  for (size_t i = 0; i < n; ++i) {
    if (ours[i] == golden[i]) continue;
    r.first_mismatch = int64_t(i);
    r.close = contains(golden_top5[i], ours[i]) && contains(ours_top5[i], golden[i]);
    r.detail = "step " + std::to_string(i) + ": ours " + std::to_string(ours[i]) +
               " (golden top-5: " + ids_text(golden_top5[i]) + "), golden " +
               std::to_string(golden[i]) + " (our top-5: " + ids_text(ours_top5[i]) + ")";
    return r;
  }
  r.identical = r.close = ours.size() == golden.size();
  if (!r.identical)
    r.detail = "generated " + std::to_string(ours.size()) + " tokens, golden has " +
               std::to_string(golden.size());
  return r;
}

ProbeReport compare_probes(const std::vector<std::pair<std::string, tensor::Tensor>>& actual,
                           const io::SafetensorsFile& golden, double cosine_min,
                           double rel_l2_max) {
  return compare_probes(
      actual,
      [&](const std::string& name) -> std::optional<tensor::Tensor> {
        if (golden.find(name) == nullptr) return std::nullopt;
        return golden.get(name);
      },
      cosine_min, rel_l2_max);
}

ProbeReport compare_probes(const std::vector<std::pair<std::string, tensor::Tensor>>& actual,
                           const GoldenLookup& golden, double cosine_min, double rel_l2_max) {
  ProbeReport report;
  for (const auto& [name, value] : actual) {
    const std::optional<tensor::Tensor> found = golden(name);
    if (!found) continue;
    const tensor::Tensor& g = *found;
    if (g.numel() != value.numel()) {
      report.rows.push_back({name, 0, INFINITY, INFINITY, false});
    } else {
      const compare::Metrics m = compare::compute_metrics(value, g, {0, 0, false});
      const double rel = m.rel_l2;
      // A NaN or Inf where the golden has none (or the reverse) diverges whatever the finite
      // elements' cosine says (the metrics leave non-finite pairs out of it).
      const bool finite_alike = m.nan_mismatch == 0 && m.inf_mismatch == 0;
      report.rows.push_back({name, m.cosine, m.max_abs_err, rel,
                             finite_alike && m.cosine >= cosine_min && rel <= rel_l2_max});
    }
    if (!report.rows.back().ok && report.first_divergent < 0)
      report.first_divergent = int(report.rows.size() - 1);
  }
  return report;
}

std::string ProbeReport::first_divergence() const {
  if (first_divergent < 0) return "";
  const std::string& name = rows[size_t(first_divergent)].name;
  // "model.layers.1.self_attn" -> layer "model.layers.1", sublayer "self_attn".
  const size_t layers = name.rfind("layers.");
  if (layers == std::string::npos) return name;
  const size_t dot = name.find('.', layers + 7);
  if (dot == std::string::npos) return name + " (layer " + name + " output)";
  return name + " (layer " + name.substr(0, dot) + ", sublayer " + name.substr(dot + 1) + ")";
}

nlohmann::json ProbeReport::to_json() const {
  nlohmann::json probes = nlohmann::json::array();
  for (const ProbeRow& r : rows) {
    probes.push_back({{"name", r.name},
                      {"cosine", r.cosine},
                      {"max_abs_err", r.max_abs_err},
                      {"rel_l2", r.rel_l2},
                      {"ok", r.ok},
                      {"compared", r.statistics ? "statistics" : "tensor"}});
  }
  nlohmann::json j = {{"probes", probes}};
  if (first_divergent >= 0) {
    j["first_divergence"] = {{"probe", rows[size_t(first_divergent)].name},
                             {"where", first_divergence()},
                             {"cosine", rows[size_t(first_divergent)].cosine}};
  }
  return j;
}

namespace {
const char* non_finite_name(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }
}  // namespace

nlohmann::json NonFiniteOrigin::to_json() const {
  return {{"probe", name},
          {"index", index},
          {"position", position},
          {"value", non_finite_name(value)},
          {"count", count}};
}

std::string NonFiniteOrigin::describe() const {
  std::string at;
  for (int64_t p : position) at += (at.empty() ? "" : ", ") + std::to_string(p);
  return name + " at [" + at + "] (" + non_finite_name(value) + "; " + std::to_string(count) +
         " of " + std::to_string(numel) + " elements not finite)";
}

std::optional<NonFiniteOrigin> first_non_finite(
    const std::vector<std::pair<std::string, tensor::Tensor>>& probes) {
  for (size_t k = 0; k < probes.size(); ++k) {
    const tensor::Tensor& t = probes[k].second;
    if (!tensor::is_float(t.dtype())) continue;
    NonFiniteOrigin o;
    o.numel = t.numel();
    // Widened a block at a time (one conversion call per block, not per element).
    constexpr int64_t kBlock = 4096;
    double block[kBlock];
    const size_t elem = tensor::info(t.dtype()).size;
    for (int64_t first = 0; first < o.numel; first += kBlock) {
      const int64_t n = std::min(kBlock, o.numel - first);
      tensor::convert(static_cast<const std::byte*>(t.data()) + size_t(first) * elem, t.dtype(),
                      block, tensor::DType::kF64, size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        if (std::isfinite(block[i])) continue;
        if (o.count++ == 0) o.index = first + i, o.value = block[i];
      }
    }
    if (o.count == 0) continue;
    o.probe = static_cast<int>(k);
    o.name = probes[k].first;
    int64_t rest = o.index;
    o.position.assign(t.shape().size(), 0);
    for (size_t d = t.shape().size(); d-- > 0;) {
      o.position[d] = rest % t.shape()[d];
      rest /= t.shape()[d];
    }
    return o;
  }
  return std::nullopt;
}

}  // namespace h0::compare
