#include "kope/context/context_builder.h"

#include <gtest/gtest.h>

#include "test_graph.h"
#include "testing/test_paths.h"

namespace kope::context {
namespace {

using memory::NodeId;
using memory::NodeKind;
using memory::NodeRef;
using testing::Failed;
using testing::FindItem;
using testing::GraphBuilder;
using testing::InsightSpec;
using testing::Position;
using testing::TempDir;
using testing::Valid;
using testing::ValueOrDie;

constexpr const char* kTileError =
    "/tmp/kope-1/kernel.cu(12): error: identifier \"tile\" is undefined";

NodeRef A(NodeId id) { return {NodeKind::kAttempt, id}; }
NodeRef I(NodeId id) { return {NodeKind::kInsight, id}; }

// A small graph: two softmax tasks and a matmul task on an H100; an episode on softmax_a that
// branches at a3 (a failed and a valid alternative); the same compile error met and fixed in a
// matmul episode; insights in and out of scope.
class ContextBuilderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::OpenStore(dir_ / "store.db");
    KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
      GraphBuilder b(w);
      KOPE_ASSIGN_OR_RETURN(h100_, b.Hardware("cuda", "NVIDIA H100", "sm_90"));
      KOPE_ASSIGN_OR_RETURN(NodeId a100, b.Hardware("cuda", "NVIDIA A100", "sm_80"));
      (void)a100;
      KOPE_ASSIGN_OR_RETURN(task_a_, b.Task("softmax_a", "softmax", 1e6, "softmax over rows"));
      KOPE_ASSIGN_OR_RETURN(NodeId task_b, b.Task("softmax_b", "softmax", 2e6, "softmax rows"));
      KOPE_ASSIGN_OR_RETURN(NodeId matmul, b.Task("matmul_a", "matmul", 1e6, "matrix product"));
      KOPE_ASSIGN_OR_RETURN(run_, b.Run(task_a_, h100_));
      KOPE_ASSIGN_OR_RETURN(a1_, b.Attempt(Valid(run_, 0, "baseline", 1.0)));
      KOPE_ASSIGN_OR_RETURN(a2_, b.Attempt(Valid(run_, a1_, "vectorize loads with float4", 1.4)));
      KOPE_ASSIGN_OR_RETURN(
          a3_, b.Attempt(Valid(run_, a2_, "online softmax with warp shuffle reduction", 2.0)));
      KOPE_ASSIGN_OR_RETURN(a4_, b.Attempt(Failed(run_, a3_, "tile rows through shared memory",
                                                  "compile_error", kTileError)));
      KOPE_ASSIGN_OR_RETURN(a5_, b.Attempt(Valid(run_, a3_, "unroll the inner loop by four", 1.9)));
      KOPE_ASSIGN_OR_RETURN(NodeId run_b, b.Run(task_b, h100_));
      KOPE_ASSIGN_OR_RETURN(NodeId b1, b.Attempt(Valid(run_b, 0, "baseline", 1.0, "// b\n")));
      KOPE_ASSIGN_OR_RETURN(b2_, b.Attempt(Valid(run_b, b1, "single pass online softmax", 3.0)));
      KOPE_ASSIGN_OR_RETURN(NodeId run_m, b.Run(matmul, h100_));
      KOPE_ASSIGN_OR_RETURN(NodeId m1, b.Attempt(Valid(run_m, 0, "baseline", 1.0, "// m\n")));
      KOPE_ASSIGN_OR_RETURN(
          m2_,
          b.Attempt(Failed(run_m, m1, "tile the matrix", "compile_error",
                           "/tmp/kope-9/kernel.cu(77): error: identifier \"tile\" is undefined")));
      KOPE_ASSIGN_OR_RETURN(
          m3_, b.Attempt(Valid(run_m, m2_, "declare the tile array as __shared__", 1.2)));

