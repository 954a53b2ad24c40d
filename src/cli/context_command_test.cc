// `kope context` as a user runs it: the prompt and its items for a task folder and for a stored
// task and node, JSON output, exit codes for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "kope/base/subprocess.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

class ContextCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kope-context-cli-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    store_ = (dir_ / "store.db").string();
    auto store = memory::OpenSqliteStore(store_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Status written = (*store)->Write([&](memory::GraphWriter& w) -> Status {
      memory::HardwareNode h;
      h.backend = "cpu";
      h.device = "Test CPU";
      h.arch = "x86_64";
      KOPE_ASSIGN_OR_RETURN(NodeId hw, w.PutHardware(h));
      memory::TaskNode t;
      t.name = "softmax_rows";
      t.op_family = "softmax";
      t.size = 2e6;
      KOPE_ASSIGN_OR_RETURN(NodeId task, w.PutTask(t));
      memory::RunNode r;
      r.task_id = task;
      r.hardware_id = hw;
      KOPE_ASSIGN_OR_RETURN(NodeId run, w.PutRun(r));
      NodeId parent = 0;
      for (int i = 0; i < 3; ++i) {
        memory::AttemptNode a;
        a.run_id = run;
        a.parent_id = parent;
        a.decision =
            i == 0 ? "baseline" : "parallelize rows with OpenMP, step " + std::to_string(i);
        a.proposer = "test";
        KOPE_ASSIGN_OR_RETURN(parent, w.PutAttempt(a, "extern \"C\" int kope_kernel() { return " +
                                                          std::to_string(i) + "; }\n"));
        memory::OutcomeNode o;
        o.attempt_id = parent;
        o.verdict = "valid";
        o.speedup = 1.0 + i;
        KOPE_RETURN_IF_ERROR(w.PutOutcome(o).status());
      }
      memory::InsightNode insight;
      insight.text = "one OpenMP thread per block of rows scales on this machine";
      insight.scope.op_family = "softmax";
      KOPE_ASSIGN_OR_RETURN(insight_, w.PutInsight(insight));
      return Status::Ok();
    });
    ASSERT_TRUE(written.ok()) << written.ToString();
  }
  void TearDown() override { fs::remove_all(dir_); }

  using NodeId = memory::NodeId;

  ProcessResult Kope(std::vector<std::string> args) {
    args.insert(args.begin(), (fs::path(kope::testing::BinaryDir()) / "kope").string());
    ProcessOptions options;
    options.timeout_seconds = 120;
    options.extra_env = {"KOPE_CACHE_DIR=" +
                         (fs::path(kope::testing::BinaryDir()) / "test-cache").string()};
    auto r = RunProcess(args, options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }

  fs::path dir_;
  std::string store_;
  NodeId insight_ = 0;
};

TEST_F(ContextCommand, StoredTaskAndNodePrintItemsWithScoresAndTokens) {
  ProcessResult r = Kope({"context", "t1", "--node", "a3", "--store", store_, "--budget", "4000"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("of a budget of 4000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lineage"), std::string::npos);
  EXPECT_NE(r.output.find("insight:" + std::to_string(insight_)), std::string::npos);
  EXPECT_NE(r.output.find("==== system prompt ===="), std::string::npos);
  EXPECT_NE(r.output.find("==== user prompt ===="), std::string::npos);
  EXPECT_NE(r.output.find("attempt a3"), std::string::npos);

  ProcessResult summary = Kope({"context", "t1", "--node", "a3", "--store", store_, "--summary"});
  ASSERT_EQ(summary.exit_code, 0) << summary.output;
  EXPECT_EQ(summary.output.find("==== user prompt ===="), std::string::npos);
}

TEST_F(ContextCommand, TaskFolderAndJson) {
  const std::string task =
      (fs::path(kope::testing::SourceDir()) / "examples/softmax_rows").string();
  ProcessResult r = Kope({"context", task, "--store", store_, "--budget", "6000", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["mode"], "active");
  EXPECT_LE(j["total_tokens"].get<int64_t>(), 6000);
  EXPECT_NE(j["user_prompt"].get<std::string>().find("x: f32 [rows, cols]"), std::string::npos);
  EXPECT_FALSE(j["items"].empty());

  ProcessResult passive =
      Kope({"context", "t1", "--node", "a3", "--store", store_, "--passive", "--summary"});
  ASSERT_EQ(passive.exit_code, 0) << passive.output;
  EXPECT_NE(passive.output.find("passive mode"), std::string::npos);
  EXPECT_NE(passive.output.find("history"), std::string::npos);
}

TEST_F(ContextCommand, BadInputExitsTwoAndFailuresOne) {
  ProcessResult nowhere = Kope({"context", "no/such/task", "--store", store_});
  EXPECT_EQ(nowhere.exit_code, 2) << nowhere.output;
  EXPECT_NE(nowhere.output.find("neither a task folder nor a task node"), std::string::npos);

  ProcessResult tiny = Kope({"context", "t1", "--node", "a3", "--store", store_, "--budget", "50"});
  EXPECT_EQ(tiny.exit_code, 2) << tiny.output;
  EXPECT_NE(tiny.output.find("too small"), std::string::npos);

  ProcessResult node = Kope({"context", "t1", "--node", "i1", "--store", store_});
  EXPECT_EQ(node.exit_code, 2) << node.output;

  ProcessResult missing = Kope({"context", "t1", "--store", (dir_ / "none.db").string()});
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_FALSE(fs::exists(dir_ / "none.db"));
}

}  // namespace
}  // namespace kope
