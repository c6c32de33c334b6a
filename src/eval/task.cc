#include "eval/task.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "base/input_file.h"
#include "base/sha256.h"

namespace h0::eval {
namespace {

using nlohmann::json;

[[noreturn]] void fail_at(const std::string& path, int line, const std::string& what) {
  throw InputError(path + ":" + std::to_string(line), what);
}

// A field's value as prompt text: strings as they are, numbers as JSON writes them.
std::optional<std::string> field_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return std::nullopt;
}

// `tmpl` with each {name} replaced by `fields[name]` ({{ and }} are literal braces). Throws
// InputError at `where` for a field the item lacks.
std::string render(const std::string& tmpl, const json& fields, const std::string& path, int line,
                   const std::string& what) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if ((c == '{' || c == '}') && i + 1 < tmpl.size() && tmpl[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t end = tmpl.find('}', i);
    if (end == std::string::npos) fail_at(path, line, what + " has an unclosed '{': " + tmpl);
    const std::string name = tmpl.substr(i + 1, end - i - 1);
    const json* v = fields.is_object() && fields.contains(name) ? &fields.at(name) : nullptr;
    std::optional<std::string> text = v ? field_text(*v) : std::nullopt;
    if (!text)
      fail_at(path, line,
              what + " names {" + name + "}, which this item " +
                  (v ? "holds as neither a string nor a number" : "does not have"));
    out += *text;
    i = end;
  }
  return out;
}

Scorer parse_scorer(const std::string& s, const std::string& where) {
  if (s == "multiple_choice") return Scorer::kMultipleChoice;
  if (s == "generate") return Scorer::kGenerate;
  if (s == "logprob_target") return Scorer::kLogprobTarget;
  throw InputError(
      where, "scorer must be one of: multiple_choice, generate, logprob_target; got '" + s + "'");
}

// Applies one spec key (from the header at `where`, or from the suite).
void apply_key(TaskSpec* spec, const std::string& key, const YAML::Node& v,
               const std::string& where) {
  auto scalar = [&]() {
    if (!v.IsScalar()) throw InputError(where, key + " must be a string");
    return v.Scalar();
  };
  auto integer = [&](int64_t min) {
    try {
      const int64_t n = v.as<int64_t>();
      if (n < min) throw InputError(where, key + " must be >= " + std::to_string(min));
      return n;
    } catch (const YAML::Exception&) {
      throw InputError(where, key + " must be an integer");
    }
  };
  if (key == "scorer") {
    spec->scorer = parse_scorer(scalar(), where);
  } else if (key == "name") {
    spec->name = scalar();
  } else if (key == "licence" || key == "license") {
    spec->licence = scalar();
  } else if (key == "template") {
    spec->prompt_template = scalar();
  } else if (key == "choices_field") {
    spec->choices_field = scalar();
  } else if (key == "choice_template") {
    spec->choice_template = scalar();
  } else if (key == "answer_field") {
    spec->answer_field = scalar();
  } else if (key == "target_template") {
    spec->target_template = scalar();
  } else if (key == "extract") {
    const std::string e = scalar();
    if (e.rfind("regex:", 0) == 0) {
      spec->extract = "regex";
      spec->regex = e.substr(6);
      try {
        spec->compiled.emplace(spec->regex);
      } catch (const std::regex_error& ex) {
        throw InputError(where, "extract: bad regex /" + spec->regex + "/: " + ex.what());
      }
    } else if (e == "exact" || e == "last_number") {
      spec->extract = e;
    } else {
      throw InputError(where,
                       "extract must be exact, last_number or regex:<pattern>; got '" + e + "'");
    }
  } else if (key == "max_tokens") {
    spec->max_tokens = integer(1);
  } else if (key == "stop") {
    spec->stop.clear();
    if (v.IsScalar()) {
      spec->stop.push_back(v.Scalar());
    } else if (v.IsSequence()) {
      for (const auto& s : v) {
        if (!s.IsScalar() || s.Scalar().empty())
          throw InputError(where, "stop must be a string or a list of non-empty strings");
        spec->stop.push_back(s.Scalar());
      }
    } else {
      throw InputError(where, "stop must be a string or a list of strings");
    }
  } else if (key == "fewshot") {
    spec->fewshot = integer(0);
  } else if (key == "fewshot_separator") {
    spec->fewshot_separator = scalar();
  } else if (key == "id_field") {
    spec->id_field = scalar();
  } else {
    std::string known;
    for (const auto& k : spec_keys()) known += (known.empty() ? "" : ", ") + k;
    throw InputError(where, "unknown task key '" + key + "' (expected one of: " + known + ")");
  }
}

// The right choice of an item: its index, its letter or its text.
int64_t gold_choice(const json& answer, const std::vector<std::string>& choices,
                    const std::string& path, int line) {
  const int64_t n = int64_t(choices.size());
  if (answer.is_number_integer()) {
    const int64_t i = answer.get<int64_t>();
    if (i < 0 || i >= n)
      fail_at(path, line,
              "answer " + std::to_string(i) + " is not a choice index in [0, " + std::to_string(n) +
                  ")");
    return i;
  }
  if (answer.is_string()) {
    const std::string a = answer.get<std::string>();
    for (int64_t i = 0; i < n; ++i)
      if (choices[size_t(i)] == a) return i;
    if (a.size() == 1 && std::isupper(static_cast<unsigned char>(a[0])) && a[0] - 'A' < n)
      return a[0] - 'A';
    fail_at(path, line, "answer \"" + a + "\" is neither a choice, its letter nor its index");
  }
  fail_at(path, line, "answer must be a choice index, letter or text");
}

// `text` split into lines numbered from 1, each without its "\n" or "\r\n".
std::vector<std::pair<int, std::string>> numbered_lines(const std::string& text) {
  std::vector<std::pair<int, std::string>> lines;
  size_t at = 0;
  int n = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.emplace_back(++n, std::move(line));
    at = end + 1;
  }
  return lines;
}

