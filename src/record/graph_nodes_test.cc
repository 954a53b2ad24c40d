// The graph nodes of an evaluation: the task's size and attrs, the outcome's fields, the
// single-evaluation record, and the flags that keep an outcome from ever being the best kernel.
#include "kope/record/graph_nodes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "testing/test_paths.h"

namespace kope::record {
namespace {

namespace fs = std::filesystem;

Task Example(const std::string& name) {
  Result<Task> task = LoadTask(fs::path(kope::testing::SourceDir()) / "examples" / name);
  EXPECT_TRUE(task.ok()) << task.status().ToString();
  return task.ok() ? *task : Task{};
}

Outcome Flagged(std::string_view flag, std::string policy = "screen") {
  Outcome o;
  o.flags.emplace_back(flag);
  o.timing_policy = std::move(policy);
  return o;
}

TEST(GraphNodesTest, TaskSizeIsTheLargestTensorAtTheLanguagesBenchSizes) {
  const Task softmax = Example("softmax_rows");
  EXPECT_EQ(TaskSize(softmax, "cpp"), 2048.0 * 1024);
  EXPECT_EQ(TaskSize(softmax, "cuda"), 16384.0 * 4096);
  EXPECT_EQ(TaskSize(Task{}, "cpp"), 0);
}

TEST(GraphNodesTest, ATaskNodeCarriesItsSpecHashSizeAndSignature) {
  const Task softmax = Example("softmax_rows");
  Result<memory::TaskNode> node = TaskNodeFor(softmax, "cpp");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->name, "softmax_rows");
  EXPECT_EQ(node->op_family, "softmax");
  EXPECT_EQ(node->size, 2048.0 * 1024);
  Result<std::string> spec = ReadFileText(softmax.dir / "task.toml");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(node->spec_hash, ContentHash(*spec));
  EXPECT_EQ(node->attrs_json,
            R"({"bench":{"cols":1024,"rows":2048},"language":"cpp","signature":"f32/2->f32/2"})");
  EXPECT_EQ(SignatureOfNode(*node), "f32/2->f32/2");

  Task gone = softmax;
  gone.dir = fs::path(kope::testing::SourceDir()) / "no-such-task";
  EXPECT_EQ(TaskNodeFor(gone, "cpp").status().code(), StatusCode::kIoError);
}

TEST(GraphNodesTest, AnOutcomeNodeKeepsTheTimesOfAValidOutcomeAndTheErrorOfAnInvalidOne) {
  Outcome valid;
  valid.speedup = 2.5;
  valid.candidate_time = TimingSummary{};
  valid.candidate_time->median_s = 0.004;
  valid.roofline_fraction = 0.25;
  valid.timing_policy = "confirm";
  memory::OutcomeNode node = OutcomeNodeFor(valid);
  EXPECT_EQ(node.stage, "unit");
  EXPECT_EQ(node.verdict, "valid");
  EXPECT_FALSE(node.flagged);
  EXPECT_EQ(node.speedup, 2.5);
  EXPECT_EQ(node.time_ms, 4.0);
  EXPECT_EQ(node.roofline, 0.25);
  EXPECT_EQ(node.error_message, "");
  EXPECT_EQ(node.evidence_json, OutcomeToJson(valid, -1));
  EXPECT_EQ(TimingPolicyOf(node), "confirm");

  Outcome wrong;
  wrong.verdict = Verdict::kIncorrect;
  wrong.message = "output y differs";
  wrong.speedup = 3;
  Mismatch m;
  m.reason = "value";
  m.size_set = "check[2]";
  m.trial = 1;
  m.tensor = "y";
  m.index = 7;
  m.expected = 1.5;
  m.actual = 2;
  m.mismatches = 3;
  m.elements = 100;
  wrong.mismatch = m;
  node = OutcomeNodeFor(wrong);
  EXPECT_EQ(node.verdict, "incorrect");
  EXPECT_FALSE(node.speedup.has_value());
  EXPECT_EQ(node.error_message,
            "output y differs\nvalue at check[2] trial 1, y[7]: expected 1.5, got 2 (3 of 100 "
            "elements wrong)");
}

TEST(GraphNodesTest, OneEvaluationIsARootAttemptInARunOfItsOwn) {
  const Task gelu = Example("gelu");
  Outcome outcome;
  outcome.hardware.backend = "cpu";
  outcome.hardware.device = "test cpu";
  outcome.hardware.compiler = "g++ 12";
  memory::AttemptNode attempt;
  attempt.decision = "by hand";
  attempt.proposer = "human";
  Result<memory::EvaluationRecord> r =
      EvaluationRecordFor(gelu, "cpp", outcome, "source text", attempt, "eval");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->task.name, "gelu");
  EXPECT_EQ(r->hardware.backend, "cpu");
  EXPECT_EQ(r->hardware.device, "test cpu");
  EXPECT_EQ(r->run_id, 0);
  EXPECT_EQ(r->run.label, "eval");
  EXPECT_EQ(r->run.compiler, "g++ 12");
  EXPECT_EQ(r->attempt.decision, "by hand");
  EXPECT_EQ(r->attempt.proposer, "human");
  EXPECT_EQ(r->attempt.parent_id, 0);
  EXPECT_EQ(r->source, "source text");
  EXPECT_EQ(r->outcome.verdict, "valid");
}

TEST(GraphNodesTest, WhatPhysicsOrTheChecksRuleOutIsSuspicious) {
  EXPECT_TRUE(IsSuspicious(Flagged(kFlagFasterThanRoofline)));
  // Timed calls that skip the work their verified calls do.
  EXPECT_TRUE(IsSuspicious(Flagged(kFlagTimedFasterThanVerified)));
  // The wall clock disagreeing: only when confirming (a busy machine trips it when screening).
  EXPECT_FALSE(IsSuspicious(Flagged(kFlagWallClockMismatch)));
  EXPECT_TRUE(IsSuspicious(Flagged(kFlagWallClockMismatch, "confirm")));
  // Evidence, not suspicion.
  EXPECT_FALSE(IsSuspicious(Flagged(kFlagSpeedupAbove10x)));
  EXPECT_FALSE(IsSuspicious(Flagged(kFlagWithinNoise)));
  EXPECT_FALSE(IsSuspicious(Outcome{}));
}

}  // namespace
}  // namespace kope::record
