#include "kope/agent/llm_proposer.h"

#include <chrono>
#include <memory>

#include "kope/agent/candidate_language.h"
#include "kope/agent/tunables.h"
#include "kope/llm/proposal.h"
#include "kope/memory/text/decision_classes.h"

namespace kope::agent {
namespace {

constexpr std::string_view kTunables =
    "Numbers you are unsure of (tile and block sizes, unroll factors, vector widths, thread "
    "counts) can be left to kope's tuner: declare each one as\n"
    "  constexpr int kName = VALUE;  // kope:tune V1 V2 V3\n"
    "or `#define NAME VALUE  // kope:tune V1 V2 V3`, listing the values worth trying (the current "
    "one among them, in increasing order). The tuner then measures the neighbouring values. "
    "Every listed value must give a correct kernel.";

constexpr std::string_view kPythonTunables =
    "Numbers you are unsure of (block sizes, num_warps, num_stages, rows per program) can be "
    "left to kope's tuner: make each one a module-level constant whose line ends with a "
    "# kope:tune comment listing the values worth trying (the current one among them, in "
    "increasing order), and pass it where it is used:\n"
    "  BLOCK_SIZE = 1024  # kope:tune 256 512 1024 2048\n"
    "  kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE)\n"
    "A keyword argument or a constexpr parameter's default can carry the comment too "
    "(`BLOCK: tl.constexpr = 128,  # kope:tune 64 128 256`), and a comment line naming the "
    "tunable annotates the next line: `# kope:tune BLOCK_M = 32, 64, 128`. The tuner then "
    "measures the neighbouring values. Every listed value must give a correct kernel.";

// The language the proposal is asked for, and the reply format that goes with it.
std::string CandidateLanguageOf(const ProposalRequest& request) {
  return request.candidate_language.empty() ? request.language : request.candidate_language;
}

llm::SourceFormat FormatFor(std::string_view language) {
  return IsModelNewLanguage(language) ? llm::SourceFormat::kModelNew
                                      : llm::SourceFormat::kNativeKernel;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class LlmProposer : public Proposer {
 public:
  LlmProposer(llm::LlmProvider& provider, LlmProposerOptions options)
      : provider_(provider), options_(std::move(options)) {}

  std::string name() const override {
    return "llm:" + provider_.identity().name + "/" + provider_.identity().model;
  }
  std::string model() const override { return provider_.identity().model; }

  Result<bool> CanStartFresh(const ProposalRequest& request) override {
    (void)request;
    return true;
  }

  Result<ProposeResult> Propose(const ProposalRequest& request) override {
    const std::string language = CandidateLanguageOf(request);
    const llm::SourceFormat format = FormatFor(language);
    const std::string_view tunables = TunablesInstructions(language);
    context::ContextRequest cr;
    cr.language = language;
    cr.task = request.task;
    cr.task_id = request.task_id;
    cr.node = request.parent ? request.parent->attempt.id : 0;
    cr.run = request.run_id;
    cr.hardware = request.hardware;
    cr.mode = options_.mode;
    cr.model = model();
    cr.calibration = options_.calibration;
    const context::TokenCounter counter = options_.calibration != nullptr
                                              ? options_.calibration->CounterFor(model())
                                              : context::TokenCounter{};
    cr.budget_tokens = options_.context_budget_tokens - counter.Bound(tunables) - 4;
    KOPE_ASSIGN_OR_RETURN(context::BuiltContext built, context::BuildContext(*request.store, cr));
    auto shared = std::make_shared<const context::BuiltContext>(std::move(built));

    llm::LlmRequest call;
    call.system = shared->system_prompt + "\n\n" + std::string(tunables);
    call.messages.push_back({llm::Role::kUser, shared->user_prompt});
    call.cancel = request.cancel;

    ProposeResult result;
    result.kind = ProposeResult::Kind::kFailed;
    for (int i = 0; i <= options_.parse_retries; ++i) {
      const double t0 = Now();
      Result<llm::LlmResponse> response = provider_.Complete(call);
      result.usage.model_seconds += Now() - t0;
      if (!response.ok()) return response.status();
      const llm::UsageTotals usage = llm::UsageOf(*response, options_.prices, model());
      result.usage.calls += static_cast<int>(usage.calls);
      result.usage.prompt_tokens += response->usage.prompt_tokens;
      result.usage.completion_tokens += response->usage.completion_tokens;
      result.usage.cost_usd += usage.cost_usd;
      if (i == 0 && options_.calibration != nullptr && !response->cached &&
          !response->usage.estimated) {
        // A calibration that cannot be saved costs accuracy, not the proposal.
        (void)options_.calibration->Record(model(), shared->raw_tokens,
                                           response->usage.prompt_tokens);
      }
      llm::ParsedReply parsed = llm::ParseProposal(response->text, format);
      if (auto* proposal = std::get_if<llm::Proposal>(&parsed)) {
        result.kind = ProposeResult::Kind::kCandidate;
        Candidate& c = result.candidate;
        c.source = std::move(proposal->source);
        c.decision = std::move(proposal->decision);
        for (const std::string& tag : proposal->tags) {
          if (memory::IsDecisionClass(tag)) c.classes.push_back(tag);
        }
        c.proposer = "llm:" + model();
        c.language = language;
        c.on_recorded = [shared](memory::GraphWriter& w, memory::NodeId attempt) {
          return context::RecordInjection(w, attempt, *shared);
        };
        return result;
      }
      result.reason = std::get<llm::ParseFailure>(parsed).reason;
      call.messages.push_back({llm::Role::kAssistant, response->text});
      call.messages.push_back(
          {llm::Role::kUser,
           "Your reply could not be used: " + result.reason + " Reply again: one DECISION: line, " +
               (format == llm::SourceFormat::kModelNew
                    ? "then one complete Python file defining ModelNew in a ```python block."
                    : "then one complete kernel in a fenced code block.")});
    }
    return result;
  }

 private:
  llm::LlmProvider& provider_;
  LlmProposerOptions options_;
};

class MixedProposer : public Proposer {
 public:
  MixedProposer(std::unique_ptr<Proposer> llm, std::unique_ptr<Proposer> tuner)
      : llm_(std::move(llm)), tuner_(std::move(tuner)) {}

  std::string name() const override { return llm_->name() + "+tuner"; }
  std::string model() const override { return llm_->model(); }

  Result<bool> CanStartFresh(const ProposalRequest& request) override {
    return llm_->CanStartFresh(request);
  }

  Result<ProposeResult> Propose(const ProposalRequest& request) override {
    if (request.parent && MentionsTunables(request.parent_source)) {
      const std::string& by = request.parent->attempt.proposer;
      const bool written_by_llm = by.rfind("llm", 0) == 0;
      const bool climbing = ProposerBase(by) == "tuner" && request.parent_improved;
      if (written_by_llm || climbing) {
        KOPE_ASSIGN_OR_RETURN(ProposeResult tuned, tuner_->Propose(request));
        if (tuned.kind == ProposeResult::Kind::kCandidate) return tuned;
      }
    }
    return llm_->Propose(request);
  }

 private:
  std::unique_ptr<Proposer> llm_;
  std::unique_ptr<Proposer> tuner_;
};

}  // namespace

std::string_view TunablesInstructions(std::string_view language) {
  return IsModelNewLanguage(language) ? kPythonTunables : kTunables;
}

std::unique_ptr<Proposer> CreateLlmProposer(llm::LlmProvider& provider,
                                            LlmProposerOptions options) {
  return std::make_unique<LlmProposer>(provider, std::move(options));
}

std::unique_ptr<Proposer> CreateMixedProposer(std::unique_ptr<Proposer> llm,
                                              std::unique_ptr<Proposer> tuner) {
  return std::make_unique<MixedProposer>(std::move(llm), std::move(tuner));
}

}  // namespace kope::agent
