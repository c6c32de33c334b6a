// checks/<stem>.html: one case across runs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_read.h"
#include "base/text_format.h"
#include "report/html_page.h"
#include "report/html_pages.h"
#include "report/html_text.h"

namespace h0::report {
namespace {

using nlohmann::json;

constexpr size_t kMaxRawDetails = 2000;  // bytes of details JSON shown when it has no outputs

std::string value_text(const json& v) {
  if (v.is_string()) return html_escape(v.get<std::string>());
  if (v.is_number()) return number_text(v.get<double>());
  return html_escape(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

// One output's evidence row: where the worst element is and what it was against golden.
std::string output_row(const json& o, const std::string& shape) {
  const auto field = [&](const char* k) {
    return o.contains(k) ? value_text(o[k]) : std::string("–");
  };
  std::string failures;
  if (o.contains("failures") && o["failures"].is_array()) {
    for (const auto& f : o["failures"]) failures += (failures.empty() ? "" : "; ") + value_text(f);
  }
  return html_row({html_escape(shape), field("name"), field("dtype"), field("worst_index"),
                   field("worst_actual"), field("worst_expected"),
                   field("preset") + " rtol " + field("rtol") + " atol " + field("atol"),
                   failures});
}

std::string outputs_table(const json& details) {
  std::string rows;
  const auto add = [&](const json& outputs, const std::string& shape) {
    if (!outputs.is_array()) return;
    for (const auto& o : outputs) {
      if (o.is_object()) rows += output_row(o, shape);
    }
  };
  if (details.contains("outputs")) add(details["outputs"], "");
  if (details.contains("shapes") && details["shapes"].is_array()) {
    for (const auto& s : details["shapes"]) {
      if (s.is_object() && s.contains("outputs"))
        add(s["outputs"], s.value("shape", std::string()));
    }
  }
  if (rows.empty()) return "";
  return "<table class=\"grid evidence\">\n" +
         html_row({"shape", "output", "dtype", "worst index", "actual", "expected", "tolerance",
                   "failures"},
                  "th") +
         rows + "</table>\n";
}

// What the tolerance checks alone would not say (issue 24): a rounding bias among the metrics,
// the module that made the first NaN/Inf (and on which rank), the rounding the probes found, and
// how the outputs moved under perturbation.
std::string findings(const store::ResultData& r, const json& details) {
  std::string html;
  std::string bias_rows;
  for (const auto& [name, value] : r.metrics) {
    const bool magnitude = name.find("magnitude_bias_ulp") != std::string::npos;
    const bool signed_bias = !magnitude && name.find("bias_ulp") != std::string::npos;
    if (!(magnitude || signed_bias) || !(std::fabs(value) >= 0.1)) continue;
    const char* way = magnitude ? (value < 0 ? "toward zero" : "away from zero")
                                : (value < 0 ? "downward" : "upward");
    bias_rows += html_row({html_escape(name), number_text(value), way});
  }
  if (!bias_rows.empty()) {
    html +=
        "<h3>Rounding bias</h3>\n<p>Mean signed error in ULPs of the output dtype (each "
        "error clipped to 2 ULP); round to nearest leaves it near 0, truncation near "
        "&minus;0.5 toward zero.</p>\n<table class=\"grid bias\">\n" +
        html_row({"metric", "ULP", "leaning"}, "th") + bias_rows + "</table>\n";
  }
  const auto origin = [&](const json& o, const std::string& when) {
    if (!o.is_object()) return;
    html += "<p>First NaN/Inf" + when + " made by <b>" + value_text(o.value("probe", json(""))) +
            "</b> at <code>" + value_text(o.value("position", json::array())) + "</code> (" +
            value_text(o.value("value", json(""))) + "; " + value_text(o.value("count", json(0))) +
            " elements not finite)";
    if (details.contains("nan_origin_rank"))
      html += ", first on rank <b>" + value_text(details["nan_origin_rank"]) + "</b>";
    html += "</p>\n";
  };
  if (details.contains("nan_origin")) origin(details["nan_origin"], "");
  if (details.contains("decode_steps") && details["decode_steps"].is_object() &&
      details["decode_steps"].contains("nan_origin"))
    origin(details["decode_steps"]["nan_origin"], " (decode steps)");
  if (details.contains("nan_origin_rank") && !details.contains("nan_origin"))
    html +=
        "<p>First NaN/Inf made on rank <b>" + value_text(details["nan_origin_rank"]) + "</b></p>\n";
  if (details.contains("rounding")) {
    html +=
        "<p>Rounding found by the probes: <b>" + value_text(details["rounding"]) + "</b>" +
        (details.value("flushes_subnormals", false) ? ", flushing subnormal results to zero" : "") +
        "</p>\n";
  }
  if (details.contains("perturbation") && details["perturbation"].is_object()) {
    std::string rows;
    for (const auto& [name, v] : details["perturbation"].items()) {
      if (!v.is_object()) continue;
      rows += v.contains("skipped")
                  ? html_row({html_escape(name), "–", "–", "–", value_text(v["skipped"])})
                  : html_row({html_escape(name), value_text(v.value("precision", json(""))),
                              value_text(v.value("rel_l2", json(0))),
                              value_text(v.value("bound", json(0))),
                              v.value("rel_l2", 0.0) > v.value("bound", 0.0) ? "moved" : "stable"});
    }
    if (!rows.empty()) {
      html += "<h3>Perturbation (the platform against itself)</h3>\n<table class=\"grid\">\n" +
              html_row({"variant", "precision", "relative L2", "bound", ""}, "th") + rows +
              "</table>\n";
    }
  }
  return html;
}

std::string evidence(const SiteModel& model, const SiteCase& c) {
  std::string html = "<section id=\"evidence\"><h2>Last failure</h2>\n";
  if (c.failure_run < 0)
    return html + "<p class=\"muted\">No failure in the runs shown.</p></section>\n";
  const SiteRun& run = model.runs[static_cast<size_t>(c.failure_run)];
  const store::ResultData& r = c.last_failure;
  html += "<p>" + status_badge(r.status) + " in " +
          html_link("../" + run.page, "run " + run_ref(run.run.id)) + " (" +
          html_escape(model.columns[static_cast<size_t>(run.column)].label) + ", " +
          html_escape(run.run.started_at) + ")</p>\n<pre class=\"message\">" +
          html_escape(r.message) + "</pre>\n";
  const json details = base::parse_json_or_discarded(r.details_json);
  if (!details.is_object()) return html + "</section>\n";
  for (const char* key : {"first_divergent_layer", "first_divergence"}) {
    if (details.contains(key))
      html += "<p>First divergent layer: <b>" + value_text(details[key]) + "</b></p>\n";
  }
  // Model, image and layer checks: details.probes.first_divergence = {probe, where, cosine}.
  if (details.contains("probes") && details["probes"].is_object() &&
      details["probes"].contains("first_divergence")) {
    const json& d = details["probes"]["first_divergence"];
    html += "<p>First divergence: <b>" + value_text(d.value("where", json(""))) + "</b> (cosine " +
            value_text(d.value("cosine", json(0))) + ")</p>\n";
  }
  html += findings(r, details);
  const std::string table = outputs_table(details);
  if (!table.empty()) return html + table + "</section>\n";
  std::string raw = details.dump(1, ' ', false, json::error_handler_t::replace);
  if (raw.size() > kMaxRawDetails) raw = raw.substr(0, kMaxRawDetails) + "…";
  return html + "<pre>" + html_escape(raw) + "</pre></section>\n";
}

std::string latest_tables(const SiteModel& model, const SiteCase& c) {
  const store::ResultData& r = c.latest;
  const SiteRun& run = model.runs[static_cast<size_t>(c.latest_run)];
  std::string html = "<section id=\"latest\"><h2>Latest result: " + status_badge(r.status) +
                     " in " + html_link("../" + run.page, "run " + run_ref(run.run.id)) + "</h2>\n";
  if (!r.metrics.empty()) {
    html += "<table class=\"grid metrics\">\n" + html_row({"metric", "value"}, "th");
    for (const auto& [name, value] : r.metrics)
      html += html_row({html_escape(name), number_text(value)});
    html += "</table>\n";
  }
  if (!r.profiles.empty()) {
    html += "<h3>Profile</h3>\n<table class=\"grid profile\">\n" +
            html_row({"phase", "name", "count", "min", "median", "p99", "mean", "bytes", "flops"},
                     "th");
    for (const auto& p : r.profiles) {
      html += html_row({html_escape(p.phase), html_escape(p.name), std::to_string(p.count),
                        ns_text(p.min_ns), ns_text(p.median_ns), ns_text(p.p99_ns),
                        ns_text(p.mean_ns), number_text(p.bytes), number_text(p.flops)});
    }
    html += "</table>\n";
  }
  return html + "</section>\n";
}

// An engine's kernels per stack version: per phase, its heaviest kernels' time per step on each
// stack (the latest run of each column), the ones that moved most against the first stack first;
// a kernel absent from a stack shows "–" (it appeared or vanished there).
std::string engine_table(const SiteModel& model, const SiteCase& c) {
  constexpr size_t kRows = 15;
  std::map<std::string, std::map<std::string, std::map<int, std::pair<double, double>>>> phases;
  for (const auto& [column, e] : c.engine)
    for (const auto& [key, v] : e.kernels) phases[key.first][key.second][column] = v;
  std::string html =
      "<section id=\"engine\"><h2>Engine kernels per stack version</h2>\n"
      "<p class=\"muted\">Median time per engine step (its share of the step), the latest run of "
      "each stack; the kernels that moved most against the first stack first.</p>\n";
  for (const auto& [phase, kernels] : phases) {
    struct Row {
      std::string name;
      double moved = 0, share = 0;
    };
    std::vector<Row> rows;
    const int first = c.engine.begin()->first;
    for (const auto& [name, by_column] : kernels) {
      Row row{name};
      const auto base = by_column.find(first);
      for (const auto& [column, v] : by_column) {
        row.share = std::max(row.share, v.second);
        if (base == by_column.end() || base->second.first <= 0) {
          row.moved = std::numeric_limits<double>::infinity();  // not on the first stack
        } else {
          row.moved = std::max(row.moved, std::abs(std::log(v.first / base->second.first)));
        }
      }
      if (by_column.size() < c.engine.size()) row.moved = std::numeric_limits<double>::infinity();
      rows.push_back(row);
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.moved * a.share != b.moved * b.share ? a.moved * a.share > b.moved * b.share
                                                    : a.share > b.share;
    });
    std::vector<std::string> head = {"kernel"};
    for (const auto& [column, e] : c.engine)
      head.push_back(html_escape(model.columns[static_cast<size_t>(column)].label));
    html += "<h3>" + html_escape(phase) + "</h3>\n<table class=\"grid engine\">\n" +
            html_row(head, "th");
    for (size_t i = 0; i < rows.size() && i < kRows; ++i) {
      std::vector<std::string> cells = {html_escape(rows[i].name)};
      for (const auto& [column, e] : c.engine) {
        const auto& by_column = kernels.at(rows[i].name);
        const auto it = by_column.find(column);
        cells.push_back(it == by_column.end()
                            ? "–"
                            : ns_text(it->second.first) +
                                  printf_string(" (%.1f%%)", 100 * it->second.second));
      }
      html += html_row(cells);
    }
    html += "</table>\n";
  }
  return html + "</section>\n";
}

// An eval check's score per stack version: "0.612 [0.543, 0.677]" with its Wilson interval, the
// reference's score, the paired delta with its interval, agreement and the discordant items.
std::string accuracy_table(const SiteModel& model, const SiteCase& c) {
  std::string rows;
  for (const auto& [column, a] : c.accuracy) {
    const auto m = [&](const char* name) {
      const auto it = a.metrics.find(name);
      return it == a.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
    };
    const auto text = [](double v) {
      return std::isnan(v) ? std::string("–") : printf_string("%.3f", v);
    };
    const auto interval = [&](double v, double lo, double hi) {
      return std::isnan(v) ? std::string("–") : text(v) + " [" + text(lo) + ", " + text(hi) + "]";
    };
    const SiteRun& run = model.runs[static_cast<size_t>(a.run)];
    const SiteColumn& col = model.columns[static_cast<size_t>(column)];
    const bool paired = !std::isnan(m("ref_score"));
    rows += html_row(
        {html_escape(col.label), html_escape(col.platform),
         html_link("../" + run.page, "run " + run_ref(run.run.id)), status_badge(a.status),
         interval(m("score"), m("score_lo"), m("score_hi")), text(m("ref_score")),
         interval(m("delta"), m("delta_lo"), m("delta_hi")), text(m("agreement")),
         paired ? number_text(m("items_lost")) + " / " + number_text(m("items_gained")) : "–",
         paired ? number_text(m("mcnemar_p")) : "–", number_text(m("items"))});
  }
  return "<section id=\"accuracy\"><h2>Accuracy per stack version</h2>\n"
         "<p class=\"muted\">Score with its Wilson interval; the delta against the reference "
         "on the same items with its paired bootstrap interval; items lost / gained against the "
         "reference and the exact McNemar p-value of that split.</p>\n"
         "<table class=\"grid accuracy\">\n" +
         html_row({"stack", "platform", "run", "status", "score", "reference", "delta", "agreement",
                   "lost / gained", "McNemar p", "items"},
                  "th") +
         rows + "</table></section>\n";
}

// The items of the latest result whose answer differs from the reference's, with the evidence
// the store keeps (choice logprobs, the continuation's logprob, the completion).
std::string flipped_items(const SiteModel& model, const SiteCase& c) {
  constexpr size_t kMaxRows = 200;
  const store::ResultData& r = c.latest;
  const SiteRun& run = model.runs[static_cast<size_t>(c.latest_run)];
  std::string html =
      "<section id=\"flipped\"><h2>Items answered differently from the reference</h2>\n";
  size_t compared = 0, flipped = 0;
  std::string rows;
  for (const store::EvalItemData& e : r.eval_items) {
    if (e.ref_correct < 0) continue;
    ++compared;
    if (e.answer == e.ref_answer) continue;
    if (++flipped > kMaxRows) continue;
    const bool ref_right = e.ref_correct == 1;
    const char* how = e.correct && !ref_right   ? "gained"
                      : !e.correct && ref_right ? "lost"
                      : e.correct               ? "both right"
                                                : "both wrong";
    const json evidence = base::parse_json_or_discarded(e.evidence_json);
    std::string ev;
    if (evidence.is_object()) {
      for (const char* k : {"choice_logprobs", "logprob", "text"})
        if (evidence.contains(k))  // a completion quoted: its leading space and newlines show
          ev += std::string(ev.empty() ? "" : "; ") + k + " " +
                html_escape(evidence[k].dump(-1, ' ', false, json::error_handler_t::replace));
    }
    rows += html_row(
        {html_escape(e.item_id), html_escape(e.answer), html_escape(e.ref_answer), how, ev});
  }
  html += "<p>In " + html_link("../" + run.page, "run " + run_ref(run.run.id)) + ": " +
          std::to_string(flipped) + " of " + std::to_string(compared) +
          " items compared with the reference" +
          (compared == 0 ? " (this result has no reference)" : "") + ".</p>\n";
  if (flipped == 0) return html + "</section>\n";
  if (flipped > kMaxRows)
    html += "<p class=\"muted\">The first " + std::to_string(kMaxRows) + " are listed.</p>\n";
  return html + "<table class=\"grid flipped\">\n" +
         html_row({"item", "answer", "reference's", "score", "evidence"}, "th") + rows +
         "</table></section>\n";
}

}  // namespace

std::string check_page(const SiteModel& model, size_t case_index) {
  const SiteCase& c = model.cases[case_index];
  const PageSpec page{c.case_id,        "../", "check", {{"case", std::to_string(case_index)}},
                      {"data/site.js"}, true};
  std::string html = page_begin(page);
  html += "<h1 class=\"case-id\">" + html_escape(c.case_id) + "</h1>\n<p>check " +
          html_escape(c.check_id) + " · kind " + html_escape(c.kind) + " · suite " +
          html_escape(c.suite) + " · params <code>" + html_escape(c.params_json) +
          "</code> · key metric <code>" +
          html_escape(c.key_metric.empty() ? "none" : c.key_metric) + "</code></p>\n";
  html +=
      "<section id=\"per-stack\"><h2>Per stack version</h2><div "
      "id=\"stack-table\"></div></section>\n"
      "<section id=\"trends\"><h2>Trends</h2>\n<div class=\"charts\">"
      "<div class=\"chart\"><canvas id=\"chart-key\"></canvas></div>"
      "<div class=\"chart\"><canvas id=\"chart-latency\"></canvas></div></div></section>\n";
  if (!c.accuracy.empty()) html += accuracy_table(model, c) + flipped_items(model, c);
  if (!c.engine.empty()) html += engine_table(model, c);
  html += evidence(model, c) + latest_tables(model, c);
  return html + page_end(page);
}

}  // namespace h0::report
