#include "kope/bench_suite/suite.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "agent_test_support.h"
#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope::bench_suite {
namespace {

namespace fs = std::filesystem;

TaskResult Result(const std::string& name, std::optional<double> speedup,
                  std::optional<double> roofline = std::nullopt, int64_t tokens = 0) {
  TaskResult t;
  t.name = name;
  t.status = "ran";
  agent::EpisodeReport report;
  report.prompt_tokens = tokens;
  report.attempts.resize(3);
  if (speedup) {
    agent::AttemptSummary best;
    best.verdict = "valid";
    best.speedup = speedup;
    best.roofline = roofline;
    report.best = best;
    report.baseline_roofline = 0.1;
  }
  t.report = report;
  return t;
}

TEST(SuiteMetricsTest, PassRateFastPGeomeanAndRoofline) {
  std::vector<TaskResult> tasks = {Result("a", 4.0, 0.5, 100), Result("b", 1.2, std::nullopt, 50),
                                   Result("c", 0.8), Result("d", std::nullopt)};
  TaskResult broken;
  broken.name = "e";
  broken.status = "error";
  tasks.push_back(broken);
  SuiteMetrics m = ComputeMetrics(tasks);
  EXPECT_EQ(m.tasks, 5);
  EXPECT_EQ(m.valid, 3);
  EXPECT_DOUBLE_EQ(m.pass_rate, 0.6);
  EXPECT_DOUBLE_EQ(m.fast_1_0, 0.4);  // 4.0 and 1.2
  EXPECT_DOUBLE_EQ(m.fast_1_5, 0.2);
  EXPECT_DOUBLE_EQ(m.fast_2_0, 0.2);
  EXPECT_NEAR(m.geomean_speedup, std::cbrt(4.0 * 1.2 * 0.8), 1e-12);
  EXPECT_NEAR(m.geomean_speedup_all, std::pow(4.0 * 1.2 * 0.8, 1.0 / 5), 1e-12);
  ASSERT_TRUE(m.mean_roofline.has_value());
  EXPECT_DOUBLE_EQ(*m.mean_roofline, 0.5);
  EXPECT_EQ(m.roofline_tasks, 1);
  EXPECT_EQ(m.prompt_tokens, 150);
  EXPECT_EQ(m.attempts, 12);
}

agent::AttemptSummary Attempt(memory::NodeId id, const std::string& language,
                              std::optional<double> speedup) {
  agent::AttemptSummary a;
  a.id = id;
  a.language = language;
  a.verdict = speedup ? "valid" : "incorrect";
  a.speedup = speedup;
  return a;
}

// A run in two languages: each one's attempts, the tasks it passed and won, its best speedups.
TEST(SuiteMetricsTest, PerLanguagePassesAndBestSpeedups) {
  TaskResult a = Result("a", 2.0);
  a.report->attempts = {Attempt(1, "cpp", 1.2), Attempt(2, "triton", 2.0),
                        Attempt(3, "triton", std::nullopt)};
  a.report->best = a.report->attempts[1];
  TaskResult b = Result("b", 1.5);
  b.report->attempts = {Attempt(4, "cpp", 1.5), Attempt(5, "triton", std::nullopt)};
  b.report->best = b.report->attempts[0];
  TaskResult c = Result("c", std::nullopt);
  c.report->attempts = {Attempt(6, "cpp", std::nullopt), Attempt(7, "triton", 0.5)};
  c.report->attempts[1].flagged = true;  // a flagged result passes nothing
  SuiteMetrics m = ComputeMetrics({a, b, c});
  ASSERT_EQ(m.languages.size(), 2u);
  const LanguageMetrics& cpp = m.languages[0];
  EXPECT_EQ(cpp.language, "cpp");
  EXPECT_EQ(cpp.attempts, 3);
  EXPECT_EQ(cpp.valid_attempts, 2);
  EXPECT_EQ(cpp.tasks_passed, 2);
  EXPECT_EQ(cpp.tasks_won, 1);
  EXPECT_DOUBLE_EQ(cpp.best_speedup, 1.5);
  EXPECT_NEAR(cpp.geomean_speedup, std::sqrt(1.2 * 1.5), 1e-12);
  const LanguageMetrics& triton = m.languages[1];
  EXPECT_EQ(triton.language, "triton");
  EXPECT_EQ(triton.attempts, 4);
  EXPECT_EQ(triton.valid_attempts, 1);
  EXPECT_EQ(triton.tasks_passed, 1);
  EXPECT_EQ(triton.tasks_won, 1);
  EXPECT_DOUBLE_EQ(triton.best_speedup, 2.0);

  SuiteReport report;
  report.name = "languages";
  report.tasks = {a, b, c};
  report.metrics = m;
  const std::string summary = FormatSuiteSummary(report);
  EXPECT_NE(summary.find("  triton  passed 1 of 3 tasks, best kernel of 1 | best 2.00x"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("  cpp     passed 2 of 3 tasks"), std::string::npos) << summary;
  nlohmann::json j = nlohmann::json::parse(SuiteReportToJson(report));
  ASSERT_EQ(j["metrics"]["languages"].size(), 2u);
  EXPECT_EQ(j["metrics"]["languages"][1]["tasks_passed"], 1);
  const std::string csv = SuiteReportToCsv(report);
  EXPECT_NE(csv.find(",best_language,error\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",triton,\n"), std::string::npos) << csv;
  // One language: no per-language lines.
  EXPECT_EQ(FormatSuiteSummary(SuiteReport{}).find("passed"), std::string::npos);
}

TEST(SuiteReportTest, CsvAndSvgHaveARowPerTask) {
  SuiteReport report;
  report.name = "demo";
  report.tasks = {Result("alpha", 3.0, 0.4), Result("beta,with comma", std::nullopt)};
  report.metrics = ComputeMetrics(report.tasks);
  const std::string csv = SuiteReportToCsv(report);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_NE(csv.find("alpha,,ran,1,3.0000,0.4000"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"beta,with comma\""), std::string::npos) << csv;
  const std::string svg = SpeedupChartSvg(report);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("alpha"), std::string::npos);
  EXPECT_NE(svg.find("no valid kernel"), std::string::npos);
  EXPECT_NE(svg.find("3.00x"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(SuiteReportToJson(report));
  EXPECT_EQ(j["metrics"]["tasks"], 2);
  EXPECT_DOUBLE_EQ(j["metrics"]["fast_p"]["2.0"].get<double>(), 0.5);
}

TEST(SuiteTest, RunsEveryTaskInParallelAndResumesFromTheGraph) {
  agent::testing::ScratchDir scratch;
  auto store = agent::testing::OpenTestStore(scratch.path() / "store.db");
  auto backend = agent::testing::TestBackend();
  ASSERT_TRUE(store && backend);
  auto proposers = agent::OpenProposers({});
  ASSERT_TRUE(proposers.ok());
  const fs::path dir = fs::path(kope::testing::SourceDir()) / "src/agent/testdata/tasks";
  ASSERT_EQ(FindSuiteTasks(dir).size(), 2u);

  SuiteOptions options;
  options.jobs = 2;
  options.episode = agent::testing::TestEpisodeOptions(2);
  std::ostringstream log;
  options.log = &log;
  auto report = RunSuite(*store, *backend, *proposers, dir, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->name, "tasks");
  ASSERT_EQ(report->tasks.size(), 2u);
  for (const TaskResult& t : report->tasks) {
    EXPECT_EQ(t.status, "ran") << t.name << ": " << t.error;
    ASSERT_TRUE(t.report.has_value());
    EXPECT_EQ(t.report->attempts.size(), 2u);
    EXPECT_EQ(t.report->label, "bench:tasks");
    EXPECT_TRUE(t.valid());
  }
  EXPECT_EQ(report->metrics.tasks, 2);
  EXPECT_DOUBLE_EQ(report->metrics.pass_rate, 1.0);
  EXPECT_NE(log.str().find("[scale_small] "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("[scale_large] "), std::string::npos) << log.str();

  // Again: both runs are finished, so both are read from the graph and nothing is evaluated.
  auto again = RunSuite(*store, *backend, *proposers, dir, options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (size_t i = 0; i < again->tasks.size(); ++i) {
    const TaskResult& t = again->tasks[i];
    EXPECT_EQ(t.status, "recorded") << t.name;
    ASSERT_TRUE(t.report.has_value());
    EXPECT_EQ(t.report->session_evaluations, 0);
    EXPECT_EQ(t.report->run_id, report->tasks[i].report->run_id);
    EXPECT_DOUBLE_EQ(t.speedup(), report->tasks[i].speedup());
  }

  ASSERT_TRUE(WriteSuiteReport(*again, scratch.path() / "out").ok());
  for (const char* file : {"report.json", "report.csv", "speedup.svg"}) {
    EXPECT_TRUE(fs::exists(scratch.path() / "out" / file)) << file;
  }
  nlohmann::json j =
      nlohmann::json::parse(ReadFileText(scratch.path() / "out/report.json").value_or(""));
  EXPECT_EQ(j["tasks"].size(), 2u);
  EXPECT_EQ(j["metrics"]["valid"], 2);
}

TEST(SuiteTest, AFolderWithoutTasksIsNotFound) {
  agent::testing::ScratchDir scratch;
  auto store = agent::testing::OpenTestStore(scratch.path() / "store.db");
  auto backend = agent::testing::TestBackend();
  auto proposers = agent::OpenProposers({});
  ASSERT_TRUE(store && backend && proposers.ok());
  auto report = RunSuite(*store, *backend, *proposers, scratch.path(), {});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kope::bench_suite
