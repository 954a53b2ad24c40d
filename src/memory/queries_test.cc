// The queries the agent and the context manager ask, on a small graph with known answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kope/memory/evidence.h"
#include "test_graph.h"
#include "testing/test_stores.h"

namespace kope::memory {
namespace {

using testing::KernelSource;
using testing::MakeHardware;
using testing::MakeTask;
using testing::TempDir;
using testing::ValueOrDie;

std::vector<NodeId> AttemptIds(const std::vector<AttemptView>& views) {
  std::vector<NodeId> ids;
  for (const AttemptView& v : views) ids.push_back(v.attempt.id);
  return ids;
}

// softmax_rows on an H100, one run:
//   a1 baseline (valid 1.0)
//   ├── a2 vectorize loads with float4 (valid 1.5)
//   │   ├── a4 warp shuffle reduction (valid 2.0)
//   │   └── a5 online softmax (incorrect)
//   └── a3 shared memory tiles (compile_error)
// softmax_wide on the H100: b1 (valid 3.0, flagged), b2 (valid 1.2)
// matmul_square on the H200 (same arch): m1 (valid 4.0)
// log_softmax on a CPU: c1 (compile_error, the same error as a3 in another file)
class QueriesTest : public ::testing::TestWithParam<testing::StoreKind> {
 protected:
  void SetUp() override {
    testing::TestStoreLocation where = testing::NewStoreLocation(GetParam(), dir_.path());
    if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
    location_ = where.location;
    store_ = testing::OpenLocationOrDie(location_);
    KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(h100_, w.PutHardware(MakeHardware("cuda", "NVIDIA H100", "sm_90")));
      KOPE_ASSIGN_OR_RETURN(h200_, w.PutHardware(MakeHardware("cuda", "NVIDIA H200", "sm_90")));
      KOPE_ASSIGN_OR_RETURN(cpu_, w.PutHardware(MakeHardware("cpu", "Xeon", "x86_64")));
      KOPE_ASSIGN_OR_RETURN(
          rows_, w.PutTask(MakeTask("softmax_rows", "softmax", 1e5, "row-wise softmax of floats")));
      KOPE_ASSIGN_OR_RETURN(
          wide_, w.PutTask(MakeTask("softmax_wide", "softmax", 1e7, "softmax over long rows")));
      KOPE_ASSIGN_OR_RETURN(
          logsm_, w.PutTask(MakeTask("log_softmax", "log_softmax", 1e5, "log of a softmax")));
      KOPE_ASSIGN_OR_RETURN(
          matmul_, w.PutTask(MakeTask("matmul_square", "matmul", 1e6, "square matrix product")));
      KOPE_ASSIGN_OR_RETURN(NodeId run1, Run(w, rows_, h100_));
      KOPE_ASSIGN_OR_RETURN(a1_, Attempt(w, run1, 0, "baseline", 0, testing::Valid(1.0)));
      KOPE_ASSIGN_OR_RETURN(
          a2_, Attempt(w, run1, a1_, "vectorize loads with float4", 1, testing::Valid(1.5)));
      KOPE_ASSIGN_OR_RETURN(
          a3_, Attempt(w, run1, a1_, "tile rows through shared memory", 2,
                       testing::Failed("compile_error",
                                       "/tmp/k1/kernel.cu(12): error: identifier \"tile\" is "
                                       "undefined")));
      KOPE_ASSIGN_OR_RETURN(a4_, Attempt(w, run1, a2_, "warp shuffle reduction of the row max", 3,
                                         testing::Valid(2.0)));
      KOPE_ASSIGN_OR_RETURN(a5_, Attempt(w, run1, a2_, "online softmax in one pass", 4,
                                         testing::Failed("incorrect", "")));
      KOPE_ASSIGN_OR_RETURN(NodeId run2, Run(w, wide_, h100_));
      OutcomeNode suspicious = testing::Valid(3.0);
      suspicious.flagged = true;
      KOPE_ASSIGN_OR_RETURN(b1_, Attempt(w, run2, 0, "too good to be true", 5, suspicious));
      KOPE_ASSIGN_OR_RETURN(b2_, Attempt(w, run2, 0, "wide rows baseline", 6, testing::Valid(1.2)));
      KOPE_ASSIGN_OR_RETURN(NodeId run3, Run(w, matmul_, h200_));
      KOPE_ASSIGN_OR_RETURN(m1_,
                            Attempt(w, run3, 0, "tensor cores via wmma", 7, testing::Valid(4.0)));
      KOPE_ASSIGN_OR_RETURN(NodeId run4, Run(w, logsm_, cpu_));
      KOPE_ASSIGN_OR_RETURN(
          c1_, Attempt(w, run4, 0, "tile with a helper", 8,
                       testing::Failed("compile_error",
                                       "/home/u/x/kernel.cu(99): error: identifier \"tile\" is "
                                       "undefined")));
      return Status::Ok();
    }));
  }

  Result<NodeId> Run(GraphWriter& w, NodeId task, NodeId hw) {
    RunNode r;
    r.task_id = task;
    r.hardware_id = hw;
    return w.PutRun(r);
  }

  Result<NodeId> Attempt(GraphWriter& w, NodeId run, NodeId parent, const std::string& decision,
                         int variant, OutcomeNode outcome) {
    AttemptNode a;
    a.run_id = run;
    a.parent_id = parent;
    a.decision = decision;
    KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutAttempt(a, KernelSource(8, variant % 8, decision)));
    outcome.attempt_id = id;
    KOPE_ASSIGN_OR_RETURN(NodeId outcome_id, w.PutOutcome(outcome));
    outcomes_[id] = outcome_id;
    return id;
  }

  NodeId PutInsight(InsightNode insight, int support, int contradict, double effect) {
    NodeId id = 0;
    EXPECT_TRUE(store_
                    ->Write([&](GraphWriter& w) -> Status {
                      KOPE_ASSIGN_OR_RETURN(id, w.PutInsight(insight));
                      // Evidence needs distinct outcomes: use the graph's, then fresh ones.
                      for (int i = 0; i < support + contradict; ++i) {
                        AttemptNode a;
                        a.run_id = ValueOrDie(store_->GetAttempt(a1_)).run_id;
                        a.decision = "evidence " + std::to_string(id) + "/" + std::to_string(i);
                        KOPE_ASSIGN_OR_RETURN(NodeId attempt, w.PutAttempt(a, a.decision));
                        OutcomeNode o = testing::Failed("incorrect", "");
                        o.attempt_id = attempt;
                        KOPE_ASSIGN_OR_RETURN(NodeId outcome, w.PutOutcome(o));
                        EvidenceEdge e;
                        e.insight_id = id;
                        e.outcome_id = outcome;
                        e.relation = i < support ? EvidenceRelation::kSupportedBy
                                                 : EvidenceRelation::kContradictedBy;
                        e.effect = i < support ? effect : 1.0 / effect;
                        KOPE_RETURN_IF_ERROR(w.AddEvidence(e).status());
                      }
                      return Status::Ok();
                    })
                    .ok());
    return id;
  }

  TempDir dir_;
  std::string location_;
  std::unique_ptr<GraphStore> store_;
  NodeId h100_ = 0, h200_ = 0, cpu_ = 0, rows_ = 0, wide_ = 0, logsm_ = 0, matmul_ = 0;
  NodeId a1_ = 0, a2_ = 0, a3_ = 0, a4_ = 0, a5_ = 0, b1_ = 0, b2_ = 0, m1_ = 0, c1_ = 0;
  std::map<NodeId, NodeId> outcomes_;  // attempt -> its outcome
};

