#include "kope/llm/usage.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace kope::llm {
namespace {

LlmResponse Response(std::string model, int64_t prompt, int64_t completion) {
  LlmResponse r;
  r.model = std::move(model);
  r.usage = {prompt, completion, false};
  return r;
}

TEST(PriceTableTest, FindsExactThenLongestPrefix) {
  PriceTable prices;
  prices.Set("claude", {1, 2});
  prices.Set("claude-sonnet-4-5", {3, 15});
  prices.Set("gpt-4o", {2.5, 10});
  EXPECT_EQ(prices.Find("gpt-4o")->prompt_usd_per_mtok, 2.5);
  EXPECT_EQ(prices.Find("claude-sonnet-4-5-20250929")->completion_usd_per_mtok, 15);
  EXPECT_EQ(prices.Find("claude-haiku")->prompt_usd_per_mtok, 1);
  EXPECT_FALSE(prices.Find("llama").has_value());
  EXPECT_FALSE(prices.Find("").has_value());
}

TEST(UsageTest, CostsTokensAtTheTablePrice) {
  EXPECT_DOUBLE_EQ(CostUsd({1'000'000, 500'000, false}, {3, 15}), 3 + 7.5);
  PriceTable prices;
  prices.Set("m", {1, 2});
  UsageTotals t = UsageOf(Response("m", 100, 50), prices);
  EXPECT_EQ(t.calls, 1);
  EXPECT_EQ(t.tokens(), 150);
  EXPECT_DOUBLE_EQ(t.cost_usd, (100 * 1 + 50 * 2) / 1e6);
  EXPECT_EQ(t.unpriced_calls, 0);

  // The server reported no model: the requested one is priced.
  t = UsageOf(Response("", 100, 0), prices, "m");
  EXPECT_DOUBLE_EQ(t.cost_usd, 100 / 1e6);
  t = UsageOf(Response("unknown", 100, 0), prices);
  EXPECT_EQ(t.unpriced_calls, 1);
  EXPECT_EQ(t.cost_usd, 0);

  LlmResponse estimated = Response("m", 4, 4);
  estimated.usage.estimated = true;
  EXPECT_EQ(UsageOf(estimated, prices).estimated_calls, 1);
}

TEST(UsageLedgerTest, AddsPerAttemptIntoPerRunAcrossThreads) {
  PriceTable prices;
  prices.Set("m", {1, 1});
  UsageLedger run(prices);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      UsageLedger attempt(prices);
      for (int j = 0; j < 250; ++j) attempt.Record(Response("m", 2, 3));
      run.Add(attempt.totals());
    });
  }
  for (std::thread& t : threads) t.join();
  UsageTotals t = run.totals();
  EXPECT_EQ(t.calls, 1000);
  EXPECT_EQ(t.prompt_tokens, 2000);
  EXPECT_EQ(t.completion_tokens, 3000);
  EXPECT_NEAR(t.cost_usd, 5000 / 1e6, 1e-12);
}

}  // namespace
}  // namespace kope::llm
