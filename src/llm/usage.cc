#include "kope/llm/usage.h"

namespace kope::llm {

std::optional<Price> PriceTable::Find(std::string_view model) const {
  if (model.empty()) return std::nullopt;
  auto exact = prices_.find(model);
  if (exact != prices_.end()) return exact->second;
  std::optional<Price> best;
  size_t best_length = 0;
  for (const auto& [name, price] : prices_) {
    if (name.size() > best_length && model.substr(0, name.size()) == name) {
      best = price;
      best_length = name.size();
    }
  }
  return best;
}

double CostUsd(const LlmUsage& usage, const Price& price) {
  return (static_cast<double>(usage.prompt_tokens) * price.prompt_usd_per_mtok +
          static_cast<double>(usage.completion_tokens) * price.completion_usd_per_mtok) /
         1e6;
}

UsageTotals& UsageTotals::operator+=(const UsageTotals& o) {
  calls += o.calls;
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  cached_calls += o.cached_calls;
  cached_prompt_tokens += o.cached_prompt_tokens;
  cached_completion_tokens += o.cached_completion_tokens;
  estimated_calls += o.estimated_calls;
  unpriced_calls += o.unpriced_calls;
  cost_usd += o.cost_usd;
  return *this;
}

UsageTotals UsageOf(const LlmResponse& response, const PriceTable& prices,
                    std::string_view requested_model) {
  UsageTotals t;
  if (response.cached) {
    t.cached_calls = 1;
    t.cached_prompt_tokens = response.usage.prompt_tokens;
    t.cached_completion_tokens = response.usage.completion_tokens;
    return t;
  }
  t.calls = 1;
  t.prompt_tokens = response.usage.prompt_tokens;
  t.completion_tokens = response.usage.completion_tokens;
  t.estimated_calls = response.usage.estimated ? 1 : 0;
  std::optional<Price> price = prices.Find(response.model);
  if (!price) price = prices.Find(requested_model);
  if (price) {
    t.cost_usd = CostUsd(response.usage, *price);
  } else {
    t.unpriced_calls = 1;
  }
  return t;
}

UsageTotals UsageLedger::Record(const LlmResponse& response, std::string_view requested_model) {
  UsageTotals t = UsageOf(response, prices_, requested_model);
  Add(t);
  return t;
}

void UsageLedger::Add(const UsageTotals& totals) {
  std::lock_guard<std::mutex> lock(mu_);
  totals_ += totals;
}

UsageTotals UsageLedger::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

}  // namespace kope::llm
