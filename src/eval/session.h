// EvalSession: the state of one candidate's evaluation (internal).
//
// An Evaluation (evaluation.h) builds a session and starts its runners; the
// session verifies (verification.cc, checked where its CheckSite says) and
// times (timing_*.cc). Each step either succeeds, ends the evaluation with a
// candidate verdict (recorded in `outcome`, step returns false), or fails with
// a Status (the task or kope is at fault).
#ifndef KOPE_SRC_EVAL_SESSION_H_
#define KOPE_SRC_EVAL_SESSION_H_

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernel_process.h"
#include "kope/eval/compare.h"
#include "kope/eval/env.h"
#include "kope/eval/evaluator.h"
#include "kope/eval/inputs.h"
#include "kope/task/captured.h"
#include "timing_claim.h"

namespace kope {

class CheckSite;

// The Env an evaluation with `options` uses: its own, else the real one.
inline Env& EnvOf(const EvalOptions& options) {
  return options.env != nullptr ? *options.env : Env::Default();
}

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
  // Where verification checks the candidate's calls (check_site.h); set once the candidate's
  // kind is known (UseCheckSite).
  std::unique_ptr<CheckSite> check_site;
  // Whether the shared arena's outputs and guards were poisoned since PrepareShared. A bridge
  // candidate's runner copies its forward's results whole into the outputs on every verified
  // call (python/kope_bridge/kernels.py, TorchKernel.store), so poison written before a later
  // call could never show through: it is written once per shared arena, for the guards.
  bool shared_outputs_poisoned = false;
  struct OutputSummary {
    bool constant = false;
    uint64_t hash = 0;
  };
  std::vector<OutputSummary> reference_summary;  // of the last summarized reference outputs
  // The candidate's fastest verified call at the bench size, by its own kernel time (0: none
  // yet), against which its timed calls are judged (kFlagTimedFasterThanVerified).
  double fastest_verified_bench_s = 0;
  // The reference's slowest call so far at each size set (by label), wall clock.
  std::map<std::string, double> slowest_reference_s;

  EvalSession(const Task& t, const EvalOptions& o, std::string lang);
  ~EvalSession();
  KernelProcess& baseline_process() { return baseline ? *baseline : *reference; }
  void Progress(const std::string& line) const {
    if (options.progress) options.progress(line);
  }
  Env& env() const { return EnvOf(options); }

  // Checks in the reference runner (`in_reference`, see ChecksInReference), else in the parent.
  void UseCheckSite(bool in_reference);
  bool check_in_reference() const;

  // Ends the evaluation with `verdict` unless `call` is ok; returns whether it was ok.
  // `timeout_s`: the limit the call had (0: options.call_timeout_seconds).
  bool CandidateCallOk(const CallOutcome& call, const std::string& what, double timeout_s = 0);
  // How long one candidate call at `set` may take: the configured limit, or kSlowerThanReference
  // times the reference's slowest call there where that is longer. A correct kernel is never
  // judged a timeout because the problem is large for the machine.
  static constexpr double kSlowerThanReference = 5;
  double CandidateTimeout(const SizeSet& set) const;

  // Verification steps (verification.cc), checked where check_site says.
  // The reference's outputs where they lie, in its arena: valid until it runs again (none when
  // checked in the reference). With `summarize`, reference_summary describes them.
  using Expected = std::vector<const uint8_t*>;
  Result<Expected> ReferenceOutputs(const ArenaLayout& layout, const SizeSet& set, bool summarize);
  // From reference_summary; `previous`: the hashes of the last trial's reference outputs (empty
  // at first).
  Status CheckReferenceDependsOnInputs(const ArenaLayout& layout, std::vector<uint64_t>* previous);
  Result<bool> CheckCandidateCall(const ArenaLayout& layout, const SizeSet& set, int trial,
                                  const Expected& expected, Poison poison,
                                  const std::string& reason);
  // What one candidate call left: found by the parent in the arenas, or by the reference.
  struct CallFindings {
    int input_modified = -1;  // the first input the call wrote
    int guard_output = -1;    // the first output whose guard it damaged
    int64_t guard_byte = 0;
    std::vector<Comparison> outputs;  // in order, up to the first that failed
  };
  // The verdict on a call from its findings: false (and the outcome incorrect) on the first
  // thing wrong. `reason`: what a wrong value means in this call ("value", "runs_disagree"...).
  bool JudgeFindings(const CallFindings& found, const ArenaLayout& layout, const SizeSet& set,
                     int trial, const std::vector<Tolerance>& tolerances,
                     const std::string& reason);
  // The candidate's arena in memory the reference shares (checked in the reference).
  Result<CallOutcome> PrepareShared(const ArenaLayout& layout);
  // For the reference runner's checking requests: the first compiles its comparison, and none
  // runs candidate code, so a slow one is never the candidate's timeout.
  double CheckerTimeout() const { return std::max(options.call_timeout_seconds, 300.0); }

