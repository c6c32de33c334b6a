#include "service/chat_template.h"

#include <fstream>
#include <sstream>
#include <string_view>

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_read.h"
#include "model/config/architecture.h"
#include "model/config/tower.h"

namespace h0::service {
namespace {

struct Family {
  const char* name;
  const char* marker;  // a string only this family's templates hold
  void (*render)(const std::string& bos, const Parts& parts,
                 const std::vector<ChatMessage>& messages, std::string* out);
};

// The content as one string: parts joined with parts.separator, an image part as parts.image.
std::string joined(const ChatMessage& m, const Parts& parts) {
  std::string s;
  for (size_t i = 0; i < m.content.size(); ++i) {
    if (i > 0) s += parts.separator;
    s += m.content[i].type == "image_url" ? parts.image : m.content[i].text;
  }
  return s;
}

// Length of the Python whitespace character (str.isspace) starting at s[i], else 0.
size_t space_at(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  static constexpr std::string_view kWide[] = {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2001",
                                               "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
                                               "\u2007", "\u2008", "\u2009", "\u200a", "\u2028",
                                               "\u2029", "\u202f", "\u205f", "\u3000"};
  for (std::string_view w : kWide) {
    if (s.substr(i, w.size()) == w) return w.size();
  }
  return 0;
}

// Jinja's `trim` filter: Python's str.strip() (Unicode whitespace at both ends).
std::string trim(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    const size_t n = space_at(s, begin);
    if (n == 0) break;
    begin += n;
  }
  size_t end = begin;  // one past the last non-space character
  for (size_t i = begin; i < s.size();) {
    const size_t n = space_at(s, i);
    if (n == 0) {
      const auto c = static_cast<unsigned char>(s[i]);
      i += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
      end = std::min(i, s.size());
    } else {
      i += n;
    }
  }
  return std::string(s.substr(begin, end - begin));
}

void render_llama3(const std::string& bos, const Parts& parts,
                   const std::vector<ChatMessage>& messages, std::string* out) {
  *out += bos;
  for (const ChatMessage& m : messages) {
    *out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(joined(m, parts)) +
            "<|eot_id|>";
  }
  *out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

void render_chatml(const std::string& bos, const Parts& parts,
                   const std::vector<ChatMessage>& messages, std::string* out) {
  *out += bos;
  for (const ChatMessage& m : messages)
    *out += "<|im_start|>" + m.role + "\n" + joined(m, parts) + "<|im_end|>\n";
  *out += "<|im_start|>assistant\n";
}

void render_deepseek(const std::string& bos, const Parts& parts,
                     const std::vector<ChatMessage>& messages, std::string* out) {
  *out += bos;
  for (const ChatMessage& m : messages) {
    if (m.role == "user") {
      *out += "<｜User｜>" + joined(m, parts);
    } else if (m.role == "assistant") {
      *out += "<｜Assistant｜>" + joined(m, parts) + "<｜end▁of▁sentence｜>";
    } else {
      *out += joined(m, parts);
    }
  }
  *out += "<｜Assistant｜>";
}

constexpr Family kFamilies[] = {
    {"llama3", "<|start_header_id|>", render_llama3},
    {"chatml", "<|im_start|>", render_chatml},
    {"deepseek", "<｜User｜>", render_deepseek},
};

const Family& family_named(const std::string& name) {
  for (const Family& f : kFamilies) {
    if (name == f.name) return f;
  }
  throw std::logic_error("chat template family " + name);
}

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw InputError(path, "cannot be read (the chat template comes from tokenizer_config.json)");
  return base::read_regular_file(path);
}

// <model_dir>/tokenizer_config.json, its chat_template taken from chat_template.jinja when it holds
// none: transformers (4.43 on) saves the template there (transformers 5's save_pretrained,
// Qwen2.5-VL's processor). *where: the file the template came from.
nlohmann::json config_with_template(const std::string& model_dir, std::string* where) {
  *where = model_dir + "/tokenizer_config.json";
  nlohmann::json config = base::parse_json_or_discarded(read_text(*where));
  if (config.is_discarded()) throw InputError(*where, "is not valid JSON (or nested too deep)");
  const std::string jinja = model_dir + "/chat_template.jinja";
  std::error_code ec;
  if (config.is_object() && !config.contains("chat_template") &&
      std::filesystem::is_regular_file(jinja, ec)) {
    config["chat_template"] = base::read_regular_file(jinja);
    *where = jinja;
  }
  return config;
}

}  // namespace