TEST_P(QueriesTest, LineageRunsFromTheRootWithOutcomes) {
  std::vector<AttemptView> lineage = ValueOrDie(store_->Lineage(a4_));
  EXPECT_EQ(AttemptIds(lineage), (std::vector<NodeId>{a1_, a2_, a4_}));
  ASSERT_TRUE(lineage[1].outcome.has_value());
  EXPECT_EQ(lineage[1].outcome->speedup, 1.5);
  EXPECT_EQ(lineage[1].attempt.decision, "vectorize loads with float4");
  EXPECT_EQ(lineage[1].attempt.classes, std::vector<std::string>{"vectorize-loads"});
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->Lineage(a1_))), std::vector<NodeId>{a1_});
  EXPECT_EQ(store_->Lineage(9999).status().code(), StatusCode::kNotFound);
}

TEST_P(QueriesTest, ChildrenAreTheAlternativesWithTheirOutcomes) {
  std::vector<AttemptView> children = ValueOrDie(store_->Children(a1_));
  EXPECT_EQ(AttemptIds(children), (std::vector<NodeId>{a2_, a3_}));
  EXPECT_EQ(children[1].outcome->verdict, "compile_error");
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->Children(a2_))), (std::vector<NodeId>{a4_, a5_}));
  EXPECT_TRUE(ValueOrDie(store_->Children(a4_)).empty());
}

