// Chat prompts of the tiny models against transformers' apply_chat_template(...,
// add_generation_prompt=True) and tokenizer.encode(text, add_special_tokens=False) on the same
// configs/models/* files (the expected strings and ids below were produced that way).
#include "service/chat_template.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/json_read.h"
#include "model/vision/image.h"
#include "test_util.h"

namespace h0::service {
namespace {

std::string model_dir(const std::string& name) {
  return h0::test::source_path("configs/models/" + name);
}

ChatMessage text(const std::string& role, const std::string& content) {
  return {role, {{"text", content, ""}}};
}

const std::vector<ChatMessage> kSystemUser = {text("system", "  You are terse. "),
                                              text("user", "Hi there!\n")};

std::vector<int64_t> ids_of(const std::string& name, const std::vector<ChatMessage>& messages) {
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(model_dir(name));
  return chat_prompt_ids(tok, ChatTemplate::load(model_dir(name)).render(messages),
                         image_tokens_of(model_dir(name)));
}

TEST(ChatTemplate, Llama3TrimsContentAndStartsWithBos) {
  const ChatTemplate t = ChatTemplate::load(model_dir("tiny-llama"));
  EXPECT_EQ(t.family(), "llama3");
  EXPECT_EQ(
      t.render(kSystemUser),
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi there!<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(
      ids_of("tiny-llama", kSystemUser),
      (std::vector<int64_t>{1019, 1021, 82, 88,   284,  650,  1022, 198, 198,  56,   659, 434,
                            256,  328,  68, 13,   1023, 1021, 373,  261, 1022, 198,  198, 39,
                            72,   723,  0,  1023, 1021, 601,  387,  297, 83,   1022, 198, 198}));
}

TEST(ChatTemplate, ChatMlKeepsContentAsIsWithoutBos) {
  const ChatTemplate t = ChatTemplate::load(model_dir("tiny-qwen3-moe"));
  EXPECT_EQ(t.family(), "chatml");
  EXPECT_EQ(t.render(kSystemUser),
            "<|im_start|>system\n  You are terse. <|im_end|>\n<|im_start|>user\nHi "
            "there!\n<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(ids_of("tiny-qwen3-moe", kSystemUser),
            (std::vector<int64_t>{1020, 82, 88,  284,  643,  198,  220,  220, 56,  652, 433, 256,
                                  328,  68, 13,  220,  1021, 198,  1020, 373, 261, 198, 39,  72,
                                  716,  0,  198, 1021, 198,  1020, 596,  387, 297, 83,  198}));
}

// transformers 5 saves the template as chat_template.jinja, tokenizer_config.json holding none
// (tiny-qwen2-5-vl, written by save_pretrained); the expected text is its apply_chat_template's.
TEST(ChatTemplate, ReadsChatTemplateJinjaBesideTheTokenizerConfig) {
  const ChatTemplate t =
      ChatTemplate::load(h0::test::source_path("tests/data/models/tiny-qwen2-5-vl"));
  EXPECT_EQ(t.family(), "chatml");
  EXPECT_EQ(t.render(kSystemUser),
            "<|im_start|>system\n  You are terse. <|im_end|>\n<|im_start|>user\nHi "
            "there!\n<|im_end|>\n<|im_start|>assistant\n");
}

// The template's text for any family, from either file (the Day-0 conversation stage looks for a
// reasoning format in it): the chat fixture's chat_template.jinja, tiny-llama's tokenizer_config.
TEST(ChatTemplate, TheTextComesFromEitherFile) {
  const std::string qwen =
      chat_template_text(h0::test::source_path("tests/data/chat-models/tiny-qwen3-chat"));
  EXPECT_NE(qwen.find("enable_thinking"), std::string::npos);
  EXPECT_NE(qwen.find("<tool_call>"), std::string::npos);
  EXPECT_EQ(chat_template_text(h0::test::source_path("configs/models/tiny-llama"))
                .rfind("{{ bos_token }}", 0),
            0u);
  EXPECT_THROW(chat_template_text(h0::test::source_path("tests/data/no-such-model")), InputError);
}

TEST(ChatTemplate, DeepSeekRolesAndEndOfSentence) {
  const std::vector<ChatMessage> m = {text("system", "Be terse."), text("user", "Hi there!"),
                                      text("assistant", "Hello."), text("user", "Again")};
  EXPECT_EQ(ChatTemplate::load(model_dir("tiny-deepseek-v3")).render(m),
            "<｜begin▁of▁sentence｜>Be terse.<｜User｜>Hi "
            "there!<｜Assistant｜>Hello.<｜end▁of▁sentence｜><｜User｜>Again<｜Assistant｜>");
  EXPECT_EQ(ids_of("tiny-deepseek-v3", m),
            (std::vector<int64_t>{0, 35,   70, 258, 330, 70, 15, 1022, 41, 74,  724,
                                  2, 1023, 41, 288, 430, 15, 1,  1022, 34, 874, 1023}));
}

TEST(ChatTemplate, ImagePartBecomesTheModelsImageTokens) {
  const std::vector<ChatMessage> m = {
      {"user", {{"text", "What is this?", ""}, {"image_url", "", "data:image/png;base64,"}}}};
  EXPECT_EQ(ChatTemplate::load(model_dir("tiny-llava")).render(m),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
            "this?\n<image><|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  const ImageTokens image = image_tokens_of(model_dir("tiny-llava"));
  EXPECT_EQ(image.token,
            1003);  // config.json's image_token_index, not the tokenizer's <image> (1023)
  EXPECT_EQ(image.count, 16);
  std::vector<int64_t> want = {1018, 1020, 373, 261, 1021, 198, 198,
                               54,   71,   273, 367, 772,  30,  198};
  want.insert(want.end(), 16, 1003);
  want.insert(want.end(), {1022, 1020, 601, 387, 297, 83, 1021, 198, 198});
  EXPECT_EQ(ids_of("tiny-llava", m), want);
  EXPECT_EQ(image_tokens_of(model_dir("tiny-llama")).token, -1);
}

// Qwen2.5-VL: parts concatenated, each image as <|vision_start|>, its grid's count of
// <|image_pad|>, <|vision_end|>. The ids are transformers' (Qwen2_5_VLProcessor's expansion,
// golden/e2e/tiny-qwen2-5-vl/chat_image_tall.json), the count from our processor's grid.
TEST(ChatTemplate, QwenVlImagePartsTakeTheirGridsTokenCount) {
  const std::string dir = h0::test::source_path("tests/data/models/tiny-qwen2-5-vl");
  const std::vector<ChatMessage> m = {
      {"user",
       {{"text", "Describe this picture.", ""}, {"image_url", "", "data:image/jpeg;base64,"}}}};
  const ChatTemplate t = ChatTemplate::load(dir);
  EXPECT_EQ(
      t.render(m),
      "<|im_start|>user\nDescribe this picture.<|vision_start|><image><|vision_end|><|im_end|>\n"
      "<|im_start|>assistant\n");
  const model::QwenVlProcessor p = model::load_qwen_vl_processor(dir);
  const model::QwenVlPixels px = model::qwen_vl_pixels(
      model::decode_image(h0::test::golden_path("models/images/qvl_tall.jpg")), p);
  const ImageTokens image = image_tokens_of(dir);
  EXPECT_EQ(image.token, 1026);  // <|image_pad|>
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(dir);
  const nlohmann::json golden =
      base::read_json_file(h0::test::golden_path("e2e/tiny-qwen2-5-vl/chat_image_tall.json"));
  EXPECT_EQ(chat_prompt_ids(tok, t.render(m), image, {px.tokens(p.merge_size)}),
            golden["prompt_token_ids"].get<std::vector<int64_t>>());
  EXPECT_THROW(chat_prompt_ids(tok, t.render(m), image, {4, 4}),
               InputError);  // no: a count per part
}

TEST(ChatTemplate, TrimIsPythonStripOverUnicodeWhitespace) {
  const ChatTemplate t = ChatTemplate::load(model_dir("tiny-llama"));
  const std::string out = t.render({text("user", "\u3000\u00a0\t hé \u2003\n")});
  EXPECT_NE(out.find("<|end_header_id|>\n\nhé<|eot_id|>"), std::string::npos) << out;
  // Parts join with "\n" and the whole is trimmed: the leading empty text part leaves nothing.
  const std::string joined =
      t.render({{"user", {{"text", "", ""}, {"text", "a", ""}, {"text", "b ", ""}}}});
  EXPECT_NE(joined.find("\n\na\nb<|eot_id|>"), std::string::npos) << joined;
}

TEST(ChatTemplate, OtherTemplatesAreAnErrorNamingTheFile) {
  const nlohmann::json config = {
      {"chat_template", "{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"}};
  try {
    ChatTemplate::from_config(config, "x/tokenizer_config.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x/tokenizer_config.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("chat_template"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChatTemplate::from_config(nlohmann::json::object(), "y"), InputError);
}

}  // namespace
}  // namespace h0::service
