#include "kope/agent/reflection.h"

#include <gtest/gtest.h>

#include "agent_test_support.h"
#include "kope/memory/text/error_signature.h"

namespace kope::agent {
namespace {

using memory::NodeId;

class ReflectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenTestStore(scratch_.path() / "store.db");
    ASSERT_NE(store_, nullptr);
    task_.name = "scale_small";
    task_.op_family = "scale";
    task_.size = 131072;
    hardware_.backend = "cpu";
    hardware_.device = "Test CPU";
    hardware_.arch = "x86_64";
    ASSERT_TRUE(store_
                    ->Write([&](memory::GraphWriter& w) -> Status {
                      KOPE_ASSIGN_OR_RETURN(task_.id, w.PutTask(task_));
                      KOPE_ASSIGN_OR_RETURN(hardware_.id, w.PutHardware(hardware_));
                      memory::RunNode run;
                      run.task_id = task_.id;
                      run.hardware_id = hardware_.id;
                      run.label = "test";
                      KOPE_ASSIGN_OR_RETURN(run_, w.PutRun(run));
                      memory::InsightNode lesson;
                      lesson.text = "an insight some context showed";
                      lesson.scope.op_family = "scale";
                      KOPE_ASSIGN_OR_RETURN(shown_insight_, w.PutInsight(lesson));
                      return Status::Ok();
                    })
                    .ok());
  }

