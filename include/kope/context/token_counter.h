// Token accounting: how many tokens a prompt will cost, known before it is sent.
//
// EstimateTokens is a fast heuristic over character classes (words split at case changes and
// underscores, digit groups of three, each punctuation mark, indentation runs, newlines, code
// points outside ASCII). It never looks across a newline, so it is additive over
// newline-terminated pieces: EstimateTokens(a + b) == EstimateTokens(a) + EstimateTokens(b)
// whenever `a` is empty or ends with '\n'. The context builder relies on this to count a prompt
// section by section.
//
// A model's tokenizer differs from the heuristic by a factor that depends on the model and the
// text. TokenCalibration keeps, per model, the most recent pairs (raw estimate, prompt tokens the
// provider reported) and derives a TokenCounter from them: Expected() scales the estimate by the
// median ratio, Bound() by the largest ratio observed plus a margin. Budgets are checked against
// Bound(), so that the estimate's error never takes a prompt over its budget. A model without
// observations gets the conservative defaults below.
//
// Storage: a small JSON file (`CalibrationPathFor(store location)`: beside the SQLite store,
// named after it with ".tokens.json" appended). Record() merges into the file under an exclusive
// lock (flock on a ".lock" file beside it) and replaces it atomically (write, fsync, rename), so
// that several processes sharing one store also share one calibration and never tear it.
//
// Thread safety: EstimateTokens and TokenCounter are pure values, safe anywhere. A
// TokenCalibration may be used from several threads; its methods lock internally.
#ifndef KOPE_CONTEXT_TOKEN_COUNTER_H_
#define KOPE_CONTEXT_TOKEN_COUNTER_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::context {

// The raw heuristic count of `text` (0 for empty text).
int64_t EstimateTokens(std::string_view text);

// Ratios used for a model with no observations: the heuristic is built to over-count slightly
// on code and prose, and the bound leaves a further 25% for tokenizers it fits badly.
inline constexpr double kDefaultRatio = 1.0;
inline constexpr double kDefaultBoundRatio = 1.25;
// The margin put on top of the largest observed ratio.
inline constexpr double kBoundMargin = 1.03;
// Observations kept per model (the most recent), and needed before the defaults are dropped.
inline constexpr int kMaxSamplesPerModel = 256;
inline constexpr int kMinSamplesForBound = 8;
// Reported counts below this are dominated by the chat template's own tokens and are ignored.
inline constexpr int64_t kMinReportedTokens = 64;

// The tokens of one model, from the raw estimate.
struct TokenCounter {
  double ratio = kDefaultRatio;             // median of reported / estimated
  double bound_ratio = kDefaultBoundRatio;  // what budgets are checked with; >= ratio
  int samples = 0;                          // observations these ratios come from

  int64_t Expected(int64_t raw) const;
  int64_t Bound(int64_t raw) const;
  int64_t Expected(std::string_view text) const { return Expected(EstimateTokens(text)); }
  int64_t Bound(std::string_view text) const { return Bound(EstimateTokens(text)); }
};

// One observation: the raw estimate of a prompt and the prompt tokens the provider reported.
struct TokenSample {
  int64_t estimate = 0;
  int64_t reported = 0;
};

class TokenCalibration {
 public:
  // A calibration kept in memory only (for tests and one-off commands).
  TokenCalibration() = default;
  // A calibration stored at `path`; call Load() to read what is there.
  explicit TokenCalibration(std::filesystem::path path) : path_(std::move(path)) {}
  TokenCalibration(const TokenCalibration&) = delete;
  TokenCalibration& operator=(const TokenCalibration&) = delete;

  // Reads the file (a missing file is an empty calibration). Corruption for a file that is not
  // a calibration; IoError when it cannot be read.
  Status Load();

  // Adds one observation for `model` (ignored, returning ok, when `reported` is below
  // kMinReportedTokens or `estimate` is not positive) and, for a stored calibration, merges it
  // into the file. InvalidArgument for an empty model name.
  Status Record(std::string_view model, int64_t estimate, int64_t reported);

  // The counter for `model`: its own observations, else those of the longest recorded name that
  // is a prefix of it (so "gpt-4o" serves "gpt-4o-2024-08-06"), else the defaults.
  TokenCounter CounterFor(std::string_view model) const;

  // Every model with observations, by name.
  std::map<std::string, TokenCounter> Counters() const;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<TokenSample>, std::less<>> samples_;
};

// Where the calibration of a store lives: "<file>.tokens.json" beside a SQLite store; for a
// "postgres://" location, tokens.json in the folder of the default store location.
Result<std::filesystem::path> CalibrationPathFor(std::string_view store_location);

// The counter derived from a list of observations (the most recent last).
TokenCounter CounterFromSamples(const std::vector<TokenSample>& samples);

}  // namespace kope::context

#endif  // KOPE_CONTEXT_TOKEN_COUNTER_H_
