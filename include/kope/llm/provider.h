// LlmProvider: one chat completion from a language model, as a value.
//
// A caller builds an LlmRequest (system prompt, messages, and optionally a
// model and sampling parameters that override the provider's configured
// defaults) and calls Complete(). The answer is an LlmResponse or a Status;
// nothing throws. Status codes mean:
//   kInvalidArgument  the request or the configuration is wrong and retrying
//                     cannot help: a missing API key (the message names the
//                     environment variable), an authentication failure (HTTP
//                     401/403), an unknown model (HTTP 404), a malformed URL,
//                     any other 4xx with the server's own message;
//   kUnavailable      the server could not be reached or kept failing (429,
//                     5xx, connection errors, unparseable or wrong-schema
//                     bodies) after the configured retries;
//   kDeadlineExceeded the configured timeout passed;
//   kCancelled        the request's cancel flag was raised;
//   kNotFound         a replay-mode cache had no recorded response;
//   kFailedPrecondition a scripted provider ran out of replies.
// Messages never contain an API key.
//
// Implementations: OpenAI-compatible chat completions, Anthropic messages
// (both over HTTP, see open_provider.h), the scripted provider (scripted.h)
// and the caching decorator (cache.h). All of them are thread-safe: several
// threads may call Complete() on one provider at once; HTTP providers bound the
// number of requests in flight by their configured concurrency.
//
// Extension: Complete() is non-virtual. It fills the provider's defaults into
// the request, validates it, and forwards the resolved request to DoComplete(),
// which implementations override.
#ifndef KOPE_LLM_PROVIDER_H_
#define KOPE_LLM_PROVIDER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kope/base/status.h"

namespace kope::llm {

enum class ProviderKind { kOpenAi, kAnthropic, kScripted };

// "openai", "anthropic", "scripted".
std::string_view ProviderKindName(ProviderKind kind);
// The inverse of ProviderKindName; an error lists the accepted names.
Result<ProviderKind> ParseProviderKind(std::string_view name);

enum class Role { kUser, kAssistant };

struct LlmMessage {
  Role role = Role::kUser;
  std::string content;
};

struct LlmRequest {
  std::string system;                 // empty: no system prompt
  std::vector<LlmMessage> messages;   // at least one; the first is from the user
  std::string model;                  // empty: the provider's configured model
  std::optional<double> temperature;  // unset: the provider's configured value, if any
  std::optional<int> max_tokens;      // unset: the provider's configured value, if any
  std::vector<std::string> stop;      // stop sequences, at most 4
  // Raised by another thread to abandon the call (in flight, waiting for a
  // concurrency slot or backing off between retries); the call then returns
  // kCancelled. Not owned; must outlive the call. Never part of a cache key.
  const std::atomic<bool>* cancel = nullptr;
};

// Token counts as the provider reported them. When a server reports none (some
// local servers; the scripted provider unless its script says), kope estimates
// about four bytes per token and sets `estimated`.
struct LlmUsage {
  int64_t prompt_tokens = 0;  // Anthropic: input + cache creation + cache read tokens
  int64_t completion_tokens = 0;
  bool estimated = false;
};

struct LlmResponse {
  std::string text;  // the assistant's reply (Anthropic: its text blocks, joined)
  LlmUsage usage;
  std::string model;           // the model the server says answered
  std::string finish_reason;   // as reported: "stop", "length", "end_turn", "max_tokens", ...
  std::string request_id;      // the server's id for the call (header or body), if any
  double latency_seconds = 0;  // wall time of the call, retries and backoff included
  int attempts = 0;            // HTTP attempts made; 0 for a cached or scripted reply
  bool cached = false;         // served from the response cache, no tokens spent now

  // True when the reply stopped at the token limit rather than by itself.
  bool truncated() const { return finish_reason == "length" || finish_reason == "max_tokens"; }
};

// What a provider talks to; the cache key and reports use it.
struct ProviderIdentity {
  std::string name;  // the configuration's name for it, e.g. "local"
  ProviderKind kind = ProviderKind::kOpenAi;
  std::string base_url;  // empty for the scripted provider
  std::string model;     // the default model
};

// Values used where a request leaves a parameter unset.
struct ProviderDefaults {
  std::optional<double> temperature;
  std::optional<int> max_tokens;
};

class LlmProvider {
 public:
  LlmProvider(ProviderIdentity identity, ProviderDefaults defaults)
      : identity_(std::move(identity)), defaults_(defaults) {}
  virtual ~LlmProvider() = default;
  LlmProvider(const LlmProvider&) = delete;
  LlmProvider& operator=(const LlmProvider&) = delete;

  // Sends one request. See the file comment for the meaning of each error.
  Result<LlmResponse> Complete(const LlmRequest& request);

  // The request as it would be sent: model, temperature and max tokens filled
  // from the defaults where unset. Fails on an invalid request (no messages, an
  // empty message, a first message not from the user, more than 4 stop
  // sequences, a non-positive max_tokens, no model).
  Result<LlmRequest> Resolve(const LlmRequest& request) const;

  const ProviderIdentity& identity() const { return identity_; }
  const ProviderDefaults& defaults() const { return defaults_; }

 protected:
  // Called with a request that Resolve() accepted.
  virtual Result<LlmResponse> DoComplete(const LlmRequest& resolved) = 0;

 private:
  ProviderIdentity identity_;
  ProviderDefaults defaults_;
};

// About four bytes per token: the estimate used when a server reports no usage.
int64_t EstimateTokens(std::string_view text);
int64_t EstimatePromptTokens(const LlmRequest& request);

}  // namespace kope::llm

#endif  // KOPE_LLM_PROVIDER_H_
