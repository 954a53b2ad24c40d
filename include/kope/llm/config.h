// LLM configuration: the providers a user can pick, prices and the cache.
//
// The configuration is a TOML file (format and example: docs/LLM_PROVIDERS.md):
//
//   default = "local"                  # the provider used when none is named
//   [cache]   dir = "...", mode = "read-write"
//   [providers.NAME]  kind, base_url, model, temperature, max_tokens, ...
//   [prices."MODEL"]  prompt_usd_per_mtok, completion_usd_per_mtok
//
// API keys are never in the file: a provider names the environment variable
// that holds its key (`api_key_env`). Unknown keys, wrong types and
// out-of-range values are kInvalidArgument errors that name the key and its
// line. Relative paths (cache dir, scripted replies) are taken relative to the
// folder of the file. Command-line flags override the file through
// ProviderOverrides. Plain values; no shared state.
#ifndef KOPE_LLM_CONFIG_H_
#define KOPE_LLM_CONFIG_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/llm/cache.h"
#include "kope/llm/provider.h"
#include "kope/llm/usage.h"

namespace kope::llm {

struct ProviderConfig {
  std::string name;
  ProviderKind kind = ProviderKind::kOpenAi;
  // openai: "https://api.openai.com/v1" by default (requests go to
  // {base_url}/chat/completions); anthropic: "https://api.anthropic.com"
  // (requests go to {base_url}/v1/messages). Unused by scripted.
  std::string base_url;
  std::string model;
  std::optional<double> temperature;  // unset: not sent, the server's default
  std::optional<int> max_tokens;      // unset: openai sends none, anthropic sends 8192
  // openai: the body field that carries max_tokens ("max_tokens", or
  // "max_completion_tokens" for models that require it).
  std::string max_tokens_field = "max_tokens";
  // The variable holding the key; by default OPENAI_API_KEY or
  // ANTHROPIC_API_KEY. Empty: send no key (local servers).
  std::string api_key_env;
  std::string anthropic_version = "2023-06-01";
  double connect_timeout_s = 10;
  double attempt_timeout_s = 300;  // one HTTP attempt
  double timeout_s = 900;          // the whole call: attempts and backoff together
  int retries = 4;                 // further attempts after the first
  double backoff_initial_s = 1;    // exponential backoff with full jitter ...
  double backoff_max_s = 60;       // ... capped here
  int concurrency = 4;             // requests in flight at once through this provider
  std::filesystem::path replies;   // scripted: a JSON file or a folder of replies
};

struct LlmConfig {
  std::string default_provider;
  std::map<std::string, ProviderConfig, std::less<>> providers;
  PriceTable prices;
  CacheOptions cache;
};

// Parses configuration text; `base_dir` resolves relative paths and `origin`
// names the text in errors.
Result<LlmConfig> ParseLlmConfig(std::string_view toml_text, const std::filesystem::path& base_dir,
                                 std::string_view origin = "llm config");
// Reads and parses a file; kNotFound when it does not exist.
Result<LlmConfig> LoadLlmConfig(const std::filesystem::path& path);

// A ProviderConfig of `kind` with every default filled in.
ProviderConfig DefaultProviderConfig(ProviderKind kind, std::string name);

// Values from the command line, applied over the file's.
struct ProviderOverrides {
  std::optional<ProviderKind> kind;
  std::optional<std::string> base_url;
  std::optional<std::string> model;
  std::optional<std::string> api_key_env;
  std::optional<double> temperature;
  std::optional<int> max_tokens;
  std::optional<double> timeout_s;
  std::optional<double> connect_timeout_s;
  std::optional<int> retries;
  std::optional<int> concurrency;
  std::optional<std::filesystem::path> replies;
};

// The provider to use: `name` from the file, or the file's default provider
// when `name` is empty, or the only provider when there is one. A name the
// file does not define but which is a kind ("openai", "anthropic", "scripted"),
// or an empty name with overrides.kind set, gives that kind's defaults. The
// result is validated (a model is required, timeouts positive, ...).
Result<ProviderConfig> SelectProvider(const LlmConfig& config, std::string_view name,
                                      const ProviderOverrides& overrides);

}  // namespace kope::llm

#endif  // KOPE_LLM_CONFIG_H_
