#include "http_provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace kope::llm {
namespace {

using std::chrono::milliseconds;

// Less time than this left before the deadline counts as none: libcurl's timer
// may fire a little before ours.
constexpr milliseconds kDeadlineSlack{5};

std::string Attempts(int n) { return fmt::format("{} attempt{}", n, n == 1 ? "" : "s"); }

milliseconds Ms(double seconds) { return milliseconds(static_cast<int64_t>(seconds * 1000.0)); }

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool RetryableStatus(long status) {  // NOLINT(google-runtime-int)
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

bool Cancelled(const std::atomic<bool>* cancel) { return cancel != nullptr && cancel->load(); }

ProviderDefaults DefaultsOf(const ProviderConfig& c) { return {c.temperature, c.max_tokens}; }

ProviderIdentity IdentityOf(const ProviderConfig& c) {
  return {c.name, c.kind, c.base_url, c.model};
}

}  // namespace

HttpProvider::HttpProvider(const ProviderConfig& config, std::string api_key,
                           std::unique_ptr<WireFormat> wire, HttpProviderHooks hooks)
    : LlmProvider(IdentityOf(config), DefaultsOf(config)),
      config_(config),
      api_key_(std::move(api_key)),
      wire_(std::move(wire)),
      sleep_(hooks.sleep ? std::move(hooks.sleep) : SleepFunction(&SleepUnlessCancelled)),
      slots_(std::max(1, config.concurrency)),
      rng_(hooks.seed != 0 ? hooks.seed : std::random_device{}()) {}

std::string HttpProvider::Redact(std::string text) const {
  if (api_key_.empty()) return text;
  for (size_t pos = text.find(api_key_); pos != std::string::npos; pos = text.find(api_key_, pos)) {
    text.replace(pos, api_key_.size(), "[redacted]");
  }
  return text;
}

milliseconds HttpProvider::Backoff(int retry_index) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  return FullJitterBackoff({Ms(config_.backoff_initial_s), Ms(config_.backoff_max_s)}, retry_index,
                           rng_);
}

Result<LlmResponse> HttpProvider::DoComplete(const LlmRequest& resolved) {
  Result<LlmResponse> result = Call(resolved);
  if (result.ok()) return result;
  const Status& s = result.status();
  return Status(s.code(),
                Redact(fmt::format("provider '{}' ({}, model {}): {}", config_.name,
                                   ProviderKindName(config_.kind), resolved.model, s.message())));
}

Result<LlmResponse> HttpProvider::Call(const LlmRequest& resolved) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + Ms(config_.timeout_s);
  HttpRequest request{wire_->Url(), wire_->Headers(api_key_), wire_->Body(resolved)};

  Status last_error;
  const int max_attempts = 1 + std::max(0, config_.retries);
  int attempts = 0;
  while (true) {
    if (Clock::now() + kDeadlineSlack >= deadline) {
      return Status::DeadlineExceeded(
          fmt::format("no reply within timeout_s = {} s ({}{}{})", config_.timeout_s,
                      Attempts(attempts), last_error.ok() ? "" : "; last: ", last_error.message()));
    }
    ++attempts;
    AttemptOutcome outcome = Attempt(request, resolved, deadline);
    if (outcome.error.ok()) {
      outcome.response.latency_seconds = Seconds(Clock::now() - start);
      outcome.response.attempts = attempts;
      return std::move(outcome.response);
    }
    if (!outcome.retryable) return outcome.error;
    last_error = outcome.error;
    if (Clock::now() + kDeadlineSlack >= deadline) continue;  // reported at the loop's top
    if (attempts >= max_attempts) {
      if (attempts == 1) return last_error;
      StatusCode code = last_error.code() == StatusCode::kDeadlineExceeded
                            ? StatusCode::kDeadlineExceeded
                            : StatusCode::kUnavailable;
      return Status(code, fmt::format("gave up after {} attempts (retries = {}); last: {}",
                                      attempts, config_.retries, last_error.message()));
    }
    milliseconds wait = outcome.retry_after ? *outcome.retry_after : Backoff(attempts - 1);
    if (Clock::now() + wait >= deadline) {
      return Status::DeadlineExceeded(fmt::format(
          "{} the next attempt would start after timeout_s = {} s (after {}); last: {}",
          outcome.retry_after ? fmt::format("the server asked to wait {} ms, so", wait.count())
                              : std::string("waiting to retry,"),
          config_.timeout_s, Attempts(attempts), last_error.message()));
    }
    if (!sleep_(wait, resolved.cancel)) {
      return Status::Cancelled(
          fmt::format("cancelled while waiting to retry (after {})", Attempts(attempts)));
    }
  }
}

