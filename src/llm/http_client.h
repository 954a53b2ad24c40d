// A small HTTP client over libcurl, for the providers. Internal to kope_llm.
//
// One POST per call, on its own curl handle, with connect and total timeouts,
// and cancellation through an atomic flag that curl's progress callback
// checks (libcurl calls it at least about once a second even when no data
// moves). Every libcurl call is checked and a failure names its call site.
// Thread-safe: libcurl is initialized once, handles are not shared.
#ifndef KOPE_SRC_LLM_HTTP_CLIENT_H_
#define KOPE_SRC_LLM_HTTP_CLIENT_H_

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kope/base/status.h"

namespace kope::llm {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
};

struct HttpResponse {
  long status = 0;  // NOLINT(google-runtime-int): libcurl's type
  std::string body;
  std::map<std::string, std::string> headers;  // names lowercased; the last value of a name wins
};

struct HttpTimeouts {
  std::chrono::milliseconds connect{10000};
  std::chrono::milliseconds total{300000};
};

// Sends `request` as a POST with a JSON body. Any HTTP status is a response;
// transport failures are errors:
//   kInvalidArgument   a malformed URL or a scheme other than http/https;
//   kUnavailable       resolving, connecting, sending or receiving failed, or
//                      the body ended before its announced length;
//   kDeadlineExceeded  a timeout passed;
//   kCancelled         `*cancel` became true;
//   kInternal          libcurl could not be set up.
// Messages name the URL and libcurl's own description.
Result<HttpResponse> HttpPost(const HttpRequest& request, const HttpTimeouts& timeouts,
                              const std::atomic<bool>* cancel);

// How long the server asked the client to wait: `retry-after-ms`, or
// `retry-after` as seconds or as an HTTP date.
std::optional<std::chrono::milliseconds> RetryAfter(const HttpResponse& response);

}  // namespace kope::llm

#endif  // KOPE_SRC_LLM_HTTP_CLIENT_H_
