// The wire formats against recorded responses of real servers and the
// documented request shapes.
#include "wire.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Recorded(std::string_view name) {
  return ReadFileText(fs::path(kope::testing::SourceDir()) / "src/llm/testdata/wire" /
                      std::string(name))
      .value_or("");
}

LlmRequest Request() {
  LlmRequest r;
  r.system = "You optimize kernels.";
  r.messages = {{Role::kUser, "Make it faster."},
                {Role::kAssistant, "Which kernel?"},
                {Role::kUser, "The row sum."}};
  r.model = "m1";
  r.temperature = 0.25;
  r.max_tokens = 512;
  r.stop = {"</done>"};
  return r;
}

TEST(OpenAiWireTest, BuildsChatCompletionRequests) {
  ProviderConfig c = DefaultProviderConfig(ProviderKind::kOpenAi, "o");
  c.base_url = "http://host:8000/v1/";
  auto wire = MakeOpenAiWire(c);
  EXPECT_EQ(wire->Url(), "http://host:8000/v1/chat/completions");
  EXPECT_EQ(wire->Headers("sk-1"), std::vector<std::string>{"Authorization: Bearer sk-1"});
  EXPECT_TRUE(wire->Headers("").empty());
  json body = json::parse(wire->Body(Request()));
  EXPECT_EQ(body["model"], "m1");
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "You optimize kernels."}}));
  EXPECT_EQ(body["messages"][1]["role"], "user");
  EXPECT_EQ(body["messages"][2]["role"], "assistant");
  EXPECT_EQ(body["messages"][3]["content"], "The row sum.");
  EXPECT_EQ(body["temperature"], 0.25);
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["stop"], json::array({"</done>"}));
  EXPECT_EQ(body["stream"], false);

  c.max_tokens_field = "max_completion_tokens";
  LlmRequest bare = Request();
  bare.system.clear();
  bare.temperature.reset();
  bare.stop.clear();
  body = json::parse(MakeOpenAiWire(c)->Body(bare));
  EXPECT_EQ(body["max_completion_tokens"], 512);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_FALSE(body.contains("stop"));
  EXPECT_EQ(body["messages"][0]["role"], "user");
}

TEST(AnthropicWireTest, BuildsMessagesRequests) {
  ProviderConfig c = DefaultProviderConfig(ProviderKind::kAnthropic, "a");
  c.base_url = "https://api.anthropic.com";
  auto wire = MakeAnthropicWire(c);
  EXPECT_EQ(wire->Url(), "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(wire->Headers("k"),
            (std::vector<std::string>{"anthropic-version: 2023-06-01", "x-api-key: k"}));
  json body = json::parse(wire->Body(Request()));
  EXPECT_EQ(body["system"], "You optimize kernels.");
  ASSERT_EQ(body["messages"].size(), 3u);  // the system prompt is not a message
  EXPECT_EQ(body["messages"][0], json({{"role", "user"}, {"content", "Make it faster."}}));
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["temperature"], 0.25);
  EXPECT_EQ(body["stop_sequences"], json::array({"</done>"}));

  LlmRequest bare = Request();
  bare.max_tokens.reset();
  bare.system.clear();
  body = json::parse(wire->Body(bare));
  EXPECT_EQ(body["max_tokens"], 8192);  // required by the API
  EXPECT_FALSE(body.contains("system"));
}

TEST(OpenAiWireTest, ParsesRecordedResponses) {
  auto wire = MakeOpenAiWire(DefaultProviderConfig(ProviderKind::kOpenAi, "o"));
  Result<LlmResponse> r = wire->ParseReply(Recorded("openai_chat_completion.json"), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "DECISION: unroll by 4.\n```cpp\nint kope_kernel();\n```");
  EXPECT_EQ(r->usage.prompt_tokens, 1117);
  EXPECT_EQ(r->usage.completion_tokens, 46);
  EXPECT_FALSE(r->usage.estimated);
  EXPECT_EQ(r->model, "gpt-4o-2024-08-06");
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_EQ(r->request_id, "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG");

  r = wire->ParseReply(Recorded("openai_null_content.json"), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "");

  r = wire->ParseReply(Recorded("openai_content_parts.json"), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "part one, part two");
  EXPECT_TRUE(r->truncated());

  r = wire->ParseReply(Recorded("vllm_chat_completion.json"), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "vllm says hi");
  EXPECT_EQ(r->usage.prompt_tokens, 31);
  EXPECT_EQ(r->usage.completion_tokens, 5);

  r = wire->ParseReply(Recorded("llamacpp_no_usage.json"), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "hello from llama.cpp");
  EXPECT_TRUE(r->usage.estimated);
  EXPECT_EQ(r->usage.completion_tokens, EstimateTokens("hello from llama.cpp"));
  EXPECT_EQ(r->usage.prompt_tokens, EstimatePromptTokens(Request()));
}

