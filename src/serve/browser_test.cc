// The pages in headless Chromium (through its DevTools protocol), against a store that
// `kope optimize` filled: the run list, the episode tree's nodes and colours, an attempt with
// its diff, the charts, a deployment report, the live view while an attempt is added, an unknown
// id. A screenshot of each page goes to the build folder (serve-screenshots/). Skips when
// chromium is absent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/serve/api.h"
#include "kope/serve/server.h"
#include "testing/cdp_browser.h"
#include "testing/optimized_store.h"
#include "testing/test_paths.h"

namespace kope::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class BrowserTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const testing::OptimizedStore& made = testing::SharedOptimizedStore();
    if (!made.error.empty()) {
      setup_error_ = made.error;
      return;
    }
    run_ = made.run;
    store_ = memory::OpenSqliteStore(made.store, {.create_if_missing = false}).value().release();
    writer_ = memory::OpenSqliteStore(made.store, {.create_if_missing = false}).value().release();
    ServerOptions options;
    options.port = 0;
    server_ = Server::Start(*store_, options).value().release();
    profile_ = testing::MakeScratchDir("kope-serve-chromium");
    auto browser = testing::CdpBrowser::Start(profile_);
    if (!browser.ok()) {
      skip_ = browser.status().code() == StatusCode::kNotFound;
      setup_error_ = browser.status().ToString();
      return;
    }
    browser_ = std::move(browser).value().release();
    shots_ = fs::path(kope::testing::BinaryDir()) / "serve-screenshots";
    fs::create_directories(shots_);
  }
  static void TearDownTestSuite() {
    delete browser_;
    delete server_;
    delete writer_;
    delete store_;
    std::error_code ec;
    fs::remove_all(profile_, ec);
  }
  void SetUp() override {
    if (skip_) GTEST_SKIP() << "no headless browser: " << setup_error_ << " (install chromium)";
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  }

  // Opens a page, waits until its script has rendered it and keeps a screenshot.
  static void Open(const std::string& path, const std::string& shot) {
    const std::string url = "http://127.0.0.1:" + std::to_string(server_->port()) + path;
    Status loaded = browser_->Navigate(url);
    ASSERT_TRUE(loaded.ok()) << loaded.ToString();
    Status ready = browser_->WaitFor(
        "document.getElementById('main').getAttribute('data-ready') !== null", 15);
    ASSERT_TRUE(ready.ok()) << ready.ToString();
    Status saved = browser_->Screenshot(shots_ / (shot + ".png"));
    EXPECT_TRUE(saved.ok()) << saved.ToString();
  }
  static json Eval(const std::string& expression) {
    auto value = browser_->Evaluate(expression);
    EXPECT_TRUE(value.ok()) << value.status().ToString();
    return value.ok() ? *value : json();
  }
  static json Api(const std::string& path) {
    return json::parse(ServeApi(*store_).Handle({path, {}}).body);
  }

  static inline memory::GraphStore* store_ = nullptr;
  static inline memory::GraphStore* writer_ = nullptr;
  static inline Server* server_ = nullptr;
  static inline testing::CdpBrowser* browser_ = nullptr;
  static inline fs::path profile_, shots_;
  static inline int64_t run_ = 0;
  static inline bool skip_ = false;
  static inline std::string setup_error_;
};

TEST_F(BrowserTest, RunList) {
  Open("/", "runs");
  EXPECT_EQ(Eval("document.getElementById('main').dataset.ready"), "1");
  EXPECT_EQ(Eval("document.querySelectorAll('tr.run').length"), 1);
  EXPECT_EQ(Eval("document.querySelector('tr.run').dataset.run"), std::to_string(run_));
  EXPECT_NE(Eval("document.querySelector('tr.run').textContent").get<std::string>().find("rmsnorm"),
            std::string::npos);
}

