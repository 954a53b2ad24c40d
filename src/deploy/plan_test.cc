// Choosing the tasks `kope deploy` optimizes, splitting its attempts, and the plan file.
#include "kope/deploy/plan.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "kope/base/temp_folder.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;

// A profile whose opportunities have task folders with these unit.json texts ("" : none).
class SelectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempFolder> dir = TempFolder::Create("", "kope-plan-test");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = std::move(*dir);
  }
  void Add(const std::string& name, double share, const std::string& unit) {
    Opportunity o;
    o.rank = static_cast<int64_t>(profile_.opportunities.size()) + 1;
    o.name = name;
    o.share = share;
    o.phases = {"decode"};
    o.task = "tasks/" + name;
    fs::create_directories(dir_.path() / *o.task);
    if (!unit.empty()) std::ofstream(dir_.path() / *o.task / "unit.json") << unit;
    profile_.opportunities.push_back(o);
  }
  TempFolder dir_;
  Profile profile_;
};

TEST_F(SelectTest, PatchableUnitsInRankingOrderUpToTheLimit) {
  Add("layer", 0.6, R"({"kind": "step_decode", "patchable": false})");
  Add("norm", 0.2, R"({"kind": "norm", "patchable": true})");
  Add("nounit", 0.15, "");
  Add("linear", 0.1, R"({"kind": "linear", "patchable": true})");
  Add("mlp", 0.05, R"({"kind": "mlp", "patchable": true})");
  Opportunity no_task;
  no_task.name = "op_without_task";
  profile_.opportunities.push_back(no_task);
  Result<TaskSelection> s = SelectTasks(profile_, dir_.path(), 2);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->tasks.size(), 2u);
  EXPECT_EQ(s->tasks[0].name, "norm");
  EXPECT_EQ(s->tasks[0].unit_kind, "norm");
  EXPECT_EQ(s->tasks[0].folder, dir_.path() / "tasks/norm");
  EXPECT_EQ(s->tasks[1].name, "linear");
  ASSERT_EQ(s->skipped.size(), 3u);
  EXPECT_NE(s->skipped[0].find("(step_decode) is not patched"), std::string::npos);
  EXPECT_NE(s->skipped[1].find("no unit.json"), std::string::npos);
  EXPECT_NE(s->skipped[2].find("beyond the 2 tasks"), std::string::npos);
}

TEST_F(SelectTest, OnlyTheUnitKindsAsked) {
  Add("norm", 0.2, R"({"kind": "norm", "patchable": true})");
  Add("linear", 0.1, R"({"kind": "linear", "patchable": true})");
  Result<TaskSelection> s = SelectTasks(profile_, dir_.path(), 4, {"linear"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->tasks.size(), 1u);
  EXPECT_EQ(s->tasks[0].name, "linear");
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_NE(s->skipped[0].find("not among --units"), std::string::npos);
}

TEST_F(SelectTest, NoPatchableTaskIsAnErrorThatSaysWhatToDo) {
  Add("layer", 0.6, R"({"kind": "step_decode", "patchable": false})");
  Result<TaskSelection> s = SelectTasks(profile_, dir_.path(), 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--top"), std::string::npos);
}

struct SplitCase {
  int total, minimum;
  std::vector<double> shares;
  std::vector<int> expected;
};

TEST(SplitAttemptsTest, ByShareWithLargestRemaindersAndAMinimum) {
  const SplitCase cases[] = {
      {12, 1, {0.5, 0.25, 0.25}, {6, 3, 3}},  // 9 spare: 4.5, 2.25, 2.25 -> 5, 2, 2 (+1 each)
      {10, 1, {0.7, 0.2, 0.1}, {6, 2, 2}},    // 7 spare: 4.9, 1.4, 0.7 -> 5, 1, 1 (+1 each)
      {2, 1, {0.9, 0.1, 0.0}, {1, 1, 1}},     // fewer than the minimum allows: the minimum
      {6, 0, {0.0, 0.0}, {3, 3}},             // no shares: equal parts
      {5, 2, {1.0}, {5}},
  };
  for (const SplitCase& c : cases) {
    std::vector<DeployTask> tasks;
    for (double share : c.shares) tasks.push_back({"t", {}, "norm", share, {}, 0});
    SplitAttempts(c.total, c.minimum, &tasks);
    std::vector<int> got;
    for (const DeployTask& t : tasks) got.push_back(t.attempts);
    EXPECT_EQ(got, c.expected) << "total " << c.total;
  }
}

TEST(PlanJsonTest, HoldsTheTasksCandidatesInOrder) {
  PlanTask t{{"norm", "/d/tasks/norm", "norm", 0.2, {"decode"}, 3}, {}};
  t.candidates.push_back({5, "/d/c/a5.cc", "/d/c/a5.so", 2.5});
  t.candidates.push_back({4, "/d/c/a4.py", "", std::nullopt});
  auto plan = nlohmann::json::parse(PlanJson("/d/workload.json", "/d", R"({"k": 1})", {t}));
  EXPECT_EQ(plan["workload"], "/d/workload.json");
  EXPECT_EQ(plan["provenance"]["k"], 1);
  const auto& c = plan["tasks"][0]["candidates"];
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0]["attempt"], 5);
  EXPECT_EQ(c[0]["compiled"], "/d/c/a5.so");
  EXPECT_EQ(c[0]["speedup"], 2.5);
  EXPECT_TRUE(c[1]["compiled"].is_null());
  EXPECT_TRUE(c[1]["speedup"].is_null());
  EXPECT_TRUE(plan["runtime"].empty());
  plan = nlohmann::json::parse(
      PlanJson("/d/workload.json", "/d", "{}", {t},
               {{"decode_graph", "why", 641, {{"fused", true, true}, {"captured", false}}}}));
  EXPECT_EQ(plan["runtime"][0]["name"], "decode_graph");
  EXPECT_EQ(plan["runtime"][0]["max_cache_len"], 641);
  ASSERT_EQ(plan["runtime"][0]["variants"].size(), 2u);
  EXPECT_EQ(plan["runtime"][0]["variants"][0]["name"], "fused");
  EXPECT_EQ(plan["runtime"][0]["variants"][0]["fuse"], true);
  EXPECT_EQ(plan["runtime"][0]["variants"][0]["fuse_prefill"], true);
  EXPECT_EQ(plan["runtime"][0]["variants"][1]["fuse"], false);
  EXPECT_EQ(plan["runtime"][0]["variants"][1]["fuse_prefill"], false);
}

