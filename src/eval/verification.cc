// Verification's trial protocol: fresh inputs, poisoned outputs, guards, input hashes,
// repeated and perturbed calls, comparison with the reference, and what each failure means.
// Where the calls are checked is the CheckSite's (parent_check.cc, reference_check.cc).
#include <cstdio>

#include "check_site.h"
#include "kope/base/hash.h"
#include "kope/eval/compare.h"
#include "kope/eval/inputs.h"
#include "session.h"

namespace kope {

Result<Distribution> TrialDistribution(const TensorSpec& spec, int trial, const SizeSet& set) {
  const auto& dists = spec.distributions;
  if (dists.empty()) return Distribution{};
  return DistributionAt(dists[static_cast<size_t>(trial) % dists.size()], set);
}

std::string DependenceKey(const Task& task, const SizeSet& set) {
  std::string key = task.name;
  for (const TensorSpec& in : task.inputs) {
    key += "|" + in.name + ":" + std::to_string(static_cast<int>(in.dtype));
    for (const Distribution& d : in.distributions) {
      char law[200];
      std::snprintf(law, sizeof(law), ";%d,%a,%a,%a,%a,%a,%a,%d", static_cast<int>(d.kind), d.mean,
                    d.stddev, d.low, d.high, d.low_exp, d.high_exp, d.num_distinct);
      key += law;
      if (d.fan_in) key += "/sqrt(" + d.fan_in->text() + ")";
    }
  }
  for (const auto& [name, value] : set.sizes) key += "|" + name + "=" + std::to_string(value);
  return ContentHash(key);
}

Result<std::vector<Runner::DrawSpec>> DrawSpecs(const Task& task, int trial, const SizeSet& set) {
  std::vector<Runner::DrawSpec> specs;
  for (const TensorSpec& input : task.inputs) {
    KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(input, trial, set));
    specs.push_back({static_cast<uint8_t>(d.kind), d.mean, d.stddev, d.low, d.high, d.low_exp,
                     d.high_exp, d.num_distinct});
  }
  return specs;
}

uint64_t SecretSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

double EvalSession::CandidateTimeout(const SizeSet& set) const {
  auto it = slowest_reference_s.find(set.label);
  const double slowest = it == slowest_reference_s.end() ? 0 : it->second;
  return std::max(options.call_timeout_seconds, kSlowerThanReference * slowest);
}

namespace {

// ": " and the first line of a runner's own words on a failed call (a Python exception's
// last line: its type and message), else "".
std::string FirstLineOf(const std::string& detail) {
  std::string line;
  for (size_t start = 0; start < detail.size();) {
    size_t end = detail.find('\n', start);
    if (end == std::string::npos) end = detail.size();
    const std::string text = detail.substr(start, end - start);
    if (text.find_first_not_of(" \t") != std::string::npos) {
      line = text;
      break;
    }
    start = end + 1;
  }
  if (line.empty()) return "";
  constexpr size_t kMaxChars = 240;
  if (line.size() > kMaxChars) line = line.substr(0, kMaxChars) + "...";
  return ": " + line;
}

}  // namespace

bool EvalSession::CandidateCallOk(const CallOutcome& call, const std::string& what,
                                  double timeout_s) {
  if (call.ok()) return true;
  switch (call.kind) {
    case CallOutcome::Kind::kKernelError:
      outcome.verdict = Verdict::kRuntimeError;
      outcome.message = call.rc == 0
                            ? "the kernel could not be loaded (" + what + ")"
                            : "the kernel returned " + std::to_string(call.rc) + " (" + what + ")";
      outcome.message += FirstLineOf(call.detail);
      break;
    case CallOutcome::Kind::kCrash:
      outcome.verdict = Verdict::kCrash;
      outcome.message = "the runner died (" + what + ")";
      break;
    case CallOutcome::Kind::kTimeout:
      outcome.verdict = Verdict::kTimeout;
      outcome.message = "the kernel did not return within " +
                        std::to_string(timeout_s > 0 ? timeout_s : options.call_timeout_seconds) +
                        " s (" + what + ")";
      break;
    case CallOutcome::Kind::kOk:
      break;
  }
  outcome.runtime_detail = call.detail;
  return false;
}

