// The JSON endpoints against a store that `kope optimize` filled: their fields, their filters,
// bad input (404/400, never a crash) and reads while another connection writes; costs and
// deployment reports in a store of their own.
#include "kope/serve/api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "kope/memory/sqlite/sqlite_store.h"
#include "testing/optimized_store.h"

namespace kope::serve {
namespace {

using nlohmann::json;

class ServeApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const testing::OptimizedStore& made = testing::SharedOptimizedStore();
    ASSERT_TRUE(made.error.empty()) << made.error;
    auto store = memory::OpenSqliteStore(made.store, {.create_if_missing = false});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value().release();
    run_ = made.run;
  }
  static void TearDownTestSuite() {
    delete store_;
    store_ = nullptr;
  }
  void SetUp() override {
    if (store_ == nullptr) GTEST_SKIP() << "no store";
  }

  // GETs an endpoint and parses its body; `status` is the expected HTTP status.
  static json Get(const std::string& path, std::map<std::string, std::string> params = {},
                  int status = 200) {
    ApiResponse r = ServeApi(*store_).Handle({path, std::move(params)});
    EXPECT_EQ(r.status, status) << path << ": " << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    json j = json::parse(r.body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.body;
    return j;
  }

  static memory::GraphStore* store_;
  static int64_t run_;
};

memory::GraphStore* ServeApiTest::store_ = nullptr;
int64_t ServeApiTest::run_ = 0;

TEST_F(ServeApiTest, RunListAndItsFilters) {
  json all = Get("/api/runs");
  ASSERT_EQ(all["total"], 1);
  const json& row = all["runs"][0];
  EXPECT_EQ(row["id"], run_);
  EXPECT_EQ(row["task_name"], "rmsnorm");
  EXPECT_EQ(row["op_family"], "norm");
  EXPECT_EQ(row["proposer"], "offline");
  EXPECT_EQ(row["summary"]["attempts"], 4);
  EXPECT_GT(row["summary"]["best"]["speedup"].get<double>(), 0);
  struct Case {
    std::map<std::string, std::string> params;
    int total;
  };
  const Case cases[] = {
      {{{"family", "norm"}}, 1},      {{{"family", "softmax"}}, 0},
      {{{"task", "rmsnorm"}}, 1},     {{{"task", "gelu"}}, 0},
      {{{"proposer", "offline"}}, 1}, {{{"proposer", "llm"}}, 0},
      {{{"hardware", "cpu"}}, 1},     {{{"hardware", "no such device"}}, 0},
      {{{"since", "2000-01-01"}}, 1}, {{{"until", "2000-01-01"}}, 0},
      {{{"label", "optimize"}}, 1},   {{{"offset", "1"}}, 1},
  };
  for (const Case& c : cases) {
    json r = Get("/api/runs", c.params);
    EXPECT_EQ(r["total"], c.total) << json(c.params).dump();
  }
  EXPECT_TRUE(Get("/api/runs", {{"offset", "1"}})["runs"].empty());
  json facets = Get("/api/facets");
  EXPECT_EQ(facets["families"], json::array({"norm"}));
}

TEST_F(ServeApiTest, RunSummaryTreeAndCharts) {
  const std::string base = "/api/runs/" + std::to_string(run_);
  json run = Get(base);
  EXPECT_EQ(run["task_node"]["name"], "rmsnorm");
  EXPECT_EQ(run["summary"]["attempts"], 4);

  json tree = Get(base + "/tree");
  ASSERT_EQ(tree["nodes"].size(), 4u);
  std::set<int64_t> ids;
  size_t edges = 0;
  for (size_t i = 0; i < 4; ++i) {
    const json& n = tree["nodes"][i];
    EXPECT_EQ(n["order"], i + 1);
    ids.insert(n["id"].get<int64_t>());
    edges += n["children"].size();
    if (i == 0) {
      EXPECT_TRUE(n["parent"].is_null());
    } else {
      EXPECT_TRUE(ids.count(n["parent"].get<int64_t>()));
    }
    EXPECT_TRUE(n["outcome"].is_object());
  }
  EXPECT_EQ(edges, 3u);  // one root, every other attempt derived from one of the run
  EXPECT_TRUE(ids.count(tree["best"]["attempt"].get<int64_t>()));

  const int64_t second = tree["nodes"][1]["id"].get<int64_t>();
  json later = Get(base + "/attempts", {{"after", std::to_string(second)}});
  EXPECT_EQ(later["attempts"].size(), 2u);
  EXPECT_EQ(later["attempts"][0]["order"], 3);

  json charts = Get(base + "/charts", {{"bins", "4"}});
  EXPECT_EQ(charts["progress"].size(), 4u);
  EXPECT_EQ(charts["tokens"].size(), 4u);
  int64_t counted = 0, ranked = 0;
  for (const json& b : charts["histogram"]) counted += b["count"].get<int64_t>();
  for (const json& n : tree["nodes"]) {  // valid and unflagged (a loaded machine flags some)
    const json& o = n["outcome"];
    ranked += o["verdict"] == "valid" && !o["flagged"].get<bool>() && o["speedup"].is_number();
  }
  EXPECT_EQ(counted, ranked);
}

TEST_F(ServeApiTest, AttemptWithSourceDiffAndEvidence) {
  json tree = Get("/api/runs/" + std::to_string(run_) + "/tree");
  const json& child = tree["nodes"][1];
  json a = Get("/api/attempts/" + std::to_string(child["id"].get<int64_t>()));
  EXPECT_NE(a["source"].get<std::string>().find("kope_kernel"), std::string::npos);
  EXPECT_NE(a["diff"].get<std::string>().find("\n+"), std::string::npos) << a["diff"];
  EXPECT_EQ(a["parent_node"]["id"], child["parent"]);
  EXPECT_EQ(a["lineage"].back()["id"], a["id"]);
  ASSERT_FALSE(a["outcomes"].empty());
  const json& evidence = a["outcomes"][0]["evidence"];
  EXPECT_GT(evidence["candidate_time"]["samples"].get<int64_t>(), 0);
  EXPECT_TRUE(evidence["candidate_time"].contains("spread"));
  EXPECT_TRUE(evidence["flags"].is_array());
  EXPECT_TRUE(a["used"].is_array());
  EXPECT_TRUE(a["insights"].is_array());
  EXPECT_EQ(Get("/api/attempts/a" + std::to_string(child["id"].get<int64_t>()))["id"], a["id"]);
}

TEST_F(ServeApiTest, InsightsSearchTasksAndWorkloads) {
  json insights = Get("/api/insights");
  for (const json& i : insights["insights"]) {
    json one = Get("/api/insights/" + std::to_string(i["id"].get<int64_t>()));
    EXPECT_EQ(one["evidence"].size(), one["evidence_total"]);
    EXPECT_EQ(one["support"], i["support"]);
  }
  json hits = Get("/api/search", {{"q", "tune"}});
  ASSERT_FALSE(hits["hits"].empty());
  EXPECT_EQ(hits["hits"][0]["kind"], "attempt");
  EXPECT_FALSE(hits["hits"][0]["attempt"].is_null());
  EXPECT_TRUE(Get("/api/search", {{"q", "tune"}, {"kinds", "task"}})["hits"].empty());

  json tasks = Get("/api/tasks");
  ASSERT_EQ(tasks["tasks"].size(), 1u);
  json task = Get("/api/tasks/" + std::to_string(tasks["tasks"][0]["id"].get<int64_t>()));
  EXPECT_EQ(task["runs"].size(), 1u);
  for (const json& p : task["roofline_points"]) EXPECT_GT(p["roofline"].get<double>(), 0);
  EXPECT_TRUE(Get("/api/workloads")["workloads"].empty());
  EXPECT_EQ(Get("/api/stats")["attempts"], 4);
}

// A run whose attempts cost something, and a workload with a deployment report, in a store of
// their own: the cost per attempt and per run, a suite's runs, the report as the workload page
// shows it.
TEST(ServeApiCostsTest, CostsPerRunSuitesAndDeploymentReports) {
  const std::filesystem::path dir = testing::MakeScratchDir("kope-serve-costs");
  auto opened = memory::OpenSqliteStore(dir / "store.db");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  memory::GraphStore& store = **opened;
  memory::NodeId run = 0, attempts[2] = {};
  ASSERT_TRUE(store
                  .Write([&](memory::GraphWriter& w) -> Status {
                    memory::TaskNode task;
                    task.name = "rmsnorm";
                    task.op_family = "norm";
                    memory::HardwareNode hw;
                    hw.backend = "cpu";
                    hw.device = "cpu";
                    memory::RunNode r;
                    KOPE_ASSIGN_OR_RETURN(r.task_id, w.PutTask(task));
                    KOPE_ASSIGN_OR_RETURN(r.hardware_id, w.PutHardware(hw));
                    KOPE_ASSIGN_OR_RETURN(run, w.PutRun(r));
                    r.label = "bench:level1";  // a suite's run beside it
                    KOPE_RETURN_IF_ERROR(w.PutRun(r).status());
                    for (int i = 0; i < 2; ++i) {
                      memory::AttemptNode a;
                      a.run_id = run;
                      a.proposer = "llm:m";
                      a.cost_usd = 0.5 + i;
                      KOPE_ASSIGN_OR_RETURN(attempts[i],
                                            w.PutAttempt(a, "int k" + std::to_string(i) + ";"));
                    }
                    return Status::Ok();
                  })
                  .ok());
  const memory::NodeId workload = testing::AddDeployedWorkload(store, attempts[0], attempts[1]);
  ServeApi api(store);
  auto get = [&](const std::string& path) { return json::parse(api.Handle({path, {}}).body); };
  const std::string base = "/api/runs/" + std::to_string(run);
  EXPECT_EQ(get(base)["summary"]["cost_usd"], 2.0);
  EXPECT_EQ(get("/api/runs")["runs"][1]["summary"]["cost_usd"], 2.0);  // newest first
  const json suites = get("/api/suites")["suites"];
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_EQ(suites[0]["suite"], "level1");
  EXPECT_EQ(suites[0]["runs"], 1);
  EXPECT_EQ(suites[0]["tasks"], 1);
  EXPECT_EQ(get(base + "/charts")["tokens"][1]["cost_usd"], 1.5);
  EXPECT_EQ(get("/api/attempts/" + std::to_string(attempts[0]))["cost_usd"], 0.5);

  EXPECT_EQ(get("/api/workloads")["workloads"][0]["deployments"], 1);
  const json page = get("/api/workloads/" + std::to_string(workload));
  ASSERT_EQ(page["deployments"].size(), 1u);
  const json& d = page["deployments"][0];
  EXPECT_EQ(d["patches"], json::array({"rmsnorm"}));
  ASSERT_EQ(d["e2e"].size(), 2u);
  EXPECT_EQ(d["e2e"][0]["phase"], "prefill");
  EXPECT_EQ(d["e2e"][0]["speedup"], 1.25);
  EXPECT_TRUE(d["e2e"][0]["win"].get<bool>());
  EXPECT_EQ(d["e2e"][1]["phase"], "decode");
  ASSERT_EQ(d["trials"].size(), 2u);
  EXPECT_EQ(d["trials"][0]["attempt"], attempts[0]);
  EXPECT_FALSE(d["trials"][0]["accepted"].get<bool>());
  EXPECT_FALSE(d["trials"][0]["passed_gate"].get<bool>());
  EXPECT_NE(d["trials"][0]["reason"].get<std::string>().find("top-1"), std::string::npos);
  EXPECT_TRUE(d["trials"][1]["accepted"].get<bool>());
  EXPECT_EQ(d["trials"][1]["e2e"].size(), 2u);  // the patch alone

  // A report kope cannot read is shown as such, beside the others.
  ASSERT_TRUE(store
                  .Write([&](memory::GraphWriter& w) -> Status {
                    memory::DeploymentRecord bad;
                    bad.workload_id = workload;
                    bad.report_json = R"({"format":"something else"})";
                    return w.AddDeployment(bad).status();
                  })
                  .ok());
  const json both = get("/api/workloads/" + std::to_string(workload))["deployments"];
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NE(both[0]["error"].get<std::string>().find("kope-validation-1"), std::string::npos);
  EXPECT_EQ(both[1]["patches"], json::array({"rmsnorm"}));
  opened->reset();
  std::filesystem::remove_all(dir);
}

TEST_F(ServeApiTest, BadInputIsA404OrA400WithAJsonError) {
  struct Case {
    std::string path;
    std::map<std::string, std::string> params;
    int status;
  };
  const Case cases[] = {
      {"/api/attempts/999999", {}, 404},
      {"/api/attempts/abc", {}, 400},
      {"/api/attempts/r1", {}, 400},
      {"/api/attempts/99999999999999999999", {}, 400},
      {"/api/runs/0", {}, 400},
      {"/api/runs/999999/tree", {}, 404},
      {"/api/runs/999999/attempts", {}, 404},
      {"/api/runs/1/attempts", {{"after", "-1"}}, 400},
      {"/api/runs", {{"limit", "0"}}, 400},
      {"/api/runs", {{"limit", "ten"}}, 400},
      {"/api/runs", {{"since", "2024-13-01"}}, 400},
      {"/api/runs", {{"until", "yesterday"}}, 400},
      {"/api/runs", {{"bogus", "1"}}, 400},
      {"/api/search", {}, 400},
      {"/api/search", {{"q", "   "}}, 400},
      {"/api/search", {{"q", "x"}, {"kinds", "attempt,nodes"}}, 400},
      {"/api/search", {{"q", "x"}, {"any", "maybe"}}, 400},
      {"/api/insights/424242", {}, 404},
      {"/api/workloads/1", {}, 404},
      {"/api/tasks/x", {}, 400},
      {"/api/tasks/424242", {}, 404},
      {"/api/nope", {}, 404},
      {"/api/runs/1/nope", {}, 404},
      {"/elsewhere", {}, 404},
  };
  for (const Case& c : cases) {
    json j = Get(c.path, c.params, c.status);
    EXPECT_EQ(j["error"]["status"], c.status) << c.path;
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty()) << c.path;
  }
  // Punctuation and operators of the search syntax are words, not errors.
  Get("/api/search", {{"q", "\"unbalanced AND ( OR NEAR *"}});
}

