#include "packing.h"

#include <gtest/gtest.h>

#include <random>

namespace kope::context::internal {
namespace {

PackItem Item(int group, double score, std::vector<int64_t> tokens) {
  const double keep[] = {1.0, 0.6, 0.3};
  PackItem item;
  item.group = group;
  for (size_t i = 0; i < tokens.size(); ++i) item.forms.push_back({tokens[i], score * keep[i]});
  return item;
}

TEST(Pack, ShortensBeforeDropping) {
  // One item whose full form does not fit but whose summary does.
  std::vector<PackGroup> groups = {{100, 5}};
  PackResult r = Pack(groups, {Item(0, 1.0, {300, 80, 20})}, 100);
  EXPECT_EQ(r.form[0], 1);
  EXPECT_EQ(r.total, 85);
  EXPECT_EQ(r.group_tokens[0], 85);
}

TEST(Pack, ShowsManyShortBeforeOneLong) {
  std::vector<PackGroup> groups = {{120, 0}};
  std::vector<PackItem> items = {Item(0, 1.0, {100, 40, 10}), Item(0, 0.9, {100, 40, 10}),
                                 Item(0, 0.8, {100, 40, 10})};
  PackResult r = Pack(groups, items, 120);
  for (int f : r.form) EXPECT_GE(f, 0);  // all three shown
  EXPECT_LE(r.total, 120);
  // The best item got the richer form.
  EXPECT_LE(r.form[0], r.form[2]);
}

TEST(Pack, UnusedQuotaFlowsToOtherGroups) {
  // Group 1 has nothing; its quota goes to group 0 in the pooled pass.
  std::vector<PackGroup> groups = {{50, 0}, {150, 0}};
  PackResult r = Pack(groups, {Item(0, 1.0, {180, 60, 10})}, 200);
  EXPECT_EQ(r.form[0], 0);
  EXPECT_EQ(r.total, 180);
}

TEST(Pack, QuotasHoldWhileOthersNeedThem) {
  // Both groups want everything; each keeps its own quota's worth first.
  std::vector<PackGroup> groups = {{100, 0}, {100, 0}};
  std::vector<PackItem> items;
  for (int i = 0; i < 10; ++i) items.push_back(Item(0, 10.0, {30}));  // group 0 scores far higher
  for (int i = 0; i < 10; ++i) items.push_back(Item(1, 1.0, {30}));
  PackResult r = Pack(groups, items, 200);
  EXPECT_GE(r.group_tokens[1], 90);
  EXPECT_LE(r.total, 200);
}

TEST(Pack, HeadingCostsOnceAndOnlyWhenUsed) {
  std::vector<PackGroup> groups = {{100, 10}, {100, 10}};
  PackResult r = Pack(groups, {Item(0, 1.0, {20}), Item(0, 1.0, {20})}, 200);
  EXPECT_EQ(r.group_tokens[0], 50);
  EXPECT_EQ(r.group_tokens[1], 0);
  EXPECT_EQ(r.total, 50);
}

TEST(Pack, NeverExceedsTheBudgetAndIsDeterministic) {
  std::mt19937 rng(11);
  for (int round = 0; round < 2000; ++round) {
    const int n_groups = 1 + static_cast<int>(rng() % 6);
    std::vector<PackGroup> groups;
    const int64_t budget = static_cast<int64_t>(rng() % 3000);
    for (int g = 0; g < n_groups; ++g) {
      groups.push_back({static_cast<int64_t>(rng() % (budget + 1)) / n_groups,
                        static_cast<int64_t>(rng() % 12)});
    }
    std::vector<PackItem> items;
    for (int i = 0, n = static_cast<int>(rng() % 40); i < n; ++i) {
      std::vector<int64_t> tokens = {1 + static_cast<int64_t>(rng() % 900)};
      while (tokens.size() < 3 && tokens.back() > 1 && rng() % 3 != 0) {
        tokens.push_back(1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(tokens.back())));
      }
      items.push_back(Item(static_cast<int>(rng() % n_groups),
                           std::uniform_real_distribution<double>(0, 2)(rng), tokens));
    }
    PackResult r = Pack(groups, items, budget);
    ASSERT_LE(r.total, budget);
    int64_t sum = 0;
    std::vector<int> shown(groups.size(), 0);
    for (size_t i = 0; i < items.size(); ++i) {
      if (r.form[i] < 0) continue;
      sum += items[i].forms[static_cast<size_t>(r.form[i])].tokens;
      ++shown[static_cast<size_t>(items[i].group)];
    }
    for (size_t g = 0; g < groups.size(); ++g) sum += shown[g] > 0 ? groups[g].heading_tokens : 0;
    ASSERT_EQ(sum, r.total);
    PackResult again = Pack(groups, items, budget);
    ASSERT_EQ(again.form, r.form);
  }
}

}  // namespace
}  // namespace kope::context::internal
