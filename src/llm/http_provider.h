// HttpProvider: an LlmProvider that talks to a server over HTTP in one of the
// wire formats. Internal to kope_llm; OpenProvider() creates it.
//
// One call: wait for a concurrency slot, POST, classify the outcome; retry
// 408, 409, 429, 5xx, transport failures, attempt timeouts and unreadable
// bodies with exponential backoff and full jitter (or after the server's
// Retry-After), up to `retries` more attempts and never past `timeout_s` from
// the start of the call; give up at once on other 4xx. The API key is redacted
// from every message. Thread-safe.
#ifndef KOPE_SRC_LLM_HTTP_PROVIDER_H_
#define KOPE_SRC_LLM_HTTP_PROVIDER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "http_client.h"
#include "kope/llm/config.h"
#include "kope/llm/provider.h"
#include "retry.h"
#include "wire.h"

namespace kope::llm {

// What tests may replace.
struct HttpProviderHooks {
  SleepFunction sleep;  // unset: SleepUnlessCancelled
  uint64_t seed = 0;    // of the backoff jitter; 0: from std::random_device
};

class HttpProvider : public LlmProvider {
 public:
  HttpProvider(const ProviderConfig& config, std::string api_key, std::unique_ptr<WireFormat> wire,
               HttpProviderHooks hooks = {});

 protected:
  Result<LlmResponse> DoComplete(const LlmRequest& resolved) override;

 private:
  struct AttemptOutcome {
    Status error;  // ok: `response` holds the reply
    LlmResponse response;
    bool retryable = false;
    std::optional<std::chrono::milliseconds> retry_after;
  };

  Result<LlmResponse> Call(const LlmRequest& resolved);
  AttemptOutcome Attempt(const HttpRequest& request, const LlmRequest& resolved,
                         Clock::time_point deadline);
  AttemptOutcome FromHttpStatus(const HttpResponse& http, const LlmRequest& resolved) const;
  std::chrono::milliseconds Backoff(int retry_index);
  std::string Redact(std::string text) const;

  const ProviderConfig config_;
  const std::string api_key_;
  const std::unique_ptr<WireFormat> wire_;
  const SleepFunction sleep_;
  Semaphore slots_;
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
};

}  // namespace kope::llm

#endif  // KOPE_SRC_LLM_HTTP_PROVIDER_H_