      InsightSpec in;
      in.text = "online softmax with warp shuffle reduction beats two passes on H100";
      in.scope = {"softmax", "cuda", "NVIDIA H100", "sm_90", "", 0, 0};
      in.support = 5;
      KOPE_ASSIGN_OR_RETURN(insight_in_, b.Insight(in));
      InsightSpec other_arch = in;
      other_arch.text = "vectorized loads pay off for wide rows on A100";
      other_arch.scope = {"softmax", "cuda", "NVIDIA A100", "sm_80", "", 0, 0};
      KOPE_ASSIGN_OR_RETURN(insight_other_arch_, b.Insight(other_arch));
      InsightSpec general = in;
      general.text = "fusing the epilogue saves a pass over memory";
      general.scope = {};
      KOPE_ASSIGN_OR_RETURN(insight_general_, b.Insight(general));
      InsightSpec cpu = in;
      cpu.text = "OpenMP threads over rows scale well";
      cpu.scope = {"softmax", "cpu", "", "", "", 0, 0};
      KOPE_ASSIGN_OR_RETURN(insight_cpu_, b.Insight(cpu));
      InsightSpec other_family = in;
      other_family.text = "split-k helps tall skinny products";
      other_family.scope = {"matmul", "cuda", "", "sm_90", "", 0, 0};
      KOPE_ASSIGN_OR_RETURN(insight_matmul_, b.Insight(other_family));
      return Status::Ok();
    }));
  }

  ContextRequest Request(NodeId node, int64_t budget = 8000) {
    ContextRequest r;
    r.node = node;
    r.budget_tokens = budget;
    r.hardware.backend = "cuda";
    r.hardware.device = "NVIDIA H100";
    r.hardware.architecture = "sm_90";
    return r;
  }

  BuiltContext Build(const ContextRequest& request) {
    return ValueOrDie(BuildContext(*store_, request));
  }

  TempDir dir_;
  std::unique_ptr<memory::GraphStore> store_;
  NodeId h100_ = 0, task_a_ = 0, run_ = 0;
  NodeId a1_ = 0, a2_ = 0, a3_ = 0, a4_ = 0, a5_ = 0, b2_ = 0, m2_ = 0, m3_ = 0;
  NodeId insight_in_ = 0, insight_other_arch_ = 0, insight_general_ = 0, insight_cpu_ = 0,
         insight_matmul_ = 0;
};

// An exemplar that differs from the kernel to change in a few lines is summarized as that whole
// difference: with the kernel to change shown in full, the summary holds the exemplar whole.
TEST(ContextExemplarTest, ASummaryAgainstTheKernelToChangeIsTheWholeDifference) {
  TempDir dir;
  auto store = testing::OpenStore(dir / "store.db");
  const std::string base = testing::Kernel("tuned", 40);
  std::string best = base, node_source = base;
  best.replace(best.find("* 7;"), 4, "* 70;");
  node_source.replace(node_source.find("* 3;"), 4, "* 30;");
  NodeId best_id = 0, node = 0;
  KOPE_ASSERT_OK(store->Write([&](memory::GraphWriter& w) -> Status {
    GraphBuilder b(w);
    KOPE_ASSIGN_OR_RETURN(NodeId hw, b.Hardware("cuda", "NVIDIA H100", "sm_90"));
    KOPE_ASSIGN_OR_RETURN(NodeId task, b.Task("gelu", "elementwise", 1e6, "gelu"));
    KOPE_ASSIGN_OR_RETURN(NodeId run, b.Run(task, hw));
    KOPE_ASSIGN_OR_RETURN(NodeId root, b.Attempt(Valid(run, 0, "seed", 1.0, base)));
    KOPE_ASSIGN_OR_RETURN(best_id, b.Attempt(Valid(run, root, "tune v7 up", 3.0, best)));
    KOPE_ASSIGN_OR_RETURN(node, b.Attempt(Valid(run, root, "tune v3 up", 1.2, node_source)));
    return Status::Ok();
  }));
  ContextRequest r;
  r.node = node;
  r.hardware.backend = "cuda";
  r.hardware.device = "NVIDIA H100";
  r.hardware.architecture = "sm_90";
  int summaries = 0;
  for (int64_t budget = 2000; budget <= 12000; budget += 250) {
    r.budget_tokens = budget;
    Result<BuiltContext> c = BuildContext(*store, r);
    if (!c.ok()) continue;  // too small for the task alone
    for (const ContextItem& item : c->items) {
      if (item.kind != "exemplar" || item.node != A(best_id)) continue;
      if (item.fidelity != Fidelity::kSummary) continue;
      ++summaries;
      EXPECT_NE(item.text.find("the whole difference"), std::string::npos) << item.text;
      EXPECT_NE(item.text.find("+  float v7 = in[0].shape[0] * 70;"), std::string::npos);
      EXPECT_NE(item.text.find("-  float v3 = in[0].shape[0] * 30;"), std::string::npos);
    }
  }
  EXPECT_GT(summaries, 0);  // some budget summarized it
}

