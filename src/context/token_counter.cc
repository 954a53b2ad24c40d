// The token heuristic and the counters derived from calibration samples.
#include "kope/context/token_counter.h"

#include <algorithm>
#include <cmath>

namespace kope::context {
namespace {

bool IsLetter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsUpper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(unsigned char c) { return c >= 'a' && c <= 'z'; }

// Tokens of one word piece: common lowercase words are one token and long ones split every six
// letters or so; runs of capitals split about every three.
int64_t PieceTokens(std::string_view piece) {
  const auto len = static_cast<int64_t>(piece.size());
  bool all_upper = true;
  for (char c : piece) all_upper = all_upper && !IsLower(static_cast<unsigned char>(c));
  return all_upper ? 1 + (len - 1) / 3 : 1 + (len - 1) / 6;
}

// Tokens of a run of letters and underscores: split where an underscore starts a piece and where
// a lowercase letter is followed by a capital (camelCase), as byte-pair vocabularies tend to.
int64_t WordTokens(std::string_view word) {
  int64_t tokens = 0;
  size_t start = 0;
  for (size_t i = 1; i <= word.size(); ++i) {
    const bool end = i == word.size();
    const bool split = end || word[i] == '_' ||
                       (IsLower(static_cast<unsigned char>(word[i - 1])) &&
                        IsUpper(static_cast<unsigned char>(word[i])));
    if (split) {
      tokens += PieceTokens(word.substr(start, i - start));
      start = i;
    }
  }
  return tokens;
}

int64_t Ceil(double value) { return static_cast<int64_t>(std::ceil(value - 1e-9)); }

}  // namespace

int64_t EstimateTokens(std::string_view text) {
  int64_t tokens = 0;
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t j = i + 1;
    if (c == ' ') {
      while (j < n && text[j] == ' ') ++j;
      // One space joins the word after it; indentation costs about a token per four spaces.
      const auto len = static_cast<int64_t>(j - i);
      if (len >= 2) tokens += (len - 1 + 3) / 4;
    } else if (IsLetter(c)) {
      while (j < n && IsLetter(static_cast<unsigned char>(text[j]))) ++j;
      tokens += WordTokens(text.substr(i, j - i));
    } else if (IsDigit(c)) {
      while (j < n && IsDigit(static_cast<unsigned char>(text[j]))) ++j;
      tokens += (static_cast<int64_t>(j - i) + 2) / 3;
    } else if (c < 0x80) {
      tokens += 1;  // a newline, a tab, a punctuation mark, a control character
    } else {
      // One code point: two bytes are about a token, three or four bytes about two. A stray
      // continuation byte counts as one.
      size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      j = i + 1;
      while (j < n && j < i + len && (static_cast<unsigned char>(text[j]) & 0xC0) == 0x80) ++j;
      tokens += len >= 3 ? 2 : 1;
    }
    i = j;
  }
  return tokens;
}

int64_t TokenCounter::Expected(int64_t raw) const {
  return raw <= 0 ? 0 : Ceil(static_cast<double>(raw) * ratio);
}

int64_t TokenCounter::Bound(int64_t raw) const {
  return raw <= 0 ? 0 : Ceil(static_cast<double>(raw) * std::max(ratio, bound_ratio));
}

TokenCounter CounterFromSamples(const std::vector<TokenSample>& samples) {
  std::vector<double> ratios;
  const size_t first = samples.size() > static_cast<size_t>(kMaxSamplesPerModel)
                           ? samples.size() - kMaxSamplesPerModel
                           : 0;
  for (size_t i = first; i < samples.size(); ++i) {
    const TokenSample& s = samples[i];
    if (s.estimate <= 0 || s.reported < kMinReportedTokens) continue;
    ratios.push_back(static_cast<double>(s.reported) / static_cast<double>(s.estimate));
  }
  TokenCounter counter;
  if (ratios.empty()) return counter;
  std::sort(ratios.begin(), ratios.end());
  const size_t m = ratios.size();
  counter.samples = static_cast<int>(m);
  counter.ratio = m % 2 == 1 ? ratios[m / 2] : 0.5 * (ratios[m / 2 - 1] + ratios[m / 2]);
  counter.bound_ratio = ratios.back() * kBoundMargin;
  if (counter.samples < kMinSamplesForBound) {
    // Too few observations to trust their spread: keep the default margin around the median.
    counter.bound_ratio = std::max(counter.bound_ratio, counter.ratio * kDefaultBoundRatio);
  }
  return counter;
}

}  // namespace kope::context
