// Verification: fresh inputs, poisoned outputs, guards, input hashes, two
// calls per trial, comparison with the reference.
#include <cstring>

#include "kope/base/hash.h"
#include "kope/eval/compare.h"
#include "kope/eval/inputs.h"
#include "session.h"

namespace kope {
namespace {

std::vector<std::pair<std::string, int64_t>> SizesOf(const SizeSet& set) {
  return {set.sizes.begin(), set.sizes.end()};
}

// True when every element of `bytes` equals the first (a constant output).
bool AllElementsEqual(const uint8_t* data, size_t count, size_t element_size) {
  for (size_t i = 1; i < count; ++i) {
    if (std::memcmp(data, data + i * element_size, element_size) != 0) return false;
  }
  return true;
}

}  // namespace

uint64_t SecretSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

bool EvalSession::CandidateCallOk(const CallOutcome& call, const std::string& what) {
  if (call.ok()) return true;
  switch (call.kind) {
    case CallOutcome::Kind::kKernelError:
      outcome.verdict = Verdict::kRuntimeError;
      outcome.message = "the kernel returned " + std::to_string(call.rc) + " (" + what + ")";
      break;
    case CallOutcome::Kind::kCrash:
      outcome.verdict = Verdict::kCrash;
      outcome.message = "the runner died (" + what + ")";
      break;
    case CallOutcome::Kind::kTimeout:
      outcome.verdict = Verdict::kTimeout;
      outcome.message = "the kernel did not return within " +
                        std::to_string(options.call_timeout_seconds) + " s (" + what + ")";
      break;
    case CallOutcome::Kind::kOk:
      break;
  }
  outcome.runtime_detail = call.detail;
  return false;
}

Result<bool> EvalSession::Verify(const std::vector<SizeSet>& sets, int trials,
                                 const std::string& failure_reason) {
  const double timeout = options.call_timeout_seconds;
  for (const SizeSet& set : sets) {
    KOPE_ASSIGN_OR_RETURN(ArenaLayout layout, ArenaLayout::Build(task, set, 1));
    KOPE_ASSIGN_OR_RETURN(CallOutcome mapped, reference->Prepare(layout, timeout));
    if (!mapped.ok()) return Status::Internal("the reference runner failed: " + mapped.detail);
    KOPE_ASSIGN_OR_RETURN(mapped, candidate->Prepare(layout, timeout));
    if (!CandidateCallOk(mapped, "mapping buffers for " + set.label)) return false;

    std::vector<std::vector<uint8_t>> previous_reference;
    for (int trial = 0; trial < trials; ++trial) {
      Progress("verify " + set.label + " trial " + std::to_string(trial + 1) + "/" +
               std::to_string(trials));
      std::mt19937_64 rng(SecretSeed());
      std::vector<uint64_t> input_hashes;
      for (size_t i = 0; i < layout.inputs.size(); ++i) {
        const auto& dists = task.inputs[i].distributions;
        Distribution dist = dists.empty() ? Distribution{} : dists[trial % dists.size()];
        uint8_t* ref_in = reference->input(0, i);
        FillInput(ref_in, layout.inputs[i].dtype, layout.inputs[i].count, dist, rng);
        std::memcpy(candidate->input(0, i), ref_in, layout.inputs[i].bytes);
        input_hashes.push_back(BufferHash(ref_in, layout.inputs[i].bytes));
      }

      // The reference's outputs.
      for (size_t o = 0; o < layout.outputs.size(); ++o) {
        FillPoison(reference->output(o), layout.outputs[o].dtype, layout.outputs[o].count,
                   Poison::kNanA);
      }
      KOPE_ASSIGN_OR_RETURN(CallOutcome ref_call, reference->Call(0, timeout));
      if (!ref_call.ok()) {
        return Status::FailedPrecondition("the task's reference failed at " + set.label + ": " +
                                          ref_call.detail + " (rc " + std::to_string(ref_call.rc) +
                                          ")");
      }
      std::vector<std::vector<uint8_t>> expected;
      for (size_t o = 0; o < layout.outputs.size(); ++o) {
        const uint8_t* p = reference->output(o);
        expected.emplace_back(p, p + layout.outputs[o].bytes);
      }
      if (&set == &sets.back() && set.label == "bench" && failure_reason == "value") {
        for (size_t o = 0; o < expected.size(); ++o) {
          size_t esize = DTypeSize(layout.outputs[o].dtype);
          bool constant = layout.outputs[o].count > 1 &&
                          AllElementsEqual(expected[o].data(), layout.outputs[o].count, esize);
          bool same = !previous_reference.empty() && previous_reference[o] == expected[o];
          if (constant || same) {
            return Status::FailedPrecondition(
                "task " + task.name + ": the reference output '" + layout.outputs[o].name +
                "' " + (constant ? "is constant" : "does not change with its inputs") +
                " at the bench size; such a task cannot tell a right kernel from a wrong one");
          }
        }
        previous_reference = expected;
      }

      // The candidate, twice, with different poison each time.
      const Poison poisons[2] = {trial % 2 == 0 ? Poison::kNanA : Poison::kNanB, Poison::kFinite};
      for (int run = 0; run < 2; ++run) {
        for (size_t o = 0; o < layout.outputs.size(); ++o) {
          FillPoison(candidate->output(o), layout.outputs[o].dtype, layout.outputs[o].count,
                     poisons[run]);
          FillGuard(candidate->output(o) + layout.outputs[o].bytes, ArenaLayout::kGuardBytes);
        }
        KOPE_ASSIGN_OR_RETURN(CallOutcome call, candidate->Call(0, timeout));
        if (!CandidateCallOk(call, set.label + ", trial " + std::to_string(trial + 1))) {
          return false;
        }
        Mismatch m;
        m.size_set = set.label;
        m.sizes = SizesOf(set);
        m.trial = trial + 1;
        for (size_t i = 0; i < layout.inputs.size(); ++i) {
          if (BufferHash(candidate->input(0, i), layout.inputs[i].bytes) != input_hashes[i]) {
            m.reason = "input_modified";
            m.tensor = layout.inputs[i].name;
            outcome.verdict = Verdict::kIncorrect;
            outcome.message = "the kernel modified its input '" + m.tensor + "' at " + set.label;
            outcome.mismatch = m;
            return false;
          }
        }
        for (size_t o = 0; o < layout.outputs.size(); ++o) {
          const auto& out = layout.outputs[o];
          int64_t damage =
              FirstGuardDamage(candidate->output(o) + out.bytes, ArenaLayout::kGuardBytes);
          if (damage >= 0) {
            m.reason = "guard_overwritten";
            m.tensor = out.name;
            m.index = static_cast<int64_t>(out.count) + damage / static_cast<int64_t>(DTypeSize(out.dtype));
            outcome.verdict = Verdict::kIncorrect;
            outcome.message = "the kernel wrote past the end of output '" + out.name + "' at " +
                              set.label;
            outcome.mismatch = m;
            return false;
          }
          KOPE_ASSIGN_OR_RETURN(Tolerance tol,
                                ResolveTolerance(task.tolerance, out.dtype, set));
          Comparison c = CompareOutputs(expected[o].data(), candidate->output(o), out.dtype,
                                        out.count, tol);
          if (!c.ok) {
            m.reason = failure_reason != "value" ? failure_reason
                       : c.nan_inf_mismatch      ? "nan_inf"
                       : run == 1                ? "runs_disagree"
                                                 : "value";
            m.tensor = out.name;
            m.index = c.first_index;
            m.position = Unravel(c.first_index, out.shape);
            m.expected = c.expected;
            m.actual = c.actual;
            m.max_abs_error = c.max_abs_error;
            m.max_rel_error = c.max_rel_error;
            m.mismatches = c.mismatches;
            m.elements = static_cast<int64_t>(out.count);
            m.rtol = tol.rtol;
            m.atol = tol.atol;
            outcome.verdict = Verdict::kIncorrect;
            outcome.message = "output '" + out.name + "' is wrong at " + set.label + " (" +
                              std::to_string(c.mismatches) + " of " + std::to_string(out.count) +
                              " elements" + (m.reason == "value" ? "" : ", " + m.reason) + ")";
            outcome.mismatch = m;
            return false;
          }
        }
      }
    }
    if (failure_reason == "value") outcome.size_sets.push_back(set.label);
  }
  return true;
}

}  // namespace kope