// The header: the leading blank and `#` lines, with their "# " (or "#") taken off. Sets
// `first_item` to the index of the first line after it.
std::string header_text(const std::vector<std::pair<int, std::string>>& lines, size_t* first_item) {
  size_t i = 0;
  std::string header;
  while (i < lines.size() && (lines[i].second.empty() || lines[i].second[0] == '#')) {
    const std::string& l = lines[i].second;
    header += (l.size() >= 2 && l[1] == ' ') ? l.substr(2) : l.empty() ? "" : l.substr(1);
    header += '\n';
    ++i;
  }
  *first_item = i;
  return header;
}

// Applies the keys of the YAML `header` of the task file at `path`.
void apply_header(TaskSpec* spec, const std::string& header, const std::string& path) {
  if (header.empty()) return;
  YAML::Node h;
  try {
    h = YAML::Load(header);
  } catch (const YAML::Exception& e) {
    fail_at(path, e.mark.line + 1, "the header is not YAML: " + e.msg);
  }
  if (!h.IsDefined() || h.IsNull()) return;
  if (!h.IsMap()) fail_at(path, 1, "the header must be a YAML mapping (# key: value lines)");
  for (const auto& kv : h)
    apply_key(spec, kv.first.Scalar(), kv.second,
              path + ":" + std::to_string(kv.first.Mark().line + 1));
}

// Applies the suite's keys for this task (a mapping in `overrides_file`), over the header's.
void apply_overrides(TaskSpec* spec, const YAML::Node& overrides,
                     const std::string& overrides_file) {
  if (!overrides.IsDefined() || !overrides.IsMap()) return;
  for (const auto& kv : overrides) {
    const YAML::Mark m = kv.first.Mark();
    apply_key(
        spec, kv.first.Scalar(), kv.second,
        overrides_file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1));
  }
}