Result<EvalSession::Expected> EvalSession::ReferenceOutputs(const ArenaLayout& layout,
                                                            const SizeSet& set, bool summarize) {
  // The task's own code: slow is no verdict on the candidate (its limit follows, see
  // CandidateTimeout), and only a hang takes this long.
  KOPE_ASSIGN_OR_RETURN(CallOutcome call,
                        check_site->CallReference(layout, CheckerTimeout(), summarize));
  if (!call.ok()) {
    return Status::FailedPrecondition("the task's reference failed at " + set.label + ": " +
                                      call.detail + " (rc " + std::to_string(call.rc) + ")");
  }
  double& slowest = slowest_reference_s[set.label];
  slowest = std::max(slowest, call.parent_seconds);
  return check_site->ReferenceResult(layout, call, summarize);
}

Status EvalSession::CheckReferenceDependsOnInputs(const ArenaLayout& layout,
                                                  std::vector<uint64_t>* previous) {
  std::vector<uint64_t> hashes;
  for (size_t o = 0; o < reference_summary.size(); ++o) {
    bool constant = reference_summary[o].constant;
    hashes.push_back(reference_summary[o].hash);
    bool same = !previous->empty() && (*previous)[o] == hashes.back();
    if (constant || same) {
      return Status::FailedPrecondition(
          "task " + task.name + ": the reference output '" + layout.outputs[o].name + "' " +
          (constant ? "is constant" : "does not change with its inputs") +
          " at the bench size; such a task cannot tell a right kernel from a wrong one");
    }
  }
  *previous = std::move(hashes);
  return Status::Ok();
}

// One candidate call on the current inputs, checked against the reference's outputs.
Result<bool> EvalSession::CheckCandidateCall(const ArenaLayout& layout, const SizeSet& set,
                                             int trial, const Expected& expected, Poison poison,
                                             const std::string& reason) {
  const double timeout = CandidateTimeout(set);
  std::vector<Tolerance> tolerances;
  for (const auto& out : layout.outputs) {
    KOPE_ASSIGN_OR_RETURN(Tolerance tol, ResolveTolerance(task.tolerance, out.dtype, set));
    tolerances.push_back(tol);
  }
  KOPE_RETURN_IF_ERROR(check_site->PoisonOutputs(layout, poison));
  KOPE_ASSIGN_OR_RETURN(CallOutcome call, candidate->Call(0, timeout));
  if (!CandidateCallOk(call, set.label + ", trial " + std::to_string(trial + 1), timeout)) {
    return false;
  }
  if (set.label == BenchSizes(task, language).label && !call.ns.empty()) {
    const double seconds = call.kernel_seconds();
    if (fastest_verified_bench_s == 0 || seconds < fastest_verified_bench_s) {
      fastest_verified_bench_s = seconds;
    }
  }
  KOPE_ASSIGN_OR_RETURN(CallFindings found, check_site->Find(layout, expected, tolerances));
  return JudgeFindings(found, layout, set, trial, tolerances, reason);
}

bool EvalSession::JudgeFindings(const CallFindings& found, const ArenaLayout& layout,
                                const SizeSet& set, int trial,
                                const std::vector<Tolerance>& tolerances,
                                const std::string& reason) {
  Mismatch m;
  m.size_set = set.label;
  m.sizes.assign(set.sizes.begin(), set.sizes.end());
  m.trial = trial + 1;
  auto fail = [&](std::string why, std::string message) {
    m.reason = std::move(why);
    outcome.verdict = Verdict::kIncorrect;
    outcome.message = std::move(message);
    outcome.mismatch = m;
    return false;
  };
  if (found.input_modified >= 0) {
    m.tensor = layout.inputs[static_cast<size_t>(found.input_modified)].name;
    return fail("input_modified",
                "the kernel modified its input '" + m.tensor + "' at " + set.label);
  }
  if (found.guard_output >= 0) {
    const auto& out = layout.outputs[static_cast<size_t>(found.guard_output)];
    m.tensor = out.name;
    m.index = static_cast<int64_t>(out.count) +
              found.guard_byte / static_cast<int64_t>(DTypeSize(out.dtype));
    return fail("guard_overwritten",
                "the kernel wrote past the end of output '" + out.name + "' at " + set.label);
  }
  for (size_t o = 0; o < found.outputs.size(); ++o) {
    const Comparison& c = found.outputs[o];
    if (c.ok) continue;
    const auto& out = layout.outputs[o];
    m.tensor = out.name;
    m.index = c.first_index;
    m.position = Unravel(c.first_index, out.shape);
    m.expected = c.expected;
    m.actual = c.actual;
    m.max_abs_error = c.max_abs_error;
    m.max_rel_error = c.max_rel_error;
    m.mismatches = c.mismatches;
    m.elements = static_cast<int64_t>(out.count);
    m.rtol = tolerances[o].rtol;
    m.atol = tolerances[o].atol;
    std::string why = reason == "value" && c.nan_inf_mismatch ? "nan_inf" : reason;
    return fail(why, "output '" + out.name + "' is wrong at " + set.label + " (" +
                         std::to_string(c.mismatches) + " of " + std::to_string(out.count) +
                         " elements" + (why == "value" ? "" : ", " + why) + ")");
  }
  return true;
}

