// The memory ablation in small: with the experience of one task of a family in the graph, the
// offline proposer reaches the best configuration of a second task of that family in fewer
// attempts than from an empty graph.
#include <gtest/gtest.h>

#include <iostream>

#include "agent_test_support.h"
#include "kope/agent/episode.h"
#include "kope/agent/offline_proposer.h"
#include "kope/agent/tunables.h"

namespace kope::agent {
namespace {

using testing::LoadTestTask;
using testing::OpenTestStore;
using testing::ScratchDir;
using testing::TestBackend;
using testing::TestEpisodeOptions;

std::string ConfigOf(memory::GraphStore& store, const std::string& source_hash) {
  auto source = store.GetSource(source_hash);
  EXPECT_TRUE(source.ok());
  return source.ok() ? FormatPoint(CurrentPoint(FindTunables(*source).tunables)) : "";
}

// The 1-based attempt at which the run first tried `config`; 0 when it never did.
int AttemptsToReach(memory::GraphStore& store, const EpisodeReport& report,
                    const std::string& config) {
  for (size_t i = 0; i < report.attempts.size(); ++i) {
    if (report.attempts[i].verdict == "valid" &&
        ConfigOf(store, report.attempts[i].source_hash) == config) {
      return static_cast<int>(i) + 1;
    }
  }
  return 0;
}

TEST(TransferTest, ExperienceFromOneTaskShortensTheSearchOnAnother) {
  ScratchDir scratch;
  auto backend = TestBackend();
  ASSERT_NE(backend, nullptr);
  const Task small = LoadTestTask("scale_small");
  const Task large = LoadTestTask("scale_large");
  ASSERT_EQ(small.family, large.family);

  // An empty graph: the large task alone, tuned until nothing is left.
  auto empty_store = OpenTestStore(scratch.path() / "empty.db");
  ASSERT_NE(empty_store, nullptr);
  auto proposer = CreateOfflineProposer();
  auto empty = RunEpisode(*empty_store, *backend, large, *proposer, TestEpisodeOptions(10));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  ASSERT_TRUE(empty->best.has_value()) << empty->error;
  const std::string best_config = ConfigOf(*empty_store, empty->best->source_hash);
  const int empty_attempts = AttemptsToReach(*empty_store, *empty, best_config);
  ASSERT_GT(empty_attempts, 1) << "the seed itself was the best: nothing to compare";
  EXPECT_EQ(empty->attempts[0].proposer, "seed");

  // A graph that holds the small task's episode: the large task starts from its best kernel.
  auto store = OpenTestStore(scratch.path() / "experienced.db");
  ASSERT_NE(store, nullptr);
  auto first = RunEpisode(*store, *backend, small, *proposer, TestEpisodeOptions(10));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->best.has_value());
  auto second =
      RunEpisode(*store, *backend, large, *proposer, TestEpisodeOptions(empty_attempts - 1));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_FALSE(second->attempts.empty());
  EXPECT_EQ(second->attempts[0].proposer, "transfer");
  EXPECT_NE(second->attempts[0].decision.find("scale_small"), std::string::npos);
  const int experienced_attempts = AttemptsToReach(*store, *second, best_config);
  EXPECT_GT(experienced_attempts, 0) << "never reached " << best_config;
  std::cout << "attempts to reach " << best_config << ": " << empty_attempts
            << " from an empty graph, " << experienced_attempts << " with the experience of "
            << small.name << "\n";
  EXPECT_LT(experienced_attempts, empty_attempts);
}

}  // namespace
}  // namespace kope::agent
