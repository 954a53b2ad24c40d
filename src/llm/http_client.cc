#include "http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <memory>
#include <mutex>

namespace kope::llm {
namespace {

constexpr size_t kMaxBodyBytes = 64u << 20;

// "src/llm/http_client.cc" rather than the full path the compiler was given.
const char* SourceName(const char* file) {
  std::string_view f(file);
  size_t pos = f.rfind("src/llm/");
  return pos == std::string_view::npos ? file : file + pos;
}

Status CurlCallFailed(CURLcode code, const char* call, const char* file, int line) {
  return Status::Internal(
      fmt::format("{}:{}: {} failed: {}", SourceName(file), line, call, curl_easy_strerror(code)));
}

// Checks a libcurl call that returns CURLcode; returns its failure with the call site.
#define KOPE_CURL_CHECK(call)                                            \
  do {                                                                   \
    CURLcode kope_curl_code_ = (call);                                   \
    if (kope_curl_code_ != CURLE_OK) {                                   \
      return CurlCallFailed(kope_curl_code_, #call, __FILE__, __LINE__); \
    }                                                                    \
  } while (0)

Status GlobalInit() {
  static std::once_flag once;
  static CURLcode code = CURLE_OK;
  std::call_once(once, [] { code = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (code != CURLE_OK) return CurlCallFailed(code, "curl_global_init", __FILE__, __LINE__);
  return Status::Ok();
}

struct CurlHandleDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

struct Transfer {
  HttpResponse response;
  bool too_large = false;
  const std::atomic<bool>* cancel = nullptr;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  if (t->response.body.size() + n > kMaxBodyBytes) {
    t->too_large = true;
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  t->response.body.append(data, n);
  return n;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response.headers.clear();  // a new response (after 100 Continue, say)
    return n;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  t->response.headers[Trim(name)] = Trim(line.substr(colon + 1));
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return (t->cancel != nullptr && t->cancel->load()) ? 1 : 0;  // non-zero aborts
}

Status TransportError(CURLcode code, const char* detail, const HttpRequest& request,
                      const Transfer& transfer) {
  std::string what = detail[0] != '\0' ? std::string(detail) : curl_easy_strerror(code);
  const std::string& url = request.url;
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return Status::InvalidArgument(fmt::format("invalid URL '{}': {}", url, what));
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      return Status::Unavailable(fmt::format("cannot reach {}: {}", url, what));
    case CURLE_OPERATION_TIMEDOUT:
      return Status::DeadlineExceeded(fmt::format("no response from {} in time: {}", url, what));
    case CURLE_ABORTED_BY_CALLBACK:
      return Status::Cancelled(fmt::format("request to {} cancelled", url));
    case CURLE_PARTIAL_FILE:
      return Status::Unavailable(
          fmt::format("the response from {} was truncated (HTTP {}, {} bytes received): {}", url,
                      transfer.response.status, transfer.response.body.size(), what));
    case CURLE_WRITE_ERROR:
      if (transfer.too_large) {
        return Status::Unavailable(
            fmt::format("the response from {} is larger than {} MiB", url, kMaxBodyBytes >> 20));
      }
      break;
    case CURLE_PEER_FAILED_VERIFICATION:
      return Status::InvalidArgument(
          fmt::format("TLS certificate verification failed for {}: {}", url, what));
    default:
      break;
  }
  return Status::Unavailable(fmt::format("request to {} failed: {}", url, what));
}

long ClampMs(std::chrono::milliseconds ms) {  // NOLINT(google-runtime-int): libcurl's type
  return static_cast<long>(std::max<int64_t>(1, ms.count()));  // NOLINT(google-runtime-int)
}

}  // namespace

Result<HttpResponse> HttpPost(const HttpRequest& request, const HttpTimeouts& timeouts,
                              const std::atomic<bool>* cancel) {
  KOPE_RETURN_IF_ERROR(GlobalInit());
  std::unique_ptr<CURL, CurlHandleDeleter> curl(curl_easy_init());
  if (!curl) return Status::Internal("src/llm/http_client.cc: curl_easy_init returned null");
  CURL* h = curl.get();

  std::unique_ptr<curl_slist, SlistDeleter> headers;
  std::vector<std::string> all_headers = request.headers;
  all_headers.push_back("Content-Type: application/json");
  all_headers.push_back("Accept: application/json");
  all_headers.push_back("Expect:");  // no 100-continue round trip
  for (const std::string& header : all_headers) {
    // On success curl_slist_append returns the list's head (the same one after
    // the first append); on failure it returns null and leaves the list as it was.
    curl_slist* head = curl_slist_append(headers.get(), header.c_str());
    if (head == nullptr)
      return Status::Internal("src/llm/http_client.cc: curl_slist_append failed");
    if (head != headers.get()) headers.reset(head);
  }

  Transfer transfer;
  transfer.cancel = cancel;
  char error_buffer[CURL_ERROR_SIZE] = {0};

  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_URL, request.url.c_str()));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https"));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_POST, 1L));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data()));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                                   static_cast<curl_off_t>(request.body.size())));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get()));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_USERAGENT, "kope/0.1"));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ClampMs(timeouts.connect)));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ClampMs(timeouts.total)));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &OnHeader));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_HEADERDATA, &transfer));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &OnProgress));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer));
  KOPE_CURL_CHECK(curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L));

  CURLcode code = curl_easy_perform(h);
  long status = 0;  // NOLINT(google-runtime-int): libcurl's type
  KOPE_CURL_CHECK(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status));
  transfer.response.status = status;
  if (code != CURLE_OK) return TransportError(code, error_buffer, request, transfer);
  return std::move(transfer.response);
}

std::optional<std::chrono::milliseconds> RetryAfter(const HttpResponse& response) {
  auto ms_it = response.headers.find("retry-after-ms");
  if (ms_it != response.headers.end()) {
    double ms = 0;
    auto [ptr, ec] =
        std::from_chars(ms_it->second.data(), ms_it->second.data() + ms_it->second.size(), ms);
    if (ec == std::errc() && ms >= 0) return std::chrono::milliseconds(static_cast<int64_t>(ms));
  }
  auto it = response.headers.find("retry-after");
  if (it == response.headers.end() || it->second.empty()) return std::nullopt;
  const std::string& value = it->second;
  int64_t seconds = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc() && ptr == value.data() + value.size() && seconds >= 0) {
    return std::chrono::milliseconds(seconds * 1000);
  }
  time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  time_t now = std::time(nullptr);
  return std::chrono::milliseconds(std::max<int64_t>(0, static_cast<int64_t>(when - now)) * 1000);
}

}  // namespace kope::llm