// Which workloads and profiles get the decode-graph decision.
struct RuntimeCase {
  const char* name;
  const char* device;
  const char* mode;
  ModelSource source;
  double decode_idle;  // of both entries' decode phases
  bool decided;
};

TEST(RuntimeDecisionsTest, DecodeGraphWhereEagerDecodeOnCudaIsHostBound) {
  const RuntimeCase cases[] = {
      {"host-bound eager decode on CUDA", "cuda", "generate", ModelSource::kConfig, 0.85, true},
      {"a checkpoint, likewise", "cuda", "generate", ModelSource::kCheckpoint, 0.6, true},
      {"the GPU busy", "cuda", "generate", ModelSource::kConfig, 0.3, false},
      {"already compiled", "cuda", "static-compile", ModelSource::kConfig, 0.85, false},
      {"on the CPU", "cpu", "generate", ModelSource::kConfig, 0.85, false},
      {"a user's script (its own loop)", "cuda", "generate", ModelSource::kScript, 0.85, false},
  };
  for (const RuntimeCase& c : cases) {
    Workload w;
    w.run.device = c.device;
    w.run.mode = c.mode;
    w.model.source = c.source;
    w.requests = {{1, 512, 128, 0.5}, {8, 256, 64, 0.5}};
    Profile p;
    p.phases = {{0, "prefill", 0.5, 20, 18, 0.1, 1},
                {0, "decode", 0.5, 12, 12 * (1 - c.decode_idle), c.decode_idle, 128},
                {1, "decode", 0.5, 18, 18 * (1 - c.decode_idle), c.decode_idle, 64}};
    const std::vector<RuntimeDecision> d = RuntimeDecisions(w, p);
    ASSERT_EQ(d.size(), c.decided ? 1u : 0u) << c.name;
    if (!c.decided) continue;
    EXPECT_EQ(d[0].name, "decode_graph") << c.name;
    EXPECT_EQ(d[0].max_cache_len, 641) << c.name;
    // The fused prefill and step first, then the fused step alone, then the step as the model
    // runs it: each where the one before is rejected.
    ASSERT_EQ(d[0].variants.size(), 3u) << c.name;
    EXPECT_TRUE(d[0].variants[0].fuse && d[0].variants[0].fuse_prefill) << c.name;
    EXPECT_TRUE(d[0].variants[1].fuse && !d[0].variants[1].fuse_prefill) << c.name;
    EXPECT_FALSE(d[0].variants[2].fuse || d[0].variants[2].fuse_prefill) << c.name;
    EXPECT_NE(d[0].reason.find("host-bound"), std::string::npos) << d[0].reason;
  }
}

}  // namespace
}  // namespace kope::deploy