TEST_P(QueriesTest, LatestOutcomeWinsAndAllOutcomesAreKept) {
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    OutcomeNode in_model = testing::Failed("incorrect", "logits differ in the model");
    in_model.stage = "in_model";
    in_model.attempt_id = a4_;
    return w.PutOutcome(in_model).status();
  }));
  EXPECT_EQ(ValueOrDie(store_->Lineage(a4_)).back().outcome->stage, "in_model");
  std::vector<OutcomeNode> all = ValueOrDie(store_->Outcomes(a4_));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].verdict, "valid");
}

TEST_P(QueriesTest, RunAttemptsAndAttemptsWithSource) {
  NodeId run = ValueOrDie(store_->GetAttempt(a1_)).run_id;
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->RunAttempts(run))),
            (std::vector<NodeId>{a1_, a2_, a3_, a4_, a5_}));
  AttemptNode a2 = ValueOrDie(store_->GetAttempt(a2_));
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->AttemptsWithSource(rows_, h100_, a2.source_hash))),
            std::vector<NodeId>{a2_});
  EXPECT_TRUE(ValueOrDie(store_->AttemptsWithSource(rows_, h200_, a2.source_hash)).empty());
}

TEST_P(QueriesTest, BestValidAttemptsPerTaskFamilyAndHardware) {
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->BestAttempts(testing::Best(rows_, "", 0)))),
            (std::vector<NodeId>{a4_, a2_, a1_}));
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->BestAttempts(testing::Best(rows_, "", 0, 2)))),
            (std::vector<NodeId>{a4_, a2_}));
  // The flagged 3.0x is never ranked.
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->BestAttempts(testing::Best(0, "softmax", 0)))),
            (std::vector<NodeId>{a4_, a2_, b2_, a1_}));
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->BestAttempts(testing::Best(0, "", h200_)))),
            std::vector<NodeId>{m1_});
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->BestAttempts(testing::Best(0, "softmax", h100_, 1)))),
            std::vector<NodeId>{a4_});
  EXPECT_TRUE(ValueOrDie(store_->BestAttempts(testing::Best(0, "matmul", h100_))).empty());
  EXPECT_EQ(store_->BestAttempts(BestQuery()).status().code(), StatusCode::kInvalidArgument);
  // One row per attempt even when it was timed valid twice.
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    OutcomeNode again = testing::Valid(1.9);
    again.attempt_id = a4_;
    return w.PutOutcome(again).status();
  }));
  std::vector<AttemptView> best = ValueOrDie(store_->BestAttempts(testing::Best(rows_, "", 0)));
  EXPECT_EQ(AttemptIds(best), (std::vector<NodeId>{a4_, a2_, a1_}));
  EXPECT_EQ(best[0].outcome->speedup, 2.0);
}

