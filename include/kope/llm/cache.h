// The response cache: reproducible reruns and offline replay of LLM calls.
//
// A cache is a folder of JSON files, one per call, at
// `<dir>/<key[0:2]>/<key>.json`, where the key is the ContentHash of the
// provider kind, base URL, model, system prompt, messages, temperature, max
// tokens and stop sequences (the request as resolved by the provider, so a
// default that changes in the configuration changes the key). Each file holds
// those fields and the response; it never holds an API key, which is only ever
// sent as an HTTP header. Files are written to a temporary name and renamed, so
// concurrent writers (threads or processes) never leave a partial entry.
//
// Modes (the `mode` key of the configuration's [cache] table):
//   off         no cache;
//   read-write  a recorded reply is returned, a miss calls the model and records;
//   record      always call the model, record (overwriting) every reply;
//   replay      never call the model: a miss is a kNotFound error naming the key
//               and the folder.
// A replayed response has `cached` set and keeps the usage of the original call.
// An unreadable entry is kCorruption in replay mode and is refetched otherwise.
// ResponseCache is thread-safe.
#ifndef KOPE_LLM_CACHE_H_
#define KOPE_LLM_CACHE_H_

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/llm/provider.h"

namespace kope::llm {

enum class CacheMode { kOff, kReadWrite, kRecord, kReplay };

// "off", "read-write", "record", "replay".
std::string_view CacheModeName(CacheMode mode);
Result<CacheMode> ParseCacheMode(std::string_view name);

struct CacheOptions {
  std::filesystem::path dir;
  CacheMode mode = CacheMode::kOff;
};

class ResponseCache {
 public:
  // Creates `dir` if needed.
  static Result<std::unique_ptr<ResponseCache>> Open(const std::filesystem::path& dir);

  // The key of a resolved request sent to `provider`.
  static std::string Key(const ProviderIdentity& provider, const LlmRequest& resolved);

  // The recorded response, or nullopt on a miss. kCorruption when the entry
  // exists but cannot be read back.
  Result<std::optional<LlmResponse>> Lookup(const ProviderIdentity& provider,
                                            const LlmRequest& resolved) const;
  Status Store(const ProviderIdentity& provider, const LlmRequest& resolved,
               const LlmResponse& response);

  std::filesystem::path PathFor(std::string_view key) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  explicit ResponseCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path dir_;
};

// Wraps `inner` in a cache with `options`. Mode off returns `inner` itself.
// The wrapper has the identity and defaults of `inner`.
Result<std::unique_ptr<LlmProvider>> WithCache(std::unique_ptr<LlmProvider> inner,
                                               const CacheOptions& options);

}  // namespace kope::llm

#endif  // KOPE_LLM_CACHE_H_