TEST_F(ContextBuilderTest, HoldsEverySectionForABranchingNode) {
  BuiltContext c = Build(Request(a3_));
  EXPECT_EQ(c.task_id, task_a_);
  EXPECT_EQ(c.hardware_id, h100_);
  EXPECT_LE(c.total_tokens, c.budget_tokens);
  // Lineage: the root and a2, not the node itself (it is the kernel to change).
  EXPECT_EQ(FindItem(c, A(a1_))->section, Section::kLineage);
  EXPECT_EQ(FindItem(c, A(a2_))->section, Section::kLineage);
  // The node is the kernel to change (and, being the best so far, also in the profile).
  const ContextItem* kernel = nullptr;
  for (const ContextItem& item : c.items) kernel = item.kind == "kernel" ? &item : kernel;
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->node, A(a3_));
  // Alternatives tried from the node, the failure with its error.
  EXPECT_EQ(FindItem(c, A(a4_))->section, Section::kAlternatives);
  EXPECT_NE(FindItem(c, A(a4_))->text.find("compile_error"), std::string::npos);
  EXPECT_EQ(FindItem(c, A(a5_))->section, Section::kAlternatives);
  // An exemplar from the similar task, with its code.
  const ContextItem* exemplar = FindItem(c, A(b2_));
  ASSERT_NE(exemplar, nullptr);
  EXPECT_EQ(exemplar->section, Section::kExemplars);
  EXPECT_NE(exemplar->text.find("kope_kernel"), std::string::npos);
  // The alternative's error was fixed elsewhere: the fix is shown.
  const ContextItem* fix = FindItem(c, A(m3_));
  ASSERT_NE(fix, nullptr);
  EXPECT_EQ(fix->section, Section::kFailureRules);
  EXPECT_NE(fix->text.find("identifier \"tile\" is undefined"), std::string::npos);
  // The best so far.
  bool best = false;
  for (const ContextItem& item : c.items) best = best || item.kind == "best";
  EXPECT_TRUE(best);
  // The prompts carry the ABI, the reply format and the node's source.
  EXPECT_NE(c.system_prompt.find("kope_tensor"), std::string::npos);
  EXPECT_NE(c.system_prompt.find("DECISION:"), std::string::npos);
  EXPECT_NE(c.system_prompt.find("warp-shuffle-reduction"), std::string::npos);  // tag vocabulary
  EXPECT_NE(c.user_prompt.find("online softmax with warp shuffle reduction"), std::string::npos);
  EXPECT_NE(c.user_prompt.find("```cuda"), std::string::npos);
  // Every item's text is in the prompt, in order.
  size_t at = 0;
  for (const ContextItem& item : c.items) {
    if (item.kind == "system") continue;
    size_t found = c.user_prompt.find(item.text, at);
    ASSERT_NE(found, std::string::npos) << item.kind;
    at = found + item.text.size();
  }
}

TEST_F(ContextBuilderTest, InScopeEvidenceOutranksOutOfScope) {
  BuiltContext c = Build(Request(a3_));
  const ContextItem* in = FindItem(c, I(insight_in_));
  const ContextItem* other_arch = FindItem(c, I(insight_other_arch_));
  const ContextItem* general = FindItem(c, I(insight_general_));
  ASSERT_NE(in, nullptr);
  ASSERT_NE(other_arch, nullptr);
  ASSERT_NE(general, nullptr);
  EXPECT_GT(in->score, general->score);
  EXPECT_GT(general->score, other_arch->score);
  EXPECT_LT(Position(c, I(insight_in_)), Position(c, I(insight_general_)));
  EXPECT_LT(Position(c, I(insight_general_)), Position(c, I(insight_other_arch_)));
  // Another backend and another family are out of scope altogether.
  EXPECT_EQ(FindItem(c, I(insight_cpu_)), nullptr);
  EXPECT_EQ(FindItem(c, I(insight_matmul_)), nullptr);
}

