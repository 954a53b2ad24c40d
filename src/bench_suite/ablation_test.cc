// The ablation's arithmetic on hand-made runs: attempts to a fraction of the best, intervals over
// repetitions, the targets; the report's files; the suite files.
#include "kope/bench_suite/ablation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kope/bench_suite/suite_file.h"
#include "kope/task/task.h"
#include "testing/test_paths.h"

namespace kope::bench_suite {
namespace {

namespace fs = std::filesystem;

// A task run: its speedups per attempt (0: not valid) and the prompt tokens built for them.
AblationTaskRun TaskRun(const std::string& task, bool known, std::vector<double> speedups,
                        std::vector<int64_t> active = {}, std::vector<int64_t> passive = {}) {
  AblationTaskRun t;
  t.task = task;
  t.family = "norm";
  t.known_family = known;
  t.speedups = std::move(speedups);
  t.attempts = static_cast<int>(t.speedups.size());
  for (double s : t.speedups) t.speedup = std::max(t.speedup, s);
  t.valid = t.speedup > 0;
  t.active_tokens = active.empty() ? std::vector<int64_t>(t.speedups.size(), 100) : active;
  t.passive_tokens = passive.empty() ? std::vector<int64_t>(t.speedups.size(), 100) : passive;
  t.proposer_tokens.assign(t.speedups.size(), 0);
  return t;
}

AblationArmResult Arm(const std::string& name, bool shared, std::vector<AblationRun> runs) {
  AblationArmResult a;
  a.arm.name = name;
  a.arm.shared_graph = shared;
  a.runs = std::move(runs);
  return a;
}

AblationReport MemoryReport() {
  AblationReport r;
  r.factor = AblationFactor::kMemory;
  r.repeat = 2;
  r.attempts_budget = 6;
  r.fast_p = {1.0, 2.0};
  r.tasks = {"a", "b"};
  // Task b: a fresh graph climbs for four attempts; the accumulating one starts near its best.
  r.arms.push_back(
      Arm("fresh", false,
          {{1, {TaskRun("a", false, {1, 2, 3, 4}), TaskRun("b", false, {1, 1, 2, 4})}},
           {2, {TaskRun("a", false, {1, 2, 3, 4}), TaskRun("b", false, {1, 2, 2, 4})}}}));
  r.arms.push_back(Arm("accumulate", true,
                       {{1, {TaskRun("a", false, {1, 2, 3, 4}), TaskRun("b", true, {3.8, 4})}},
                        {2, {TaskRun("a", false, {1, 2, 3, 4}), TaskRun("b", true, {4, 4})}}}));
  return r;
}

TEST(AblationMetricsTest, IntervalsOverRepetitions) {
  EXPECT_EQ(IntervalOf({}).n, 0);
  const Interval one = IntervalOf({2.0});
  EXPECT_DOUBLE_EQ(one.low, 2.0);
  EXPECT_DOUBLE_EQ(one.high, 2.0);
  const Interval three = IntervalOf({1, 2, 3});
  EXPECT_DOUBLE_EQ(three.mean, 2.0);
  EXPECT_NEAR(three.high - three.mean, 4.303 * std::sqrt(1.0 / 3), 1e-9);  // t(0.975, 2)
}

TEST(AblationMetricsTest, AttemptsToTheBestAndTheMemoryTarget) {
  AblationReport r = MemoryReport();
  ComputeAblationMetrics(r);
  struct Row {
    size_t arm, run, task;
    int own, reference;
  };
  // 90% of 4 is 3.6: reached by the first 4 (or the accumulating graph's 3.8).
  for (const Row& row :
       std::vector<Row>{{0, 0, 0, 4, 4}, {0, 0, 1, 4, 4}, {1, 0, 1, 1, 1}, {1, 1, 1, 1, 1}}) {
    const AblationTaskRun& t = r.arms[row.arm].runs[row.run].tasks[row.task];
    EXPECT_EQ(t.attempts_to_own, row.own) << row.arm << " " << t.task;
    EXPECT_EQ(t.attempts_to_reference, row.reference) << row.arm << " " << t.task;
  }
  EXPECT_DOUBLE_EQ(r.arms[0].metrics.attempts_to_reference.mean, 4.0);
  EXPECT_DOUBLE_EQ(r.arms[1].metrics.attempts_to_reference.mean, 2.5);
  EXPECT_DOUBLE_EQ(r.arms[0].metrics.pass_rate.mean, 1.0);
  EXPECT_DOUBLE_EQ(r.arms[0].metrics.fast_p[1].mean, 1.0);  // 4 > 2 on both tasks
  EXPECT_NEAR(r.arms[1].metrics.geomean_speedup.mean, 4.0, 1e-12);
  ASSERT_EQ(r.targets.size(), 2u);
  EXPECT_TRUE(r.targets[0].evaluated);
  EXPECT_TRUE(r.targets[0].met) << r.targets[0].detail;  // 1 attempt against 4 on task b
  EXPECT_FALSE(r.targets[1].met);                        // equal prompts: 1x
}

TEST(AblationMetricsTest, ARunThatNeverGetsThereCountsItsBudget) {
  AblationReport r = MemoryReport();
  r.arms[0].runs[0].tasks[1] = TaskRun("b", false, {0, 0, 0});  // no valid kernel
  ComputeAblationMetrics(r);
  EXPECT_EQ(r.arms[0].runs[0].tasks[1].attempts_to_reference, 0);
  EXPECT_DOUBLE_EQ(r.arms[0].metrics.attempts_to_reference.low,
                   r.arms[0].metrics.attempts_to_reference.high - 2 * 12.706 * 0.5);
  EXPECT_DOUBLE_EQ(r.arms[0].metrics.pass_rate.mean, 0.75);
}

TEST(AblationMetricsTest, PassivePromptsGrowAndTheContextTarget) {
  AblationReport r;
  r.factor = AblationFactor::kContext;
  r.repeat = 1;
  r.attempts_budget = 4;
  r.arms.push_back(
      Arm("active", true,
          {{1, {TaskRun("a", false, {1, 2, 3, 4}, {100, 100, 100, 100}, {100, 400, 700, 1000})}}}));
  ComputeAblationMetrics(r);
  EXPECT_EQ(r.arms[0].metrics.passive_by_attempt, (std::vector<double>{100, 400, 700, 1000}));
  ASSERT_TRUE(r.targets[1].evaluated);
  EXPECT_TRUE(r.targets[1].met) << r.targets[1].detail;  // 2200 / 400 = 5.5
  EXPECT_NE(r.targets[1].detail.find("5.50x"), std::string::npos) << r.targets[1].detail;
  EXPECT_FALSE(r.targets[0].evaluated);  // no fresh arm
}

TEST(AblationReportTest, JsonAndChartNameEveryArm) {
  AblationReport r = MemoryReport();
  ComputeAblationMetrics(r);
  const nlohmann::json j = nlohmann::json::parse(AblationReportToJson(r));
  EXPECT_EQ(j["factor"], "memory");
  ASSERT_EQ(j["arms"].size(), 2u);
  EXPECT_EQ(j["arms"][1]["graph"], "accumulating");
  EXPECT_DOUBLE_EQ(j["arms"][1]["metrics"]["attempts_to_reference"]["mean"].get<double>(), 2.5);
  EXPECT_EQ(j["arms"][0]["runs"][0]["tasks"][1]["passive_tokens"].size(), 4u);
  EXPECT_EQ(j["targets"][0]["met"], true);
  const std::string svg = AblationChartSvg(r);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find(">accumulate<"), std::string::npos);
  EXPECT_NE(FormatAblationSummary(r).find("target memory: met"), std::string::npos);

