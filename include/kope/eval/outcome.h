// Outcome: the evaluator's verdict on one candidate, with its evidence.
//
// A failed candidate is a result to learn from, not an exception: every way a
// candidate can fail is one of the verdicts below with the evidence a reader
// (or an LLM) needs to act on it. A valid outcome carries the candidate's and
// the baseline's times from one interleaved session, the speedup, and the
// fraction of the roofline floor where the task declares bytes or flops.
// Suspicious results are flagged for audit, never silently accepted.
#ifndef KOPE_EVAL_OUTCOME_H_
#define KOPE_EVAL_OUTCOME_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/backend/backend.h"
#include "kope/eval/timing.h"

namespace kope {

enum class Verdict { kCompileError, kRuntimeError, kCrash, kTimeout, kIncorrect, kValid };

std::string_view VerdictName(Verdict verdict);  // "compile_error", ..., "valid"

// Where and how a candidate's output went wrong.
struct Mismatch {
  // "value", "nan_inf", "input_modified", "guard_overwritten", "runs_disagree", "stale_output"
  // (wrong after one input element changed), "after_timing" (wrong on fresh inputs after the timing
  // loop), "timing_mismatch" (its reported times disagree with the parent's clock: they cannot
  // be trusted, and the candidate has no speedup).
  std::string reason;
  std::string size_set;  // e.g. "check[1]" or "bench"
  std::vector<std::pair<std::string, int64_t>> sizes;
  int trial = 0;
  std::string tensor;             // the output (or input) concerned
  int64_t index = -1;             // flat index of the first bad element
  std::vector<int64_t> position;  // its multi-index
  double expected = 0;
  double actual = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t mismatches = 0;  // failing elements
  int64_t elements = 0;    // elements compared
  double rtol = 0;
  double atol = 0;
};

// Flags for audit (never silently accepted, never hidden).
inline constexpr std::string_view kFlagSpeedupAbove10x = "speedup_above_10x";
inline constexpr std::string_view kFlagFasterThanRoofline = "faster_than_roofline";
inline constexpr std::string_view kFlagWallClockMismatch = "wall_clock_mismatch";
inline constexpr std::string_view kFlagUnstableTiming = "unstable_timing";
inline constexpr std::string_view kFlagWithinNoise = "within_noise";
// The timing's noise (the widest of the candidate's, the baseline's and the per-round speedups'
// spreads) exceeded kNoisyMachineSpread: other work on the machine disturbed the measurement, and
// a speedup within that noise means nothing (the report says so instead of printing it).
inline constexpr std::string_view kFlagNoisyMachine = "noisy_machine";
inline constexpr double kNoisyMachineSpread = 0.25;
// The candidate's timed calls ran in under a fifth of the time of its fastest verified call at
// the bench size (one of at least 200 us for a native kernel on a GPU, 1 ms for a ModelNew or
// on the CPU): a kernel that does its work only when its outputs are checked (one that can tell
// verified calls from timed ones) times like this.
inline constexpr std::string_view kFlagTimedFasterThanVerified = "timed_faster_than_verified";
// Timed calls left work on streams the harness's stream never waits on (a ModelNew on a GPU):
// that work was charged to them; Outcome::timing_note says how much.
inline constexpr std::string_view kFlagSideStreamWork = "side_stream_work";
// The parent's clock left more of a ModelNew's wall time unexplained by its reported times than
// the baseline's, in every pair of batches (though not by enough for timing_mismatch): its
// speedups are the ones that clock allows, what its timer reported divided by 1 + the least
// unexplained share (ClockCheck::speedup_divisor). A timer the candidate changed to report less
// cannot then claim a speedup, on however busy a machine.
inline constexpr std::string_view kFlagClockBounded = "clock_bounded";

// The evidence of the audits of a ModelNew's timer (a candidate judged against a bridge's
// baseline): per pair of unflushed batches, the candidate's wall time left unexplained by its
// reported times beyond the baseline's overhead, as a share of what it reported (the parent's
// clock bound, kope reason timing_mismatch); and of its timed session's calls, how many left
// work on streams the harness's stream never waits on (kFlagSideStreamWork).
struct ClockCheck {
  std::vector<double> unexplained_share;
  long timed_calls = 0;
  long side_stream_calls = 0;
  double speedup_divisor = 1;  // 1 + the least share from 0.5% up (kFlagClockBounded), else 1
};

// The speedup of each round of the interleaved timing (the baseline's batch median over the
// candidate's batch median in the same round), summarized. Neighbouring batches share the
// machine's state, so load that slows some rounds and not others shows in this spread even where
// each track's own spread stays small; and a speedup with a fifth of its rounds or more on each
// side of 1 is not a difference at all.
struct RoundSpeedups {
  int rounds = 0;
  int faster = 0;  // rounds where the candidate's batch was faster than the baseline's
  int slower = 0;  // and slower
  double median = 0;
  double spread = 0;  // (p80 - p20) / median
};

struct Outcome {
  Verdict verdict = Verdict::kValid;
  std::string message;  // one line: why this verdict
  std::string task;
  std::string candidate_name;
  std::string candidate_hash;           // content hash of the candidate source
  std::vector<Diagnostic> diagnostics;  // compile errors and warnings
  std::optional<Mismatch> mismatch;     // incorrect
  std::string runtime_detail;           // crash/timeout/runtime_error: signal, rc, stderr tail

