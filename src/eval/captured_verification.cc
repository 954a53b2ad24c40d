// Verification on inputs captured where the kernel runs (a task's captured_inputs): one trial
// per captured set of inputs that fits a size set, after its random trials. Synthetic inputs
// alone have hidden in-model failures (a kernel right on normal draws, wrong on a model's
// outliers or its zero padding).
#include <cstring>

#include "check_site.h"
#include "kope/eval/inputs.h"
#include "kope/eval/outcome.h"
#include "session.h"

namespace kope {

Status WriteGivenInputs(const Task& task, const ArenaLayout& layout, const CapturedTrial& given,
                        const SizeSet& set, int trial, std::mt19937_64& rng, KernelProcess& arena) {
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    uint8_t* in = arena.input(0, i);
    if (const CapturedTensor* t = given.inputs[i]) {
      if (t->bytes.size() != layout.inputs[i].bytes) {
        return Status::Internal("captured input '" + t->name + "' does not fit its arena");
      }
      std::memcpy(in, t->bytes.data(), t->bytes.size());
      continue;
    }
    KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(task.inputs[i], trial, set));
    FillInput(in, layout.inputs[i].dtype, layout.inputs[i].count, d, rng);
  }
  return Status::Ok();
}

Result<bool> EvalSession::VerifyCaptured(const ArenaLayout& layout, const SizeSet& set) {
  if (!task.captured_inputs) return true;
  if (!captured) {
    KOPE_ASSIGN_OR_RETURN(std::vector<CapturedTensor> tensors,
                          ReadSafetensors(*task.captured_inputs));
    captured = std::move(tensors);
  }
  for (const CapturedTrial& trial : CapturedTrials(task, set, *captured)) {
    Progress("verify " + set.label + " on captured inputs " + trial.label);
    std::mt19937_64 rng(SecretSeed());
    KOPE_RETURN_IF_ERROR(check_site->GiveInputs(layout, trial, set, 0, rng));
    KOPE_ASSIGN_OR_RETURN(Expected expected, ReferenceOutputs(layout, set, false));
    KOPE_ASSIGN_OR_RETURN(
        bool ok, CheckCandidateCall(layout, set, 0, expected, Poison::kNanA, "captured_inputs"));
    if (!ok) {
      outcome.message += " on the captured inputs " + trial.label;
      return false;
    }
    outcome.captured_inputs_checked.push_back(set.label + " " + trial.label);
  }
  return true;
}

}  // namespace kope