  // Read back, the same figures; a repetition cut short is left out.
  auto back = AblationReportFromJson(AblationReportToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(AblationReportToJson(*back), AblationReportToJson(r));
  r.arms[0].runs[1].tasks.pop_back();
  auto cut = AblationReportFromJson(AblationReportToJson(r));
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->arms[0].runs.size(), 1u);
  EXPECT_EQ(cut->arms[0].metrics.attempts_to_reference.n, 1);
  EXPECT_FALSE(AblationReportFromJson("{}").ok());
}

TEST(AblationArmsTest, ArmsDifferInTheirFactorOnly) {
  const std::vector<AblationArm> memory = ArmsOf(AblationFactor::kMemory);
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_FALSE(memory[0].shared_graph);
  EXPECT_TRUE(memory[2].reverse);
  const std::vector<AblationArm> context = ArmsOf(AblationFactor::kContext);
  ASSERT_EQ(context.size(), 2u);
  EXPECT_EQ(context[1].mode, context::ContextMode::kPassive);
  EXPECT_EQ(context[0].shared_graph, context[1].shared_graph);
  EXPECT_FALSE(ArmsOf(AblationFactor::kTransfer)[1].transfer);
  EXPECT_FALSE(ParseAblationFactor("tokens").ok());
}

TEST(SuiteFileTest, TheCommittedSuitesResolveInTheirOrder) {
  const fs::path suites = fs::path(kope::testing::SourceDir()) / "suites";
  for (const char* name : {"norm", "elementwise", "softmax"}) {
    auto suite = LoadSuiteFile(suites / (std::string(name) + ".toml"));
    ASSERT_TRUE(suite.ok()) << suite.status().ToString();
    EXPECT_EQ(suite->name, name);
    EXPECT_GE(suite->tasks.size(), 3u);
    for (const fs::path& task : suite->tasks) {
      auto loaded = LoadTask(task);
      EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    }
  }
  auto norm = LoadSuiteFile(suites / "norm.toml");
  ASSERT_TRUE(norm.ok());
  EXPECT_EQ(norm->tasks[0].filename(), "rmsnorm");
  EXPECT_EQ(norm->tasks[1].filename(), "rmsnorm_wide");
  // KernelBench problems need the KernelBench folder.
  ::unsetenv("KOPE_KERNELBENCH");
  auto kb = LoadSuiteFile(suites / "kernelbench-norm.toml");
  ASSERT_FALSE(kb.ok());
  EXPECT_NE(kb.status().message().find("--kernelbench"), std::string::npos);
}

TEST(SuiteFileTest, MistakesNameTheFileAndTheField) {
  const fs::path dir = fs::temp_directory_path() / ("kope-suite-file-" + std::to_string(getpid()));
  fs::create_directories(dir / "t");
  std::ofstream(dir / "t" / "task.toml") << "";
  struct Case {
    std::string text, error;
  };
  for (const Case& c :
       std::vector<Case>{{"name = \"s\"\ntasks = [\"t\"]\norder = 1\n", "unknown key 'order'"},
                         {"tasks = [\"t\"]\n", "name: required"},
                         {"name = \"s\"\ntasks = []\n", "tasks: a non-empty list"},
                         {"name = \"s\"\ntasks = [\"u\"]\n", "'u' does not exist"},
                         {"name = \"s\"\ntasks = [\"t\", \"./t\"]\n", "named twice"}}) {
    std::ofstream(dir / "suite.toml") << c.text;
    auto suite = LoadSuiteFile(dir / "suite.toml");
    ASSERT_FALSE(suite.ok()) << c.text;
    EXPECT_NE(suite.status().message().find(c.error), std::string::npos)
        << suite.status().message();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kope::bench_suite
