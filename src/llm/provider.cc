#include "kope/llm/provider.h"

#include <fmt/format.h>

namespace kope::llm {

std::string_view ProviderKindName(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::kOpenAi:
      return "openai";
    case ProviderKind::kAnthropic:
      return "anthropic";
    case ProviderKind::kScripted:
      return "scripted";
  }
  return "unknown";
}

Result<ProviderKind> ParseProviderKind(std::string_view name) {
  for (ProviderKind kind :
       {ProviderKind::kOpenAi, ProviderKind::kAnthropic, ProviderKind::kScripted}) {
    if (name == ProviderKindName(kind)) return kind;
  }
  return Status::InvalidArgument(
      fmt::format("unknown provider kind '{}' (expected openai, anthropic or scripted)", name));
}

Result<LlmRequest> LlmProvider::Resolve(const LlmRequest& request) const {
  LlmRequest resolved = request;
  if (resolved.model.empty()) resolved.model = identity_.model;
  if (!resolved.temperature) resolved.temperature = defaults_.temperature;
  if (!resolved.max_tokens) resolved.max_tokens = defaults_.max_tokens;

  const std::string who = fmt::format("provider '{}'", identity_.name);
  if (resolved.model.empty()) {
    return Status::InvalidArgument(who + ": no model given in the request or the configuration");
  }
  if (resolved.messages.empty()) {
    return Status::InvalidArgument(who + ": the request has no messages");
  }
  if (resolved.messages.front().role != Role::kUser) {
    return Status::InvalidArgument(who + ": the first message must be from the user");
  }
  for (size_t i = 0; i < resolved.messages.size(); ++i) {
    if (resolved.messages[i].content.empty()) {
      return Status::InvalidArgument(fmt::format("{}: message {} is empty", who, i));
    }
  }
  if (resolved.stop.size() > 4) {
    return Status::InvalidArgument(fmt::format("{}: {} stop sequences given, at most 4 are allowed",
                                               who, resolved.stop.size()));
  }
  if (resolved.max_tokens && *resolved.max_tokens <= 0) {
    return Status::InvalidArgument(
        fmt::format("{}: max_tokens must be positive, not {}", who, *resolved.max_tokens));
  }
  if (resolved.temperature && (*resolved.temperature < 0 || *resolved.temperature > 2)) {
    return Status::InvalidArgument(
        fmt::format("{}: temperature must be within [0, 2], not {}", who, *resolved.temperature));
  }
  return resolved;
}

Result<LlmResponse> LlmProvider::Complete(const LlmRequest& request) {
  KOPE_ASSIGN_OR_RETURN(LlmRequest resolved, Resolve(request));
  if (resolved.cancel != nullptr && resolved.cancel->load()) {
    return Status::Cancelled(
        fmt::format("provider '{}': cancelled before sending", identity_.name));
  }
  return DoComplete(resolved);
}

int64_t EstimateTokens(std::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

int64_t EstimatePromptTokens(const LlmRequest& request) {
  int64_t tokens = EstimateTokens(request.system);
  for (const LlmMessage& m : request.messages) tokens += EstimateTokens(m.content);
  return tokens;
}

}  // namespace kope::llm