ChatTemplate ChatTemplate::load(const std::string& model_dir) {
  std::string where;
  const nlohmann::json config = config_with_template(model_dir, &where);
  return from_config(config, where);
}

std::string chat_template_text(const std::string& model_dir) {
  std::string where;
  const nlohmann::json config = config_with_template(model_dir, &where);
  return config.is_object() && config.contains("chat_template") &&
                 config["chat_template"].is_string()
             ? config["chat_template"].get<std::string>()
             : "";
}

ChatTemplate ChatTemplate::from_config(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object() || !config.contains("chat_template") ||
      !config["chat_template"].is_string()) {
    throw InputError(
        where, "chat_template: missing (a Jinja template string is required for chat requests)");
  }
  const std::string& tmpl = config["chat_template"].get_ref<const std::string&>();
  ChatTemplate t;
  for (const Family& f : kFamilies) {
    if (tmpl.find(f.marker) != std::string::npos) {
      t.family_ = f.name;
      break;
    }
  }
  if (t.family_.empty()) {
    std::string known;
    for (const Family& f : kFamilies)
      known += std::string(known.empty() ? "" : ", ") + f.name + " (" + f.marker + ")";
    throw InputError(
        where,
        "chat_template: not of a template family the embedded server renders (" + known + ")");
  }
  // Qwen2-VL's templates: parts concatenated, each image as its vision start/end pair around
  // <|image_pad|> (which the processor expands to the image's token count).
  if (tmpl.find("<|vision_start|><|image_pad|><|vision_end|>") != std::string::npos) {
    t.parts_.image = std::string("<|vision_start|>") + kImagePlaceholder + "<|vision_end|>";
    t.parts_.separator = "";
  }
  if (tmpl.find("bos_token") != std::string::npos) {
    const nlohmann::json* bos = config.contains("bos_token") ? &config["bos_token"] : nullptr;
    if (bos != nullptr && bos->is_object() && bos->contains("content")) bos = &(*bos)["content"];
    if (bos == nullptr || !bos->is_string())
      throw InputError(where, "bos_token: missing, but the chat_template writes it");
    t.bos_ = bos->get<std::string>();
  }
  return t;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages) const {
  std::string out;
  family_named(family_).render(bos_, parts_, messages, &out);
  return out;
}

std::vector<int64_t> chat_prompt_ids(const tokenizer::Tokenizer& tokenizer, const std::string& text,
                                     const ImageTokens& image, const std::vector<int64_t>& counts) {
  std::vector<int64_t> ids;
  auto encode = [&](std::string_view piece) {
    for (int32_t id : tokenizer.encode(piece, false)) ids.push_back(id);
  };
  if (image.token < 0) {
    encode(text);
    return ids;
  }
  const std::string_view all(text), placeholder(kImagePlaceholder);
  size_t begin = 0, images = 0;
  for (size_t at = all.find(placeholder); at != std::string_view::npos;
       at = all.find(placeholder, begin)) {
    encode(all.substr(begin, at - begin));
    if (!counts.empty() && images >= counts.size())
      throw InputError("messages", "the chat holds more image parts than the " +
                                       std::to_string(counts.size()) + " images decoded");
    ids.insert(ids.end(), size_t(counts.empty() ? image.count : counts[images]), image.token);
    ++images;
    begin = at + placeholder.size();
  }
  encode(all.substr(begin));
  if (!counts.empty() && images != counts.size())
    throw InputError("messages", "the chat holds " + std::to_string(images) + " image parts for " +
                                     std::to_string(counts.size()) + " images decoded");
  return ids;
}

ImageTokens image_tokens_of(const std::string& model_dir) {
  const model::Architecture arch = model::load_architecture(model_dir);
  const model::Tower* tower = model::tower_of(arch);
  if (tower == nullptr) return {};
  const nlohmann::json config =
      base::parse_json_or_discarded(read_text(model::config_path(model_dir)));
  return {arch.vision->image_token_index, tower->image_tokens(arch, config)};
}

}  // namespace h0::service