  // Whether a trial at `set` calls the candidate twice on the same inputs before perturbing
  // them. The second call's other poison shows unwritten elements, and the two calls' agreement
  // races. A bridge candidate's outputs are copied whole (shared_outputs_poisoned), so only the
  // agreement is left to check; it is checked at the check sizes, and at the bench size a
  // trial's two calls on different inputs (before and after the perturbation) each still face
  // the reference.
  bool CallsTwicePerTrial(const SizeSet& set) const;
  // Verification of every size set (`trials` trials each); false when the candidate failed.
  Result<bool> Verify(const std::vector<SizeSet>& sets, int trials,
                      const std::string& failure_reason);
  Result<bool> VerifySet(const SizeSet& set, int trials, const std::string& failure_reason);
  Result<bool> VerifyTrial(const ArenaLayout& layout, const SizeSet& set, int trial,
                           const std::string& failure_reason, std::vector<uint64_t>* previous);
  // The trials on the task's captured inputs that fit `set` (captured_verification.cc): each
  // a call on them, checked against the reference's, with reason "captured_inputs".
  Result<bool> VerifyCaptured(const ArenaLayout& layout, const SizeSet& set);
  // The task's captured tensors, read at the first captured trial.
  std::optional<std::vector<CapturedTensor>> captured;

  // Timing (timing_session.cc: setup and inputs; timing_interleaved.cc: the warm-up and the
  // interleaved batches; timing_cross_check.cc: the candidate under the parent's clock).
  struct TimingTrack {
    KernelProcess* process;
    bool is_candidate;
    std::vector<int64_t> ns;
    double per_call = 0;       // kernel time per call, estimate from the warm-up
    double wall_per_call = 0;  // the parent's wall time per call in the last request
    bool dropped = false;      // a reference point that failed: no longer timed
    // The timed session's calls that left work on streams the harness never waits on.
    SideStreamTally side_streams;
    // The median time per call of each interleaved batch, in round order (RoundSpeedups).
    std::vector<double> batch_medians;
  };
  // Target wall time of one timing batch, so that interleaving is fine-grained.
  static constexpr double kTimingBatchSeconds = 0.02;
  // Allowance for the request round trip when comparing with the parent's clock.
  static constexpr double kRoundTripSeconds = 0.002;
  // Pairs of unflushed batches (a ModelNew candidate's, the baseline's) that bound the
  // candidate's claim, the wall time of the candidate's (long enough for a 1.2x claim to stand
  // out from a busy machine's round trips), and the longest a baseline's batch of them may take.
  static constexpr int kClockPairs = 4;
  static constexpr double kClockPairSeconds = 0.1;
  static constexpr double kMaxBaselineBatchSeconds = 0.25;
  // Interleaved timing at the bench size; false when the candidate failed.
  Result<bool> Time();
  Result<bool> MapForTiming(const ArenaLayout& layout, double timeout, bool drawn_by_runners);
  Status DrawTimingInputs(const ArenaLayout& layout, int rotation);
  Status WriteTimingInputs(const ArenaLayout& layout, int rotation);
  void CompileReferencePoint();
  // `count` timed calls of `track` within `timeout` each; false when the candidate failed.
  Result<bool> TimeTrack(TimingTrack& track, int count, bool flush, double timeout,
                         CallOutcome* out);
  Result<bool> WarmUp(std::vector<TimingTrack>& tracks, double timeout);
  Result<bool> Interleave(std::vector<TimingTrack>& tracks, double timeout);
  Result<bool> CrossCheck(std::vector<TimingTrack>& tracks, double timeout);
  // The torch.compile reference point that failed: noted, and (Drop) no longer timed.
  void NoteCompiled(const std::string& why);
  void DropCompiled(const std::string& why);
};

// A secret seed for one trial: never derived from anything the candidate can see.
uint64_t SecretSeed();
// An input's distribution in `trial` (its declared ones in turn; the default without any), at
// the sizes of `set` (DistributionAt).
Result<Distribution> TrialDistribution(const TensorSpec& spec, int trial, const SizeSet& set);
// A trial's given inputs (captured where the kernel runs) written into `arena`'s input slots
// (KernelProcess::input, rotation 0): the captured ones as they are, the others drawn as in
// `trial` (a PyTorch task's parameters).
Status WriteGivenInputs(const Task& task, const ArenaLayout& layout, const CapturedTrial& given,
                        const SizeSet& set, int trial, std::mt19937_64& rng, KernelProcess& arena);
// The task's input distributions for `trial` at `set`, for the bridge's DRAW requests.
Result<std::vector<Runner::DrawSpec>> DrawSpecs(const Task& task, int trial, const SizeSet& set);
// What a reference's dependence on its inputs is checked for (KernelProcess::depends_on_inputs):
// the task's name, its inputs' dtypes and laws, and the sizes of `set`; the reference's code is
// its process's own. Equal for equal inputs, different when any of these differs.
std::string DependenceKey(const Task& task, const SizeSet& set);

// The reference runner's JSON answers (python/kope_bridge/checker.py).
Result<std::vector<EvalSession::OutputSummary>> ParseReferenceSummary(const std::string& json,
                                                                      const ArenaLayout& layout);
Result<EvalSession::CallFindings> ParseCallFindings(const std::string& json,
                                                    const ArenaLayout& layout);

}  // namespace kope

#endif  // KOPE_SRC_EVAL_SESSION_H_