// The rankings of a family on any hardware and of a hardware for any family merge per-list
// rankings: the same answers as ranking every valid outcome at once (speedup descending, then
// outcome id; one row per attempt, its best outcome), with ties, attempts timed several times and
// flagged or invalid outcomes among them.
TEST_P(QueriesTest, InsightsInScopeRankedByEvidence) {
  InsightNode lucky;
  lucky.text = "one big win from warp shuffles";
  lucky.scope = testing::Scope("softmax", "cuda", "NVIDIA H100", "sm_90");
  lucky.classes = {"warp-shuffle-reduction"};
  NodeId lucky_id = PutInsight(lucky, 1, 0, 2.0);
  InsightNode steady = lucky;
  steady.text = "float4 loads help softmax rows";
  steady.classes = {"vectorize-loads"};
  NodeId steady_id = PutInsight(steady, 8, 1, 1.4);
  InsightNode other_arch = steady;
  other_arch.text = "float4 loads help on Ampere";
  other_arch.scope.device = "NVIDIA A100";
  other_arch.scope.arch = "sm_80";
  NodeId other_arch_id = PutInsight(other_arch, 8, 1, 1.4);
  InsightNode general;
  general.text = "unroll short loops";
  general.classes = {"loop-unroll"};
  NodeId general_id = PutInsight(general, 3, 0, 1.1);
  InsightNode matmul = steady;
  matmul.text = "tensor cores for matmul";
  matmul.scope.op_family = "matmul";
  PutInsight(matmul, 20, 0, 3.0);
  InsightNode cpu = steady;
  cpu.text = "cpu lesson";
  cpu.scope = testing::Scope("softmax", "cpu");
  PutInsight(cpu, 20, 0, 3.0);
  InsightNode rule = general;
  rule.kind = "failure_rule";
  rule.text = "declare the tile before use";
  rule.scope.op_family = "softmax";
  NodeId rule_id = PutInsight(rule, 2, 0, 1.0);

  InsightNode stored = ValueOrDie(store_->GetInsight(steady_id));
  EXPECT_EQ(stored.support, 8);
  EXPECT_EQ(stored.contradiction, 1);
  EXPECT_NEAR(stored.effect_size, 1.4, 1e-12);

  InsightQuery q;
  q.op_family = "softmax";
  q.backend = "cuda";
  q.device = "NVIDIA H100";
  q.arch = "sm_90";
  std::vector<RankedInsight> ranked = ValueOrDie(store_->FindInsights(q));
  std::vector<NodeId> order;
  for (const RankedInsight& r : ranked) order.push_back(r.insight.id);
  // steady 8:1 on this device (0.79) > lucky 1:0 (0.41) > the same evidence from another
  // architecture, counting for less (0.32) > the general and failure rules (0.27); no matmul, no
  // cpu insight.
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order[0], steady_id);
  EXPECT_EQ(order[1], lucky_id);
  EXPECT_EQ(order[2], other_arch_id);
  EXPECT_NEAR(ranked[2].scope_weight, 0.4, 1e-12);
  EXPECT_NEAR(ranked[0].score, InsightEvidence(stored), 1e-12);
  EXPECT_TRUE(std::find(order.begin(), order.end(), general_id) != order.end());
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_GE(ranked[i - 1].score, ranked[i].score);

  q.kinds = {"failure_rule"};
  ranked = ValueOrDie(store_->FindInsights(q));
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].insight.id, rule_id);
  q.kinds = {};
  q.classes = {"warp-shuffle-reduction"};
  ranked = ValueOrDie(store_->FindInsights(q));
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_EQ(ranked[0].insight.id, lucky_id);
}

TEST_P(QueriesTest, EvidenceEdgesAreAddedOnceAndRewordingKeepsThem) {
  InsightNode i;
  i.text = "first wording";
  i.scope.op_family = "softmax";
  NodeId id = PutInsight(i, 0, 0, 1.0);
  EvidenceEdge e{id, outcomes_[a4_], EvidenceRelation::kSupportedBy, 2.0 / 1.5, 0};
  bool first = false, second = true;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    KOPE_ASSIGN_OR_RETURN(first, w.AddEvidence(e));
    KOPE_ASSIGN_OR_RETURN(second, w.AddEvidence(e));
    return w.UpdateInsightText(id, "better wording");
  }));
  EXPECT_TRUE(first);
  EXPECT_FALSE(second);
  InsightNode stored = ValueOrDie(store_->GetInsight(id));
  EXPECT_EQ(stored.support, 1);
  EXPECT_EQ(stored.text, "better wording");
  EXPECT_EQ(ValueOrDie(store_->Evidence(id)).size(), 1u);
  EXPECT_EQ(ValueOrDie(store_->Search(testing::Words("better wording"))).front().node,
            (NodeRef{NodeKind::kInsight, id}));
  EXPECT_TRUE(ValueOrDie(store_->Search(testing::Words("first wording"))).empty());
}

TEST_P(QueriesTest, RecurringErrorsShareASignature) {
  OutcomeNode a3 = ValueOrDie(store_->GetOutcome(outcomes_[a3_]));
  OutcomeNode c1 = ValueOrDie(store_->GetOutcome(outcomes_[c1_]));
  EXPECT_EQ(a3.error_signature, c1.error_signature);
  EXPECT_EQ(a3.error_signature, "<file>(N): error: identifier \"tile\" is undefined");
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->AttemptsWithError(a3.error_signature, "", 10))),
            (std::vector<NodeId>{c1_, a3_}));
  EXPECT_EQ(AttemptIds(ValueOrDie(store_->AttemptsWithError(a3.error_signature, "softmax", 10))),
            std::vector<NodeId>{a3_});
  EXPECT_TRUE(ValueOrDie(store_->AttemptsWithError("", "", 10)).empty());
}