  // Records an attempt and its outcome and reflects on it, as an episode does.
  ReflectionResult Record(NodeId parent, const std::string& decision, const std::string& verdict,
                          double speedup, const std::string& error = "",
                          std::vector<std::string> classes = {}, bool show_insight = false) {
    ReflectionResult result;
    Status s = store_->Write([&](memory::GraphWriter& w) -> Status {
      memory::AttemptNode attempt;
      attempt.run_id = run_;
      attempt.parent_id = parent;
      attempt.decision = decision;
      attempt.classes = classes;
      attempt.proposer = "test";
      const std::string source = "// " + decision + " " + std::to_string(++counter_) + "\n";
      KOPE_ASSIGN_OR_RETURN(attempt.id, w.PutAttempt(attempt, source));
      if (show_insight) {
        memory::UsedEdge used;
        used.attempt_id = attempt.id;
        used.target = {memory::NodeKind::kInsight, shown_insight_};
        used.section = "insights";
        KOPE_RETURN_IF_ERROR(w.AddUsed(used).status());
      }
      KOPE_ASSIGN_OR_RETURN(attempt, store_->GetAttempt(attempt.id));
      memory::OutcomeNode outcome;
      outcome.attempt_id = attempt.id;
      outcome.verdict = verdict;
      if (verdict == memory::kVerdictValid) outcome.speedup = speedup;
      outcome.error_message = error;
      outcome.error_signature = memory::NormalizeError(error);
      outcome.evidence_json = R"({"candidate_time": {"spread": 0.01, "samples": 100}})";
      KOPE_ASSIGN_OR_RETURN(outcome.id, w.PutOutcome(outcome));
      ReflectionInput in;
      in.task = task_;
      in.hardware = hardware_;
      in.compiler = "g++ 12";
      in.attempt = attempt;
      in.outcome = outcome;
      if (parent != 0) {
        KOPE_ASSIGN_OR_RETURN(std::vector<memory::AttemptView> lineage, store_->Lineage(parent));
        in.parent = lineage.back();
      }
      KOPE_ASSIGN_OR_RETURN(result, Reflect(*store_, w, in));
      last_attempt_ = attempt.id;
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return result;
  }

  std::vector<memory::RankedInsight> Insights(const std::string& kind) {
    memory::InsightQuery q;
    q.op_family = "scale";
    q.backend = "cpu";
    q.device = "Test CPU";
    q.arch = "x86_64";
    q.kinds = {kind};
    auto found = store_->FindInsights(q);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    return found.ok() ? *found : std::vector<memory::RankedInsight>{};
  }

  const memory::InsightNode* Find(const std::vector<memory::RankedInsight>& list,
                                  const std::string& text) {
    for (const memory::RankedInsight& r : list) {
      if (r.insight.text.rfind(text, 0) == 0) return &r.insight;
    }
    return nullptr;
  }

  testing::ScratchDir scratch_;
  std::unique_ptr<memory::GraphStore> store_;
  memory::TaskNode task_;
  memory::HardwareNode hardware_;
  NodeId run_ = 0;
  NodeId shown_insight_ = 0;
  NodeId last_attempt_ = 0;
  int counter_ = 0;
};

TEST_F(ReflectionTest, TuningStepsSupportOrContradictTheDirection) {
  Record(0, "seed: start", "valid", 1.0);
  const NodeId seed = last_attempt_;
  // Smaller kRepeat was twice as fast: "larger is faster" is contradicted, effect 2.
  ReflectionResult r = Record(seed, "tune kRepeat 16 -> 8", "valid", 2.0);
  EXPECT_TRUE(r.improved);
  EXPECT_EQ(r.contradicted, 1);
  const NodeId eight = last_attempt_;
  // A larger kTile that was faster supports "larger kTile is faster".
  r = Record(eight, "tune kTile 32 -> 64", "valid", 2.6);
  EXPECT_EQ(r.supported, 1);
  // A step within the noise teaches nothing.
  r = Record(eight, "tune kTile 32 -> 16", "valid", 2.01);
  EXPECT_EQ(r.supported + r.contradicted, 0);
  EXPECT_FALSE(r.improved);
  // A larger value that broke the kernel contradicts.
  r = Record(seed, "tune kRepeat 16 -> 32", "compile_error", 0, "k.cc:3:1: error: too big");
  EXPECT_EQ(r.contradicted, 1);

  auto lessons = Insights("lesson");
  const memory::InsightNode* repeat = Find(lessons, TuningInsightText("kRepeat", "scale"));
  ASSERT_NE(repeat, nullptr);
  EXPECT_EQ(repeat->support, 0);
  EXPECT_EQ(repeat->contradiction, 2);
  EXPECT_EQ(repeat->classes, (std::vector<std::string>{"tune-parameters"}));
  EXPECT_EQ(repeat->scope.size_min, 1e5);
  EXPECT_EQ(repeat->scope.size_max, 1e6);
  const memory::InsightNode* tile = Find(lessons, TuningInsightText("kTile", "scale"));
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->support, 1);
  EXPECT_NEAR(tile->effect_size, 1.3, 1e-9);
}

TEST_F(ReflectionTest, DecisionClassesGainEvidence) {
  Record(0, "seed: start", "valid", 1.0);
  const NodeId seed = last_attempt_;
  ReflectionResult r =
      Record(seed, "use AVX-512 intrinsics", "valid", 1.5, "", {"simd"}, /*show_insight=*/true);
  EXPECT_TRUE(r.improved);
  EXPECT_GE(r.supported, 1);
  EXPECT_EQ(r.credited, 1);
  auto used = store_->UsedBy(last_attempt_);
  ASSERT_TRUE(used.ok());
  ASSERT_EQ(used->size(), 1u);
  ASSERT_TRUE((*used)[0].credit.has_value());
  EXPECT_GT(*(*used)[0].credit, 0);

  r = Record(seed, "use simd over the rows", "incorrect", 0, "value mismatch", {"simd"}, true);
  EXPECT_GE(r.contradicted, 1);
  used = store_->UsedBy(last_attempt_);
  ASSERT_TRUE(used.ok());
  ASSERT_EQ(used->size(), 1u);
  EXPECT_LT(*(*used)[0].credit, 0);

  const auto lessons = Insights("lesson");
  const memory::InsightNode* simd = Find(lessons, "simd helps scale kernels");
  ASSERT_NE(simd, nullptr);
  EXPECT_EQ(simd->support, 1);
  EXPECT_EQ(simd->contradiction, 1);
}

TEST_F(ReflectionTest, RecurringErrorsBecomeFailureRulesWithTheirFix) {
  Record(0, "seed: start", "valid", 1.0);
  const NodeId seed = last_attempt_;
  ReflectionResult r = Record(seed, "try a", "compile_error", 0,
                              "/tmp/a/k.cc:3:5: error: 'foo' was not declared in this scope");
  EXPECT_EQ(r.failure_rules, 0);  // seen once
  r = Record(seed, "try b", "compile_error", 0,
             "/tmp/b/k.cc:17:2: error: 'foo' was not declared in this scope");
  EXPECT_EQ(r.failure_rules, 1);
  const NodeId failed = last_attempt_;
  r = Record(failed, "declare foo before its use", "valid", 1.1);
  EXPECT_EQ(r.fixes, 1);
  // The same fix again adds nothing to the text.
  r = Record(failed, "declare foo before its use", "valid", 1.1);
  EXPECT_EQ(r.fixes, 0);

  auto rules = Insights(std::string(memory::kInsightFailureRule));
  ASSERT_EQ(rules.size(), 1u);
  const memory::InsightNode& rule = rules[0].insight;
  EXPECT_EQ(rule.text.rfind("Recurring error: <file>:N:N: error: 'foo' was not declared", 0), 0u)
      << rule.text;
  EXPECT_NE(rule.text.find("Fixed by: declare foo before its use"), std::string::npos);
  EXPECT_EQ(rule.support, 2);
}

}  // namespace
}  // namespace kope::agent
