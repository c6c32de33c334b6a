#include "service/openai_protocol.h"

#include <gtest/gtest.h>

namespace h0::service {
namespace {

using nlohmann::json;

TEST(OpenAIProtocol, ChatLogprobsWithTokenIds) {
  json logprobs = json::parse(R"({"content": [
      {"token": "token_id:123", "logprob": -0.25, "bytes": [1],
       "top_logprobs": [{"token": "token_id:123", "logprob": -0.25},
                        {"token": "token_id:9", "logprob": -2.0}]},
      {"token": " world", "logprob": -1.5, "top_logprobs": []}]})");
  std::vector<TokenInfo> tokens;
  ASSERT_EQ(read_logprobs(logprobs, &tokens), "");
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[0].id, 123);
  EXPECT_EQ(tokens[0].text, "");
  EXPECT_EQ(tokens[0].logprob, -0.25);
  ASSERT_EQ(tokens[0].top.size(), 2u);
  EXPECT_EQ(tokens[0].top[0], (std::pair<std::string, double>("token_id:123", -0.25)));
  EXPECT_EQ(tokens[0].top[1], (std::pair<std::string, double>("token_id:9", -2.0)));
  EXPECT_FALSE(tokens[1].id.has_value());
  EXPECT_EQ(tokens[1].text, " world");
  EXPECT_EQ(tokens[1].logprob, -1.5);
}

TEST(OpenAIProtocol, CompletionLogprobsSortsTopByLogprob) {
  json logprobs = json::parse(R"({
      "tokens": ["token_id:5", "b"], "token_logprobs": [null, -0.5],
      "top_logprobs": [{"a": -3.0, "z": -0.1, "m": -1.0}, null], "text_offset": [0, 1]})");
  std::vector<TokenInfo> tokens;
  ASSERT_EQ(read_logprobs(logprobs, &tokens), "");
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[0].id, 5);
  EXPECT_FALSE(tokens[0].logprob.has_value());
  std::vector<std::pair<std::string, double>> top = {{"z", -0.1}, {"m", -1.0}, {"a", -3.0}};
  EXPECT_EQ(tokens[0].top, top);
  EXPECT_EQ(tokens[1].text, "b");
  EXPECT_EQ(tokens[1].logprob, -0.5);
  EXPECT_TRUE(tokens[1].top.empty());
}

TEST(OpenAIProtocol, MalformedLogprobsAreReported) {
  std::vector<TokenInfo> tokens;
  EXPECT_NE(read_logprobs(json::parse(R"({"content": [{"logprob": -1}]})"), &tokens), "");
  EXPECT_NE(read_logprobs(json::parse(R"({"tokens": ["a"], "token_logprobs": []})"), &tokens), "");
  EXPECT_EQ(read_logprobs(json(nullptr), &tokens), "");
  EXPECT_TRUE(tokens.empty());
}

TEST(OpenAIProtocol, TokenIdOf) {
  EXPECT_EQ(token_id_of("token_id:0"), 0);
  EXPECT_EQ(token_id_of("token_id:151643"), 151643);
  EXPECT_EQ(token_id_of("token_id:"), -1);
  EXPECT_EQ(token_id_of("token_id:12x"), -1);
  EXPECT_EQ(token_id_of("token_id:-3"), -1);
  EXPECT_EQ(token_id_of("hello"), -1);
}

