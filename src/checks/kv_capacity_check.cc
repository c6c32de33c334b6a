// kind: kv_capacity — the memory plan's KV capacity held against what the platform's engine
// reports it allocated. Where the engine reports it is the platform's `service.kv_source`:
//   metrics      vLLM's `vllm:cache_config_info` gauge in /metrics: kv_cache_size_tokens (else
//                num_gpu_blocks x block_size), kv_cache_memory_bytes, block_size, cache_dtype,
//                gpu_memory_utilization (labels);
//   log:REGEX    the service's output: the last match of REGEX, whose first group is the token
//                count ("CPU KV cache size: 1,048,576 tokens");
//   none         not judged.
// The plan side (plan/memory_plan.h): with the engine's KV memory known, that memory in whole
// blocks of the engine's block size at the plan's KV bytes per token (a pure check of the
// per-token accounting: layer types, sliding windows, MLA latent, indexer keys); without it, the
// whole plan on the platform's device_memory at the engine's utilization (weights, activations,
// reserve estimated). The KV dtype is the case's `kv_dtype`, else the engine's cache_dtype when
// it names one, else the model's torch_dtype (said which). A difference beyond `max_diff`
// (default 10 %) is a finding naming both numbers.
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "base/text_format.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "model/config/architecture.h"
#include "plan/memory_plan.h"
#include "plan/parallel_plan.h"
#include "service/metrics.h"
#include "suite/location.h"

namespace h0::checks {
namespace fs = std::filesystem;
namespace {

struct Spec {
  std::string model_dir;
  std::optional<tensor::DType> kv_dtype;  // the case's
  double max_diff = 0.10;
  double device_memory = 0;  // the platform's
};

// Label `key` of a label set as a whole number; nullopt when absent or not a number.
std::optional<int64_t> integer(const std::string& labels, const std::string& key) {
  const std::string value = service::label_value(labels, key);
  try {
    size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used != value.size()) return std::nullopt;
    return int64_t(v);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// vLLM's cache_dtype names ("auto" names none).
std::optional<tensor::DType> cache_dtype(const std::string& name) {
  if (name == "bfloat16" || name == "bf16") return tensor::DType::kBF16;
  if (name == "float16" || name == "half" || name == "f16") return tensor::DType::kF16;
  if (name == "float32" || name == "float" || name == "f32") return tensor::DType::kF32;
  if (name.rfind("fp8", 0) == 0) return plan::parse_kv_dtype("fp8");
  return std::nullopt;
}

struct EngineKv {
  int64_t tokens = 0;
  std::optional<int64_t> memory, block_size;
  std::optional<double> utilization;
  std::string dtype_label;  // cache_dtype as reported
  std::string source;       // what was read
};

class KvCapacityCase final : public PreparedCase {
 public:
  explicit KvCapacityCase(Spec s) : spec_(std::move(s)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    CheckResult out = result_for(h);
    std::string why;
    const std::optional<EngineKv> engine = read_engine(h, &why);
    if (!engine) {
      out.status = Status::kSkip;
      out.message = "not exercised: " + why;
      return out;
    }
    const model::Architecture arch = model::load_architecture(spec_.model_dir);
    std::string dtype_from;
    const tensor::DType kv = kv_dtype_for(*engine, arch, &dtype_from);
    KvPlan plan;
    if (!plan_capacity(*engine, arch, kv, dtype_from, &plan)) {
      out.status = Status::kSkip;
      out.message =
          "not exercised: the engine reports no KV memory and the platform states no "
          "device_memory to plan with";
      return out;
    }
    const double diff = plan.tokens > 0 ? std::abs(double(engine->tokens) - double(plan.tokens)) /
                                              double(plan.tokens)
                                        : 1.0;
    record_evidence(*engine, plan, kv, diff, &out);
    set_verdict(*engine, plan, diff, &out);
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "kv_capacity"}, {"model", spec_.model_dir}, {"max_diff", spec_.max_diff}};
  }

 private:
  // The plan's side: its KV token count, its bytes per token (sliding layers at their window,
  // and with every layer full), the engine's block size, and how the count was reached.
  struct KvPlan {
    int64_t tokens = 0, per_token = 0, every_layer_full = 0, block_size = 16;
    std::string how;
  };

  // `memory` in whole blocks of `block_size` tokens at `bytes` per token.
  static int64_t tokens_in(int64_t memory, int64_t bytes, int64_t block_size) {
    return bytes > 0 ? (memory / (bytes * block_size)) * block_size : int64_t(0);
  }

