#include "kope/llm/cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "kope/base/hash.h"

namespace kope::llm {
namespace {

namespace fs = std::filesystem;
constexpr int kFormatVersion = 1;

nlohmann::json KeyMaterial(const ProviderIdentity& provider, const LlmRequest& r) {
  std::string_view base = provider.base_url;
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  nlohmann::json messages = nlohmann::json::array();
  for (const LlmMessage& m : r.messages) {
    messages.push_back({m.role == Role::kUser ? "user" : "assistant", m.content});
  }
  return {{"version", kFormatVersion},
          {"kind", ProviderKindName(provider.kind)},
          {"base_url", base},
          {"model", r.model},
          {"system", r.system},
          {"messages", std::move(messages)},
          {"temperature", r.temperature ? nlohmann::json(*r.temperature) : nlohmann::json()},
          {"max_tokens", r.max_tokens ? nlohmann::json(*r.max_tokens) : nlohmann::json()},
          {"stop", r.stop}};
}

nlohmann::json ResponseJson(const LlmResponse& r) {
  return {{"text", r.text},
          {"model", r.model},
          {"finish_reason", r.finish_reason},
          {"request_id", r.request_id},
          {"prompt_tokens", r.usage.prompt_tokens},
          {"completion_tokens", r.usage.completion_tokens},
          {"usage_estimated", r.usage.estimated},
          {"latency_seconds", r.latency_seconds},
          {"attempts", r.attempts}};
}

LlmResponse ResponseFromJson(const nlohmann::json& j) {
  LlmResponse r;
  r.text = j.at("text").get<std::string>();
  r.model = j.at("model").get<std::string>();
  r.finish_reason = j.at("finish_reason").get<std::string>();
  r.request_id = j.at("request_id").get<std::string>();
  r.usage.prompt_tokens = j.at("prompt_tokens").get<int64_t>();
  r.usage.completion_tokens = j.at("completion_tokens").get<int64_t>();
  r.usage.estimated = j.at("usage_estimated").get<bool>();
  r.cached = true;
  return r;
}

class CachingProvider : public LlmProvider {
 public:
  CachingProvider(std::unique_ptr<LlmProvider> inner, std::unique_ptr<ResponseCache> cache,
                  CacheMode mode)
      : LlmProvider(inner->identity(), inner->defaults()),
        inner_(std::move(inner)),
        cache_(std::move(cache)),
        mode_(mode) {}

 protected:
  Result<LlmResponse> DoComplete(const LlmRequest& resolved) override {
    const ProviderIdentity& id = inner_->identity();
    if (mode_ != CacheMode::kRecord) {
      auto start = std::chrono::steady_clock::now();
      Result<std::optional<LlmResponse>> hit = cache_->Lookup(id, resolved);
      if (!hit.ok() && mode_ == CacheMode::kReplay) return hit.status();
      if (hit.ok() && hit->has_value()) {
        LlmResponse response = std::move(**hit);
        response.latency_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return response;
      }
      if (mode_ == CacheMode::kReplay) {
        std::string key = ResponseCache::Key(id, resolved);
        return Status::NotFound(fmt::format(
            "replay mode: no recorded reply for this request to provider '{}' ({} at {}, model "
            "{}); key {} is not in the cache folder {}; record it first with cache mode "
            "\"read-write\" or \"record\"",
            id.name, ProviderKindName(id.kind), id.base_url.empty() ? "-" : id.base_url,
            resolved.model, key, cache_->dir().string()));
      }
    }
    KOPE_ASSIGN_OR_RETURN(LlmResponse response, inner_->Complete(resolved));
    Status stored = cache_->Store(id, resolved, response);
    if (!stored.ok()) {
      return stored.WithContext("the reply was received but could not be recorded in the cache");
    }
    return response;
  }

 private:
  std::unique_ptr<LlmProvider> inner_;
  std::unique_ptr<ResponseCache> cache_;
  CacheMode mode_;
};

}  // namespace

std::string_view CacheModeName(CacheMode mode) {
  switch (mode) {
    case CacheMode::kOff:
      return "off";
    case CacheMode::kReadWrite:
      return "read-write";
    case CacheMode::kRecord:
      return "record";
    case CacheMode::kReplay:
      return "replay";
  }
  return "unknown";
}

Result<CacheMode> ParseCacheMode(std::string_view name) {
  for (CacheMode m :
       {CacheMode::kOff, CacheMode::kReadWrite, CacheMode::kRecord, CacheMode::kReplay}) {
    if (name == CacheModeName(m)) return m;
  }
  return Status::InvalidArgument(
      fmt::format("unknown cache mode '{}' (expected off, read-write, record or replay)", name));
}

Result<std::unique_ptr<ResponseCache>> ResponseCache::Open(const fs::path& dir) {
  if (dir.empty()) return Status::InvalidArgument("the response cache needs a folder (cache.dir)");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return Status::IoError(
        fmt::format("cannot create the cache folder {}: {}", dir.string(), ec.message()));
  }
  return std::unique_ptr<ResponseCache>(new ResponseCache(dir));
}

std::string ResponseCache::Key(const ProviderIdentity& provider, const LlmRequest& resolved) {
  return ContentHash(KeyMaterial(provider, resolved).dump());
}

fs::path ResponseCache::PathFor(std::string_view key) const {
  return dir_ / std::string(key.substr(0, 2)) / (std::string(key) + ".json");
}

Result<std::optional<LlmResponse>> ResponseCache::Lookup(const ProviderIdentity& provider,
                                                         const LlmRequest& resolved) const {
  nlohmann::json material = KeyMaterial(provider, resolved);
  fs::path path = PathFor(ContentHash(material.dump()));
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::optional<LlmResponse>();
  std::stringstream text;
  text << in.rdbuf();
  try {
    nlohmann::json entry = nlohmann::json::parse(text.str());
    if (entry.at("request") != material) return std::optional<LlmResponse>();  // a collision
    return std::optional<LlmResponse>(ResponseFromJson(entry.at("response")));
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(
        fmt::format("cache entry {} cannot be read: {}", path.string(), e.what()));
  }
}

Status ResponseCache::Store(const ProviderIdentity& provider, const LlmRequest& resolved,
                            const LlmResponse& response) {
  nlohmann::json material = KeyMaterial(provider, resolved);
  std::string key = ContentHash(material.dump());
  nlohmann::json entry = {
      {"kope_llm_cache", kFormatVersion},
      {"key", key},
      {"recorded_unix_seconds", std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count()},
      {"request", std::move(material)},
      {"response", ResponseJson(response)}};
  fs::path path = PathFor(key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return Status::IoError(
        fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  }
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}.{}", ::getpid(), counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << entry.dump(2) << '\n';
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return Status::IoError(fmt::format("cannot write cache entry {}", tmp.string()));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Status::IoError(
        fmt::format("cannot move cache entry into place at {}: {}", path.string(), ec.message()));
  }
  return Status::Ok();
}

Result<std::unique_ptr<LlmProvider>> WithCache(std::unique_ptr<LlmProvider> inner,
                                               const CacheOptions& options) {
  if (options.mode == CacheMode::kOff) return inner;
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<ResponseCache> cache, ResponseCache::Open(options.dir));
  return std::unique_ptr<LlmProvider>(
      std::make_unique<CachingProvider>(std::move(inner), std::move(cache), options.mode));
}

}  // namespace kope::llm
