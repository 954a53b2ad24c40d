#include "kope/agent/proposer_setup.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "kope/agent/llm_proposer.h"
#include "kope/llm/config.h"
#include "kope/llm/open_provider.h"

namespace kope::agent {

std::unique_ptr<Proposer> ProposerSet::Make() const {
  if (!provider_) return CreateOfflineProposer(choice_.offline);
  LlmProposerOptions options;
  // The passive mode is the whole history, as an agent that keeps its conversation sends it.
  options.context_budget_tokens = choice_.mode == context::ContextMode::kPassive
                                      ? context::kUnboundedTokens
                                      : choice_.context_budget_tokens;
  options.mode = choice_.mode;
  options.calibration = calibration_.get();
  options.prices = prices_;
  return CreateMixedProposer(CreateLlmProposer(*provider_, options),
                             CreateOfflineProposer(choice_.offline));
}

double ProposerSet::CostUsd(int64_t prompt_tokens, int64_t completion_tokens) const {
  if (!provider_) return 0;
  std::optional<llm::Price> price = prices_.Find(model_);
  if (!price) return 0;
  llm::LlmUsage usage;
  usage.prompt_tokens = prompt_tokens;
  usage.completion_tokens = completion_tokens;
  return llm::CostUsd(usage, *price);
}

Result<ProposerSet> OpenProposers(const ProposerChoice& choice) {
  ProposerSet set;
  set.choice_ = choice;
  nlohmann::json config = {{"transfer", choice.offline.transfer}};
  if (!choice.llm) {
    set.config_json_ = config.dump();
    return set;
  }
  std::string path = choice.config_path;
  if (path.empty()) {
    const char* env = std::getenv("KOPE_LLM_CONFIG");
    if (env != nullptr) path = env;
  }
  llm::LlmConfig llm_config;
  if (!path.empty()) {
    KOPE_ASSIGN_OR_RETURN(llm_config, llm::LoadLlmConfig(path));
  }
  KOPE_ASSIGN_OR_RETURN(llm::ProviderConfig provider,
                        llm::SelectProvider(llm_config, choice.provider, {}));
  KOPE_ASSIGN_OR_RETURN(set.provider_, llm::OpenProvider(provider, llm_config.cache));
  set.prices_ = llm_config.prices;
  set.model_ = provider.model;
  if (!choice.store_location.empty()) {
    Result<std::filesystem::path> calibration = context::CalibrationPathFor(choice.store_location);
    if (calibration.ok()) {
      set.calibration_ = std::make_unique<context::TokenCalibration>(*calibration);
      KOPE_RETURN_IF_ERROR(set.calibration_->Load());
    }
  }
  if (!set.calibration_) set.calibration_ = std::make_unique<context::TokenCalibration>();
  set.description_ = provider.name + " (" + std::string(llm::ProviderKindName(provider.kind)) +
                     ", " + provider.model + ")";
  config["provider"] = provider.name;
  config["provider_kind"] = llm::ProviderKindName(provider.kind);
  config["model"] = provider.model;
  config["context_budget_tokens"] = choice.mode == context::ContextMode::kPassive
                                        ? nlohmann::json(nullptr)
                                        : nlohmann::json(choice.context_budget_tokens);
  config["context_mode"] = context::ContextModeName(choice.mode);
  set.config_json_ = config.dump();
  return set;
}

}  // namespace kope::agent