TEST(OpenAIProtocol, ReadsNonStreamingChatWithTokenIds) {
  json response = json::parse(R"({
      "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there"},
                   "finish_reason": "length", "token_ids": [10, 11]}],
      "prompt_token_ids": [1, 2, 3],
      "usage": {"prompt_tokens": 3, "completion_tokens": 2}})");
  Result result;
  ASSERT_EQ(read_response(response, true, false, 0.5, &result), "");
  EXPECT_EQ(result.text, "Hi there");
  EXPECT_EQ(result.token_ids, (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(result.prompt_token_ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(result.finish_reason, "length");
  EXPECT_EQ(result.prompt_tokens, 3);
  EXPECT_EQ(result.completion_tokens, 2);
  ASSERT_EQ(result.tokens.size(), 2u);
  EXPECT_EQ(result.tokens[0].id, 10);
  EXPECT_EQ(result.tokens[0].text + result.tokens[1].text, "Hi there");
  EXPECT_EQ(result.tokens[1].arrival_s, 0.5);
  EXPECT_EQ(result.cached_tokens, -1);          // not reported
  EXPECT_TRUE(result.chunk_arrival_s.empty());  // only streams have chunks
}

// A tool call whole (message.tool_calls) and streamed as vLLM 0.32 streams it: the id, type and
// name first, then the arguments in pieces, joined by index.
TEST(OpenAIProtocol, ReadsToolCallsWholeAndFromDeltas) {
  Result plain;
  ASSERT_EQ(read_response(json::parse(R"({"choices": [{"index": 0, "finish_reason": "tool_calls",
      "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call-1",
      "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}]})"),
                          true, false, 0, &plain),
            "");
  ASSERT_EQ(plain.tool_calls.size(), 1u);
  EXPECT_EQ(plain.tool_calls[0].id, "call-1");
  EXPECT_EQ(plain.tool_calls[0].name, "get_weather");
  EXPECT_EQ(plain.tool_calls[0].arguments, "{\"city\": \"Oslo\"}");
  EXPECT_EQ(plain.finish_reason, "tool_calls");
  Result streamed;
  for (
      const char* chunk :
      {R"({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})",
       R"({"choices": [{"index": 0, "delta": {"content": null, "tool_calls": [{"id": "c-7", "type": "function", "index": 0, "function": {"name": "get_weather"}}]}}]})",
       R"({"choices": [{"index": 0, "delta": {"content": null, "tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]}}]})",
       R"({"choices": [{"index": 0, "delta": {"content": null, "tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}}]})",
       R"({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})"}) {
    ASSERT_EQ(read_response(json::parse(chunk), true, true, 0, &streamed), "") << chunk;
  }
  ASSERT_EQ(streamed.tool_calls.size(), 1u);
  EXPECT_EQ(streamed.tool_calls[0].id, "c-7");
  EXPECT_EQ(streamed.tool_calls[0].type, "function");
  EXPECT_EQ(streamed.tool_calls[0].name, "get_weather");
  EXPECT_EQ(streamed.tool_calls[0].arguments, plain.tool_calls[0].arguments);
  Result bad;
  EXPECT_EQ(read_response(json::parse(R"({"choices": [{"index": 0, "message": {"role": "assistant",
      "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": {"a": 1}}}]}}]})"),
                          true, false, 0, &bad),
            "tool_calls[0].function.arguments is not a string");
}

// Added fields go out in the order given: an engine hands a tool's parameters to the chat
// template as received, and tojson writes their keys in that order (sorted keys rendered another
// prompt on vLLM 0.32 than transformers' for the same request).
TEST(OpenAIProtocol, AddedFieldsKeepTheirOrder) {
  Request r;
  r.model = "m";
  r.messages = {{"user", {{"text", "hi", ""}}}};
  r.extra = nlohmann::ordered_json::parse(R"({"tools": [{"type": "function", "function":
      {"name": "f", "parameters": {"type": "object", "properties": {"z": {}, "a": {}},
      "required": ["z"]}}}], "tool_choice": "auto"})");
  const std::string body = request_body(r).dump();
  EXPECT_NE(body.find(R"("tools":[{"type":"function","function":{"name":"f","parameters":)"
                      R"({"type":"object","properties":{"z":{},"a":{}},"required":["z"]}}}],)"
                      R"("tool_choice":"auto")"),
            std::string::npos)
      << body;
}

// The reasoning parser's part: vLLM 0.32 names it `reasoning` (message and delta), DeepSeek's API
// and SGLang `reasoning_content`; streamed deltas are joined; a null one is no reasoning.
TEST(OpenAIProtocol, ReadsReasoningUnderEitherName) {
  Result plain;
  ASSERT_EQ(read_response(json::parse(R"({"choices": [{"index": 0, "finish_reason": "length",
      "message": {"role": "assistant", "content": null, "reasoning": "let me see"}}]})"),
                          true, false, 0, &plain),
            "");
  EXPECT_TRUE(plain.has_reasoning);
  EXPECT_EQ(plain.reasoning, "let me see");
  EXPECT_EQ(plain.text, "");
  Result streamed;
  for (const char* chunk :
       {R"({"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "a"}}]})",
        R"({"choices": [{"index": 0, "delta": {"reasoning_content": "b"}}]})",
        R"({"choices": [{"index": 0, "delta": {"content": "c", "reasoning_content": null}}]})",
        R"({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})"}) {
    ASSERT_EQ(read_response(json::parse(chunk), true, true, 0, &streamed), "") << chunk;
  }
  EXPECT_EQ(streamed.reasoning, "ab");
  EXPECT_EQ(streamed.text, "c");
  Result none, bad;
  ASSERT_EQ(read_response(json::parse(R"({"choices": [{"index": 0, "finish_reason": "stop",
      "message": {"role": "assistant", "content": "hi", "reasoning": null}}]})"),
                          true, false, 0, &none),
            "");
  EXPECT_FALSE(none.has_reasoning);
  EXPECT_EQ(read_response(json::parse(R"({"choices": [{"index": 0, "finish_reason": "stop",
      "message": {"role": "assistant", "content": "hi", "reasoning": 3}}]})"),
                          true, false, 0, &bad),
            "choices[0] reasoning is not a string");
}

