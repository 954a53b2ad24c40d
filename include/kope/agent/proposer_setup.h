// Opening the proposers a command asked for: the offline proposer, or an LLM provider from the
// configuration with the tuner beside it.
//
// Without `llm`, every proposer is CreateOfflineProposer(offline). With `llm`, the configuration
// is read from `config_path` (else $KOPE_LLM_CONFIG; without either, only a provider kind given
// as `provider` with its defaults can be used), the provider `provider` is selected ("" : the
// configuration's default) and opened with the configuration's response cache, and every
// proposer is CreateMixedProposer(CreateLlmProposer(provider), CreateOfflineProposer(offline)).
// Prompt tokens are calibrated in the file CalibrationPathFor(store_location). Errors (a missing
// API key, an unknown provider, an unreadable configuration) are InvalidArgument or NotFound with
// the configuration's own message.
//
// ProposerSet owns the provider and the calibration; Make() may be called from several threads
// (bench episodes run in parallel), each proposer being used by one episode.
#ifndef KOPE_AGENT_PROPOSER_SETUP_H_
#define KOPE_AGENT_PROPOSER_SETUP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "kope/agent/offline_proposer.h"
#include "kope/agent/proposer.h"
#include "kope/context/context_builder.h"
#include "kope/context/token_counter.h"
#include "kope/llm/provider.h"
#include "kope/llm/usage.h"

namespace kope::agent {

struct ProposerChoice {
  bool llm = false;
  std::string provider;                  // a configured name or a kind; "" the default
  std::string config_path;               // "" : $KOPE_LLM_CONFIG
  std::string store_location;            // where the token calibration lives beside
  int64_t context_budget_tokens = 8000;  // the active mode's; the passive one has none
  context::ContextMode mode = context::ContextMode::kActive;
  OfflineProposerOptions offline;
};

class ProposerSet {
 public:
  ProposerSet() = default;
  ProposerSet(ProposerSet&&) = default;
  ProposerSet& operator=(ProposerSet&&) = default;

  std::unique_ptr<Proposer> Make() const;
  // "offline" or the provider's name, kind and model, for people.
  const std::string& description() const { return description_; }
  // The estimated cost in US dollars of these tokens at the model's configured price (0 for the
  // offline proposer or an unpriced model).
  double CostUsd(int64_t prompt_tokens, int64_t completion_tokens) const;
  // The run configuration fields of this choice (JSON object text).
  const std::string& config_json() const { return config_json_; }

 private:
  friend Result<ProposerSet> OpenProposers(const ProposerChoice& choice);
  ProposerChoice choice_;
  std::unique_ptr<llm::LlmProvider> provider_;
  std::unique_ptr<context::TokenCalibration> calibration_;
  llm::PriceTable prices_;
  std::string model_;
  std::string description_ = "offline";
  std::string config_json_ = "{}";
};

Result<ProposerSet> OpenProposers(const ProposerChoice& choice);

}  // namespace kope::agent

#endif  // KOPE_AGENT_PROPOSER_SETUP_H_