HttpProvider::AttemptOutcome HttpProvider::Attempt(const HttpRequest& request,
                                                   const LlmRequest& resolved,
                                                   Clock::time_point deadline) {
  AttemptOutcome out;
  out.error = slots_.Acquire(resolved.cancel, deadline);
  if (!out.error.ok()) return out;
  SemaphoreSlot slot(slots_);

  auto remaining = std::chrono::ceil<milliseconds>(deadline - Clock::now());
  HttpTimeouts timeouts;
  timeouts.total = std::min(Ms(config_.attempt_timeout_s), remaining);
  timeouts.connect = std::min(Ms(config_.connect_timeout_s), timeouts.total);
  if (timeouts.total.count() <= 0) {
    out.error = Status::DeadlineExceeded("the timeout passed while waiting for a request slot");
    out.retryable = true;  // the caller reports the deadline
    return out;
  }
  Result<HttpResponse> http = HttpPost(request, timeouts, resolved.cancel);
  if (!http.ok()) {
    out.error = http.status();
    StatusCode code = out.error.code();
    out.retryable = code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded;
    if (code == StatusCode::kCancelled || Cancelled(resolved.cancel)) {
      out.error = Status::Cancelled(out.error.message());
      out.retryable = false;
    }
    return out;
  }
  if (http->status < 200 || http->status >= 300) return FromHttpStatus(*http, resolved);

  Result<LlmResponse> reply = wire_->ParseReply(http->body, resolved);
  if (!reply.ok()) {
    out.error = Status::Unavailable(
        fmt::format("{} (HTTP {}): {}", request.url, http->status, reply.status().message()));
    out.retryable = true;
    return out;
  }
  out.response = std::move(reply).value();
  auto id = http->headers.find(std::string(wire_->request_id_header()));
  if (id != http->headers.end() && !id->second.empty()) out.response.request_id = id->second;
  return out;
}

HttpProvider::AttemptOutcome HttpProvider::FromHttpStatus(const HttpResponse& http,
                                                          const LlmRequest& resolved) const {
  AttemptOutcome out;
  ServerError server = ParseServerError(http.body);
  while (!server.message.empty() &&
         (server.message.back() == '.' ||
          std::isspace(static_cast<unsigned char>(server.message.back())))) {
    server.message.pop_back();  // the message continues after it
  }
  const std::string url = wire_->Url();
  const long status = http.status;  // NOLINT(google-runtime-int)
  if (status == 401 || status == 403) {
    std::string hint = config_.api_key_env.empty()
                           ? std::string("no key is sent (api_key_env is empty)")
                           : fmt::format("check the key in ${}", config_.api_key_env);
    out.error = Status::InvalidArgument(fmt::format("authentication failed at {} (HTTP {}): {}; {}",
                                                    url, status, server.message, hint));
    return out;
  }
  if (status == 404) {
    bool about_model = Lower(server.message).find("model") != std::string::npos ||
                       server.code == "model_not_found";
    if (about_model) {
      out.error = Status::InvalidArgument(fmt::format("unknown model '{}' at {} (HTTP 404): {}",
                                                      resolved.model, url, server.message));
    } else {
      out.error = Status::InvalidArgument(
          fmt::format("{} does not exist (HTTP 404): {}; check base_url ({})", url, server.message,
                      config_.kind == ProviderKind::kOpenAi
                          ? "OpenAI-compatible servers usually serve under /v1"
                          : "it is the server's root; kope appends /v1/messages"));
    }
    return out;
  }
  if (RetryableStatus(status)) {
    out.error =
        Status::Unavailable(fmt::format("{} answered HTTP {}{}: {}", url, status,
                                        status == 429 ? " (rate limited)" : "", server.message));
    out.retryable = true;
    out.retry_after = RetryAfter(http);
    return out;
  }
  out.error = Status::InvalidArgument(
      fmt::format("{} rejected the request (HTTP {}): {}", url, status, server.message));
  return out;
}

}  // namespace kope::llm
