// Checked in the parent: both arenas are the parent's, which draws the inputs, poisons the
// outputs, fills the guards and compares (see check_site.h).
#include <cstring>

#include "check_site.h"
#include "kope/base/hash.h"
#include "kope/base/parallel.h"
#include "kope/eval/compare.h"
#include "kope/eval/inputs.h"

namespace kope {
namespace {

// True when every element equals the first (a constant output).
bool AllElementsEqual(const uint8_t* data, size_t count, size_t element_size) {
  for (size_t i = 1; i < count; ++i) {
    if (std::memcmp(data, data + i * element_size, element_size) != 0) return false;
  }
  return true;
}

class ParentCheck final : public CheckSite {
 public:
  using CheckSite::CheckSite;

  bool in_reference() const override { return false; }
  Result<CallOutcome> Map(const ArenaLayout& layout) override;
  Status DrawInputs(const ArenaLayout& layout, const SizeSet& set, int trial, std::mt19937_64& rng,
                    bool perturb) override {
    return perturb ? PerturbInputs(layout, set, trial, rng) : WriteInputs(layout, set, trial, rng);
  }
  Status GiveInputs(const ArenaLayout& layout, const CapturedTrial& given, const SizeSet& set,
                    int trial, std::mt19937_64& rng) override {
    KOPE_RETURN_IF_ERROR(WriteGivenInputs(s_.task, layout, given, set, trial, rng, *s_.reference));
    ShareInputs(layout);
    return Status::Ok();
  }
  Result<CallOutcome> CallReference(const ArenaLayout& layout, double timeout, bool) override {
    for (size_t o = 0; o < layout.outputs.size(); ++o) {
      FillPoison(s_.reference->output(o), layout.outputs[o].dtype, layout.outputs[o].count,
                 Poison::kNanA);
    }
    return s_.reference->Call(0, timeout);
  }
  Result<EvalSession::Expected> ReferenceResult(const ArenaLayout& layout, const CallOutcome&,
                                                bool summarize) override;
  Status PoisonOutputs(const ArenaLayout& layout, Poison poison) override {
    for (size_t o = 0; o < layout.outputs.size(); ++o) {
      FillPoison(s_.candidate->output(o), layout.outputs[o].dtype, layout.outputs[o].count, poison);
      FillGuard(s_.candidate->output(o) + layout.outputs[o].bytes, ArenaLayout::kGuardBytes);
    }
    return Status::Ok();
  }
  Result<EvalSession::CallFindings> Find(const ArenaLayout& layout,
                                         const EvalSession::Expected& expected,
                                         const std::vector<Tolerance>& tolerances) override;
  bool CallsTwicePerTrial(const SizeSet&) const override { return true; }

 private:
  Status WriteInputs(const ArenaLayout& layout, const SizeSet& set, int trial,
                     std::mt19937_64& rng);
  // The reference's inputs copied to the candidate's arena, and their hashes remembered.
  void ShareInputs(const ArenaLayout& layout);
  Status PerturbInputs(const ArenaLayout& layout, const SizeSet& set, int trial,
                       std::mt19937_64& rng);
};

Result<CallOutcome> ParentCheck::Map(const ArenaLayout& layout) {
  const double timeout = s_.options.call_timeout_seconds;
  KOPE_ASSIGN_OR_RETURN(CallOutcome mapped, s_.reference->Prepare(layout, timeout));
  if (!mapped.ok()) return Status::Internal("the reference runner failed: " + mapped.detail);
  return s_.candidate->Prepare(layout, timeout);
}

// Draws a trial's inputs into both arenas and remembers their hashes.
Status ParentCheck::WriteInputs(const ArenaLayout& layout, const SizeSet& set, int trial,
                                std::mt19937_64& rng) {
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(s_.task.inputs[i], trial, set));
    FillInput(s_.reference->input(0, i), layout.inputs[i].dtype, layout.inputs[i].count, d, rng);
  }
  ShareInputs(layout);
  return Status::Ok();
}