TEST_F(ContextBuilderTest, NearDuplicatesAreMerged) {
  NodeId twin = 0;
  KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
    InsightSpec s;
    s.text = "online softmax with warp shuffle reduction beats two passes on the H100";
    s.scope = {"softmax", "cuda", "NVIDIA H100", "sm_90", "", 0, 0};
    s.support = 3;
    KOPE_ASSIGN_OR_RETURN(twin, GraphBuilder(w).Insight(s));
    return Status::Ok();
  }));
  BuiltContext c = Build(Request(a3_));
  ASSERT_NE(FindItem(c, I(insight_in_)), nullptr);
  EXPECT_EQ(FindItem(c, I(twin)), nullptr);
  EXPECT_NE(FindItem(c, I(insight_in_))->text.find("also as i" + std::to_string(twin)),
            std::string::npos);
}

TEST_F(ContextBuilderTest, SameStateGivesTheSameContext) {
  BuiltContext first = Build(Request(a3_));
  BuiltContext second = Build(Request(a3_));
  EXPECT_EQ(first.system_prompt, second.system_prompt);
  EXPECT_EQ(first.user_prompt, second.user_prompt);
  ASSERT_EQ(first.items.size(), second.items.size());
  for (size_t i = 0; i < first.items.size(); ++i) {
    EXPECT_EQ(first.items[i].node, second.items[i].node);
    EXPECT_EQ(first.items[i].score, second.items[i].score);
  }
  // Reopened from disk, too.
  store_.reset();
  store_ = testing::OpenStore(dir_ / "store.db");
  EXPECT_EQ(Build(Request(a3_)).user_prompt, first.user_prompt);
}

TEST_F(ContextBuilderTest, ShortensItemsUnderASmallBudgetAndRefusesATooSmallOne) {
  BuiltContext roomy = Build(Request(a3_, 20000));
  int shortened_roomy = 0;
  for (const ContextItem& item : roomy.items) shortened_roomy += item.fidelity != Fidelity::kFull;
  EXPECT_EQ(shortened_roomy, 0);

  BuiltContext tight = Build(Request(a3_, 2600));
  EXPECT_LE(tight.total_tokens, 2600);
  int shortened = 0;
  for (const ContextItem& item : tight.items) shortened += item.fidelity != Fidelity::kFull;
  EXPECT_GT(shortened, 0);

  Result<BuiltContext> tiny = BuildContext(*store_, Request(a3_, 300));
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tiny.status().message().find("too small"), std::string::npos);
}

TEST_F(ContextBuilderTest, RecordsUseOfRankedItemsOnly) {
  BuiltContext c = Build(Request(a3_));
  NodeId child = 0;
  KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
    KOPE_ASSIGN_OR_RETURN(child,
                          GraphBuilder(w).Attempt(Valid(run_, a3_, "use two warps per row", 2.2)));
    KOPE_RETURN_IF_ERROR(RecordInjection(w, child, c));
    return RecordInjection(w, child, c);  // twice: nothing more
  }));
  std::vector<memory::UsedEdge> used = ValueOrDie(store_->UsedBy(child));
  size_t ranked = 0;
  for (const ContextItem& item : c.items) {
    ranked += item.section == Section::kInsights || item.section == Section::kExemplars ||
              item.section == Section::kFailureRules;
  }
  EXPECT_GT(ranked, 0u);
  EXPECT_EQ(used.size(), ranked);
  for (const memory::UsedEdge& e : used) {
    const ContextItem* item = FindItem(c, e.target);
    ASSERT_NE(item, nullptr);
    EXPECT_EQ(e.section, SectionName(item->section));
    EXPECT_EQ(e.tokens, item->tokens);
  }
}