// A run read through one connection while another writes attempts to it, each with its
// outcome in one transaction: every read sees whole attempts, parents before children.
TEST(ServeApiConsistency, ReadsWhileAnEpisodeWrites) {
  const std::filesystem::path dir = testing::MakeScratchDir("kope-serve-wal");
  auto writer = memory::OpenSqliteStore(dir / "store.db");
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  memory::NodeId run = 0;
  Status made = (*writer)->Write([&](memory::GraphWriter& w) -> Status {
    memory::HardwareNode h;
    h.backend = "cpu";
    h.device = "d";
    KOPE_ASSIGN_OR_RETURN(memory::NodeId hw, w.PutHardware(h));
    memory::TaskNode t;
    t.name = "t";
    t.op_family = "f";
    KOPE_ASSIGN_OR_RETURN(memory::NodeId task, w.PutTask(t));
    memory::RunNode r;
    r.task_id = task;
    r.hardware_id = hw;
    KOPE_ASSIGN_OR_RETURN(run, w.PutRun(r));
    return Status::Ok();
  });
  ASSERT_TRUE(made.ok()) << made.ToString();
  auto reader = memory::OpenSqliteStore(dir / "store.db", {.create_if_missing = false});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  constexpr int kAttempts = 40;
  std::thread episode([&] {
    memory::NodeId parent = 0;
    for (int i = 0; i < kAttempts; ++i) {
      Status s = (*writer)->Write([&](memory::GraphWriter& w) -> Status {
        memory::AttemptNode a;
        a.run_id = run;
        a.parent_id = parent;
        a.decision = "step";
        KOPE_ASSIGN_OR_RETURN(parent,
                              w.PutAttempt(a, "int k() { return " + std::to_string(i) + "; }\n"));
        memory::OutcomeNode o;
        o.attempt_id = parent;
        o.verdict = "valid";
        o.speedup = 1.0 + i;
        return w.PutOutcome(o).status();
      });
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  });
  ServeApi api(**reader);
  size_t seen = 0;
  while (seen < kAttempts) {
    ApiResponse r = api.Handle({"/api/runs/" + std::to_string(run) + "/tree", {}});
    ASSERT_EQ(r.status, 200) << r.body;
    json tree = json::parse(r.body);
    ASSERT_GE(tree["nodes"].size(), seen);
    seen = tree["nodes"].size();
    for (size_t i = 0; i < seen; ++i) {
      ASSERT_TRUE(tree["nodes"][i]["outcome"].is_object()) << "attempt without its outcome";
      ASSERT_EQ(tree["nodes"][i]["depth"], i) << "a parent missing";
    }
  }
  episode.join();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kope::serve