TEST_P(QueriesTest, FullTextSearchOverDecisionsErrorsInsightsAndTasks) {
  std::vector<SearchHit> hits = ValueOrDie(store_->Search(testing::Words("warp shuffle")));
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0].node, (NodeRef{NodeKind::kAttempt, a4_}));
  EXPECT_EQ(hits[0].text, "warp shuffle reduction of the row max");
  // Stemming: "vectorized" finds "vectorize".
  hits = ValueOrDie(store_->Search(testing::Words("vectorized LOADS")));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].node.id, a2_);
  // Errors, with a family filter.
  hits = ValueOrDie(store_->Search(testing::Words("identifier undefined", {SearchKind::kError})));
  EXPECT_EQ(hits.size(), 2u);
  hits = ValueOrDie(
      store_->Search(testing::Words("identifier undefined", {SearchKind::kError}, "log_softmax")));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].node, (NodeRef{NodeKind::kOutcome, outcomes_[c1_]}));
  // Tasks.
  hits = ValueOrDie(store_->Search(testing::Words("matrix", {SearchKind::kTask})));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].node, (NodeRef{NodeKind::kTask, matmul_}));
  // All words vs any word.
  EXPECT_TRUE(ValueOrDie(store_->Search(testing::Words("warp tensor"))).empty());
  EXPECT_EQ(ValueOrDie(store_->Search(testing::Words("warp tensor", {}, "", false))).size(), 2u);
  // Query syntax in the text is just words.
  for (const char* odd :
       {"\"unbalanced", "a AND OR NOT (", "__shfl_down_sync(0xff, v, 1);", "*", "", "NEAR(x y)"}) {
    auto r = store_->Search(testing::Words(odd));
    EXPECT_TRUE(r.ok()) << odd << ": " << r.status().ToString();
  }
  EXPECT_EQ(ValueOrDie(store_->Search(testing::Words("softmax", {}, "", true, 2))).size(), 2u);
}

TEST_P(QueriesTest, SearchRanksTheNewestMatchesOfEachKind) {
  std::vector<NodeId> probes;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    for (int i = 0; i < 30; ++i) {
      AttemptNode a;
      a.run_id = ValueOrDie(store_->GetAttempt(a1_)).run_id;
      a.decision = "window probe " + std::to_string(i);
      KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutAttempt(a, a.decision));
      probes.push_back(id);
    }
    return Status::Ok();
  }));
  // Equal BM25 for all probes: ties go to the lower id, so which ids come back shows the window.
  SearchQuery q = testing::Words("window probe", {SearchKind::kAttempt}, "", true, 5);
  q.window = 10;
  std::vector<SearchHit> hits = ValueOrDie(store_->Search(q));
  ASSERT_EQ(hits.size(), 5u);
  for (const SearchHit& h : hits) EXPECT_GE(h.node.id, probes[20]);
  q.window = 100;
  hits = ValueOrDie(store_->Search(q));
  ASSERT_EQ(hits.size(), 5u);
  EXPECT_EQ(hits[0].node.id, probes[0]);
  q.window = 1;  // never fewer than the limit
  EXPECT_EQ(ValueOrDie(store_->Search(q)).size(), 5u);
}

TEST_P(QueriesTest, TextRelevanceScoresGivenCandidates) {
  std::vector<double> r = ValueOrDie(
      store_->TextRelevance(SearchKind::kAttempt, {a4_, a2_, 99999, a1_}, "warp shuffle, rows!"));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_GT(r[0], 0);
  EXPECT_EQ(r[1], 0);
  EXPECT_EQ(r[2], 0);
  EXPECT_EQ(r[3], 0);
  std::vector<double> tasks =
      ValueOrDie(store_->TextRelevance(SearchKind::kTask, {rows_, matmul_, wide_}, "softmax rows"));
  EXPECT_GT(tasks[0], 0);
  EXPECT_EQ(tasks[1], 0);
  EXPECT_GT(tasks[0], tasks[2]);  // both words beat one
  EXPECT_TRUE(ValueOrDie(store_->TextRelevance(SearchKind::kError, {}, "x")).empty());
  EXPECT_EQ(ValueOrDie(store_->TextRelevance(SearchKind::kError, {outcomes_[a3_]}, "")),
            std::vector<double>{0.0});
}

