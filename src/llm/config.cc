#include "kope/llm/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace kope::llm {
namespace {

namespace fs = std::filesystem;

// Reads one TOML document; every error names the origin, line and key path.
class ConfigReader {
 public:
  ConfigReader(std::string_view origin, fs::path base_dir)
      : origin_(origin), base_dir_(std::move(base_dir)) {}

  Status Error(const toml::node& node, const std::string& path, const std::string& what) const {
    return Status::InvalidArgument(
        fmt::format("{}:{}: {}: {}", origin_, node.source().begin.line, path, what));
  }

  Status CheckKeys(const toml::table& table, const std::string& path,
                   std::initializer_list<std::string_view> allowed) const {
    for (auto&& [key, node] : table) {
      bool known = false;
      for (std::string_view a : allowed) known = known || key.str() == a;
      if (!known) {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return Error(node, Join(path, key.str()),
                     fmt::format("unknown key (expected one of: {})", list));
      }
    }
    return Status::Ok();
  }

  static std::string Join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  Result<std::string> String(const toml::node& node, const std::string& path) const {
    if (auto v = node.value_exact<std::string>()) return *v;
    return Error(node, path, "expected a string");
  }
  Result<double> Number(const toml::node& node, const std::string& path) const {
    std::optional<double> v;
    if (node.is_integer()) v = static_cast<double>(*node.value_exact<int64_t>());
    if (node.is_floating_point()) v = *node.value_exact<double>();
    if (!v || !std::isfinite(*v)) return Error(node, path, "expected a finite number");
    return *v;
  }
  Result<int> Integer(const toml::node& node, const std::string& path) const {
    auto v = node.value_exact<int64_t>();
    if (!v || *v < INT32_MIN || *v > INT32_MAX) return Error(node, path, "expected an integer");
    return static_cast<int>(*v);
  }
  Result<const toml::table*> Table(const toml::node& node, const std::string& path) const {
    if (const toml::table* t = node.as_table()) return t;
    return Error(node, path, "expected a table");
  }
  fs::path Path(const std::string& text) const {
    fs::path p(text);
    return p.is_absolute() || base_dir_.empty() ? p : base_dir_ / p;
  }

 private:
  std::string origin_;
  fs::path base_dir_;
};

Status ValidateProvider(const ProviderConfig& c) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(fmt::format("provider '{}': {}", c.name, what));
  };
  if (c.kind != ProviderKind::kScripted && c.base_url.rfind("http://", 0) != 0 &&
      c.base_url.rfind("https://", 0) != 0) {
    return bad(fmt::format("base_url '{}' must start with http:// or https://", c.base_url));
  }
  if (c.temperature && (*c.temperature < 0 || *c.temperature > 2)) {
    return bad("temperature must be within [0, 2]");
  }
  if (c.max_tokens && *c.max_tokens <= 0) return bad("max_tokens must be positive");
  if (c.max_tokens_field != "max_tokens" && c.max_tokens_field != "max_completion_tokens") {
    return bad("max_tokens_field must be \"max_tokens\" or \"max_completion_tokens\"");
  }
  if (!(c.connect_timeout_s > 0) || !(c.attempt_timeout_s > 0) || !(c.timeout_s > 0)) {
    return bad("connect_timeout_s, attempt_timeout_s and timeout_s must be positive");
  }
  if (c.retries < 0 || c.retries > 20) return bad("retries must be within [0, 20]");
  if (c.backoff_initial_s < 0 || c.backoff_max_s < c.backoff_initial_s) {
    return bad("backoff_initial_s must be >= 0 and backoff_max_s >= backoff_initial_s");
  }
  if (c.concurrency < 1 || c.concurrency > 256) return bad("concurrency must be within [1, 256]");
  return Status::Ok();
}

