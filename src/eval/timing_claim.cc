#include "timing_claim.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace kope {

namespace {

// What a batch's wall time leaves unexplained by its reported kernel time.
double CandidateOverhead(const ClockPair& p) { return p.candidate_wall_s - p.candidate_kernel_s; }

// The baseline's overhead in its least delayed batch. A busy machine only adds to the time a
// batch spends outside its timer (a delay inside it is reported), so the smallest is the
// runner's own overhead; a sum or a pair's difference would carry the delays of either side.
double BaselineOverhead(const std::vector<ClockPair>& pairs) {
  double least = pairs.front().baseline_wall_s - pairs.front().baseline_kernel_s;
  for (const ClockPair& p : pairs) least = std::min(least, p.baseline_wall_s - p.baseline_kernel_s);
  return least;
}

}  // namespace

std::vector<double> UnexplainedShares(const std::vector<ClockPair>& pairs) {
  std::vector<double> shares;
  if (pairs.empty()) return shares;
  const double baseline = BaselineOverhead(pairs);
  for (const ClockPair& p : pairs) {
    shares.push_back(
        p.candidate_kernel_s > 0 ? (CandidateOverhead(p) - baseline) / p.candidate_kernel_s : 0.0);
  }
  return shares;
}

std::optional<std::string> HiddenTimeFinding(const std::vector<ClockPair>& pairs,
                                             const ClockBound& bound, double timed_ratio) {
  if (pairs.size() < 2) return std::nullopt;
  // Each candidate batch's overhead beyond the baseline's least, less what it may be: the
  // least delayed batch decides (a timer that reports less does so in every batch, a busy
  // machine delays some, and only ever adds time outside the timer).
  const double baseline = BaselineOverhead(pairs);
  const ClockPair* decisive = nullptr;
  double beyond = 0;
  // A runner whose timed calls take s times the baseline's may spend s times its loop outside
  // them: a slower CPU stretches both. s is the evaluation's, the ratio its verdict is made of, so
  // a claim of a speedup gets nothing from it.
  const double slower = std::clamp(timed_ratio, 1.0, kSlowerCpuLimit) - 1;
  for (const ClockPair& p : pairs) {
    const double allowed = bound.ratio * p.candidate_kernel_s + bound.slack_seconds +
                           bound.slack_per_call_seconds * p.calls +
                           slower * std::max(baseline, 0.0);
    const double excess = CandidateOverhead(p) - baseline - allowed;
    if (decisive == nullptr || excess < beyond) {
      decisive = &p;
      beyond = excess;
    }
  }
  if (beyond <= 0) return std::nullopt;
  const ClockPair& p = *decisive;
  const double hidden = CandidateOverhead(p) - baseline;
  return fmt::format(
      "its reported times disagree with the parent's clock: a batch of {} calls took {:.3f} ms "
      "of wall time and reported {:.3f} ms of kernel time, {:.3f} ms unexplained beyond the "
      "baseline's least overhead on as many calls ({:.0f}% of what it reported; its least "
      "delayed of {} batches, all beyond what is allowed; a timer the candidate changed reports "
      "like this): its times cannot be trusted and it has no speedup",
      p.calls, 1e3 * p.candidate_wall_s, 1e3 * p.candidate_kernel_s, 1e3 * hidden,
      p.candidate_kernel_s > 0 ? 100 * hidden / p.candidate_kernel_s : 0.0, pairs.size());
}

void SideStreamTally::Add(const std::string& reply_message, long reply_calls) {
  calls += reply_calls;
  if (reply_message.empty() || reply_message.front() != '{') return;
  const nlohmann::json note = nlohmann::json::parse(reply_message, nullptr, false);
  if (!note.is_object() || !note.contains("side_stream_calls")) return;
  side_stream_calls += note.value("side_stream_calls", 0L);
  side_stream_s += 1e-9 * note.value("side_stream_ns", 0.0);
}

std::optional<std::string> SideStreamTally::Note() const {
  if (side_stream_calls == 0 || 2 * side_stream_calls < calls) return std::nullopt;
  return fmt::format(
      "{} of {} timed calls left work on streams the harness's stream never waits on ({:.3f} "
      "ms a call on average): that work is charged to its time (a device-wide synchronize ends "
      "each timed call), which is why it is slower than its own stream suggests",
      side_stream_calls, calls, 1e3 * side_stream_s / side_stream_calls);
}

}  // namespace kope
