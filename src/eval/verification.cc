// Verification: fresh inputs, poisoned outputs, guards, input hashes, repeated
// and perturbed calls, comparison with the reference.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "kope/base/hash.h"
#include "kope/base/parallel.h"
#include "kope/eval/compare.h"
#include "kope/eval/inputs.h"
#include "session.h"

namespace kope {
namespace {

// True when every element equals the first (a constant output).
bool AllElementsEqual(const uint8_t* data, size_t count, size_t element_size) {
  for (size_t i = 1; i < count; ++i) {
    if (std::memcmp(data, data + i * element_size, element_size) != 0) return false;
  }
  return true;
}

}  // namespace

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

bool EvalSession::CandidateCallOk(const CallOutcome& call, const std::string& what,
                                  double timeout_s) {
  if (call.ok()) return true;
  switch (call.kind) {
    case CallOutcome::Kind::kKernelError:
      outcome.verdict = Verdict::kRuntimeError;
      outcome.message = call.rc == 0
                            ? "the kernel could not be loaded (" + what + ")"
                            : "the kernel returned " + std::to_string(call.rc) + " (" + what + ")";
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

// Checked in the reference, the reference runner draws the inputs itself from a secret seed:
// they never cross between host and GPU.
Status EvalSession::DrawInReference(const SizeSet& set, int trial, std::mt19937_64& rng,
                                    bool perturb) {
  const auto mode = perturb ? Runner::DrawMode::kPerturb : Runner::DrawMode::kTrial;
  KOPE_ASSIGN_OR_RETURN(std::vector<Runner::DrawSpec> specs, DrawSpecs(task, trial, set));
  KOPE_ASSIGN_OR_RETURN(CallOutcome drawn,
                        reference->Draw(0, rng(), mode, specs, CheckerTimeout()));
  if (!drawn.ok()) {
    return Status::Internal("the reference runner could not draw inputs: " + drawn.detail);
  }
  return Status::Ok();
}

// Draws a trial's inputs into both arenas and remembers their hashes.
Status EvalSession::WriteInputs(const ArenaLayout& layout, const SizeSet& set, int trial,
                                std::mt19937_64& rng) {
  if (check_in_reference) return DrawInReference(set, trial, rng, false);
  input_hashes.clear();
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    uint8_t* ref_in = reference->input(0, i);
    KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(task.inputs[i], trial, set));
    FillInput(ref_in, layout.inputs[i].dtype, layout.inputs[i].count, d, rng);
    ParallelMemcpy(candidate->input(0, i), ref_in, layout.inputs[i].bytes);
    input_hashes.push_back(BufferHash(ref_in, layout.inputs[i].bytes));
  }
  return Status::Ok();
}

// Redraws one element of every input in both arenas (a value different from
// the old one): a kernel that keys a cache on a sample of its input replays a
// stale output here, a correct one recomputes.
Status EvalSession::PerturbInputs(const ArenaLayout& layout, const SizeSet& set, int trial,
                                  std::mt19937_64& rng) {
  if (check_in_reference) return DrawInReference(set, trial, rng, true);
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    const auto& t = layout.inputs[i];
    KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(task.inputs[i], trial, set));
    size_t esize = DTypeSize(t.dtype);
    size_t j = std::uniform_int_distribution<size_t>(0, t.count - 1)(rng);
    uint8_t* ref_in = reference->input(0, i);
    uint64_t old_bits = 0, new_bits = 0;
    std::memcpy(&old_bits, ref_in + j * esize, esize);
    for (int attempt = 0; attempt < 16; ++attempt) {
      FillInput(ref_in + j * esize, t.dtype, 1, d, rng);
      std::memcpy(&new_bits, ref_in + j * esize, esize);
      if (new_bits != old_bits) break;
    }
    std::memcpy(candidate->input(0, i) + j * esize, ref_in + j * esize, esize);
    input_hashes[i] = BufferHash(ref_in, t.bytes);
  }
  return Status::Ok();
}

