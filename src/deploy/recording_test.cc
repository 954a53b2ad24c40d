// Recording a profile's tasks in a real SQLite store: the task and workload nodes, the
// from_workload edges, idempotence, and nothing written when a task folder does not load.
#include "kope/deploy/recording.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "kope/base/temp_folder.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "testing/test_paths.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RecordingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempFolder> dir = TempFolder::Create("", "kope-deploy-test");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = std::move(*dir);
    const fs::path source = kope::testing::SourceDir();
    // The sample profile's two task folders, standing in for extracted ones.
    fs::create_directories(out() / "tasks");
    fs::copy(source / "examples/gelu", out() / "tasks/llamamlp_decode");
    fs::copy(source / "examples/rmsnorm", out() / "tasks/llamarmsnorm");
    Result<Profile> profile = ReadProfile(source / "src/deploy/testdata/profile/profile.json");
    ASSERT_TRUE(profile.ok()) << profile.status().message();
    profile_ = *profile;
    Result<Workload> workload =
        LoadWorkload(source / "src/deploy/testdata/workloads/tiny_llama.toml");
    ASSERT_TRUE(workload.ok()) << workload.status().message();
    workload_ = *workload;
    Result<std::unique_ptr<memory::GraphStore>> store =
        memory::OpenSqliteStore(dir_.path() / "experience.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
  }

  fs::path out() const { return dir_.path() / "out"; }

  Result<RecordedWorkload> Record() {
    return RecordWorkloadTasks(*store_, workload_, WorkloadToJson(workload_), profile_, out());
  }

  TempFolder dir_;
  Profile profile_;
  Workload workload_;
  std::unique_ptr<memory::GraphStore> store_;
};

TEST_F(RecordingTest, WritesTasksAWorkloadAndItsEdges) {
  Result<RecordedWorkload> r = Record();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->new_edges, 2);
  ASSERT_EQ(r->task_ids.size(), 2u);

  memory::WorkloadNode w = *store_->GetWorkload(r->workload_id);
  EXPECT_EQ(w.name, "tiny-llama");
  EXPECT_EQ(w.key, memory::WorkloadKey(w.name, w.workload_hash));
  EXPECT_EQ(json::parse(w.attrs_json)["device"], "cpu");

  memory::TaskNode mlp = *store_->GetTask(r->task_ids[0]);
  EXPECT_EQ(mlp.name, "gelu");
  json attrs = json::parse(mlp.attrs_json);
  EXPECT_EQ(attrs["language"], "cpp");  // the CPU backend's, as kope optimize records it
  EXPECT_EQ(attrs["workload"]["name"], "tiny-llama");
  EXPECT_EQ(attrs["workload"]["hash"], w.workload_hash);
  EXPECT_EQ(attrs["phases"], json({"decode", "prefill"}));
  EXPECT_EQ(attrs["weight"], 0.312);

  std::vector<memory::FromWorkloadEdge> edges = *store_->WorkloadTasks(r->workload_id);
  ASSERT_EQ(edges.size(), 2u);
  EXPECT_EQ(edges[0].task_id, r->task_ids[0]);
  EXPECT_EQ(edges[0].phases, (std::vector<std::string>{"decode", "prefill"}));
  EXPECT_EQ(edges[0].weight, 0.312);
  EXPECT_EQ(json::parse(edges[0].attrs_json)["rank"], 1);
  EXPECT_EQ(edges[1].phases, (std::vector<std::string>{"prefill"}));
  EXPECT_EQ(store_->TaskWorkloads(r->task_ids[1])->front().workload_id, r->workload_id);

  memory::StoreStats stats = *store_->Stats();
  EXPECT_EQ(stats.tasks, 2);
  EXPECT_EQ(stats.workloads, 1);
  EXPECT_EQ(stats.from_workload_edges, 2);
  EXPECT_TRUE(store_->CheckIntegrity().ok());
}

TEST_F(RecordingTest, RecordingTwiceAddsNothing) {
  Result<RecordedWorkload> first = Record();
  ASSERT_TRUE(first.ok()) << first.status().message();
  Result<RecordedWorkload> second = Record();
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->workload_id, first->workload_id);
  EXPECT_EQ(second->task_ids, first->task_ids);
  EXPECT_EQ(second->new_edges, 0);
  memory::StoreStats stats = *store_->Stats();
  EXPECT_EQ(stats.tasks, 2);
  EXPECT_EQ(stats.workloads, 1);
  EXPECT_EQ(stats.from_workload_edges, 2);
}

TEST_F(RecordingTest, AnotherWorkloadIsAnotherNodeOverTheSameTasks) {
  ASSERT_TRUE(Record().ok());
  workload_.requests[0].batch = 4;
  Result<RecordedWorkload> r = Record();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->new_edges, 2);
  memory::StoreStats stats = *store_->Stats();
  EXPECT_EQ(stats.tasks, 2);
  EXPECT_EQ(stats.workloads, 2);
  EXPECT_EQ(store_->TaskWorkloads(r->task_ids[0])->size(), 2u);
}

TEST_F(RecordingTest, ATaskThatDoesNotLoadWritesNothing) {
  fs::remove(out() / "tasks/llamarmsnorm/task.toml");
  Result<RecordedWorkload> r = Record();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("task llamarmsnorm of the profile"), std::string::npos)
      << r.status().message();
  memory::StoreStats stats = *store_->Stats();
  EXPECT_EQ(stats.tasks, 0);
  EXPECT_EQ(stats.workloads, 0);
}

}  // namespace
}  // namespace kope::deploy
