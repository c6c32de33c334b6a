// Chat prompts for the embedded server: the `chat_template` of a model's tokenizer_config.json
// rendered as transformers' apply_chat_template (Jinja, add_generation_prompt=True) renders it,
// for the template families of the tiny models, recognised by their markers:
//   Llama 3   (<|start_header_id|>): [bos] + per message
//             "<|start_header_id|>{role}<|end_header_id|>\n\n{content | trim}<|eot_id|>"
//             + "<|start_header_id|>assistant<|end_header_id|>\n\n"
//   ChatML    (<|im_start|>): per message "<|im_start|>{role}\n{content}<|im_end|>\n"
//             + "<|im_start|>assistant\n"
//   DeepSeek  (<｜User｜>): [bos] + per message "<｜User｜>{content}" (user),
//             "<｜Assistant｜>{content}<｜end▁of▁sentence｜>" (assistant), "{content}" (others)
//             + "<｜Assistant｜>"
// [bos] is the bos_token, present only when the template writes {{ bos_token }}. A message's
// content parts are joined with "\n": a text part as its text, an image part as "<image>".
// A full Jinja engine is out of scope: any other template is an InputError naming the file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "service/client.h"
#include "tokenizer/tokenizer.h"

namespace h0::service {

// The literal an image part renders as, replaced by the image's tokens when tokenized.
inline constexpr const char* kImagePlaceholder = "<image>";

// How a message's content parts become one string: joined by `separator`, an image part written
// as `image` (holding kImagePlaceholder once).
struct Parts {
  std::string image = kImagePlaceholder;
  std::string separator = "\n";
};

class ChatTemplate {
 public:
  // Reads <model_dir>/tokenizer_config.json. Throws InputError naming the file when it is
  // missing, has no chat_template, or the template is of no known family.
  static ChatTemplate load(const std::string& model_dir);
  // From a parsed tokenizer_config.json; `where` names it in errors.
  static ChatTemplate from_config(const nlohmann::json& config, const std::string& where);

  // The prompt text with the generation prompt appended. Messages' content parts are "text"
  // or "image_url" (rendered as kImagePlaceholder).
  std::string render(const std::vector<ChatMessage>& messages) const;
  // "llama3", "chatml" or "deepseek".
  const std::string& family() const { return family_; }

 private:
  std::string family_;
  std::string bos_;  // empty when the template writes no bos_token
  Parts parts_;
};

// The chat template of a model directory as ChatTemplate::load reads it (tokenizer_config.json's
// chat_template, else chat_template.jinja), of any family; "" when there is none. Throws
// InputError for a tokenizer_config.json that is missing or not JSON.
std::string chat_template_text(const std::string& model_dir);

// Where an image's tokens go: `count` copies of `token` per kImagePlaceholder.
struct ImageTokens {
  int64_t token = -1;  // -1: no vision tower; the placeholder is tokenized as text
  int64_t count = 0;
};

// The ids of rendered chat text: encoded without the post-processor's special tokens (added
// tokens written in the text match as such), except that each kImagePlaceholder becomes
// `image.count` copies of `image.token` (each piece between placeholders is encoded alone), or with
// `counts` (Qwen2.5-VL: each image's grid tokens) counts[i] copies for the i-th placeholder.
std::vector<int64_t> chat_prompt_ids(const tokenizer::Tokenizer& tokenizer, const std::string& text,
                                     const ImageTokens& image,
                                     const std::vector<int64_t>& counts = {});

// The image token and the number of them per image from a model's config.json (LLaVA's
// image_token_index and image_seq_length, else the vision tower's patch count); {-1, 0} for a
// model without a vision tower.
ImageTokens image_tokens_of(const std::string& model_dir);

}  // namespace h0::service
