#include "run/run_record.h"

#include "base/version.h"

namespace h0::run {

nlohmann::json stack_versions(const nlohmann::json& stack_info,
                              std::map<std::string, std::string> labels) {
  // An A/B comparison's bookkeeping says which comparison and round a run was, not what stack it
  // ran: each round's labels made a stack of their own (eight for four rounds). Its side stays.
  labels.erase("ab");
  labels.erase("ab_round");
  return {{"backend", stack_info},
          {"harness",
           {{"version", base::kHarnessVersion},
            {"git_sha", base::kGitSha},
            {"compiler", base::kCompiler},
            {"build_type", base::kBuildType}}},
          {"labels", labels}};
}

store::RunStart run_start(const RunReport& report, const suite::Platform& platform,
                          const std::map<std::string, std::string>& labels,
                          const std::string& mesh) {
  store::RunStart s;
  s.suite = report.suite_name;
  s.suite_file = report.suite_file;
  s.suite_sha256 = report.suite_sha256;
  s.platform = platform.name;
  s.platform_file = platform.file;
  s.platform_sha256 = platform.sha256;
  s.platform_content = platform.content;
  s.backend =
      report.stack.value("runtime", platform.backend.empty() ? platform.lib : platform.backend);
  s.versions_json = stack_versions(report.stack, labels).dump();
  s.host = store::host_name();
  s.mesh = mesh;
  s.labels = labels;
  return s;
}

store::ResultData result_data(const CaseOutcome& outcome) {
  store::ResultData r;
  r.case_id = outcome.id;
  r.check_id = outcome.check;
  r.kind = outcome.kind;
  r.status = checks::status_name(outcome.result.status);
  r.duration_s = outcome.result.duration_s;
  r.message = outcome.result.message;
  // An eval check's per-item results go to their own rows (eval_items), not into details; so do
  // a tool_agreement check's (its answer and the reference's per item).
  const nlohmann::json* details = &outcome.result.details;
  nlohmann::json trimmed;
  if ((outcome.kind == "eval" || outcome.kind == "tool_agreement") && details->is_object() &&
      details->contains("items") && details->at("items").is_array()) {
    trimmed = *details;
    for (const nlohmann::json& item : trimmed["items"]) {
      store::EvalItemData& e = r.eval_items.emplace_back();
      nlohmann::json evidence = item;
      e.item_id = evidence.value("id", "");
      e.answer = evidence.value("answer", "");
      e.correct = evidence.value("correct", false);
      if (evidence.contains("ref_correct")) {
        e.ref_answer = evidence.value("ref_answer", "");
        e.ref_correct = evidence.value("ref_correct", false) ? 1 : 0;
      }
      for (const char* k : {"id", "answer", "correct", "ref_answer", "ref_correct"})
        evidence.erase(k);
      e.evidence_json = evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    trimmed.erase("items");
    trimmed["items_stored"] = r.eval_items.size();
    details = &trimmed;
  }
  r.details_json = details->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.metrics = outcome.result.metrics;
  r.profiles = outcome.result.profile;
  return r;
}

}  // namespace h0::run
