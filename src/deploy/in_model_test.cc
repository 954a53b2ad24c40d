// Reading validation.json and recording what the model said on each attempt in a real SQLite
// store: in_model outcomes beside the unit ones, never a speedup, the report as the workload's
// deployment, idempotent.
#include "kope/deploy/in_model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kope/base/temp_folder.h"
#include "kope/memory/sqlite/sqlite_store.h"

namespace kope::deploy {
namespace {

// Attempt 1 fails the gate, attempt 2 passes and is accepted; one figure of each phase.
constexpr const char* kValidation = R"({
  "format": "kope-validation-1", "workload": "tiny-llama",
  "tasks": [{"task": "rmsnorm", "tried": [
    {"attempt": 1, "kind": "native", "accepted": false, "reason": "fails in the model: top-1 0.5",
     "gate": {"passed": false}},
    {"attempt": 2, "kind": "native", "accepted": true, "reason": "accepted",
     "gate": {"passed": true}, "e2e": []},
    {"attempt": 3, "accepted": false, "reason": "cannot be installed: no ModelNew"}]}],
  "dropped": [], "patches": ["rmsnorm"], "gate": null, "artifact": "/out/kope_patch_tiny_llama",
  "e2e": [{"entry": 0, "batch": 1,
           "prefill_ms": {"unpatched": {"median": 20}, "patched": {"median": 10}, "speedup": 2,
                          "noise": 0.1, "win": true, "loss": false},
           "decode_tokens_per_s": {"unpatched": {"median": 50}, "patched": {"median": 49},
                                   "speedup": 0.98, "noise": 0.05, "win": false,
                                   "loss": false}}]})";

TEST(ValidationTest, ReadsTrialsPatchesAndFigures) {
  Result<Validation> v = ParseValidation(kValidation, "validation.json");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->trials.size(), 3u);
  EXPECT_FALSE(v->trials[0].accepted);
  EXPECT_TRUE(v->trials[0].installed);
  EXPECT_FALSE(v->trials[0].passed_gate);
  EXPECT_TRUE(v->trials[1].accepted);
  EXPECT_FALSE(v->trials[2].installed);
  EXPECT_EQ(v->patches, std::vector<std::string>{"rmsnorm"});
  ASSERT_EQ(v->e2e.size(), 2u);
  EXPECT_EQ(v->e2e[0].phase, "prefill");
  EXPECT_DOUBLE_EQ(v->e2e[0].speedup, 2);
  EXPECT_TRUE(v->e2e[0].win);
  EXPECT_EQ(v->e2e[1].phase, "decode");
  const std::string summary = ValidationSummary(*v);
  EXPECT_NE(summary.find("rejected: fails in the model"), std::string::npos) << summary;
  EXPECT_NE(summary.find("kope_patch_tiny_llama"), std::string::npos) << summary;
}

// A report with figures of the wrong types or missing sides reads as zeros, never an exception.
TEST(ValidationTest, OddFiguresReadAsZeros) {
  Result<Validation> v = ParseValidation(R"({
    "format": "kope-validation-1", "workload": "w", "tasks": [], "dropped": [], "patches": [],
    "e2e": [{"entry": 1e300, "batch": "8", "prefill_ms": {"unpatched": null, "speedup": "2"},
             "decode_tokens_per_s": 3}, 7]})",
                                         "validation.json");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->e2e.size(), 2u);
  EXPECT_EQ(v->e2e[0].entry, 0);
  EXPECT_EQ(v->e2e[0].batch, 0);
  EXPECT_EQ(v->e2e[0].unpatched, 0);
  EXPECT_EQ(v->e2e[0].speedup, 0);
  EXPECT_EQ(v->e2e[1].phase, "decode");
}

