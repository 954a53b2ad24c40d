// Timing: baseline and candidate interleaved in one session on rotating inputs, caches flushed
// before every call (timing_interleaved.cc), then checked against the parent's clock
// (timing_cross_check.cc). Here: the session's setup, its inputs, and the torch.compile
// reference point's first call.
#include <algorithm>

#include "decide_timing.h"
#include "kope/base/parallel.h"
#include "kope/eval/inputs.h"
#include "session.h"

namespace kope {
namespace {

// Input bytes rotated through, at most (per kernel).
constexpr size_t kMaxRotationBytes = 256ull << 20;
// The first call of a torch.compile reference point includes compiling it.
constexpr double kCompileSeconds = 900;

}  // namespace

void EvalSession::NoteCompiled(const std::string& why) {
  outcome.compiled_note = "torch.compile was not timed: " + why.substr(0, 400);
}

void EvalSession::DropCompiled(const std::string& why) {
  NoteCompiled(why);
  compiled.reset();
}

Result<bool> EvalSession::Time() {
  const SizeSet& bench = BenchSizes(task, language);
  const double timeout = CandidateTimeout(bench);
  KOPE_ASSIGN_OR_RETURN(ArenaLayout probe, ArenaLayout::Build(task, bench, 1));
  size_t set_bytes = std::max<size_t>(probe.InputSetBytes(), 1);
  int rotation = std::clamp(static_cast<int>(kMaxRotationBytes / set_bytes), 1,
                            std::max(1, options.timing.rotation_sets));
  KOPE_ASSIGN_OR_RETURN(ArenaLayout layout, ArenaLayout::Build(task, bench, rotation));

  // Checked in the reference, with the reference as the baseline and every timed process a
  // bridge, each draws its timing inputs on its device from the same seeds (the reference also
  // into the candidate's slots of the memory it shares): no tensor crosses between host and GPU.
  // Otherwise the parent draws them and every runner uploads them once.
  const bool drawn_by_runners =
      check_in_reference() && baseline == nullptr && (compiled == nullptr || compiled->bridge());
  KOPE_ASSIGN_OR_RETURN(bool mapped, MapForTiming(layout, timeout, drawn_by_runners));
  if (!mapped) return false;
  if (drawn_by_runners) {
    KOPE_RETURN_IF_ERROR(DrawTimingInputs(layout, rotation));
  } else {
    KOPE_RETURN_IF_ERROR(WriteTimingInputs(layout, rotation));
  }
  if (compiled) CompileReferencePoint();

  std::vector<TimingTrack> tracks = {{&baseline_process(), false, {}, 0, 0, false, {}, {}},
                                     {candidate.get(), true, {}, 0, 0, false, {}, {}}};
  if (compiled) tracks.push_back({compiled.get(), false, {}, 0, 0, false, {}, {}});
  KOPE_ASSIGN_OR_RETURN(bool ok, WarmUp(tracks, timeout));
  if (!ok) return false;
  KOPE_ASSIGN_OR_RETURN(ok, Interleave(tracks, timeout));
  if (!ok) return false;
  KOPE_ASSIGN_OR_RETURN(ok, CrossCheck(tracks, timeout));
  if (!ok) return false;
  if (std::optional<std::string> note = tracks[1].side_streams.Note()) {
    outcome.flags.emplace_back(kFlagSideStreamWork);
    outcome.timing_note = *note;
  }
  outcome.baseline_time = Summarize(tracks[0].ns);
  outcome.candidate_time = Summarize(tracks[1].ns);
  outcome.round_speedups = SummarizeRounds(tracks[0].batch_medians, tracks[1].batch_medians);
  if (tracks.size() > 2 && !tracks[2].dropped) outcome.compiled_time = Summarize(tracks[2].ns);
  return true;
}

Result<bool> EvalSession::MapForTiming(const ArenaLayout& layout, double timeout,
                                       bool drawn_by_runners) {
  KOPE_ASSIGN_OR_RETURN(CallOutcome mapped,
                        baseline_process().Prepare(layout, timeout, !drawn_by_runners));
  if (!mapped.ok()) return Status::Internal("the baseline runner failed: " + mapped.detail);
  if (drawn_by_runners) {
    KOPE_ASSIGN_OR_RETURN(mapped, PrepareShared(layout));
  } else {
    KOPE_ASSIGN_OR_RETURN(mapped, candidate->Prepare(layout, timeout));
  }
  if (!CandidateCallOk(mapped, "mapping buffers for timing")) return false;
  // A reference point that fails (torch.compile without a working compiler) is dropped with a
  // note; it never decides the candidate's verdict.
  if (compiled) {
    Result<CallOutcome> m = compiled->Prepare(layout, timeout, !drawn_by_runners);
    if (!m.ok() || !m->ok()) DropCompiled(m.ok() ? m->detail : m.status().message());
  }
  return true;
}

// Every timed runner draws the same fresh inputs on its device, from the same seeds.
Status EvalSession::DrawTimingInputs(const ArenaLayout&, int rotation) {
  const SizeSet& bench = BenchSizes(task, language);
  std::mt19937_64 rng(SecretSeed());
  KernelProcess& base = baseline_process();
  KOPE_ASSIGN_OR_RETURN(const std::vector<Runner::DrawSpec> specs, DrawSpecs(task, 0, bench));
  for (int r = 0; r < rotation; ++r) {
    const uint64_t seed = rng();
    KOPE_ASSIGN_OR_RETURN(CallOutcome drawn, base.Draw(r, seed, Runner::DrawMode::kTimingShared,
                                                       specs, CheckerTimeout()));
    if (!drawn.ok()) return Status::Internal("the baseline runner failed: " + drawn.detail);
    if (compiled) {
      Result<CallOutcome> d =
          compiled->Draw(r, seed, Runner::DrawMode::kTiming, specs, CheckerTimeout());
      if (!d.ok() || !d->ok()) DropCompiled(d.ok() ? d->detail : d.status().message());
    }
  }
  return Status::Ok();
}

// The parent draws the same fresh inputs for all, in every rotation set.
Status EvalSession::WriteTimingInputs(const ArenaLayout& layout, int rotation) {
  const SizeSet& bench = BenchSizes(task, language);
  std::mt19937_64 rng(SecretSeed());
  KernelProcess& base = baseline_process();
  for (int r = 0; r < rotation; ++r) {
    for (size_t i = 0; i < layout.inputs.size(); ++i) {
      const auto& in = layout.inputs[i];
      KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(task.inputs[i], 0, bench));
      FillInput(base.input(r, i), in.dtype, in.count, d, rng);
      ParallelMemcpy(candidate->input(r, i), base.input(r, i), in.bytes);
      if (compiled) ParallelMemcpy(compiled->input(r, i), base.input(r, i), in.bytes);
    }
  }
  return Status::Ok();
}

// torch.compile compiles on the first call: it gets the time a compiler needs.
void EvalSession::CompileReferencePoint() {
  Progress("torch.compile the baseline");
  // A TIME, not a CALL: the inputs stay as drawn (a CALL uploads the parent's arena over
  // them), and no output is copied back for nothing.
  Result<CallOutcome> first = compiled->Time(1, /*flush=*/false, kCompileSeconds);
  if (first.ok()) outcome.compiled_first_call_seconds = first->parent_seconds;
  if (!first.ok() || !first->ok()) {
    DropCompiled(first.ok() ? first->detail : first.status().message());
  }
}

}  // namespace kope
