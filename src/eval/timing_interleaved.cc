// The timed measurement: a warm-up, then batches of the baseline's, the candidate's (and the
// torch.compile reference point's) calls interleaved, caches flushed before each call, until
// the policy's stopping rule holds.
#include <algorithm>

#include "session.h"

namespace kope {
Result<bool> EvalSession::TimeTrack(TimingTrack& t, int count, bool flush, double timeout,
                                    CallOutcome* out) {
  double budget = timeout * std::max(1, count);
  KOPE_ASSIGN_OR_RETURN(*out, t.process->Time(count, flush, budget));
  if (out->ok()) return true;
  if (t.is_candidate) return CandidateCallOk(*out, "timing", budget);
  if (t.process == compiled.get()) {
    NoteCompiled(out->detail);  // the track keeps its process until the session ends
    t.dropped = true;
    return true;
  }
  return Status::FailedPrecondition("the task's baseline failed while timing: " + out->detail);
}

// At least warmup_calls calls and warmup_seconds of each, in few requests.
Result<bool> EvalSession::WarmUp(std::vector<TimingTrack>& tracks, double timeout) {
  const TimingPolicy& policy = options.timing;
  Progress("warm up");
  for (TimingTrack& t : tracks) {
    double spent = 0;
    int calls = 0;
    for (int count; (count = WarmupCalls(policy, calls, spent)) > 0;) {
      CallOutcome out;
      KOPE_ASSIGN_OR_RETURN(bool ok, TimeTrack(t, count, policy.flush_caches, timeout, &out));
      if (!ok) return false;
      if (t.dropped) break;
      spent += out.parent_seconds;
      calls += count;
      t.per_call = static_cast<double>(out.ns.empty() ? 0 : out.ns.back()) * 1e-9;
    }
    if (calls > 0) t.wall_per_call = spent / calls;
  }
  return true;
}

// Interleaved batches until both converge or the time is up.
Result<bool> EvalSession::Interleave(std::vector<TimingTrack>& tracks, double timeout) {
  const TimingPolicy& policy = options.timing;
  Progress("time baseline and candidate, interleaved");
  const double start = env().NowSeconds();
  for (int round = 0;; ++round) {
    for (size_t k = 0; k < tracks.size(); ++k) {
      TimingTrack& t = tracks[(round + k) % tracks.size()];  // rotate who goes first
      if (t.dropped) continue;
      // A batch takes about kTimingBatchSeconds of wall time, flushes and round trip included (a 3
      // us kernel whose flush takes 40 us gets batches of a few hundred calls, not thousands).
      const double per_call = std::max({t.per_call, t.wall_per_call, 1e-7});
      int count = std::clamp(static_cast<int>(kTimingBatchSeconds / per_call), 1, 10000);
      CallOutcome out;
      KOPE_ASSIGN_OR_RETURN(bool ok, TimeTrack(t, count, policy.flush_caches, timeout, &out));
      if (!ok) return false;
      if (t.dropped) continue;
      t.wall_per_call = out.parent_seconds / count;
      t.side_streams.Add(out.detail, count);
      const double reported = out.kernel_seconds();
      // A runner cannot measure more kernel time than the parent saw pass.
      if (reported > out.parent_seconds * 1.02 + kRoundTripSeconds &&
          !outcome.HasFlag(kFlagWallClockMismatch)) {
        outcome.flags.emplace_back(kFlagWallClockMismatch);
      }
      t.ns.insert(t.ns.end(), out.ns.begin(), out.ns.end());
      if (!out.ns.empty()) t.batch_medians.push_back(Summarize(out.ns).median_s);
    }
    TimingSummary b = Summarize(tracks[0].ns);
    TimingSummary c = Summarize(tracks[1].ns);
    bool both = Converged(b, policy) && Converged(c, policy);
    const double elapsed = env().NowSeconds() - start;
    bool out_of_time = elapsed > policy.max_seconds;
    bool enough = b.samples >= policy.min_samples && c.samples >= policy.min_samples;
    if (both || (out_of_time && (enough || elapsed > 4 * policy.max_seconds))) return true;
  }
}

}  // namespace kope
