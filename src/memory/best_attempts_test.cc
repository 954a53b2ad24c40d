// BestAttempts' merged rankings against one ranking of every outcome, on a random graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test_graph.h"
#include "testing/test_stores.h"

namespace kope::memory {
namespace {

using testing::KernelSource;
using testing::MakeHardware;
using testing::MakeTask;
using testing::TempDir;
using testing::ValueOrDie;

const std::vector<std::string> kFamilies = {"softmax", "matmul", "layernorm"};

// An outcome as written, and whether BestAttempts may rank it (valid and not flagged).
struct Row {
  NodeId outcome, attempt, hardware, task;
  std::string family;
  double speedup;
  bool rankable;
};

struct RandomGraph {
  std::vector<Row> rows;
  std::vector<NodeId> hardware, tasks;
};

// One to three outcomes on each of 12 attempts of each of 6 tasks (two per family) on each of 3
// hardware: valid ones with speedups on a coarse grid (so that ties occur), flagged and
// incorrect ones; and 48 more of the first task's first attempt on each hardware.
Status WriteRandomGraph(GraphWriter& w, RandomGraph& graph) {
  std::mt19937 rng(5);
  for (int h = 0; h < 3; ++h) {
    KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutHardware(MakeHardware("cuda", "GPU " + std::to_string(h),
                                                                "sm_9" + std::to_string(h))));
    graph.hardware.push_back(id);
  }
  for (int t = 0; t < 6; ++t) {
    const std::string& family = kFamilies[static_cast<size_t>(t) % kFamilies.size()];
    KOPE_ASSIGN_OR_RETURN(NodeId task,
                          w.PutTask(MakeTask("task_" + std::to_string(t), family, 1e5, "")));
    graph.tasks.push_back(task);
    for (NodeId hw : graph.hardware) {
      RunNode r;
      r.task_id = task;
      r.hardware_id = hw;
      KOPE_ASSIGN_OR_RETURN(NodeId run, w.PutRun(r));
      for (int i = 0; i < 12; ++i) {
        AttemptNode a;
        a.run_id = run;
        a.decision = "attempt " + std::to_string(i);
        KOPE_ASSIGN_OR_RETURN(NodeId attempt, w.PutAttempt(a, KernelSource(4, i % 4, a.decision)));
        for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
          const int kind = static_cast<int>(rng() % 10);
          OutcomeNode o = testing::Valid(0.5 + static_cast<double>(rng() % 8) / 4.0);
          if (kind == 0) o.flagged = true;
          if (kind == 1) o = testing::Failed("incorrect", "");
          o.attempt_id = attempt;
          o.evidence_json = "{\"k\":" + std::to_string(k) + "}";
          KOPE_ASSIGN_OR_RETURN(NodeId outcome, w.PutOutcome(o));
          graph.rows.push_back(
              {outcome, attempt, hw, task, family, o.speedup.value_or(0), kind > 1});
        }
        // One attempt evaluated again and again: its outcomes fill the top of its list, past
        // what a store reads of a list before it knows it has `limit` attempts.
        for (int k = 0; t == 0 && i == 0 && k < 48; ++k) {
          OutcomeNode o = testing::Valid(3.0 + k / 100.0);
          o.attempt_id = attempt;
          o.evidence_json = "{\"again\":" + std::to_string(k) + "}";
          KOPE_ASSIGN_OR_RETURN(NodeId outcome, w.PutOutcome(o));
          graph.rows.push_back({outcome, attempt, hw, task, family, *o.speedup, true});
        }
      }
    }
  }
  return Status::Ok();
}

using Ranking = std::vector<std::pair<NodeId, NodeId>>;  // attempt, outcome

// The best `limit` attempts of the task (0 any) or family ("" any) on the hardware (0 any) by one
// ranking of all their rankable outcomes: best speedup first, then the older outcome; each
// attempt once.
Ranking ExpectedRanking(const std::vector<Row>& rows, NodeId task, const std::string& family,
                        NodeId hw, int limit) {
  std::vector<Row> ranked;
  for (const Row& r : rows) {
    if (r.rankable && (task == 0 || r.task == task) && (family.empty() || r.family == family) &&
        (hw == 0 || r.hardware == hw)) {
      ranked.push_back(r);
    }
  }
  std::sort(ranked.begin(), ranked.end(), [](const Row& a, const Row& b) {
    if (a.speedup != b.speedup) return a.speedup > b.speedup;
    return a.outcome < b.outcome;
  });
  Ranking out;
  for (const Row& r : ranked) {
    if (static_cast<int>(out.size()) == limit) break;
    if (std::none_of(out.begin(), out.end(), [&](const auto& p) { return p.first == r.attempt; })) {
      out.emplace_back(r.attempt, r.outcome);
    }
  }
  return out;
}

Ranking ActualRanking(GraphStore& store, NodeId task, const std::string& family, NodeId hw,
                      int limit) {
  Ranking out;
  for (const AttemptView& v :
       ValueOrDie(store.BestAttempts(testing::Best(task, family, hw, limit)))) {
    EXPECT_EQ(v.outcome->attempt_id, v.attempt.id);
    out.emplace_back(v.attempt.id, v.outcome->id);
  }
  return out;
}

class BestAttemptsTest : public ::testing::TestWithParam<testing::StoreKind> {};

TEST_P(BestAttemptsTest, MergedRankingsMatchARankingOfAllOutcomes) {
  TempDir dir;
  testing::TestStoreLocation where = testing::NewStoreLocation(GetParam(), dir.path());
  if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
  std::unique_ptr<GraphStore> store = testing::OpenLocationOrDie(where.location);
  RandomGraph graph;
  KOPE_ASSERT_OK(store->Write([&](GraphWriter& w) { return WriteRandomGraph(w, graph); }));
  const std::vector<Row>& rows = graph.rows;
  for (int limit : {0, 1, 5, 10, 40, 1000}) {
    const NodeId hw1 = graph.hardware[1];
    for (const std::string& family : kFamilies) {
      EXPECT_EQ(ActualRanking(*store, 0, family, 0, limit),
                ExpectedRanking(rows, 0, family, 0, limit))
          << family << " " << limit;
      EXPECT_EQ(ActualRanking(*store, 0, family, hw1, limit),
                ExpectedRanking(rows, 0, family, hw1, limit));
    }
    for (NodeId hw : graph.hardware) {
      EXPECT_EQ(ActualRanking(*store, 0, "", hw, limit), ExpectedRanking(rows, 0, "", hw, limit))
          << hw << " " << limit;
    }
    for (NodeId task : graph.tasks) {
      for (NodeId hw : {NodeId{0}, hw1}) {
        EXPECT_EQ(ActualRanking(*store, task, "", hw, limit),
                  ExpectedRanking(rows, task, "", hw, limit))
            << "task " << task << " hardware " << hw << " " << limit;
      }
    }
  }
  EXPECT_TRUE(ValueOrDie(store->BestAttempts(testing::Best(0, "conv", 0))).empty());
}

INSTANTIATE_TEST_SUITE_P(BothStores, BestAttemptsTest, KOPE_ALL_STORES);

}  // namespace
}  // namespace kope::memory