  // The KV dtype: the case's, else the engine's cache_dtype, else the model's torch_dtype;
  // *from says which.
  tensor::DType kv_dtype_for(const EngineKv& engine, const model::Architecture& arch,
                             std::string* from) const {
    if (spec_.kv_dtype) {
      *from = "the case's kv_dtype";
      return *spec_.kv_dtype;
    }
    if (const auto d = cache_dtype(engine.dtype_label)) {
      *from = "the engine's cache_dtype";
      return *d;
    }
    *from = "the model's torch_dtype (the engine's cache_dtype is '" + engine.dtype_label +
            "': a run in another dtype changes it; set kv_dtype)";
    return arch.text.dtype.value_or(tensor::DType::kBF16);
  }

  // The plan's KV capacity: the engine's KV memory in blocks where it reports it, else the
  // whole memory plan on the platform's device_memory. False when neither is known.
  bool plan_capacity(const EngineKv& engine, const model::Architecture& arch, tensor::DType kv,
                     const std::string& dtype_from, KvPlan* p) const {
    plan::MemoryOptions o;
    o.kv_dtype = kv;
    o.block_size = engine.block_size.value_or(16);
    o.device_memory = spec_.device_memory;
    o.utilization = engine.utilization.value_or(0.9);
    // The plan's accounting (harness plan): sliding layers at their window of a max_model_len
    // sequence (min(max_position_embeddings, 8192), the plan's default).
    const int64_t max_pos = arch.text.max_position_embeddings;
    const int64_t len = max_pos > 0 ? std::min<int64_t>(max_pos, 8192) : 8192;
    p->per_token = plan::model_kv_bytes_per_token(arch, kv, len);
    p->every_layer_full = plan::model_kv_bytes_per_token(arch, kv);
    p->block_size = o.block_size;
    if (engine.memory && p->per_token > 0) {
      p->tokens = tokens_in(*engine.memory, p->per_token, o.block_size);
      p->how = "the engine's " + human_bytes(uint64_t(*engine.memory)) + " of KV memory at " +
               plan::with_commas(p->per_token) + " B/token (" + tensor::dtype_name(kv) + ", from " +
               dtype_from + ") in blocks of " + std::to_string(o.block_size);
      return true;
    }
    if (o.device_memory <= 0) return false;
    const plan::MemoryPlan mp = plan::plan_memory(arch, plan::ParallelPlan{}, o);
    p->tokens = mp.kv_tokens;
    p->how = "the whole plan on " + human_bytes(uint64_t(o.device_memory)) + " x " +
             printf_string("%.2f", o.utilization) + " (weights, activations, reserve estimated), " +
             plan::with_commas(p->per_token) + " B/token (" + tensor::dtype_name(kv) + ", from " +
             dtype_from + ")";
    return true;
  }

  // Both sides' numbers into out's metrics and details.
  static void record_evidence(const EngineKv& engine, const KvPlan& p, tensor::DType kv,
                              double diff, CheckResult* out) {
    out->metrics = {{"engine_kv_tokens", double(engine.tokens)},
                    {"plan_kv_tokens", double(p.tokens)},
                    {"plan_kv_bytes_per_token", double(p.per_token)},
                    {"relative_difference", diff}};
    if (engine.memory && engine.tokens > 0)
      out->metrics.push_back(
          {"engine_kv_bytes_per_token", double(*engine.memory) / double(engine.tokens)});
    out->details["engine"] = {{"kv_tokens", engine.tokens},
                              {"source", engine.source},
                              {"cache_dtype", engine.dtype_label}};
    if (engine.memory) out->details["engine"]["kv_memory_bytes"] = *engine.memory;
    out->details["plan"] = {{"kv_tokens", p.tokens},
                            {"kv_bytes_per_token", p.per_token},
                            {"kv_dtype", tensor::dtype_name(kv)},
                            {"how", p.how}};
  }

  // Pass within max_diff; else fail naming both numbers, and for a sliding-window model whether
  // the engine's count matches every layer held full.
  void set_verdict(const EngineKv& engine, const KvPlan& p, double diff, CheckResult* out) const {
    const std::string numbers = "the engine reports " + plan::with_commas(engine.tokens) +
                                " KV tokens (" + engine.source + "), the plan " +
                                plan::with_commas(p.tokens) + " from " + p.how;
    if (diff <= spec_.max_diff) {
      out->status = Status::kPass;
      out->message = numbers + ": within " + printf_string("%.1f", 100 * diff) + " %";
      return;
    }
    out->status = Status::kFail;
    out->message = numbers + ": they differ by " + printf_string("%.1f", 100 * diff) + " % (> " +
                   printf_string("%g", 100 * spec_.max_diff) + " %)";
    // A sliding-window model: does the engine size its pools as if every layer held every
    // token? Say so, with that count, rather than leave two bare numbers.
    if (engine.memory && p.every_layer_full != p.per_token) {
      const int64_t full = tokens_in(*engine.memory, p.every_layer_full, p.block_size);
      const double full_diff =
          full > 0 ? std::abs(double(engine.tokens) - double(full)) / double(full) : 1.0;
      out->metrics.push_back({"plan_kv_tokens_every_layer_full", double(full)});
      if (full_diff <= spec_.max_diff)
        out->message += "; counting every layer as full (" + plan::with_commas(p.every_layer_full) +
                        " B/token) gives " + plan::with_commas(full) + ", within " +
                        printf_string("%.1f", 100 * full_diff) +
                        " %: the engine sizes its KV as if the sliding-window layers held every "
                        "token, where the plan holds their window only";
    }
  }