// A runtime patch (no attempt) accepted, with the whole request's figure beside the phases'.
TEST(ValidationTest, SummarySaysARuntimePatchAndTheWholeRequest) {
  Result<Validation> v = ParseValidation(R"({
    "format": "kope-validation-1", "workload": "llama",
    "tasks": [{"task": "decode_graph", "tried": [
      {"attempt": null, "kind": "runtime", "accepted": true, "reason": "accepted",
       "gate": {"passed": true}, "e2e": []}]}],
    "dropped": [], "patches": ["decode_graph"], "gate": null, "artifact": null,
    "e2e": [{"entry": 0, "batch": 1,
             "request_ms": {"unpatched": {"median": 1589}, "patched": {"median": 376},
                            "speedup": 4.23, "noise": 0.28, "win": true, "loss": false}}]})",
                                         "validation.json");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->trials.size(), 1u);
  EXPECT_EQ(v->trials[0].attempt, 0);
  ASSERT_EQ(v->e2e.size(), 1u);
  EXPECT_EQ(v->e2e[0].phase, "request");
  const std::string summary = ValidationSummary(*v);
  EXPECT_NE(summary.find("decode_graph                     -       runtime  accepted"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("request       1589 ms"), std::string::npos) << summary;
}

TEST(ValidationTest, AnotherFormatIsRefusedNamingTheFile) {
  Result<Validation> v = ParseValidation(R"({"format": "x"})", "DIR/validation.json");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("DIR/validation.json"), std::string::npos);
}

TEST(RecordInModelTest, EveryTrialGetsAnInModelOutcomeWithoutASpeedupAndTheReportIsKept) {
  Result<TempFolder> dir = TempFolder::Create("", "kope-in-model-test");
  ASSERT_TRUE(dir.ok());
  auto store = memory::OpenSqliteStore(dir->path() / "experience.db");
  ASSERT_TRUE(store.ok()) << store.status().message();
  memory::NodeId attempts[3] = {};
  memory::NodeId workload = 0;
  ASSERT_TRUE((*store)
                  ->Write([&](memory::GraphWriter& w) -> Status {
                    KOPE_ASSIGN_OR_RETURN(workload, w.PutWorkload({0, "", "tiny-llama", "h"}));
                    KOPE_ASSIGN_OR_RETURN(memory::NodeId task,
                                          w.PutTask({0, "", "rmsnorm", "norm", "", 0, "", "{}"}));
                    KOPE_ASSIGN_OR_RETURN(memory::NodeId hw,
                                          w.PutHardware({0, "", "cpu", "cpu", "x86_64", "{}"}));
                    memory::RunNode run;
                    run.task_id = task;
                    run.hardware_id = hw;
                    run.label = "deploy:tiny-llama";
                    KOPE_ASSIGN_OR_RETURN(memory::NodeId r, w.PutRun(run));
                    for (int i = 0; i < 3; ++i) {
                      memory::AttemptNode a;
                      a.run_id = r;
                      a.proposer = "tuner";
                      KOPE_ASSIGN_OR_RETURN(attempts[i],
                                            w.PutAttempt(a, "int k" + std::to_string(i) + ";"));
                    }
                    return Status::Ok();
                  })
                  .ok());
  std::string text = kValidation;
  for (int i = 0; i < 3; ++i) {  // the ids the store gave
    const std::string from = "\"attempt\": " + std::to_string(i + 1) + ",";
    text.replace(text.find(from), from.size(), "\"attempt\": " + std::to_string(attempts[i]) + ",");
  }
  Result<Validation> v = ParseValidation(text, "validation.json");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_TRUE(RecordInModel(**store, *v, workload).ok());
  ASSERT_TRUE(RecordInModel(**store, *v, workload).ok());  // again: nothing new
  auto deployments = (*store)->WorkloadDeployments(workload);
  ASSERT_TRUE(deployments.ok());
  ASSERT_EQ(deployments->size(), 1u);
  EXPECT_EQ(nlohmann::json::parse((*deployments)[0].report_json)["format"], "kope-validation-1");
  const char* verdicts[] = {"incorrect", "valid", "runtime_error"};
  for (int i = 0; i < 3; ++i) {
    auto outcomes = (*store)->Outcomes(attempts[i]);
    ASSERT_TRUE(outcomes.ok());
    ASSERT_EQ(outcomes->size(), 1u) << "attempt " << i;
    const memory::OutcomeNode& o = (*outcomes)[0];
    EXPECT_EQ(o.stage, "in_model");
    EXPECT_EQ(o.verdict, verdicts[i]);
    EXPECT_FALSE(o.speedup.has_value());
    EXPECT_EQ(o.error_message.empty(), i == 1) << o.error_message;
  }
  auto best = (*store)->BestAttempts({0, "norm", 0, 10});
  ASSERT_TRUE(best.ok());
  EXPECT_TRUE(best->empty());  // an in-model outcome never ranks
}

}  // namespace
}  // namespace kope::deploy
