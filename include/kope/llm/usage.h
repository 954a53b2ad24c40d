// Usage accounting: tokens and an estimated cost, per call, per attempt, per run.
//
// Every LlmResponse carries the tokens of its call. A PriceTable (from the
// configuration's [prices."model"] tables, in US dollars per million tokens)
// turns them into a cost estimate. A UsageLedger adds calls up; the workflow
// keeps one per attempt and one per run (or adds an attempt's totals into the
// run's). Replies served from the response cache are counted apart: they cost
// nothing now.
//
// PriceTable and UsageTotals are plain values. UsageLedger is thread-safe.
#ifndef KOPE_LLM_USAGE_H_
#define KOPE_LLM_USAGE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "kope/llm/provider.h"

namespace kope::llm {

struct Price {
  double prompt_usd_per_mtok = 0;
  double completion_usd_per_mtok = 0;
};

class PriceTable {
 public:
  void Set(std::string model, Price price) { prices_[std::move(model)] = price; }
  // The price of `model`: an exact entry, or else the longest entry that is a
  // prefix of it (so "claude-sonnet-4-5" prices "claude-sonnet-4-5-20250929").
  std::optional<Price> Find(std::string_view model) const;
  bool empty() const { return prices_.empty(); }
  const std::map<std::string, Price, std::less<>>& entries() const { return prices_; }

 private:
  std::map<std::string, Price, std::less<>> prices_;
};

// The cost of one call's tokens at `price`, in US dollars.
double CostUsd(const LlmUsage& usage, const Price& price);

struct UsageTotals {
  int64_t calls = 0;          // calls that reached a model now
  int64_t prompt_tokens = 0;  // of those calls
  int64_t completion_tokens = 0;
  int64_t cached_calls = 0;          // replies served from the cache
  int64_t cached_prompt_tokens = 0;  // what those replies cost when recorded
  int64_t cached_completion_tokens = 0;
  int64_t estimated_calls = 0;  // live calls whose tokens kope estimated
  int64_t unpriced_calls = 0;   // live calls whose model has no price
  double cost_usd = 0;          // of the priced live calls

  int64_t tokens() const { return prompt_tokens + completion_tokens; }
  UsageTotals& operator+=(const UsageTotals& other);
};

// The totals of one response. The model priced is the one the server reported,
// or `requested_model` when it reported none or has no price.
UsageTotals UsageOf(const LlmResponse& response, const PriceTable& prices,
                    std::string_view requested_model = {});

class UsageLedger {
 public:
  explicit UsageLedger(PriceTable prices = {}) : prices_(std::move(prices)) {}

  // Adds one response; returns its own totals.
  UsageTotals Record(const LlmResponse& response, std::string_view requested_model = {});
  // Adds totals computed elsewhere (an attempt's, into a run's).
  void Add(const UsageTotals& totals);
  UsageTotals totals() const;
  const PriceTable& prices() const { return prices_; }

 private:
  const PriceTable prices_;
  mutable std::mutex mu_;
  UsageTotals totals_;
};

}  // namespace kope::llm

#endif  // KOPE_LLM_USAGE_H_
