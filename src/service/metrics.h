// An engine's Prometheus metrics (GET /metrics, the text exposition format vLLM, SGLang, TGI and
// `harness serve` write): each sample's value summed over its label sets (one engine's counters
// split by model name or engine index add up), so a check reads "how many prefix-cache hits" as
// one number. A histogram's _bucket samples are summed per `le` bound as `name{le="B"}`.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "service/client.h"

namespace h0::service {

class Metrics {
 public:
  // Parses the exposition text; malformed lines are skipped (counted in skipped()).
  static Metrics parse(std::string_view text);

  bool empty() const { return values_.empty(); }
  // The value of the first of `names` the engine exposes, and which it was.
  std::optional<double> value(const std::string& name) const;
  struct Found {
    std::string name;
    double value = 0;
  };
  std::optional<Found> first_of(const std::vector<std::string>& names) const;
  size_t skipped() const { return skipped_; }
  const std::map<std::string, double>& values() const { return values_; }

 private:
  std::map<std::string, double> values_;
  size_t skipped_ = 0;
};

// The value of label `key` inside a label set "{a="x",le="0.5"}", or "".
std::string label_value(std::string_view labels, std::string_view key);
// The label set ("{...}") of the first sample of `name` in the exposition text (an info gauge such
// as vllm:cache_config_info, whose value is 1 and whose facts are its labels); nullopt if none.
std::optional<std::string> sample_labels(std::string_view text, std::string_view name);

// GET /metrics from the client's service; nullopt when it does not answer 2xx (`why` says).
std::optional<Metrics> scrape_metrics(Client& client, std::string* why = nullptr);

// The counter of `names` that moved between two scrapes: its name and how much (the first
// name either scrape has); nullopt when neither has any.
std::optional<Metrics::Found> counter_delta(const Metrics& before, const Metrics& after,
                                            const std::vector<std::string>& names);

}  // namespace h0::service