TEST_F(ContextBuilderTest, CreditFromOutcomesChangesLaterRankings) {
  // Two insights alike in scope and evidence, in words unrelated to the task.
  NodeId first = 0, second = 0;
  KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
    GraphBuilder b(w);
    InsightSpec s;
    s.scope = {"softmax", "cuda", "NVIDIA H100", "sm_90", "", 0, 0};
    s.support = 4;
    s.text = "zeta quux lorem";
    KOPE_ASSIGN_OR_RETURN(first, b.Insight(s));
    s.text = "omega blorp ipsum";
    KOPE_ASSIGN_OR_RETURN(second, b.Insight(s));
    return Status::Ok();
  }));
  BuiltContext before = Build(Request(a3_));
  ASSERT_NE(FindItem(before, I(first)), nullptr);
  ASSERT_NE(FindItem(before, I(second)), nullptr);
  // Alike but for their timestamps (recency), which may differ by a millisecond.
  EXPECT_NEAR(FindItem(before, I(first))->score / FindItem(before, I(second))->score, 1.0, 1e-3);

  // An attempt whose context held only `second` improved; one that held only `first` did not.
  auto only = [&](NodeId keep) {
    BuiltContext c = before;
    std::erase_if(c.items, [&](const ContextItem& item) { return item.node != I(keep); });
    return c;
  };
  KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
    GraphBuilder b(w);
    KOPE_ASSIGN_OR_RETURN(NodeId good, b.Attempt(Valid(run_, a3_, "two rows per warp", 2.5)));
    KOPE_ASSIGN_OR_RETURN(NodeId bad, b.Attempt(Valid(run_, a3_, "four rows per warp", 1.5)));
    KOPE_RETURN_IF_ERROR(RecordInjection(w, good, only(second)));
    KOPE_RETURN_IF_ERROR(RecordInjection(w, bad, only(first)));
    KOPE_RETURN_IF_ERROR(w.CreditUsed(good, 1.0).status());
    return w.CreditUsed(bad, -1.0).status();
  }));
  BuiltContext after = Build(Request(a3_));
  ASSERT_NE(FindItem(after, I(first)), nullptr);
  ASSERT_NE(FindItem(after, I(second)), nullptr);
  EXPECT_GT(FindItem(after, I(second))->score, FindItem(before, I(second))->score);
  EXPECT_LT(FindItem(after, I(first))->score, FindItem(before, I(first))->score);
  EXPECT_GT(FindItem(after, I(second))->score, 2 * FindItem(after, I(first))->score);
  EXPECT_LT(Position(after, I(second)), Position(after, I(first)));
}

TEST_F(ContextBuilderTest, PassiveModeGrowsTurnAfterTurn) {
  ContextRequest request = Request(a5_, 200000);
  request.mode = ContextMode::kPassive;
  BuiltContext previous = Build(request);
  EXPECT_EQ(previous.mode, ContextMode::kPassive);
  NodeId node = a5_;
  for (int step = 0; step < 4; ++step) {
    KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(node, GraphBuilder(w).Attempt(Valid(
                                      run_, node, "step " + std::to_string(step), 2.0 + step)));
      return Status::Ok();
    }));
    request.node = node;
    BuiltContext next = Build(request);
    EXPECT_GT(next.raw_tokens, previous.raw_tokens);
    int turns = 0;
    for (const ContextItem& item : next.items) turns += item.kind == "turn";
    EXPECT_EQ(turns, 5 + step);  // every attempt of the run but the node
    // Nothing is ranked in the passive mode.
    for (const ContextItem& item : next.items) {
      EXPECT_TRUE(item.section == Section::kTask || item.section == Section::kHistory);
    }
    previous = std::move(next);
  }
  // Under a small window the oldest turns are left out, never the budget exceeded.
  request.budget_tokens = 3000;
  BuiltContext small = Build(request);
  EXPECT_LE(small.total_tokens, 3000);
  EXPECT_NE(small.user_prompt.find("earlier attempts are left out"), std::string::npos);
  EXPECT_EQ(FindItem(small, A(a1_)), nullptr);
}