Result<EvalSession::Expected> EvalSession::ReferenceOutputs(const ArenaLayout& layout,
                                                            const SizeSet& set, bool summarize) {
  // The task's own code: slow is no verdict on the candidate (its limit follows, see
  // CandidateTimeout), and only a hang takes this long.
  const double timeout = CheckerTimeout();
  if (!check_in_reference) {
    for (size_t o = 0; o < layout.outputs.size(); ++o) {
      FillPoison(reference->output(o), layout.outputs[o].dtype, layout.outputs[o].count,
                 Poison::kNanA);
    }
  }
  KOPE_ASSIGN_OR_RETURN(CallOutcome call, check_in_reference
                                              ? reference->ReferenceCall(summarize, timeout)
                                              : reference->Call(0, timeout));
  if (!call.ok()) {
    return Status::FailedPrecondition("the task's reference failed at " + set.label + ": " +
                                      call.detail + " (rc " + std::to_string(call.rc) + ")");
  }
  double& slowest = slowest_reference_s[set.label];
  slowest = std::max(slowest, call.parent_seconds);
  if (check_in_reference) {
    if (summarize) {
      KOPE_ASSIGN_OR_RETURN(reference_summary, ParseReferenceSummary(call.detail, layout));
    }
    return Expected{};
  }
  // A reference that writes its inputs in place (PyTorch code may) gets them back from the
  // candidate's copy, which every candidate call is checked to leave as written: the next
  // perturbation and reference call then start from what the candidate sees.
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    uint8_t* ref_in = reference->input(0, i);
    if (BufferHash(ref_in, layout.inputs[i].bytes) != input_hashes[i]) {
      ParallelMemcpy(ref_in, candidate->input(0, i), layout.inputs[i].bytes);
    }
  }
  Expected expected;
  for (size_t o = 0; o < layout.outputs.size(); ++o) expected.push_back(reference->output(o));
  if (summarize) {
    reference_summary.clear();
    for (size_t o = 0; o < expected.size(); ++o) {
      const auto& out = layout.outputs[o];
      reference_summary.push_back(
          {out.count > 1 && AllElementsEqual(expected[o], out.count, DTypeSize(out.dtype)),
           BufferHash(expected[o], out.bytes)});
    }
  }
  return expected;
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

