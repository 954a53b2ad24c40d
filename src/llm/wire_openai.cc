// OpenAI-compatible chat completions: POST {base_url}/chat/completions.
//
// Request:  {"model", "messages": [{"role": "system"|"user"|"assistant", "content"}],
//            "temperature"?, "max_tokens"|"max_completion_tokens"?, "stop"?, "stream": false}
// Response: {"id", "model", "choices": [{"message": {"role", "content"}, "finish_reason"}],
//            "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}
#include <fmt/format.h>

#include "wire.h"

namespace kope::llm {
namespace {

const char* RoleName(Role role) { return role == Role::kUser ? "user" : "assistant"; }

// message.content is a string, null (a refusal or tool call), or, on some
// compatible servers, an array of {"type": "text", "text"} parts.
Result<std::string> MessageText(const nlohmann::json& message) {
  const nlohmann::json* content = FindField(message, "content");
  if (content == nullptr || content->is_null()) return std::string();
  if (content->is_string()) return content->get<std::string>();
  if (content->is_array()) {
    std::string text;
    for (size_t i = 0; i < content->size(); ++i) {
      const nlohmann::json& part = (*content)[i];
      if (part.is_object() && StringField(part, "type") == "text")
        text += StringField(part, "text");
    }
    return text;
  }
  return Status::Unavailable(
      fmt::format("the chat completion's choices[0].message.content is a {}, not a string",
                  content->type_name()));
}

class OpenAiWire : public WireFormat {
 public:
  explicit OpenAiWire(const ProviderConfig& config)
      : url_(JoinUrl(config.base_url, "/chat/completions")),
        max_tokens_field_(config.max_tokens_field) {}

  std::string Url() const override { return url_; }

  std::vector<std::string> Headers(const std::string& api_key) const override {
    if (api_key.empty()) return {};
    return {"Authorization: Bearer " + api_key};
  }

  std::string Body(const LlmRequest& r) const override {
    nlohmann::json messages = nlohmann::json::array();
    if (!r.system.empty()) messages.push_back({{"role", "system"}, {"content", r.system}});
    for (const LlmMessage& m : r.messages) {
      messages.push_back({{"role", RoleName(m.role)}, {"content", m.content}});
    }
    nlohmann::json body = {
        {"model", r.model}, {"messages", std::move(messages)}, {"stream", false}};
    if (r.temperature) body["temperature"] = *r.temperature;
    if (r.max_tokens) body[max_tokens_field_] = *r.max_tokens;
    if (!r.stop.empty()) body["stop"] = r.stop;
    return body.dump();
  }

  Result<LlmResponse> ParseReply(std::string_view body, const LlmRequest& r) const override {
    KOPE_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonBody(body));
    auto schema_error = [&](std::string_view what) {
      return Status::Unavailable(fmt::format(
          "the response is not a chat completion: {}; it starts: {}", what, BodyExcerpt(body)));
    };
    if (!j.is_object()) return schema_error("it is not a JSON object");
    const nlohmann::json* choices = FindField(j, "choices");
    if (choices == nullptr) {
      if (j.contains("error")) {
        return Status::Unavailable("the server answered with an error object: " +
                                   ParseServerError(body).message);
      }
      return schema_error("it has no \"choices\"");
    }
    if (!choices->is_array() || choices->empty()) {
      return schema_error("\"choices\" is not a non-empty array");
    }
    const nlohmann::json& choice = (*choices)[0];
    if (!choice.is_object()) return schema_error("choices[0] is not an object");
    const nlohmann::json* message = FindField(choice, "message");
    if (message == nullptr || !message->is_object()) {
      return schema_error("choices[0] has no \"message\" object");
    }
    LlmResponse out;
    KOPE_ASSIGN_OR_RETURN(out.text, MessageText(*message));
    out.finish_reason = StringField(choice, "finish_reason");
    out.model = StringField(j, "model");
    out.request_id = StringField(j, "id");
    const nlohmann::json* usage = FindField(j, "usage");
    std::optional<int64_t> prompt, completion;
    if (usage != nullptr && usage->is_object()) {
      prompt = IntField(*usage, "prompt_tokens");
      completion = IntField(*usage, "completion_tokens");
    }
    if (prompt && completion) {
      out.usage = {*prompt, *completion, false};
    } else {
      out.usage = {EstimatePromptTokens(r), EstimateTokens(out.text), true};
    }
    return out;
  }

  std::string_view request_id_header() const override { return "x-request-id"; }

 private:
  std::string url_;
  std::string max_tokens_field_;
};

}  // namespace

std::unique_ptr<WireFormat> MakeOpenAiWire(const ProviderConfig& config) {
  return std::make_unique<OpenAiWire>(config);
}

}  // namespace kope::llm