EvalSession::EvalSession(const Task& t, const EvalOptions& o, std::string lang)
    : task(t), options(o), language(std::move(lang)) {}
EvalSession::~EvalSession() = default;

void EvalSession::UseCheckSite(bool in_reference) {
  check_site = in_reference ? CheckInReference(*this) : CheckInParent(*this);
}

bool EvalSession::check_in_reference() const {
  return check_site != nullptr && check_site->in_reference();
}

bool EvalSession::CallsTwicePerTrial(const SizeSet& set) const {
  return check_site->CallsTwicePerTrial(set);
}

Result<bool> EvalSession::Verify(const std::vector<SizeSet>& sets, int trials,
                                 const std::string& failure_reason) {
  for (const SizeSet& set : sets) {
    KOPE_ASSIGN_OR_RETURN(bool ok, VerifySet(set, trials, failure_reason));
    if (!ok) return false;
  }
  return true;
}

Result<bool> EvalSession::VerifySet(const SizeSet& set, int trials,
                                    const std::string& failure_reason) {
  const bool first_pass = failure_reason == "value";
  KOPE_ASSIGN_OR_RETURN(ArenaLayout layout, ArenaLayout::Build(task, set, 1));
  KOPE_ASSIGN_OR_RETURN(CallOutcome mapped, check_site->Map(layout));
  if (!CandidateCallOk(mapped, "mapping buffers for " + set.label)) return false;
  std::vector<uint64_t> previous_reference;
  for (int trial = 0; trial < trials; ++trial) {
    Progress("verify " + set.label + " trial " + std::to_string(trial + 1) + "/" +
             std::to_string(trials));
    KOPE_ASSIGN_OR_RETURN(bool ok,
                          VerifyTrial(layout, set, trial, failure_reason, &previous_reference));
    if (!ok) return false;
  }
  if (first_pass) {
    KOPE_ASSIGN_OR_RETURN(bool ok, VerifyCaptured(layout, set));
    if (!ok) return false;
  }
  // Every trial's reference outputs differed from the last one's: a fact about the task's
  // inputs, kept with its reference process for the next evaluations with the same inputs.
  if (first_pass && set.label == "bench" && !previous_reference.empty()) {
    reference->set_depends_on_inputs(DependenceKey(task, set));
  }
  if (first_pass) outcome.size_sets.push_back(set.label);
  return true;
}

Result<bool> EvalSession::VerifyTrial(const ArenaLayout& layout, const SizeSet& set, int trial,
                                      const std::string& failure_reason,
                                      std::vector<uint64_t>* previous) {
  const bool first_pass = failure_reason == "value";
  std::mt19937_64 rng(SecretSeed());
  KOPE_RETURN_IF_ERROR(check_site->DrawInputs(layout, set, trial, rng, /*perturb=*/false));
  const bool summarize =
      first_pass && set.label == "bench" && !reference->depends_on_inputs(DependenceKey(task, set));
  KOPE_ASSIGN_OR_RETURN(Expected expected, ReferenceOutputs(layout, set, summarize));
  if (summarize) KOPE_RETURN_IF_ERROR(CheckReferenceDependsOnInputs(layout, previous));
  // Twice on the same inputs, with different poison: unwritten elements and
  // races show; then once more after one element of every input changed.
  Poison nan = trial % 2 == 0 ? Poison::kNanA : Poison::kNanB;
  KOPE_ASSIGN_OR_RETURN(bool ok,
                        CheckCandidateCall(layout, set, trial, expected, nan, failure_reason));
  if (!ok) return false;
  if (CallsTwicePerTrial(set)) {
    KOPE_ASSIGN_OR_RETURN(ok, CheckCandidateCall(layout, set, trial, expected, Poison::kFinite,
                                                 first_pass ? "runs_disagree" : failure_reason));
    if (!ok) return false;
  }
  KOPE_RETURN_IF_ERROR(check_site->DrawInputs(layout, set, trial, rng, /*perturb=*/true));
  KOPE_ASSIGN_OR_RETURN(expected, ReferenceOutputs(layout, set, false));
  return CheckCandidateCall(layout, set, trial, expected, nan,
                            first_pass ? "stale_output" : failure_reason);
}

}  // namespace kope
