// A store written by schema version 1 (testdata/store_v1.db, made by testdata/make_v1_fixture.cc)
// opens in this build, migrated through every later version, with its data intact and usable.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/memory/text/error_signature.h"
#include "test_graph.h"
#include "testing/test_paths.h"

namespace kope::memory {
namespace {

using testing::TempDir;
using testing::ValueOrDie;

int64_t UserVersion(const std::filesystem::path& file) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nullptr);
  int64_t version = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return version;
}

bool HasIndex(const std::filesystem::path& file, const char* name) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?", -1,
                     &stmt, nullptr);
  sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
  bool found = sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int64(stmt, 0) == 1;
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return found;
}

TEST(MigrationTest, VersionOneFixtureOpensMigrated) {
  TempDir dir;
  std::filesystem::path file = dir / "store_v1.db";
  std::filesystem::copy_file(
      std::filesystem::path(kope::testing::SourceDir()) / "src/memory/testdata/store_v1.db", file);
  ASSERT_EQ(UserVersion(file), 1);
  ASSERT_TRUE(HasIndex(file, "outcomes_best_family"));

  auto store = testing::OpenOrDie(file);
  StoreStats stats = ValueOrDie(store->Stats());
  EXPECT_EQ(stats.schema_version, 5);
  EXPECT_EQ(stats.workloads, 0);
  EXPECT_EQ(stats.tasks, 1);
  EXPECT_EQ(stats.attempts, 3);
  EXPECT_EQ(stats.outcomes, 3);
  EXPECT_EQ(stats.insights, 1);
  KOPE_ASSERT_OK(store->CheckIntegrity());

  // Version 2's column was backfilled from the stored error messages.
  OutcomeNode failed = ValueOrDie(store->GetOutcome(3));
  EXPECT_EQ(failed.verdict, "compile_error");
  EXPECT_EQ(failed.error_signature, NormalizeError(failed.error_message));
  EXPECT_EQ(failed.error_signature, "<file>(N): error: identifier \"tile\" is undefined");
  EXPECT_EQ(ValueOrDie(store->AttemptsWithError(failed.error_signature, "softmax", 5)).size(), 1u);
  EXPECT_EQ(ValueOrDie(store->GetOutcome(1)).error_signature, "");

  // The old data answers the queries.
  std::vector<AttemptView> lineage = ValueOrDie(store->Lineage(3));
  ASSERT_EQ(lineage.size(), 3u);
  EXPECT_EQ(lineage[1].attempt.decision, "vectorize loads with float4");
  EXPECT_EQ(lineage[1].outcome->speedup, 1.5);
  EXPECT_EQ(ValueOrDie(store->BestAttempts(testing::Best(0, "softmax", 0))).front().attempt.id, 2);
  EXPECT_EQ(ValueOrDie(store->Search(testing::Words("float4"))).size(),
            2u);  // an attempt, an insight
  InsightQuery q;
  q.op_family = "softmax";
  q.backend = "cuda";
  q.arch = "sm_90";
  EXPECT_EQ(ValueOrDie(store->FindInsights(q)).front().insight.support, 1);
  EXPECT_EQ(ValueOrDie(store->Usage({{NodeKind::kInsight, 1}})).front().credit, -0.1);

  // And takes new writes that refer to it.
  KOPE_ASSERT_OK(store->Write([&](GraphWriter& w) -> Status {
    AttemptNode a;
    a.run_id = 1;
    a.parent_id = 2;
    a.decision = "warp shuffle for the row max";
    KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutAttempt(a, "__shfl_xor_sync"));
    OutcomeNode o = testing::Valid(2.0);
    o.attempt_id = id;
    return w.PutOutcome(o).status();
  }));
  EXPECT_EQ(ValueOrDie(store->Children(2)).size(), 2u);
  // Version 4's workloads take a workload and its from_workload edge to the old task.
  KOPE_ASSERT_OK(store->Write([&](GraphWriter& w) -> Status {
    WorkloadNode workload;
    workload.name = "chat";
    workload.workload_hash = "h";
    KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutWorkload(workload));
    FromWorkloadEdge edge;
    edge.workload_id = id;
    edge.task_id = 1;
    edge.phases = {"decode"};
    edge.weight = 0.5;
    return w.AddFromWorkload(edge).status();
  }));
  EXPECT_EQ(ValueOrDie(store->TaskWorkloads(1)).size(), 1u);
  // Version 5: the old attempts cost nothing known; a deployment report is taken.
  EXPECT_EQ(ValueOrDie(store->GetAttempt(1)).cost_usd, 0);
  KOPE_ASSERT_OK(store->Write([&](GraphWriter& w) -> Status {
    DeploymentRecord d;
    d.workload_id = 1;
    d.report_json = R"({"format":"kope-validation-1"})";
    return w.AddDeployment(d).status();
  }));
  EXPECT_EQ(ValueOrDie(store->WorkloadDeployments(1)).size(), 1u);
  store.reset();
  EXPECT_EQ(UserVersion(file), 5);
  EXPECT_TRUE(HasIndex(file, "from_workload_task"));
  EXPECT_TRUE(HasIndex(file, "deployments_workload"));
  // Version 3 dropped two ranking indexes and kept the one that serves their queries.
  EXPECT_FALSE(HasIndex(file, "outcomes_best_family"));
  EXPECT_FALSE(HasIndex(file, "outcomes_best_hardware"));
  EXPECT_TRUE(HasIndex(file, "outcomes_best_hardware_family"));
  EXPECT_TRUE(HasIndex(file, "outcomes_best_task"));
  // A second open finds nothing to migrate.
  EXPECT_EQ(ValueOrDie(testing::OpenOrDie(file)->Stats()).attempts, 4);
}

}  // namespace
}  // namespace kope::memory