Result<ProviderConfig> ReadProvider(const ConfigReader& r, const std::string& name,
                                    const toml::table& t, const std::string& path) {
  KOPE_RETURN_IF_ERROR(r.CheckKeys(
      t, path,
      {"kind", "base_url", "model", "temperature", "max_tokens", "max_tokens_field", "api_key_env",
       "anthropic_version", "connect_timeout_s", "attempt_timeout_s", "timeout_s", "retries",
       "backoff_initial_s", "backoff_max_s", "concurrency", "replies"}));
  const toml::node* kind_node = t.get("kind");
  if (kind_node == nullptr) {
    return r.Error(t, path, "missing key 'kind' (openai, anthropic or scripted)");
  }
  KOPE_ASSIGN_OR_RETURN(std::string kind_name, r.String(*kind_node, path + ".kind"));
  Result<ProviderKind> kind = ParseProviderKind(kind_name);
  if (!kind.ok()) return r.Error(*kind_node, path + ".kind", kind.status().message());
  ProviderConfig c = DefaultProviderConfig(*kind, name);

  for (auto&& [key, node] : t) {
    const std::string k(key.str());
    const std::string p = ConfigReader::Join(path, k);
    if (k == "base_url") {
      KOPE_ASSIGN_OR_RETURN(c.base_url, r.String(node, p));
    } else if (k == "model") {
      KOPE_ASSIGN_OR_RETURN(c.model, r.String(node, p));
    } else if (k == "temperature") {
      KOPE_ASSIGN_OR_RETURN(c.temperature, r.Number(node, p));
    } else if (k == "max_tokens") {
      KOPE_ASSIGN_OR_RETURN(c.max_tokens, r.Integer(node, p));
    } else if (k == "max_tokens_field") {
      KOPE_ASSIGN_OR_RETURN(c.max_tokens_field, r.String(node, p));
    } else if (k == "api_key_env") {
      KOPE_ASSIGN_OR_RETURN(c.api_key_env, r.String(node, p));
    } else if (k == "anthropic_version") {
      KOPE_ASSIGN_OR_RETURN(c.anthropic_version, r.String(node, p));
    } else if (k == "connect_timeout_s") {
      KOPE_ASSIGN_OR_RETURN(c.connect_timeout_s, r.Number(node, p));
    } else if (k == "attempt_timeout_s") {
      KOPE_ASSIGN_OR_RETURN(c.attempt_timeout_s, r.Number(node, p));
    } else if (k == "timeout_s") {
      KOPE_ASSIGN_OR_RETURN(c.timeout_s, r.Number(node, p));
    } else if (k == "retries") {
      KOPE_ASSIGN_OR_RETURN(c.retries, r.Integer(node, p));
    } else if (k == "backoff_initial_s") {
      KOPE_ASSIGN_OR_RETURN(c.backoff_initial_s, r.Number(node, p));
    } else if (k == "backoff_max_s") {
      KOPE_ASSIGN_OR_RETURN(c.backoff_max_s, r.Number(node, p));
    } else if (k == "concurrency") {
      KOPE_ASSIGN_OR_RETURN(c.concurrency, r.Integer(node, p));
    } else if (k == "replies") {
      KOPE_ASSIGN_OR_RETURN(std::string replies, r.String(node, p));
      c.replies = r.Path(replies);
    }
  }
  Status valid = ValidateProvider(c);
  if (!valid.ok()) return r.Error(t, path, valid.message());
  return c;
}

Result<Price> ReadPrice(const ConfigReader& r, const toml::table& t, const std::string& path) {
  KOPE_RETURN_IF_ERROR(r.CheckKeys(t, path, {"prompt_usd_per_mtok", "completion_usd_per_mtok"}));
  Price price;
  for (auto [key, field] : {std::pair{"prompt_usd_per_mtok", &price.prompt_usd_per_mtok},
                            std::pair{"completion_usd_per_mtok", &price.completion_usd_per_mtok}}) {
    const toml::node* node = t.get(key);
    if (node == nullptr) return r.Error(t, path, fmt::format("missing key '{}'", key));
    KOPE_ASSIGN_OR_RETURN(*field, r.Number(*node, path + "." + key));
    if (*field < 0) return r.Error(*node, path + "." + key, "a price cannot be negative");
  }
  return price;
}

Result<LlmConfig> ReadConfig(const ConfigReader& r, const toml::table& root) {
  LlmConfig config;
  KOPE_RETURN_IF_ERROR(r.CheckKeys(root, "", {"default", "cache", "providers", "prices"}));
  if (const toml::node* d = root.get("default")) {
    KOPE_ASSIGN_OR_RETURN(config.default_provider, r.String(*d, "default"));
  }
  if (const toml::node* node = root.get("cache")) {
    KOPE_ASSIGN_OR_RETURN(const toml::table* cache, r.Table(*node, "cache"));
    KOPE_RETURN_IF_ERROR(r.CheckKeys(*cache, "cache", {"dir", "mode"}));
    if (const toml::node* dir = cache->get("dir")) {
      KOPE_ASSIGN_OR_RETURN(std::string d, r.String(*dir, "cache.dir"));
      config.cache.dir = r.Path(d);
    }
    config.cache.mode = config.cache.dir.empty() ? CacheMode::kOff : CacheMode::kReadWrite;
    if (const toml::node* mode = cache->get("mode")) {
      KOPE_ASSIGN_OR_RETURN(std::string m, r.String(*mode, "cache.mode"));
      Result<CacheMode> parsed = ParseCacheMode(m);
      if (!parsed.ok()) return r.Error(*mode, "cache.mode", parsed.status().message());
      config.cache.mode = *parsed;
    }
    if (config.cache.mode != CacheMode::kOff && config.cache.dir.empty()) {
      return r.Error(*node, "cache", "a cache mode other than \"off\" needs 'dir'");
    }
  }
  if (const toml::node* node = root.get("providers")) {
    KOPE_ASSIGN_OR_RETURN(const toml::table* providers, r.Table(*node, "providers"));
    for (auto&& [name, p] : *providers) {
      std::string path = "providers." + std::string(name.str());
      KOPE_ASSIGN_OR_RETURN(const toml::table* t, r.Table(p, path));
      KOPE_ASSIGN_OR_RETURN(ProviderConfig c, ReadProvider(r, std::string(name.str()), *t, path));
      config.providers.emplace(c.name, std::move(c));
    }
  }
  if (const toml::node* node = root.get("prices")) {
    KOPE_ASSIGN_OR_RETURN(const toml::table* prices, r.Table(*node, "prices"));
    for (auto&& [model, p] : *prices) {
      std::string path = fmt::format("prices.\"{}\"", model.str());
      KOPE_ASSIGN_OR_RETURN(const toml::table* t, r.Table(p, path));
      KOPE_ASSIGN_OR_RETURN(Price price, ReadPrice(r, *t, path));
      config.prices.Set(std::string(model.str()), price);
    }
  }
  if (!config.default_provider.empty() && !config.providers.count(config.default_provider)) {
    return r.Error(*root.get("default"), "default",
                   fmt::format("no provider named '{}' is defined", config.default_provider));
  }
  return config;
}

}  // namespace

