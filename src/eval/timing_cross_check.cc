// The cross-check of the candidate's timed figures: back-to-back calls without flushing, under
// the parent's clock. Warm caches only make calls faster, so the parent's time per call may not
// exceed the reported median by much; if it does, the reported times are low.
#include <algorithm>

#include "session.h"

namespace kope {
Result<bool> EvalSession::CrossCheck(std::vector<TimingTrack>& tracks, double timeout) {
  for (TimingTrack& t : tracks) {
    if (t.dropped || !t.is_candidate) continue;  // only the candidate's figures are judged
    TimingSummary s = Summarize(t.ns);
    int count =
        std::clamp(static_cast<int>(kTimingBatchSeconds / std::max(s.median_s, 1e-7)), 1, 10000);
    CallOutcome out;
    KOPE_ASSIGN_OR_RETURN(bool ok, TimeTrack(t, count, /*flush=*/false, timeout, &out));
    if (!ok) return false;
    double wall_per_call = (out.parent_seconds - kRoundTripSeconds) / count;
    if (wall_per_call > 1.5 * s.median_s + 20e-6 && !outcome.HasFlag(kFlagWallClockMismatch)) {
      outcome.flags.emplace_back(kFlagWallClockMismatch);
    }
  }
  return true;
}

}  // namespace kope