// A multiple_choice item's gold index and its rendered continuations, one per choice.
void set_choices(const TaskSpec& spec, const json& fields, const json& answer,
                 const std::string& path, int number, Item* item) {
  if (!fields.contains(spec.choices_field) || !fields.at(spec.choices_field).is_array() ||
      fields.at(spec.choices_field).size() < 2)
    fail_at(path, number,
            "a multiple_choice item needs \"" + spec.choices_field +
                "\": a list of at least 2 choices");
  std::vector<std::string> choices;
  for (const json& c : fields.at(spec.choices_field)) {
    std::optional<std::string> t = field_text(c);
    if (!t) fail_at(path, number, "a choice must be a string or a number");
    choices.push_back(*t);
  }
  item->gold = gold_choice(answer, choices, path, number);
  for (const std::string& c : choices) {
    json with = fields;
    with["choice"] = c;
    item->continuations.push_back(
        render(spec.choice_template, with, path, number, "choice_template"));
  }
}

// A generate or logprob_target item's target (GSM8K's "#### <answer>" tail where present) and,
// for logprob_target, its rendered continuation.
void set_target(const TaskSpec& spec, const json& fields, const json& answer,
                const std::string& path, int number, Item* item) {
  std::optional<std::string> t = field_text(answer);
  if (!t) fail_at(path, number, "answer must be a string or a number");
  // GSM8K: the worked solution, then "#### <final answer>".
  if (const size_t hash = t->rfind("####"); hash != std::string::npos) {
    *t = t->substr(hash + 4);
    t->erase(0, t->find_first_not_of(" \t"));
    t->erase(t->find_last_not_of(" \t\n") + 1);
  }
  item->target = *t;
  if (spec.scorer == Scorer::kLogprobTarget) {
    json with = fields;
    with[spec.answer_field] = *t;
    item->continuations.push_back(
        render(spec.target_template, with, path, number, "target_template"));
  }
}

// The item on line `number` of `path` (a JSON object), its prompt without few-shot examples.
Item parse_item(const TaskSpec& spec, const std::string& line, int number,
                const std::string& path) {
  if (line[0] == '#')
    fail_at(path, number,
            "a comment after the first item (the header is the file's leading # lines)");
  json fields = json::parse(line, nullptr, false);
  if (fields.is_discarded()) fail_at(path, number, "not a JSON object: " + line.substr(0, 80));
  if (!fields.is_object()) fail_at(path, number, "an item must be a JSON object");
  Item item;
  item.line = number;
  if (fields.contains(spec.id_field)) {
    std::optional<std::string> id = field_text(fields.at(spec.id_field));
    if (!id) fail_at(path, number, spec.id_field + " must be a string or a number");
    item.id = *id;
  } else {
    item.id = "line " + std::to_string(number);
  }
  if (!fields.contains(spec.answer_field))
    fail_at(path, number, "the item has no \"" + spec.answer_field + "\" (its answer)");
  const json& answer = fields.at(spec.answer_field);
  if (spec.scorer == Scorer::kMultipleChoice) {
    set_choices(spec, fields, answer, path, number, &item);
  } else {
    set_target(spec, fields, answer, path, number, &item);
  }
  item.prompt = render(spec.prompt_template, fields, path, number, "the template");
  item.fields = std::move(fields);
  return item;
}

// Few-shot: the first spec.fewshot items, solved, each followed by the separator.
std::string fewshot_prefix(const TaskSpec& spec, const std::vector<Item>& all) {
  std::string shots;
  for (int64_t k = 0; k < spec.fewshot; ++k) {
    const Item& e = all[size_t(k)];
    const std::string solved = spec.scorer == Scorer::kGenerate
                                   ? " " + e.target
                                   : e.continuations[size_t(std::max<int64_t>(e.gold, 0))];
    shots += e.prompt + solved + spec.fewshot_separator;
  }
  return shots;
}

}  // namespace

