// How an episode shows itself: a live display for people, a summary table, and JSON.
//
// The progress display prints one line per evaluated attempt ("a13 <- a12 tuner: tune kBlock
// 2048 -> 4096 | valid 3.21x | best 3.21x | attempt 7/30 | 0 tokens | 42 s"). On a terminal it
// also keeps a status line at the bottom, redrawn at most ten times a second: attempt n of N,
// best speedup so far, tokens used, time left, and what is happening now. Elsewhere (a pipe, a
// log file) it prints the attempt lines only, plain. The display writes to the stream it is
// given, under `lock` when one is given (several displays sharing one stream), from the
// episode's thread.
#ifndef KOPE_AGENT_PROGRESS_H_
#define KOPE_AGENT_PROGRESS_H_

#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kope/agent/episode.h"

namespace kope::agent {

struct ProgressOptions {
  bool terminal = false;       // keep a live status line (the stream is a terminal)
  std::string prefix;          // put before every line, e.g. "[gelu] "
  std::mutex* lock = nullptr;  // not owned; held while writing
};

std::unique_ptr<EpisodeObserver> CreateProgressDisplay(std::ostream& out,
                                                       ProgressOptions options = {});

// The final summary: the task, the run, why it stopped, the best kernel, then a table of the
// run's attempts (the best first, then by speedup, failures last; at most `max_rows`).
std::string FormatEpisodeSummary(const EpisodeReport& report, int max_rows = 15);

// The report as JSON (fields as in EpisodeReport; attempts as an array; no source text; with
// "languages", ResultsByLanguage, when there is more than one).
std::string EpisodeReportToJson(const EpisodeReport& report, int indent = 2);

// One attempt as a short line (used by the display and the bench's log).
std::string FormatAttemptLine(const AttemptSummary& attempt);

// What the attempts written in one language gave (candidate_language.h).
struct LanguageResult {
  std::string language;
  int attempts = 0;
  int valid = 0;                       // valid and not flagged
  std::optional<double> best_speedup;  // over those
  memory::NodeId best_attempt = 0;
};

// Per language of `attempts`, in the order each first appears. The summary and the JSON report
// show them when the run has attempts in more than one language.
std::vector<LanguageResult> ResultsByLanguage(const std::vector<AttemptSummary>& attempts);

}  // namespace kope::agent

#endif  // KOPE_AGENT_PROGRESS_H_