TEST(AnthropicWireTest, ParsesRecordedResponses) {
  auto wire = MakeAnthropicWire(DefaultProviderConfig(ProviderKind::kAnthropic, "a"));
  Result<LlmResponse> r = wire->ParseReply(Recorded("anthropic_message.json"), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "DECISION: tile by 32.\n```cpp\nint kope_kernel();\n```");
  EXPECT_EQ(r->usage.prompt_tokens, 2095);
  EXPECT_EQ(r->usage.completion_tokens, 503);
  EXPECT_EQ(r->model, "claude-sonnet-4-5-20250929");
  EXPECT_EQ(r->finish_reason, "end_turn");
  EXPECT_EQ(r->request_id, "msg_013Zva2CMHLNnXjNJJKqJ2EF");
  EXPECT_FALSE(r->truncated());

  r = wire->ParseReply(Recorded("anthropic_thinking.json"), Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "First part. Second part.");  // the thinking block is not the reply
  EXPECT_EQ(r->usage.prompt_tokens, 100 + 2000 + 300);
  EXPECT_EQ(r->usage.completion_tokens, 4096);
  EXPECT_TRUE(r->truncated());
}

TEST(WireTest, BadBodiesSayWhatIsWrong) {
  auto openai = MakeOpenAiWire(DefaultProviderConfig(ProviderKind::kOpenAi, "o"));
  auto anthropic = MakeAnthropicWire(DefaultProviderConfig(ProviderKind::kAnthropic, "a"));
  struct Case {
    const WireFormat* wire;
    std::string body;
    std::string expected;
  } cases[] = {
      {openai.get(), R"({"id": "x", "choices": [)", "not valid JSON"},
      {openai.get(), "", "not valid JSON"},
      {openai.get(), "[1, 2]", "not a JSON object"},
      {openai.get(), R"({"id": "x"})", "has no \"choices\""},
      {openai.get(), R"({"choices": []})", "not a non-empty array"},
      {openai.get(), R"({"choices": [{"text": "legacy"}]})", "no \"message\" object"},
      {openai.get(), R"({"choices": [{"message": {"content": 5}}]})", "is a number"},
      {openai.get(), R"({"error": {"message": "upstream failed"}})", "upstream failed"},
      {anthropic.get(), R"({"type": "message", "content": "text"})", "not an array of blocks"},
      {anthropic.get(), R"({"type": "message"})", "has no \"content\""},
      {anthropic.get(), R"({"type": "completion", "content": []})", "not \"message\""},
      {anthropic.get(), R"({"content": [{"type": "text"}]})", "no \"text\" string"},
      {anthropic.get(), R"({"type": "error", "error": {"message": "overloaded"}})", "overloaded"},
  };
  for (const Case& c : cases) {
    Result<LlmResponse> r = c.wire->ParseReply(c.body, Request());
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos) << r.status().message();
  }
}

TEST(WireTest, ReadsEveryErrorShape) {
  ServerError e = ParseServerError(Recorded("openai_error_model_not_found.json"));
  EXPECT_EQ(e.code, "model_not_found");
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_NE(e.message.find("gpt-9"), std::string::npos);
  e = ParseServerError(Recorded("anthropic_error_auth.json"));
  EXPECT_EQ(e.type, "authentication_error");
  EXPECT_EQ(e.message, "invalid x-api-key");
  e = ParseServerError(Recorded("ollama_error.json"));
  EXPECT_EQ(e.message, "model \"llama9\" not found, try pulling it first");
  e = ParseServerError(Recorded("vllm_error.json"));
  EXPECT_EQ(e.message, "The model `qwen-huge` does not exist.");
  EXPECT_EQ(e.code, "404");
  e = ParseServerError("<html>502 Bad Gateway</html>");
  EXPECT_EQ(e.message, "<html>502 Bad Gateway</html>");
  e = ParseServerError("");
  EXPECT_EQ(e.message, "(empty body)");
}

}  // namespace
}  // namespace kope::llm
