// The cross-check of the candidate's timed figures with the parent's clock, on back-to-back
// calls without cache flushes. Warm caches only make calls faster, so the parent's time per
// call may not exceed the candidate's reported median by much (else kFlagWallClockMismatch).
// And the candidate, in pairs of batches of as many calls as the baseline's, may not leave more
// of their wall time unexplained by its reported times than the baseline does
// (HiddenTimeFinding; a ModelNew's against a PyTorch baseline's, whose runner is the same bridge
// loop; native candidates keep the flag alone): where it does, its timer reported less than
// passed, and the outcome is incorrect with reason "timing_mismatch".
#include <algorithm>

#include "session.h"
#include "timing_claim.h"

namespace kope {

Result<bool> EvalSession::CrossCheck(std::vector<TimingTrack>& tracks, double timeout) {
  TimingTrack& candidate_track = tracks[1];
  TimingTrack& baseline_track = tracks[0];
  const TimingSummary c = Summarize(candidate_track.ns);
  const TimingSummary b = Summarize(baseline_track.ns);
  // A ModelNew is judged against a PyTorch baseline, whose runner is the same bridge loop.
  const bool judged = candidate_track.process->bridge() && baseline_track.process->bridge();
  const double seconds = judged ? kClockPairSeconds : kTimingBatchSeconds;
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
      KOPE_ASSIGN_OR_RETURN(bool ok,
                            TimeTrack(candidate_now ? candidate_track : baseline_track, count,
                                      /*flush=*/false, timeout, candidate_now ? &cand : &base));
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
  if (!judged) return true;
  const SideStreamTally& streams = candidate_track.side_streams;
  outcome.clock_check =
      ClockCheck{UnexplainedShares(pairs), streams.calls, streams.side_stream_calls};
  std::optional<std::string> finding =
      HiddenTimeFinding(pairs, language == "cuda" ? kDeviceClockBound : kHostClockBound,
                        b.median_s > 0 ? c.median_s / b.median_s : 1.0);
  if (!finding) return true;
  outcome.verdict = Verdict::kIncorrect;
  outcome.message = "timing_mismatch: " + *finding;
  Mismatch m;
  m.reason = "timing_mismatch";
  m.size_set = "bench";
  outcome.mismatch = m;
  return false;
}

}  // namespace kope