// The prefix cache's evidence: vLLM (--enable-prompt-tokens-details) and OpenAI report the prompt
// tokens it served; vLLM's default writes the details as null.
TEST(OpenAIProtocol, ReadsCachedTokensWhenReported) {
  Result cached, none;
  ASSERT_EQ(read_response(json::parse(R"({"choices": [{"text": "a", "finish_reason": "length"}],
      "usage": {"prompt_tokens": 309, "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 256}}})"),
                          false, false, 0, &cached),
            "");
  EXPECT_EQ(cached.cached_tokens, 256);
  ASSERT_EQ(read_response(json::parse(R"({"choices": [{"text": "a", "finish_reason": "length"}],
      "usage": {"prompt_tokens": 3, "completion_tokens": 1, "prompt_tokens_details": null}})"),
                          false, false, 0, &none),
            "");
  EXPECT_EQ(none.cached_tokens, -1);
}

TEST(OpenAIProtocol, ReadsStreamChunks) {
  Result result;
  const char* chunks[] = {
      R"({"choices": [{"delta": {"role": "assistant", "content": ""}}],
          "prompt_token_ids": [7]})",
      R"({"choices": [{"delta": {"content": "A"}, "token_ids": [4],
          "finish_reason": null}]})",
      R"({"choices": [{"delta": {"content": "B"}, "token_ids": [5], "finish_reason": "stop"}]})",
      R"({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}})"};
  double t = 0.1;
  for (const char* chunk : chunks) {
    ASSERT_EQ(read_response(json::parse(chunk), true, true, t, &result), "") << chunk;
    t += 0.1;
  }
  EXPECT_EQ(result.text, "AB");
  EXPECT_EQ(result.token_ids, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(result.prompt_token_ids, (std::vector<int64_t>{7}));
  EXPECT_EQ(result.finish_reason, "stop");
  EXPECT_EQ(result.completion_tokens, 2);
  ASSERT_EQ(result.chunk_arrival_s.size(), 2u);  // the role chunk carries no content
  EXPECT_DOUBLE_EQ(result.ttft_s, 0.2);
  EXPECT_DOUBLE_EQ(result.chunk_arrival_s[1], 0.3);
}

TEST(OpenAIProtocol, MalformedResponsesAreReported) {
  Result result;
  EXPECT_EQ(read_response(json::parse(R"({"choices": []})"), false, false, 0, &result),
            "the response has no choices[0]");
  EXPECT_EQ(read_response(json::parse(R"({"object": "x"})"), false, true, 0, &result),
            "the response has no choices array");
  EXPECT_EQ(read_response(json::parse(R"({"choices": [{"text": "a", "token_ids": ["1"]}]})"), false,
                          false, 0, &result),
            "choices[0].token_ids is not an array of integers");
  EXPECT_EQ(read_response(json::parse(R"({"choices": [{"text": 5}]})"), false, false, 0, &result),
            "choices[0] content is not a string");
}

TEST(OpenAIProtocol, ErrorMessage) {
  EXPECT_EQ(error_message(json::parse(R"({"error": {"message": "bad model", "code": 404}})")),
            "bad model");
  EXPECT_EQ(error_message(json::parse(R"({"error": "overloaded"})")), "overloaded");
  EXPECT_EQ(error_message(json::parse(R"({"detail": "Not Found"})")), "Not Found");
  EXPECT_EQ(error_message(json::parse(R"({"object": "list"})")), "");
  EXPECT_EQ(error_message(json::parse("[1]")), "");
}

}  // namespace
}  // namespace h0::service