  std::optional<EngineKv> read_engine(ServiceHandle& h, std::string* why) const {
    const std::string& source = h.info.kv_source;
    if (source == "none") {
      *why = "the platform's service.kv_source is none";
      return std::nullopt;
    }
    EngineKv e;
    if (source.rfind("log:", 0) == 0) {
      std::ifstream in(h.info.log_path);
      if (h.info.log_path.empty() || !in) {
        *why =
            "kv_source is a log pattern, and the service's output is not captured (an "
            "external service)";
        return std::nullopt;
      }
      std::stringstream text;
      text << in.rdbuf();
      const std::string log = text.str();
      std::regex re;
      try {
        re = std::regex(source.substr(4));
      } catch (const std::regex_error& ex) {
        *why = "kv_source " + source + " is not a valid regular expression: " + ex.what();
        return std::nullopt;
      }
      std::smatch last;
      for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
           ++it)
        last = *it;
      if (last.empty() || last.size() < 2) {
        *why = "no line of the service's output matches kv_source " + source;
        return std::nullopt;
      }
      std::string digits;
      for (char ch : last[1].str())
        if (std::isdigit(static_cast<unsigned char>(ch))) digits += ch;
      if (digits.empty()) {
        *why = "kv_source's group captured no number: '" + last[1].str() + "'";
        return std::nullopt;
      }
      e.tokens = std::stoll(digits);
      e.source = "log: \"" + last[0].str() + "\"";
      return e;
    }
    std::string body;
    const service::Result r = h.client->get("/metrics", &body);
    if (!r.ok()) {
      *why = "GET /metrics: " + std::string(service::outcome_name(r.outcome)) + " " + r.error;
      return std::nullopt;
    }
    const auto labels = service::sample_labels(body, "vllm:cache_config_info");
    if (!labels) {
      *why =
          "the engine reports no KV capacity (no vllm:cache_config_info in /metrics; the "
          "platform's service.kv_source can name a log line instead)";
      return std::nullopt;
    }
    const auto tokens = integer(*labels, "kv_cache_size_tokens");
    const auto blocks = integer(*labels, "num_gpu_blocks");
    e.block_size = integer(*labels, "block_size");
    e.memory = integer(*labels, "kv_cache_memory_bytes");
    if (const std::string u = service::label_value(*labels, "gpu_memory_utilization"); !u.empty()) {
      char* end = nullptr;
      const double v = std::strtod(u.c_str(), &end);
      if (end != u.c_str() && *end == '\0') e.utilization = v;
    }
    e.dtype_label = service::label_value(*labels, "cache_dtype");
    if (tokens) {
      e.tokens = *tokens;
      e.source = "vllm:cache_config_info kv_cache_size_tokens";
    } else if (blocks && e.block_size) {
      e.tokens = *blocks * *e.block_size;
      e.source = "vllm:cache_config_info num_gpu_blocks x block_size";
    } else {
      *why =
          "vllm:cache_config_info has neither kv_cache_size_tokens nor num_gpu_blocks with "
          "block_size";
      return std::nullopt;
    }
    return e;
  }

  Spec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform& platform) {
  Spec s;
  s.model_dir = served_model_dir(c, "kv_capacity");
  s.device_memory = platform.device_memory_bytes;
  if (const YAML::Node d = case_field(c, "kv_dtype"); d.IsDefined() && !d.IsNull()) {
    s.kv_dtype = plan::parse_kv_dtype(as_string(c, d, "kv_dtype"));
    if (!s.kv_dtype) fail(c, d, "kv_dtype: expected bf16, f16, f32 or fp8");
  }
  s.max_diff = field_double(c, "max_diff", s.max_diff);
  if (!(s.max_diff >= 0 && s.max_diff < 1))
    fail(c, case_field(c, "max_diff"), "max_diff: expected a fraction in [0, 1), e.g. 0.1");
  return std::make_unique<KvCapacityCase>(std::move(s));
}

}  // namespace

CheckKind kv_capacity_check_kind() {
  return {"kv_capacity", {"model", "kv_dtype", "max_diff"}, &prepare};
}

}  // namespace h0::checks