TEST_F(BrowserTest, EpisodeTreeHasEveryNodeInItsVerdictsColour) {
  const json tree = Api("/api/runs/" + std::to_string(run_) + "/tree");
  Open("/runs/" + std::to_string(run_), "episode");
  const json nodes = Eval(
      "[...document.querySelectorAll('svg.tree a.node')].map(a => ({id: +a.dataset.attempt, "
      "verdict: a.dataset.verdict, fill: a.querySelector('circle').getAttribute('fill')}))");
  ASSERT_EQ(nodes.size(), tree["nodes"].size());
  const std::map<std::string, std::string> colours = {
      {"valid", "#2e8b57"},         {"incorrect", "#d9822b"}, {"compile_error", "#b31d28"},
      {"runtime_error", "#8e44ad"}, {"crash", "#6f1d1b"},     {"timeout", "#7a7a7a"}};
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& expected = tree["nodes"][i];
    EXPECT_EQ(nodes[i]["id"], expected["id"]);
    EXPECT_EQ(nodes[i]["verdict"], expected["outcome"]["verdict"]);
    EXPECT_EQ(nodes[i]["fill"], colours.at(expected["outcome"]["verdict"].get<std::string>()));
  }
  EXPECT_EQ(Eval("document.querySelectorAll('svg.tree path.edge').length"),
            tree["nodes"].size() - 1);
  // The charts: best speedup over attempts and the distribution are drawn.
  EXPECT_GE(Eval("document.querySelectorAll('[data-chart=progress] svg path.series').length"), 1);
  EXPECT_GT(
      Eval("document.querySelector('[data-chart=progress] svg path.series[stroke=\"#2e8b57\"]')"
           ".getAttribute('d').length"),
      4);
  EXPECT_GE(Eval("document.querySelectorAll('[data-chart=distribution] svg rect.bar').length"), 1);
}

TEST_F(BrowserTest, AttemptShowsItsDiffAndSource) {
  const json tree = Api("/api/runs/" + std::to_string(run_) + "/tree");
  const std::string id = std::to_string(tree["nodes"][1]["id"].get<int64_t>());
  Open("/attempts/" + id, "attempt");
  EXPECT_GE(Eval("document.querySelectorAll('#diff .add').length"), 1);
  EXPECT_GE(Eval("document.querySelectorAll('#diff .del').length"), 1);
  EXPECT_NE(
      Eval("document.getElementById('source').textContent").get<std::string>().find("kope_kernel"),
      std::string::npos);
  EXPECT_GE(Eval("document.querySelectorAll('.outcome').length"), 1);
  if (fs::exists("/usr/share/javascript/highlight.js/highlight.min.js")) {
    EXPECT_EQ(Eval("!!document.querySelector('#source code.hljs')"), true);
  }
}

TEST_F(BrowserTest, TaskRooflineChartInsightsAndAnUnknownId) {
  const json tasks = Api("/api/tasks");
  const std::string task = std::to_string(tasks["tasks"][0]["id"].get<int64_t>());
  const json data = Api("/api/tasks/" + task);
  Open("/tasks/" + task, "task-roofline");
  if (!data["roofline_points"].empty()) {
    EXPECT_EQ(Eval("document.querySelectorAll('[data-chart=roofline] svg circle.point').length"),
              data["roofline_points"].size());
  }
  Open("/insights", "insights");
  EXPECT_EQ(Eval("document.querySelectorAll('tr.insight').length"),
            Api("/api/insights")["insights"].size());
  Open("/search?q=tune", "search");
  EXPECT_GE(Eval("document.querySelectorAll('tr.hit').length"), 1);
  Open("/attempts/999999", "not-found");
  EXPECT_EQ(Eval("document.querySelector('.error').dataset.status"), "404");
}

