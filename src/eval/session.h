// EvalSession: the state of one candidate's evaluation (internal).
//
// Evaluator::Evaluate builds a session, and the session runs the steps:
// compile, start runners, verify (verification.cc), time (timing_session.cc),
// verify again, decide. Each step either succeeds, ends the evaluation with a
// candidate verdict (recorded in `outcome`, step returns false), or fails with
// a Status (the task or kope is at fault).
#ifndef KOPE_SRC_EVAL_SESSION_H_
#define KOPE_SRC_EVAL_SESSION_H_

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernel_process.h"
#include "kope/eval/evaluator.h"
#include "kope/eval/inputs.h"

namespace kope {

struct EvalSession {
  const Task& task;
  const EvalOptions& options;
  std::string language;  // of the backend: selects the bench set
  Outcome outcome;
  std::filesystem::path scratch;
  std::unique_ptr<KernelProcess> reference;
  std::unique_ptr<KernelProcess> baseline;  // null when the reference is the baseline
  std::unique_ptr<KernelProcess> candidate;
  // A PyTorch task's torch.compile reference point, timed beside the baseline; may be null.
  std::unique_ptr<KernelProcess> compiled;
  std::vector<uint64_t> input_hashes;  // of the current trial's inputs

  EvalSession(const Task& t, const EvalOptions& o, std::string lang)
      : task(t), options(o), language(std::move(lang)) {}
  KernelProcess& baseline_process() { return baseline ? *baseline : *reference; }
  void Progress(const std::string& line) const {
    if (options.progress) options.progress(line);
  }

  // Ends the evaluation with `verdict` unless `call` is ok; returns whether it was ok.
  bool CandidateCallOk(const CallOutcome& call, const std::string& what);

  // Verification steps (verification.cc).
  void WriteInputs(const ArenaLayout& layout, int trial, std::mt19937_64& rng);
  void PerturbInputs(const ArenaLayout& layout, int trial, std::mt19937_64& rng);
  // The reference's outputs where they lie, in its arena: valid until it runs again.
  using Expected = std::vector<const uint8_t*>;
  Result<Expected> ReferenceOutputs(const ArenaLayout& layout, const SizeSet& set);
  // `previous`: the hashes of the last trial's reference outputs (empty at first).
  Status CheckReferenceDependsOnInputs(const ArenaLayout& layout, const Expected& expected,
                                       std::vector<uint64_t>* previous);
  Result<bool> CheckCandidateCall(const ArenaLayout& layout, const SizeSet& set, int trial,
                                  const Expected& expected, Poison poison,
                                  const std::string& reason);

  // Verification of every size set (`trials` trials each); false when the candidate failed.
  Result<bool> Verify(const std::vector<SizeSet>& sets, int trials,
                      const std::string& failure_reason);
  // Interleaved timing at the bench size; false when the candidate failed.
  Result<bool> Time();
};

// A secret seed for one trial: never derived from anything the candidate can see.
uint64_t SecretSeed();

}  // namespace kope

#endif  // KOPE_SRC_EVAL_SESSION_H_
