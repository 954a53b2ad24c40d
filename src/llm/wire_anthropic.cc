// Anthropic messages: POST {base_url}/v1/messages with x-api-key and
// anthropic-version headers.
//
// Request:  {"model", "max_tokens", "system"?, "messages": [{"role", "content"}],
//            "temperature"?, "stop_sequences"?}
// Response: {"id", "type": "message", "role": "assistant", "model",
//            "content": [{"type": "text", "text"}, {"type": "thinking", ...}, ...],
//            "stop_reason", "stop_sequence",
//            "usage": {"input_tokens", "output_tokens",
//                      "cache_creation_input_tokens"?, "cache_read_input_tokens"?}}
#include <fmt/format.h>

#include "wire.h"

namespace kope::llm {
namespace {

// Anthropic requires max_tokens; this is sent when neither request nor
// configuration gives one.
constexpr int kDefaultMaxTokens = 8192;

class AnthropicWire : public WireFormat {
 public:
  explicit AnthropicWire(const ProviderConfig& config)
      : url_(JoinUrl(config.base_url, "/v1/messages")), version_(config.anthropic_version) {}

  std::string Url() const override { return url_; }

  std::vector<std::string> Headers(const std::string& api_key) const override {
    std::vector<std::string> headers = {"anthropic-version: " + version_};
    if (!api_key.empty()) headers.push_back("x-api-key: " + api_key);
    return headers;
  }

  std::string Body(const LlmRequest& r) const override {
    nlohmann::json messages = nlohmann::json::array();
    for (const LlmMessage& m : r.messages) {
      messages.push_back(
          {{"role", m.role == Role::kUser ? "user" : "assistant"}, {"content", m.content}});
    }
    nlohmann::json body = {{"model", r.model},
                           {"max_tokens", r.max_tokens.value_or(kDefaultMaxTokens)},
                           {"messages", std::move(messages)}};
    if (!r.system.empty()) body["system"] = r.system;
    if (r.temperature) body["temperature"] = *r.temperature;
    if (!r.stop.empty()) body["stop_sequences"] = r.stop;
    return body.dump();
  }

  Result<LlmResponse> ParseReply(std::string_view body, const LlmRequest& r) const override {
    KOPE_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonBody(body));
    auto schema_error = [&](std::string_view what) {
      return Status::Unavailable(fmt::format(
          "the response is not an Anthropic message: {}; it starts: {}", what, BodyExcerpt(body)));
    };
    if (!j.is_object()) return schema_error("it is not a JSON object");
    std::string type = StringField(j, "type");
    if (type == "error") {
      return Status::Unavailable("the server answered with an error object: " +
                                 ParseServerError(body).message);
    }
    if (!type.empty() && type != "message") {
      return schema_error(fmt::format("its type is \"{}\", not \"message\"", type));
    }
    const nlohmann::json* content = FindField(j, "content");
    if (content == nullptr) return schema_error("it has no \"content\"");
    if (!content->is_array()) return schema_error("\"content\" is not an array of blocks");
    LlmResponse out;
    for (size_t i = 0; i < content->size(); ++i) {
      const nlohmann::json& block = (*content)[i];
      if (!block.is_object()) return schema_error("a content block is not an object");
      if (StringField(block, "type") != "text") continue;  // thinking, tool_use, ...
      const nlohmann::json* text = FindField(block, "text");
      if (text == nullptr || !text->is_string()) {
        return schema_error("a text block has no \"text\" string");
      }
      out.text += text->get<std::string>();
    }
    out.finish_reason = StringField(j, "stop_reason");
    out.model = StringField(j, "model");
    out.request_id = StringField(j, "id");
    const nlohmann::json* usage = FindField(j, "usage");
    std::optional<int64_t> input, output;
    if (usage != nullptr && usage->is_object()) {
      input = IntField(*usage, "input_tokens");
      output = IntField(*usage, "output_tokens");
    }
    if (input && output) {
      int64_t prompt = *input + IntField(*usage, "cache_creation_input_tokens").value_or(0) +
                       IntField(*usage, "cache_read_input_tokens").value_or(0);
      out.usage = {prompt, *output, false};
    } else {
      out.usage = {EstimatePromptTokens(r), EstimateTokens(out.text), true};
    }
    return out;
  }

  std::string_view request_id_header() const override { return "request-id"; }

 private:
  std::string url_;
  std::string version_;
};

}  // namespace

std::unique_ptr<WireFormat> MakeAnthropicWire(const ProviderConfig& config) {
  return std::make_unique<AnthropicWire>(config);
}

}  // namespace kope::llm
