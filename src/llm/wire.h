// The wire formats the HTTP providers speak. Internal to kope_llm.
//
// A WireFormat turns a resolved LlmRequest into the URL, headers and JSON body
// of one API, and a successful response body back into an LlmResponse. Two
// implementations: OpenAI-compatible chat completions and Anthropic messages.
// Stateless after construction; thread-safe.
#ifndef KOPE_SRC_LLM_WIRE_H_
#define KOPE_SRC_LLM_WIRE_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/llm/config.h"
#include "kope/llm/provider.h"

namespace kope::llm {

class WireFormat {
 public:
  virtual ~WireFormat() = default;

  virtual std::string Url() const = 0;
  // The headers that carry the key and the API version; none for an empty key.
  virtual std::vector<std::string> Headers(const std::string& api_key) const = 0;
  virtual std::string Body(const LlmRequest& resolved) const = 0;
  // Reads a 2xx body. A body that is not JSON or not of the expected shape is
  // kUnavailable with a message saying exactly what is wrong.
  virtual Result<LlmResponse> ParseReply(std::string_view body,
                                         const LlmRequest& resolved) const = 0;
  // The response header with the server's id for the request.
  virtual std::string_view request_id_header() const = 0;
};

std::unique_ptr<WireFormat> MakeOpenAiWire(const ProviderConfig& config);
std::unique_ptr<WireFormat> MakeAnthropicWire(const ProviderConfig& config);

// What an error body says, in any of the shapes servers use:
// {"error": {"message", "type", "code"}}, {"error": "..."},
// {"type": "error", "error": {...}}, {"message": ..., "type": ..., "code": ...}.
struct ServerError {
  std::string message;  // empty when the body says nothing readable
  std::string type;
  std::string code;
};
ServerError ParseServerError(std::string_view body);

// `base` without trailing slashes, then `path`.
std::string JoinUrl(std::string_view base, std::string_view path);

// The body as JSON; a body that is not JSON is kUnavailable with the parser's
// position and description and the start of the body.
Result<nlohmann::json> ParseJsonBody(std::string_view body);

// The member `key` of object `j`, or null when `j` is no object or lacks it.
// (Callers use this rather than json::find: g++ 12 reports a spurious
// -Wnull-dereference when nlohmann's iterators are inlined into them.)
const nlohmann::json* FindField(const nlohmann::json& j, std::string_view key);

// The integer at `key` of object `j`, if it is one.
std::optional<int64_t> IntField(const nlohmann::json& j, std::string_view key);
// The string at `key` of object `j`, or "" when absent or not a string.
std::string StringField(const nlohmann::json& j, std::string_view key);

// The first `max` bytes of a body, for error messages, with a note when cut.
std::string BodyExcerpt(std::string_view body, size_t max = 200);

}  // namespace kope::llm

#endif  // KOPE_SRC_LLM_WIRE_H_