TEST_P(QueriesTest, SimilarTasksPreferFamilyThenSizeThenText) {
  std::vector<SimilarTask> similar = ValueOrDie(store_->SimilarTasks(rows_, 10));
  ASSERT_GE(similar.size(), 2u);
  EXPECT_EQ(similar[0].task.id, wide_);
  EXPECT_EQ(similar[1].task.id, logsm_);  // another family, but its words match
  for (const SimilarTask& s : similar) {
    EXPECT_NE(s.task.id, rows_);
    EXPECT_GE(s.score, 0);
    EXPECT_LE(s.score, 1);
  }
  // A closer size in the same family ranks first.
  NodeId close = 0;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    KOPE_ASSIGN_OR_RETURN(close, w.PutTask(MakeTask("softmax_mid", "softmax", 2e5,
                                                    "row-wise softmax of floats, mid size")));
    return Status::Ok();
  }));
  similar = ValueOrDie(store_->SimilarTasks(rows_, 1));
  ASSERT_EQ(similar.size(), 1u);
  EXPECT_EQ(similar[0].task.id, close);
}

TEST_P(QueriesTest, UsedEdgesAndCredit) {
  InsightNode i;
  i.text = "insight shown to a4";
  i.scope.op_family = "softmax";
  NodeId insight = PutInsight(i, 0, 0, 1.0);
  bool first = false, again = true;
  int credited = 0, credited_again = -1;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    UsedEdge e{a4_, {NodeKind::kInsight, insight}, "insights", 0.7, 40, std::nullopt};
    KOPE_ASSIGN_OR_RETURN(first, w.AddUsed(e));
    KOPE_ASSIGN_OR_RETURN(again, w.AddUsed(e));
    KOPE_RETURN_IF_ERROR(
        w.AddUsed({a4_, {NodeKind::kAttempt, m1_}, "exemplars", 0.5, 300, std::nullopt}).status());
    KOPE_RETURN_IF_ERROR(
        w.AddUsed({a5_, {NodeKind::kInsight, insight}, "insights", 0.7, 40, std::nullopt})
            .status());
    KOPE_ASSIGN_OR_RETURN(credited, w.CreditUsed(a4_, 1.0));
    KOPE_ASSIGN_OR_RETURN(credited_again, w.CreditUsed(a4_, 1.0));
    return w.CreditUsed(a5_, -0.2).status();
  }));
  EXPECT_TRUE(first);
  EXPECT_FALSE(again);
  EXPECT_EQ(credited, 2);
  EXPECT_EQ(credited_again, 0);
  std::vector<UsedEdge> used = ValueOrDie(store_->UsedBy(a4_));
  ASSERT_EQ(used.size(), 2u);
  EXPECT_EQ(used[0].target, (NodeRef{NodeKind::kAttempt, m1_}));
  EXPECT_EQ(used[0].credit, 0.5);
  std::vector<UsageStats> usage = ValueOrDie(store_->Usage(
      {{NodeKind::kInsight, insight}, {NodeKind::kAttempt, m1_}, {NodeKind::kAttempt, a1_}}));
  EXPECT_EQ(usage[0].shown, 2);
  EXPECT_EQ(usage[0].credited, 2);
  EXPECT_NEAR(usage[0].credit, 0.5 - 0.2, 1e-12);
  EXPECT_EQ(usage[1].shown, 1);
  EXPECT_EQ(usage[2].shown, 0);
  // Only insights and attempts can be used.
  Status bad = store_->Write([&](GraphWriter& w) {
    return w.AddUsed({a4_, {NodeKind::kTask, rows_}, "", 0, 0, std::nullopt}).status();
  });
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
}

TEST_P(QueriesTest, ListsAndKeys) {
  EXPECT_EQ(ValueOrDie(store_->ListTasks("softmax")).size(), 2u);
  EXPECT_EQ(ValueOrDie(store_->ListTasks("")).size(), 4u);
  EXPECT_EQ(ValueOrDie(store_->ListHardware()).size(), 3u);
  EXPECT_EQ(ValueOrDie(store_->ListRuns(rows_)).size(), 1u);
  EXPECT_EQ(ValueOrDie(store_->ListRuns(0)).size(), 4u);
  AttemptNode a4 = ValueOrDie(store_->GetAttempt(a4_));
  EXPECT_EQ(ValueOrDie(store_->FindByKey(NodeKind::kAttempt, a4.key)), a4_);
  EXPECT_EQ(store_->FindByKey(NodeKind::kTask, a4.key).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->FindByKey(NodeKind::kTask, "xyz").status().code(),
            StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(BothStores, QueriesTest, KOPE_ALL_STORES);

}  // namespace
}  // namespace kope::memory