TEST_F(BrowserTest, DeploymentReportWithItsChartsAndRejections) {
  const json tree = Api("/api/runs/" + std::to_string(run_) + "/tree");
  const int64_t workload = testing::AddDeployedWorkload(
      *writer_, tree["nodes"][0]["id"].get<int64_t>(), tree["nodes"][1]["id"].get<int64_t>());
  Open("/workloads/" + std::to_string(workload), "deployment");
  EXPECT_EQ(Eval("document.querySelectorAll('section.deployment').length"), 1);
  EXPECT_NE(Eval("document.querySelector('pre').textContent").get<std::string>().find("llama"),
            std::string::npos);
  EXPECT_EQ(Eval("document.querySelectorAll('[data-chart=e2e] svg rect.bar').length"), 2);
  EXPECT_EQ(Eval("document.querySelectorAll('[data-chart=contribution] svg rect.bar').length"), 2);
  EXPECT_EQ(Eval("document.querySelectorAll('tr.trial.rejected').length"), 1);
  EXPECT_NE(Eval("document.querySelector('tr.trial.rejected').textContent")
                .get<std::string>()
                .find("top-1 agreement"),
            std::string::npos);
  Open("/workloads", "workloads");
  EXPECT_NE(
      Eval("document.querySelector('main table').textContent").get<std::string>().find("llama"),
      std::string::npos);  // the model's architecture, from the workload's attrs
  // The run page says what the run cost (nothing: the offline proposer calls no model).
  Open("/runs/" + std::to_string(run_), "run-cost");
  EXPECT_EQ(Eval("document.querySelectorAll('[data-chart=cost]').length"), 1);
}

TEST_F(BrowserTest, SuitesLeadToTheirRuns) {
  Result<memory::RunNode> run = store_->GetRun(run_);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  Status written = writer_->Write([&](memory::GraphWriter& w) -> Status {
    memory::RunNode suite_run = *run;
    suite_run.id = 0;
    suite_run.key.clear();
    suite_run.label = "bench:smoke";
    return w.PutRun(suite_run).status();
  });
  ASSERT_TRUE(written.ok()) << written.ToString();
  Open("/suites", "suites");
  ASSERT_EQ(Eval("document.querySelectorAll('tr.suite').length"), 1);
  Open(Eval("document.querySelector('tr.suite a').getAttribute('href')").get<std::string>(),
       "suite-runs");
  EXPECT_EQ(Eval("document.querySelectorAll('tr.run').length"), 1);
  EXPECT_NE(
      Eval("document.querySelector('tr.run').textContent").get<std::string>().find("bench:smoke"),
      std::string::npos);
}

TEST_F(BrowserTest, LiveRunShowsANewAttemptWithoutReloading) {
  const json before = Api("/api/runs/" + std::to_string(run_) + "/tree");
  Open("/runs/" + std::to_string(run_) + "/live", "live-before");
  ASSERT_EQ(Eval("document.querySelectorAll('#live-rows tr.attempt').length"),
            before["nodes"].size());
  EXPECT_EQ(Eval("document.querySelectorAll('#live-rows tr.new').length"), 0);
  Status written = writer_->Write([&](memory::GraphWriter& w) -> Status {
    memory::AttemptNode a;
    a.run_id = run_;
    a.parent_id = before["best"]["attempt"].get<int64_t>();
    a.decision = "added while the page is open";
    KOPE_ASSIGN_OR_RETURN(memory::NodeId id, w.PutAttempt(a, "int added() { return 1; }\n"));
    memory::OutcomeNode o;
    o.attempt_id = id;
    o.verdict = "incorrect";
    return w.PutOutcome(o).status();
  });
  ASSERT_TRUE(written.ok()) << written.ToString();
  Status shown =
      browser_->WaitFor("document.querySelectorAll('#live-rows tr.new').length === 1", 10);
  ASSERT_TRUE(shown.ok()) << shown.ToString();
  EXPECT_NE(Eval("document.querySelector('#live-rows tr.new').textContent")
                .get<std::string>()
                .find("added while the page is open"),
            std::string::npos);
  EXPECT_TRUE(browser_->Screenshot(shots_ / "live-after.png").ok());
}

}  // namespace
}  // namespace kope::serve
