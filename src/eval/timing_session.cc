// Timing: baseline and candidate interleaved in one session on rotating
// inputs, caches flushed before every call, checked against the parent's clock.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "kope/base/parallel.h"
#include "kope/eval/inputs.h"
#include "session.h"
#include "timing_claim.h"

namespace kope {
namespace {

// Input bytes rotated through, at most (per kernel).
constexpr size_t kMaxRotationBytes = 256ull << 20;
// Target wall time of one timing batch, so that interleaving is fine-grained.
constexpr double kBatchSeconds = 0.02;
// Allowance for the request round trip when comparing with the parent's clock.
constexpr double kRoundTripSeconds = 0.002;
// The first call of a torch.compile reference point includes compiling it.
constexpr double kCompileSeconds = 900;
// Pairs of unflushed batches (a ModelNew candidate's, the baseline's) that bound the
// candidate's claim, the wall time of the candidate's (long enough for a 1.2x claim to stand
// out from a busy machine's round trips), and the longest a baseline's batch of them may take.
constexpr int kClockPairs = 4;
constexpr double kClockPairSeconds = 0.1;
constexpr double kMaxBaselineBatchSeconds = 0.25;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Track {
  KernelProcess* process;
  bool is_candidate;
  std::vector<int64_t> ns;
  double per_call = 0;       // kernel time per call, estimate from the warm-up
  double wall_per_call = 0;  // the parent's wall time per call in the last request
  bool dropped = false;      // a reference point that failed: no longer timed
};

// Cross-checks with the parent's clock, on back-to-back calls without cache flushes. Warm
// caches only make calls faster, so the parent's time per call may not exceed the candidate's
// reported median by much (else kFlagWallClockMismatch). A ModelNew shares the timer's process
// (the Python bridge): in pairs of batches of as many calls as a PyTorch baseline's, whose
// runner is the same bridge loop, it may not leave more of their wall time unexplained by its
// reported times than the baseline does (HiddenTimeFinding). Where it does, its timer reported
// less than passed, and the outcome is incorrect with reason "timing_mismatch" (false).
// `run(track, count, flush, &out)` times a batch as the session does.
template <typename Run>
Result<bool> CrossCheckClock(Track& candidate, Track& baseline, Run& run, Outcome& outcome) {
  const TimingSummary c = Summarize(candidate.ns);
  const TimingSummary b = Summarize(baseline.ns);
  const bool judged = candidate.process->bridge() && baseline.process->bridge();
  const double seconds = judged ? kClockPairSeconds : kBatchSeconds;
  int count = std::clamp(static_cast<int>(seconds / std::max(c.median_s, 1e-7)), 1, 10000);
  if (judged) {
    count = std::clamp(static_cast<int>(kMaxBaselineBatchSeconds / std::max(b.median_s, 1e-7)), 1,
                       count);
  }
  std::vector<ClockPair> pairs;
  for (int pair = 0; pair < (judged ? kClockPairs : 1); ++pair) {
    CallOutcome cand, base;
    // The order alternates, as in the session: drift hits both.
    for (int k = 0; k < (judged ? 2 : 1); ++k) {
      const bool candidate_now = (pair + k) % 2 == 0;
      KOPE_ASSIGN_OR_RETURN(bool ok, run(candidate_now ? candidate : baseline, count,
                                         /*flush=*/false, candidate_now ? &cand : &base));
      if (!ok) return false;
    }
    if (pair == 0) {
      const double wall_per_call = (cand.parent_seconds - kRoundTripSeconds) / count;
      if (wall_per_call > 1.5 * c.median_s + 20e-6 && !outcome.HasFlag(kFlagWallClockMismatch)) {
        outcome.flags.emplace_back(kFlagWallClockMismatch);
      }
    }
    pairs.push_back({count, cand.parent_seconds, cand.kernel_seconds(), base.parent_seconds,
                     base.kernel_seconds()});
  }
  std::optional<std::string> finding = judged ? HiddenTimeFinding(pairs) : std::nullopt;
  if (!finding) return true;
  outcome.verdict = Verdict::kIncorrect;
  outcome.message = "timing_mismatch: " + *finding;
  Mismatch m;
  m.reason = "timing_mismatch";
  m.size_set = "bench";
  outcome.mismatch = m;
  return false;
}

}  // namespace

Result<bool> EvalSession::Time() {
  const TimingPolicy& policy = options.timing;
  const SizeSet& bench = BenchSizes(task, language);
  const double timeout = CandidateTimeout(bench);
  KOPE_ASSIGN_OR_RETURN(ArenaLayout probe, ArenaLayout::Build(task, bench, 1));
  size_t set_bytes = std::max<size_t>(probe.InputSetBytes(), 1);
  int rotation = std::clamp(static_cast<int>(kMaxRotationBytes / set_bytes), 1,
                            std::max(1, policy.rotation_sets));
  KOPE_ASSIGN_OR_RETURN(ArenaLayout layout, ArenaLayout::Build(task, bench, rotation));

  // Checked in the reference, with the reference as the baseline and every timed process a
  // bridge, each draws its timing inputs on its device from the same seeds (the reference also
  // into the candidate's slots of the memory it shares): no tensor crosses between host and GPU.
  // Otherwise the parent draws them and every runner uploads them once.
  const bool drawn_by_runners =
      check_in_reference && baseline == nullptr && (compiled == nullptr || compiled->bridge());
  KernelProcess& base = baseline_process();
  KOPE_ASSIGN_OR_RETURN(CallOutcome mapped, base.Prepare(layout, timeout, !drawn_by_runners));
  if (!mapped.ok()) return Status::Internal("the baseline runner failed: " + mapped.detail);
  if (drawn_by_runners) {
    KOPE_ASSIGN_OR_RETURN(mapped, PrepareShared(layout));
  } else {
    KOPE_ASSIGN_OR_RETURN(mapped, candidate->Prepare(layout, timeout));
  }
  if (!CandidateCallOk(mapped, "mapping buffers for timing")) return false;

  // A reference point that fails (torch.compile without a working compiler) is dropped with a
  // note; it never decides the candidate's verdict.
  auto note_compiled = [&](const std::string& why) {
    outcome.compiled_note = "torch.compile was not timed: " + why.substr(0, 400);
  };
  auto drop_compiled = [&](const std::string& why) {
    note_compiled(why);
    compiled.reset();
  };
  if (compiled) {
    Result<CallOutcome> m = compiled->Prepare(layout, timeout, !drawn_by_runners);
    if (!m.ok() || !m->ok()) drop_compiled(m.ok() ? m->detail : m.status().message());
  }

  // The same fresh inputs for all, in every rotation set.
  std::mt19937_64 rng(SecretSeed());
  if (drawn_by_runners) {
    KOPE_ASSIGN_OR_RETURN(const std::vector<Runner::DrawSpec> specs, DrawSpecs(task, 0, bench));
    for (int r = 0; r < rotation; ++r) {
      const uint64_t seed = rng();
      KOPE_ASSIGN_OR_RETURN(CallOutcome drawn, base.Draw(r, seed, Runner::DrawMode::kTimingShared,
                                                         specs, CheckerTimeout()));
      if (!drawn.ok()) return Status::Internal("the baseline runner failed: " + drawn.detail);
      if (compiled) {
        Result<CallOutcome> d =
            compiled->Draw(r, seed, Runner::DrawMode::kTiming, specs, CheckerTimeout());
        if (!d.ok() || !d->ok()) drop_compiled(d.ok() ? d->detail : d.status().message());
      }
    }
  } else {
    for (int r = 0; r < rotation; ++r) {
      for (size_t i = 0; i < layout.inputs.size(); ++i) {
        const auto& in = layout.inputs[i];
        KOPE_ASSIGN_OR_RETURN(const Distribution d, TrialDistribution(task.inputs[i], 0, bench));
        FillInput(base.input(r, i), in.dtype, in.count, d, rng);
        ParallelMemcpy(candidate->input(r, i), base.input(r, i), in.bytes);
        if (compiled) ParallelMemcpy(compiled->input(r, i), base.input(r, i), in.bytes);
      }
    }
  }
  if (compiled) {
    // torch.compile compiles on the first call: it gets the time a compiler needs.
    Progress("torch.compile the baseline");
    // A TIME, not a CALL: the inputs stay as drawn (a CALL uploads the parent's arena over
    // them), and no output is copied back for nothing.
    Result<CallOutcome> first = compiled->Time(1, /*flush=*/false, kCompileSeconds);
    if (first.ok()) outcome.compiled_first_call_seconds = first->parent_seconds;
    if (!first.ok() || !first->ok())
      drop_compiled(first.ok() ? first->detail : first.status().message());
  }

  std::vector<Track> tracks = {{&base, false, {}, 0}, {candidate.get(), true, {}, 0}};
  if (compiled) tracks.push_back({compiled.get(), false, {}, 0});
  SideStreamTally side_streams;
  auto run = [&](Track& t, int count, bool flush, CallOutcome* out) -> Result<bool> {
    double budget = timeout * std::max(1, count);
    KOPE_ASSIGN_OR_RETURN(*out, t.process->Time(count, flush, budget));
    if (t.is_candidate && out->ok()) side_streams.Add(out->detail, count);
    if (out->ok()) return true;
    if (t.is_candidate) return CandidateCallOk(*out, "timing", budget);
    if (t.process == compiled.get()) {
      note_compiled(out->detail);  // the track keeps its process until the session ends
      t.dropped = true;
      return true;
    }
    return Status::FailedPrecondition("the task's baseline failed while timing: " + out->detail);
  };

  // Warm-up: at least warmup_calls calls and warmup_seconds of each, in few requests.
  Progress("warm up");
  for (Track& t : tracks) {
    double spent = 0;
    int calls = 0;
    for (int count; (count = WarmupCalls(policy, calls, spent)) > 0;) {
      CallOutcome out;
      KOPE_ASSIGN_OR_RETURN(bool ok, run(t, count, policy.flush_caches, &out));
      if (!ok) return false;
      if (t.dropped) break;
      spent += out.parent_seconds;
      calls += count;
      t.per_call = static_cast<double>(out.ns.empty() ? 0 : out.ns.back()) * 1e-9;
    }
    if (calls > 0) t.wall_per_call = spent / calls;
  }

  // Interleaved batches until both converge or the time is up.
  Progress("time baseline and candidate, interleaved");
  double start = Now();
  for (int round = 0;; ++round) {
    for (size_t k = 0; k < tracks.size(); ++k) {
      Track& t = tracks[(round + k) % tracks.size()];  // rotate who goes first
      if (t.dropped) continue;
      // A batch takes about kBatchSeconds of wall time, flushes and round trip included (a 3 us
      // kernel whose flush takes 40 us gets batches of a few hundred calls, not thousands).
      const double per_call = std::max({t.per_call, t.wall_per_call, 1e-7});
      int count = std::clamp(static_cast<int>(kBatchSeconds / per_call), 1, 10000);
      CallOutcome out;
      KOPE_ASSIGN_OR_RETURN(bool ok, run(t, count, policy.flush_caches, &out));
      if (!ok) return false;
      if (t.dropped) continue;
      t.wall_per_call = out.parent_seconds / count;
      const double reported = out.kernel_seconds();
      // A runner cannot measure more kernel time than the parent saw pass.
      if (reported > out.parent_seconds * 1.02 + kRoundTripSeconds &&
          !outcome.HasFlag(kFlagWallClockMismatch)) {
        outcome.flags.emplace_back(kFlagWallClockMismatch);
      }
      t.ns.insert(t.ns.end(), out.ns.begin(), out.ns.end());
    }
    TimingSummary b = Summarize(tracks[0].ns);
    TimingSummary c = Summarize(tracks[1].ns);
    bool both = Converged(b, policy) && Converged(c, policy);
    bool out_of_time = Now() - start > policy.max_seconds;
    bool enough = b.samples >= policy.min_samples && c.samples >= policy.min_samples;
    if (both || (out_of_time && (enough || Now() - start > 4 * policy.max_seconds))) break;
  }

  KOPE_ASSIGN_OR_RETURN(bool believed, CrossCheckClock(tracks[1], tracks[0], run, outcome));
  if (!believed) return false;
  if (std::optional<std::string> note = side_streams.Note()) {
    outcome.flags.emplace_back(kFlagSideStreamWork);
    outcome.timing_note = *note;
  }
  outcome.baseline_time = Summarize(tracks[0].ns);
  outcome.candidate_time = Summarize(tracks[1].ns);
  if (tracks.size() > 2 && !tracks[2].dropped) outcome.compiled_time = Summarize(tracks[2].ns);
  return true;
}

}  // namespace kope
