#include "kope/llm/open_provider.h"

#include <fmt/format.h>

#include <cstdlib>

#include "http_provider.h"
#include "kope/llm/scripted.h"
#include "wire.h"

namespace kope::llm {

Result<std::unique_ptr<LlmProvider>> OpenProvider(const ProviderConfig& config) {
  if (config.kind == ProviderKind::kScripted) {
    ProviderIdentity identity{config.name, config.kind, "", config.model};
    KOPE_ASSIGN_OR_RETURN(std::unique_ptr<ScriptedProvider> scripted,
                          ScriptedProvider::FromPath(config.replies, false, identity));
    return std::unique_ptr<LlmProvider>(std::move(scripted));
  }
  std::string api_key;
  if (!config.api_key_env.empty()) {
    const char* value = std::getenv(config.api_key_env.c_str());
    if (value == nullptr || value[0] == '\0') {
      return Status::InvalidArgument(fmt::format(
          "provider '{}' needs an API key in the environment variable {}, which is {}; set it "
          "(export {}=...), or set api_key_env = \"\" for a server that needs no key",
          config.name, config.api_key_env, value == nullptr ? "not set" : "empty",
          config.api_key_env));
    }
    api_key = value;
  }
  std::unique_ptr<WireFormat> wire =
      config.kind == ProviderKind::kAnthropic ? MakeAnthropicWire(config) : MakeOpenAiWire(config);
  return std::unique_ptr<LlmProvider>(
      std::make_unique<HttpProvider>(config, std::move(api_key), std::move(wire)));
}

Result<std::unique_ptr<LlmProvider>> OpenProvider(const ProviderConfig& config,
                                                  const CacheOptions& cache) {
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<LlmProvider> provider, OpenProvider(config));
  return WithCache(std::move(provider), cache);
}

}  // namespace kope::llm