void ParentCheck::ShareInputs(const ArenaLayout& layout) {
  s_.input_hashes.clear();
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    const uint8_t* ref_in = s_.reference->input(0, i);
    ParallelMemcpy(s_.candidate->input(0, i), ref_in, layout.inputs[i].bytes);
    s_.input_hashes.push_back(BufferHash(ref_in, layout.inputs[i].bytes));
  }
}

// Redraws one element of every input in both arenas (a value different from the old one).
Status ParentCheck::PerturbInputs(const ArenaLayout& layout, const SizeSet& set, int trial,
                                  std::mt19937_64& rng) {
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    const auto& t = layout.inputs[i];
    KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(s_.task.inputs[i], trial, set));
    size_t esize = DTypeSize(t.dtype);
    size_t j = std::uniform_int_distribution<size_t>(0, t.count - 1)(rng);
    uint8_t* ref_in = s_.reference->input(0, i);
    uint64_t old_bits = 0, new_bits = 0;
    std::memcpy(&old_bits, ref_in + j * esize, esize);
    for (int attempt = 0; attempt < 16; ++attempt) {
      FillInput(ref_in + j * esize, t.dtype, 1, d, rng);
      std::memcpy(&new_bits, ref_in + j * esize, esize);
      if (new_bits != old_bits) break;
    }
    std::memcpy(s_.candidate->input(0, i) + j * esize, ref_in + j * esize, esize);
    s_.input_hashes[i] = BufferHash(ref_in, t.bytes);
  }
  return Status::Ok();
}

Result<EvalSession::Expected> ParentCheck::ReferenceResult(const ArenaLayout& layout,
                                                           const CallOutcome&, bool summarize) {
  // A reference that writes its inputs in place (PyTorch code may) gets them back from the
  // candidate's copy, which every candidate call is checked to leave as written: the next
  // perturbation and reference call then start from what the candidate sees.
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    uint8_t* ref_in = s_.reference->input(0, i);
    if (BufferHash(ref_in, layout.inputs[i].bytes) != s_.input_hashes[i]) {
      ParallelMemcpy(ref_in, s_.candidate->input(0, i), layout.inputs[i].bytes);
    }
  }
  EvalSession::Expected expected;
  for (size_t o = 0; o < layout.outputs.size(); ++o) expected.push_back(s_.reference->output(o));
  if (summarize) {
    s_.reference_summary.clear();
    for (size_t o = 0; o < expected.size(); ++o) {
      const auto& out = layout.outputs[o];
      s_.reference_summary.push_back(
          {out.count > 1 && AllElementsEqual(expected[o], out.count, DTypeSize(out.dtype)),
           BufferHash(expected[o], out.bytes)});
    }
  }
  return expected;
}

Result<EvalSession::CallFindings> ParentCheck::Find(const ArenaLayout& layout,
                                                    const EvalSession::Expected& expected,
                                                    const std::vector<Tolerance>& tolerances) {
  EvalSession::CallFindings f;
  KernelProcess& candidate = *s_.candidate;
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    if (BufferHash(candidate.input(0, i), layout.inputs[i].bytes) != s_.input_hashes[i]) {
      f.input_modified = static_cast<int>(i);
      return f;
    }
  }
  for (size_t o = 0; o < layout.outputs.size(); ++o) {
    const auto& out = layout.outputs[o];
    int64_t damage = FirstGuardDamage(candidate.output(o) + out.bytes, ArenaLayout::kGuardBytes);
    if (damage >= 0) {
      f.guard_output = static_cast<int>(o);
      f.guard_byte = damage;
      return f;
    }
    f.outputs.push_back(
        CompareOutputs(expected[o], candidate.output(o), out.dtype, out.count, tolerances[o]));
    if (!f.outputs.back().ok) return f;
  }
  return f;
}

}  // namespace

std::unique_ptr<CheckSite> CheckInParent(EvalSession& session) {
  return std::make_unique<ParentCheck>(session);
}

}  // namespace kope