  // Valid only.
  std::optional<TimingSummary> candidate_time;
  std::optional<TimingSummary> baseline_time;
  double speedup = 0;  // baseline median / candidate median
  std::optional<RoundSpeedups> round_speedups;
  double timing_noise = 0;  // the widest relative spread of the timing (kFlagWithinNoise)
  std::optional<double> roofline_floor_s;   // max(bytes / bandwidth, flops / peak)
  std::optional<double> roofline_fraction;  // floor / candidate median: 1.0 is speed of light
  std::optional<double> baseline_roofline_fraction;
  // The candidate's fastest verified call at the bench size (its kernel time): what its timed
  // calls are judged against (kFlagTimedFasterThanVerified). Absent where none was timed.
  std::optional<double> fastest_verified_bench_s;
  // Tasks with a PyTorch baseline: torch.compile of the same problem, timed in the same session
  // (the baseline is then PyTorch eager).
  std::optional<TimingSummary> compiled_time;
  double speedup_over_compiled = 0;        // compiled median / candidate median
  std::string compiled_note;               // why there is no compiled time, when there is none
  double compiled_first_call_seconds = 0;  // torch.compile's compile (cached or not) + one call
  // Time the evaluation waited on Python bridge processes beyond their kernels' own time
  // (PyTorch import, model build, per-call overhead; torch.compile's compile counts as kernel
  // time of the compiled reference point, see compiled_first_call_seconds).
  double bridge_overhead_seconds = 0;
  // By request: "load", "map", "call", "time", "copy" (tensors between arena and GPU) and
  // "check" (the reference runner drawing inputs and checking a ModelNew's tensors).
  std::map<std::string, double> bridge_overhead_by_request;
  std::vector<std::string> flags;
  // What the timing found that a reader needs to understand the times (kFlagSideStreamWork:
  // how many calls left work on other streams, and how much); empty where nothing.
  std::string timing_note;
  std::optional<ClockCheck> clock_check;
  // The task's captured inputs (Task::captured_inputs) the candidate was verified on, as
  // "SIZE_SET LABEL".
  std::vector<std::string> captured_inputs_checked;

  // Context.
  int trials = 0;
  std::vector<std::string> size_sets;  // the sets verified
  std::string protection;              // the sandbox layers active
  HardwareInfo hardware;
  double compile_seconds = 0;
  bool compile_cache_hit = false;
  std::vector<KernelResources> resources;    // the compiler's report per device function (CUDA)
  std::optional<SanitizerReport> sanitizer;  // EvalOptions::sanitize
  std::optional<KernelProfile> profile;      // EvalOptions::profile, valid outcomes only
  double eval_seconds = 0;                   // wall time of the whole evaluation
  double kernel_seconds = 0;                 // time spent inside kernels, all runners together
  // With a RunnerPool (EvalOptions::pool): the task's runners that an earlier evaluation left
  // loaded, and the runners this one took ready-started from the pool's spares.
  int runners_reused = 0;
  // Wall time by phase ("start": the task's runners, "compile": waiting for the candidate's
  // compile beyond that, "load", "verify", "sanitize", "time", "verify_again"), and each
  // runner's request time beyond its kernel's own ("reference", "baseline", "candidate",
  // "compiled"): where an evaluation's time went.
  std::map<std::string, double> phase_seconds;
  std::map<std::string, double> runner_overhead_seconds;
  int runners_from_spares = 0;
  std::string timing_policy;  // "screen" or "confirm"

  bool valid() const { return verdict == Verdict::kValid; }
  bool HasFlag(std::string_view flag) const;
  // False where the machine was too noisy to time and the speedup is within that noise: the
  // report prints none.
  bool SpeedupMeasured() const;
};

// The full record as JSON text (stable field names; documented in docs/EVALUATION.md).
std::string OutcomeToJson(const Outcome& outcome, int indent = 2);
// A readable summary for a terminal, a few lines.
std::string FormatOutcome(const Outcome& outcome);

}  // namespace kope

#endif  // KOPE_EVAL_OUTCOME_H_