const char* scorer_name(Scorer s) {
  switch (s) {
    case Scorer::kMultipleChoice:
      return "multiple_choice";
    case Scorer::kGenerate:
      return "generate";
    case Scorer::kLogprobTarget:
      return "logprob_target";
  }
  return "?";
}

const std::vector<std::string>& spec_keys() {
  static const std::vector<std::string> keys = {"scorer",
                                                "name",
                                                "licence",
                                                "template",
                                                "choices_field",
                                                "choice_template",
                                                "answer_field",
                                                "target_template",
                                                "extract",
                                                "max_tokens",
                                                "stop",
                                                "fewshot",
                                                "fewshot_separator",
                                                "id_field"};
  return keys;
}

std::string normalize_answer(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += char(std::tolower(static_cast<unsigned char>(c)));
  }
  if (!out.empty() && out.back() == '.') out.pop_back();
  // A number: no thousands separators, no trailing ".0"s ("1,234.50" -> "1234.5").
  static const std::regex number(R"(^[-+]?[0-9][0-9,]*(\.[0-9]+)?$)");
  if (std::regex_match(out, number)) {
    out.erase(std::remove(out.begin(), out.end(), ','), out.end());
    if (out.find('.') != std::string::npos) {
      while (out.back() == '0') out.pop_back();
      if (out.back() == '.') out.pop_back();
    }
    if (out[0] == '+') out.erase(0, 1);
  }
  return out;
}

std::string extract_answer(const TaskSpec& spec, const std::string& completion) {
  if (spec.extract == "last_number") {
    static const std::regex number(R"([-+]?[0-9][0-9,]*(\.[0-9]+)?)");
    std::string last;
    for (auto it = std::sregex_iterator(completion.begin(), completion.end(), number);
         it != std::sregex_iterator(); ++it)
      last = it->str();
    while (!last.empty() && last.back() == ',') last.pop_back();
    return normalize_answer(last);
  }
  if (spec.extract == "regex" && spec.compiled) {
    std::smatch m;
    if (!std::regex_search(completion, m, *spec.compiled)) return "";
    return normalize_answer(m.size() > 1 && m[1].matched ? m[1].str() : m[0].str());
  }
  return normalize_answer(completion);
}

Task load_task(const std::string& path, const YAML::Node& overrides,
               const std::string& overrides_file) {
  Task task;
  task.path = path;
  const std::string text = base::read_regular_file(path, uint64_t(1) << 30);
  task.sha256 = base::sha256_hex(text.data(), text.size());
  task.spec.name = std::filesystem::path(path).stem().string();

  // The header: the `#` lines before the first item, as YAML.
  const std::vector<std::pair<int, std::string>> lines = numbered_lines(text);
  size_t first_item = 0;
  apply_header(&task.spec, header_text(lines, &first_item), path);
  apply_overrides(&task.spec, overrides, overrides_file);
  const TaskSpec& spec = task.spec;

  std::vector<Item> all;
  for (size_t i = first_item; i < lines.size(); ++i) {
    const auto& [number, line] = lines[i];
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    all.push_back(parse_item(spec, line, number, path));
  }
  if (int64_t(all.size()) <= spec.fewshot)
    throw InputError(path, "no items to score (" + std::to_string(all.size()) + " items, fewshot " +
                               std::to_string(spec.fewshot) + ")");
  const std::string shots = fewshot_prefix(spec, all);
  std::set<std::string> seen;
  for (size_t k = size_t(spec.fewshot); k < all.size(); ++k) {
    Item& item = all[k];
    if (!seen.insert(item.id).second)
      fail_at(path, item.line, "duplicate item id \"" + item.id + "\"");
    item.prompt = shots + item.prompt;
    task.items.push_back(std::move(item));
  }
  return task;
}

}  // namespace h0::eval