ProviderConfig DefaultProviderConfig(ProviderKind kind, std::string name) {
  ProviderConfig c;
  c.name = std::move(name);
  c.kind = kind;
  switch (kind) {
    case ProviderKind::kOpenAi:
      c.base_url = "https://api.openai.com/v1";
      c.api_key_env = "OPENAI_API_KEY";
      break;
    case ProviderKind::kAnthropic:
      c.base_url = "https://api.anthropic.com";
      c.api_key_env = "ANTHROPIC_API_KEY";
      break;
    case ProviderKind::kScripted:
      c.model = "scripted";
      break;
  }
  return c;
}

Result<LlmConfig> ParseLlmConfig(std::string_view toml_text, const fs::path& base_dir,
                                 std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  ConfigReader reader(origin, base_dir);
  return ReadConfig(reader, root);
}

Result<LlmConfig> LoadLlmConfig(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot open LLM config {}", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  return ParseLlmConfig(text.str(), path.parent_path(), path.string());
}

Result<ProviderConfig> SelectProvider(const LlmConfig& config, std::string_view name,
                                      const ProviderOverrides& o) {
  std::string chosen(name);
  if (chosen.empty()) chosen = config.default_provider;
  if (chosen.empty() && config.providers.size() == 1 && !o.kind) {
    chosen = config.providers.begin()->first;
  }
  ProviderConfig c;
  if (auto it = config.providers.find(chosen); it != config.providers.end()) {
    c = it->second;
  } else if (Result<ProviderKind> kind = ParseProviderKind(chosen); kind.ok()) {
    c = DefaultProviderConfig(*kind, chosen);
  } else if (chosen.empty() && o.kind) {
    c = DefaultProviderConfig(*o.kind, std::string(ProviderKindName(*o.kind)));
  } else if (chosen.empty()) {
    return Status::InvalidArgument(
        "no provider chosen: name one (--provider), set 'default' in the LLM config, or give a "
        "kind (--kind openai|anthropic|scripted)");
  } else {
    std::string known;
    for (const auto& [n, p] : config.providers) known += (known.empty() ? "" : ", ") + n;
    return Status::InvalidArgument(
        fmt::format("no provider named '{}' in the LLM config (defined: {})", chosen,
                    known.empty() ? "none" : known));
  }
  if (o.kind) c.kind = *o.kind;
  if (o.base_url) c.base_url = *o.base_url;
  if (o.model) c.model = *o.model;
  if (o.api_key_env) c.api_key_env = *o.api_key_env;
  if (o.temperature) c.temperature = *o.temperature;
  if (o.max_tokens) c.max_tokens = *o.max_tokens;
  if (o.timeout_s) c.timeout_s = *o.timeout_s;
  if (o.connect_timeout_s) c.connect_timeout_s = *o.connect_timeout_s;
  if (o.retries) c.retries = *o.retries;
  if (o.concurrency) c.concurrency = *o.concurrency;
  if (o.replies) c.replies = *o.replies;
  if (c.timeout_s < c.attempt_timeout_s) c.attempt_timeout_s = c.timeout_s;
  KOPE_RETURN_IF_ERROR(ValidateProvider(c));
  if (c.model.empty()) {
    return Status::InvalidArgument(fmt::format(
        "provider '{}': no model (set 'model' in [providers.{}] or pass --model)", c.name, c.name));
  }
  if (c.kind == ProviderKind::kScripted && c.replies.empty()) {
    return Status::InvalidArgument(fmt::format(
        "provider '{}': a scripted provider needs 'replies' (a JSON file or a folder)", c.name));
  }
  return c;
}

}  // namespace kope::llm