EvalSession::CallFindings EvalSession::FindInArenas(const ArenaLayout& layout,
                                                    const Expected& expected,
                                                    const std::vector<Tolerance>& tolerances) {
  CallFindings f;
  for (size_t i = 0; i < layout.inputs.size(); ++i) {
    if (BufferHash(candidate->input(0, i), layout.inputs[i].bytes) != input_hashes[i]) {
      f.input_modified = static_cast<int>(i);
      return f;
    }
  }
  for (size_t o = 0; o < layout.outputs.size(); ++o) {
    const auto& out = layout.outputs[o];
    int64_t damage = FirstGuardDamage(candidate->output(o) + out.bytes, ArenaLayout::kGuardBytes);
    if (damage >= 0) {
      f.guard_output = static_cast<int>(o);
      f.guard_byte = damage;
      return f;
    }
    f.outputs.push_back(
        CompareOutputs(expected[o], candidate->output(o), out.dtype, out.count, tolerances[o]));
    if (!f.outputs.back().ok) return f;
  }
  return f;
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
  if (check_in_reference && !shared_outputs_poisoned) {
    std::vector<Runner::PoisonSpan> spans;
    for (size_t o = 0; o < layout.outputs.size(); ++o) {
      spans.push_back({{layout.output_offsets[o], layout.outputs[o].bytes},
                       PoisonElement(layout.outputs[o].dtype, poison)});
    }
    KOPE_ASSIGN_OR_RETURN(
        CallOutcome poisoned,
        reference->Poison(spans, GuardBytes(ArenaLayout::kGuardBytes), CheckerTimeout()));
    if (!poisoned.ok()) return Status::Internal("the reference runner failed: " + poisoned.detail);
    shared_outputs_poisoned = true;
  } else if (!check_in_reference) {
    for (size_t o = 0; o < layout.outputs.size(); ++o) {
      FillPoison(candidate->output(o), layout.outputs[o].dtype, layout.outputs[o].count, poison);
      FillGuard(candidate->output(o) + layout.outputs[o].bytes, ArenaLayout::kGuardBytes);
    }
  }
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

  CallFindings found;
  if (check_in_reference) {
    std::vector<std::pair<double, double>> tols;
    for (const Tolerance& t : tolerances) tols.emplace_back(t.rtol, t.atol);
    KOPE_ASSIGN_OR_RETURN(CallOutcome checked, reference->Check(tols, CheckerTimeout()));
    if (!checked.ok()) return Status::Internal("the reference runner failed: " + checked.detail);
    KOPE_ASSIGN_OR_RETURN(found, ParseCallFindings(checked.detail, layout));
  } else {
    found = FindInArenas(layout, expected, tolerances);
  }

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

Result<CallOutcome> EvalSession::PrepareShared(const ArenaLayout& layout) {
  const double timeout = options.call_timeout_seconds;
  shared_outputs_poisoned = false;
  int fd = -1;
  KOPE_ASSIGN_OR_RETURN(CallOutcome shared,
                        reference->ShareArena(*candidate, &fd, CheckerTimeout()));
  if (!shared.ok()) {
    return Status::Internal("the reference runner could not share memory: " + shared.detail);
  }
  Result<CallOutcome> mapped = candidate->PrepareShared(layout, fd, timeout);
  close(fd);
  return mapped;
}

bool EvalSession::CallsTwicePerTrial(const SizeSet& set) const {
  return !check_in_reference || set.label != BenchSizes(task, language).label;
}

Result<bool> EvalSession::Verify(const std::vector<SizeSet>& sets, int trials,
                                 const std::string& failure_reason) {
  const double timeout = options.call_timeout_seconds;
  const bool first_pass = failure_reason == "value";
  for (const SizeSet& set : sets) {
    KOPE_ASSIGN_OR_RETURN(ArenaLayout layout, ArenaLayout::Build(task, set, 1));
    KOPE_ASSIGN_OR_RETURN(CallOutcome mapped,
                          reference->Prepare(layout, timeout, /*copies=*/!check_in_reference));
    if (!mapped.ok()) return Status::Internal("the reference runner failed: " + mapped.detail);
    KOPE_ASSIGN_OR_RETURN(
        mapped, check_in_reference ? PrepareShared(layout) : candidate->Prepare(layout, timeout));
    if (!CandidateCallOk(mapped, "mapping buffers for " + set.label)) return false;

    std::vector<uint64_t> previous_reference;
    const std::string dependence_key = DependenceKey(task, set);
    for (int trial = 0; trial < trials; ++trial) {
      Progress("verify " + set.label + " trial " + std::to_string(trial + 1) + "/" +
               std::to_string(trials));
      std::mt19937_64 rng(SecretSeed());
      KOPE_RETURN_IF_ERROR(WriteInputs(layout, set, trial, rng));
      const bool summarize =
          first_pass && set.label == "bench" && !reference->depends_on_inputs(dependence_key);
      KOPE_ASSIGN_OR_RETURN(Expected expected, ReferenceOutputs(layout, set, summarize));
      if (summarize)
        KOPE_RETURN_IF_ERROR(CheckReferenceDependsOnInputs(layout, &previous_reference));
      // Twice on the same inputs, with different poison: unwritten elements and
      // races show; then once more after one element of every input changed.
      Poison nan = trial % 2 == 0 ? Poison::kNanA : Poison::kNanB;
      KOPE_ASSIGN_OR_RETURN(bool ok,
                            CheckCandidateCall(layout, set, trial, expected, nan, failure_reason));
      if (!ok) return false;
      if (CallsTwicePerTrial(set)) {
        KOPE_ASSIGN_OR_RETURN(ok,
                              CheckCandidateCall(layout, set, trial, expected, Poison::kFinite,
                                                 first_pass ? "runs_disagree" : failure_reason));
        if (!ok) return false;
      }
      KOPE_RETURN_IF_ERROR(PerturbInputs(layout, set, trial, rng));
      KOPE_ASSIGN_OR_RETURN(expected, ReferenceOutputs(layout, set, false));
      KOPE_ASSIGN_OR_RETURN(ok, CheckCandidateCall(layout, set, trial, expected, nan,
                                                   first_pass ? "stale_output" : failure_reason));
      if (!ok) return false;
    }
    // Every trial's reference outputs differed from the last one's: a fact about the task's
    // inputs, kept with its reference process for the next evaluations with the same inputs.
    if (first_pass && set.label == "bench" && !previous_reference.empty()) {
      reference->set_depends_on_inputs(dependence_key);
    }
    if (first_pass) outcome.size_sets.push_back(set.label);
  }
  return true;
}

}  // namespace kope