TEST_F(ContextBuilderTest, RendersATaskFromItsFiles) {
  Result<Task> task =
      LoadTask(std::filesystem::path(kope::testing::SourceDir()) / "examples/softmax_rows");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ContextRequest request;
  request.task = &*task;
  request.hardware.backend = "cpu";
  request.hardware.device = "Test CPU";
  request.hardware.architecture = "x86_64";
  request.hardware.cores = 8;
  request.budget_tokens = 6000;
  BuiltContext c = Build(request);
  EXPECT_EQ(c.task_id, 0);  // not in the store
  EXPECT_NE(c.user_prompt.find("- x: f32 [rows, cols]"), std::string::npos);
  EXPECT_NE(c.user_prompt.find("rows=2048"), std::string::npos);
  EXPECT_NE(c.user_prompt.find("the task's baseline"), std::string::npos);
  EXPECT_NE(c.user_prompt.find("```cpp"), std::string::npos);
  EXPECT_NE(c.system_prompt.find("g++"), std::string::npos);
  EXPECT_LE(c.total_tokens, 6000);
}

TEST_F(ContextBuilderTest, CalibrationChangesTheCount) {
  TokenCalibration calibration;
  for (int i = 0; i < 20; ++i) KOPE_ASSERT_OK(calibration.Record("wordy", 1000, 2000));
  ContextRequest request = Request(a3_, 6000);
  BuiltContext plain = Build(request);
  request.model = "wordy-v2";
  request.calibration = &calibration;
  BuiltContext wordy = Build(request);
  EXPECT_LE(wordy.total_tokens, 6000);
  EXPECT_LT(wordy.raw_tokens, plain.raw_tokens);  // less text fits
  EXPECT_NEAR(static_cast<double>(wordy.expected_tokens),
              2.0 * static_cast<double>(wordy.raw_tokens), 1.0);
}

TEST_F(ContextBuilderTest, ShowsTheMeasurementsOfTheKernelToChange) {
  NodeId measured = 0;
  KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
    testing::AttemptSpec spec = Valid(run_, a3_, "two rows per block", 2.4);
    spec.evidence_json = R"j({"candidate_time":{"median_s":0.00042,"spread":0.012},
        "baseline_time":{"median_s":0.001},
        "profile":{"limiter":"dram","metrics":{"dram_throughput_pct":88.5}},
        "resources":[{"function":"softmax_rows(float const*, float*, int)","registers":40,
                      "shared_bytes":1024,"spill_store_bytes":0,"spill_load_bytes":0}]})j";
    KOPE_ASSIGN_OR_RETURN(measured, GraphBuilder(w).Attempt(spec));
    return Status::Ok();
  }));
  BuiltContext c = Build(Request(measured));
  const ContextItem* kernel = nullptr;
  for (const ContextItem& item : c.items) kernel = item.kind == "kernel" ? &item : kernel;
  ASSERT_NE(kernel, nullptr);
  EXPECT_NE(kernel->text.find("median 0.42 ms (spread 1.2%)"), std::string::npos) << kernel->text;
  EXPECT_NE(kernel->text.find("baseline 1 ms"), std::string::npos);
  EXPECT_NE(kernel->text.find("limited by dram"), std::string::npos);
  EXPECT_NE(kernel->text.find("dram_throughput_pct 88.5"), std::string::npos);
  EXPECT_NE(kernel->text.find("softmax_rows 40 registers, 1024 B shared"), std::string::npos);
  // It is the best so far too: the profile section says the same.
  bool best = false;
  for (const ContextItem& item : c.items) {
    best = best || (item.kind == "best" && item.text.find("limited by dram") != std::string::npos);
  }
  EXPECT_TRUE(best);
}

TEST_F(ContextBuilderTest, ErrorsAreValues) {
  EXPECT_EQ(BuildContext(*store_, Request(999999)).status().code(), StatusCode::kNotFound);
  ContextRequest no_task;
  no_task.hardware.backend = "cuda";
  EXPECT_EQ(BuildContext(*store_, no_task).status().code(), StatusCode::kInvalidArgument);
  ContextRequest no_budget = Request(a3_, 0);
  EXPECT_EQ(BuildContext(*store_, no_budget).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kope::context
