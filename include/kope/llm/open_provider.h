// Opening the provider a configuration describes.
//
// OpenProvider reads the API key from the environment variable the
// configuration names (only there; keys are never taken from files or flags),
// and fails with kInvalidArgument naming that variable when it is unset or
// empty. The key lives only in the provider's memory and in the HTTP header it
// sends; error messages have it redacted.
//
// The returned provider is thread-safe and owned by the caller.
#ifndef KOPE_LLM_OPEN_PROVIDER_H_
#define KOPE_LLM_OPEN_PROVIDER_H_

#include <memory>

#include "kope/base/status.h"
#include "kope/llm/cache.h"
#include "kope/llm/config.h"
#include "kope/llm/provider.h"

namespace kope::llm {

// An OpenAI-compatible, Anthropic or scripted provider, without a cache.
Result<std::unique_ptr<LlmProvider>> OpenProvider(const ProviderConfig& config);

// The same, wrapped in the response cache `cache` describes (none when off).
Result<std::unique_ptr<LlmProvider>> OpenProvider(const ProviderConfig& config,
                                                  const CacheOptions& cache);

}  // namespace kope::llm

#endif  // KOPE_LLM_OPEN_PROVIDER_H_
