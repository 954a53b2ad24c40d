// `kope llm check`: sends one tiny request to a configured provider and reports
// the latency and usage, or the precise error.
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.h"
#include "kope/llm/config.h"
#include "kope/llm/open_provider.h"
#include "kope/llm/usage.h"

namespace kope::cli {
namespace {

using llm::LlmConfig;
using llm::LlmResponse;
using llm::ProviderConfig;

struct LlmCheckArgs {
  std::string config;
  std::string provider;
  std::string kind;
  std::string model;
  std::string base_url;
  std::string api_key_env;
  bool api_key_env_given = false;
  double timeout = 0;
  int retries = -1;
  std::string prompt = "Reply with the single word: ok";
  int max_tokens = 16;
  bool json = false;
};

// The configuration file: --config, else $KOPE_LLM_CONFIG, else none.
Result<LlmConfig> LoadConfig(const LlmCheckArgs& args) {
  std::string path = args.config;
  if (path.empty()) {
    const char* env = std::getenv("KOPE_LLM_CONFIG");
    if (env != nullptr) path = env;
  }
  if (path.empty()) return LlmConfig{};
  return llm::LoadLlmConfig(path);
}

Result<ProviderConfig> ResolveProvider(const LlmCheckArgs& args, const LlmConfig& config) {
  llm::ProviderOverrides o;
  if (!args.kind.empty()) {
    KOPE_ASSIGN_OR_RETURN(o.kind, llm::ParseProviderKind(args.kind));
  }
  if (!args.model.empty()) o.model = args.model;
  if (!args.base_url.empty()) o.base_url = args.base_url;
  if (args.api_key_env_given) o.api_key_env = args.api_key_env;
  if (args.timeout > 0) o.timeout_s = args.timeout;
  if (args.retries >= 0) o.retries = args.retries;
  return llm::SelectProvider(config, args.provider, o);
}

std::optional<llm::Price> PriceOf(const LlmConfig& config, const LlmResponse& r,
                                  const ProviderConfig& p) {
  std::optional<llm::Price> price = config.prices.Find(r.model);
  return price ? price : config.prices.Find(p.model);
}

void PrintReport(const ProviderConfig& p, const LlmResponse& r,
                 const std::optional<llm::Price>& price) {
  std::string where = p.kind == llm::ProviderKind::kScripted ? p.replies.string() : p.base_url;
  std::cout << fmt::format("provider  {} ({}, {})\n", p.name, llm::ProviderKindName(p.kind), where);
  std::cout << fmt::format("model     {}{}\n", p.model,
                           r.model.empty() || r.model == p.model
                               ? std::string()
                               : fmt::format(" (answered by {})", r.model));
  std::cout << fmt::format("latency   {:.3f} s ({} attempt{})\n", r.latency_seconds, r.attempts,
                           r.attempts == 1 ? "" : "s");
  std::cout << fmt::format(
      "tokens    {} prompt + {} completion ({})\n", r.usage.prompt_tokens,
      r.usage.completion_tokens,
      r.usage.estimated ? "estimated: the server reported none" : "reported by the server");
  if (price) {
    std::cout << fmt::format(
        "cost      ${:.6f} (at ${} / ${} per million prompt / completion "
        "tokens)\n",
        llm::CostUsd(r.usage, *price), price->prompt_usd_per_mtok, price->completion_usd_per_mtok);
  } else {
    std::cout << "cost      unknown (no [prices] entry for this model)\n";
  }
  std::cout << fmt::format("finish    {}\n", r.finish_reason.empty() ? "-" : r.finish_reason);
  if (!r.request_id.empty()) std::cout << fmt::format("request   {}\n", r.request_id);
  std::string reply = r.text.size() > 200 ? r.text.substr(0, 200) + "..." : r.text;
  std::cout << fmt::format("reply     {}\n", reply.empty() ? "(empty)" : reply);
}

nlohmann::json ReportJson(const ProviderConfig& p, const LlmResponse& r,
                          const std::optional<llm::Price>& price) {
  return {{"ok", true},
          {"provider", p.name},
          {"kind", llm::ProviderKindName(p.kind)},
          {"base_url", p.base_url},
          {"model", p.model},
          {"response_model", r.model},
          {"latency_seconds", r.latency_seconds},
          {"attempts", r.attempts},
          {"prompt_tokens", r.usage.prompt_tokens},
          {"completion_tokens", r.usage.completion_tokens},
          {"usage_estimated", r.usage.estimated},
          {"cost_usd", price ? nlohmann::json(llm::CostUsd(r.usage, *price)) : nlohmann::json()},
          {"finish_reason", r.finish_reason},
          {"request_id", r.request_id},
          {"reply", r.text}};
}

int Fail(const LlmCheckArgs& args, const Status& status, int code) {
  if (args.json) {
    std::cout << nlohmann::json{{"ok", false},
                                {"error_code", StatusCodeName(status.code())},
                                {"error", status.message()}}
                     .dump(2)
              << "\n";
  } else {
    std::cerr << "kope llm check: " << status.message() << "\n";
  }
  return code;
}

int RunLlmCheck(const LlmCheckArgs& args) {
  Result<LlmConfig> config = LoadConfig(args);
  if (!config.ok()) return Fail(args, config.status(), 2);
  Result<ProviderConfig> provider_config = ResolveProvider(args, *config);
  if (!provider_config.ok()) return Fail(args, provider_config.status(), 2);
  Result<std::unique_ptr<llm::LlmProvider>> provider = llm::OpenProvider(*provider_config);
  if (!provider.ok()) return Fail(args, provider.status(), 2);

  llm::LlmRequest request;
  request.messages = {{llm::Role::kUser, args.prompt}};
  request.max_tokens = args.max_tokens;
  Result<LlmResponse> response = (*provider)->Complete(request);
  if (!response.ok()) return Fail(args, response.status(), 1);

  std::optional<llm::Price> price = PriceOf(*config, *response, *provider_config);
  if (args.json) {
    std::cout << ReportJson(*provider_config, *response, price).dump(2) << "\n";
  } else {
    PrintReport(*provider_config, *response, price);
  }
  return 0;
}

}  // namespace

void RegisterLlmCommand(CLI::App& app, int* exit_code) {
  CLI::App* llm = app.add_subcommand("llm", "Language model providers");
  llm->require_subcommand(1);
  auto args = std::make_shared<LlmCheckArgs>();
  CLI::App* check = llm->add_subcommand(
      "check", "Send one tiny request to a provider; print latency and usage, or the error");
  check->add_option("--config", args->config,
                    "LLM configuration file (default: $KOPE_LLM_CONFIG, else none)");
  check->add_option("--provider", args->provider,
                    "Provider name in the file (default: the file's default), or a kind");
  check->add_option("--kind", args->kind, "openai, anthropic or scripted")
      ->check(CLI::IsMember({"openai", "anthropic", "scripted"}));
  check->add_option("--model", args->model, "Model name, overriding the file");
  check->add_option("--base-url", args->base_url, "Base URL, overriding the file");
  CLI::Option* key_env = check->add_option(
      "--api-key-env", args->api_key_env,
      "Environment variable holding the key (\"\" for none), overriding the file");
  check->add_option("--timeout", args->timeout, "Seconds the whole call may take")
      ->check(CLI::Range(0.1, 3600.0));
  check->add_option("--retries", args->retries, "Further attempts after the first")
      ->check(CLI::Range(0, 20));
  check->add_option("--prompt", args->prompt, "The message to send");
  check->add_option("--max-tokens", args->max_tokens, "The reply's token limit")
      ->check(CLI::Range(1, 1 << 20));
  check->add_flag("--json", args->json, "Print the result as JSON");
  check->callback([args, exit_code, key_env] {
    args->api_key_env_given = key_env->count() > 0;
    *exit_code = RunLlmCheck(*args);
  });
}

}  // namespace kope::cli
