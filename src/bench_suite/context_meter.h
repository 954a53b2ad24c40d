// A proposer that counts, for every candidate another proposer makes, the tokens of the prompts
// the context manager builds for that step: the active one under its budget and the passive one
// (the run's whole history) without a budget. The candidates are passed on unchanged; the counts
// are kept by attempt id once the episode records the attempt. Internal to the ablations.
#ifndef KOPE_SRC_BENCH_SUITE_CONTEXT_METER_H_
#define KOPE_SRC_BENCH_SUITE_CONTEXT_METER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kope/agent/proposer.h"

namespace kope::bench_suite::internal {

struct PromptTokens {
  int64_t active = 0;
  int64_t passive = 0;
};

class ContextMeter : public agent::Proposer {
 public:
  ContextMeter(std::unique_ptr<agent::Proposer> inner, int64_t budget_tokens)
      : inner_(std::move(inner)), budget_tokens_(budget_tokens) {}

  std::string name() const override { return inner_->name(); }
  std::string model() const override { return inner_->model(); }
  Result<bool> CanStartFresh(const agent::ProposalRequest& request) override {
    return inner_->CanStartFresh(request);
  }
  Result<agent::ProposeResult> Propose(const agent::ProposalRequest& request) override;

  // The counts of the recorded attempts, by attempt id.
  const std::map<memory::NodeId, PromptTokens>& tokens() const { return tokens_; }
  // The first context that could not be built ("" when every one could).
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<agent::Proposer> inner_;
  int64_t budget_tokens_;
  std::map<memory::NodeId, PromptTokens> tokens_;
  std::string error_;
};

}  // namespace kope::bench_suite::internal

#endif  // KOPE_SRC_BENCH_SUITE_CONTEXT_METER_H_
