// Workload nodes, from_workload edges and deployment reports in both stores: upserts, edges to
// existing nodes only, refused values, and the queries from either end.
#include <gtest/gtest.h>

#include "test_graph.h"
#include "testing/test_stores.h"

namespace kope::memory {
namespace {

using testing::TempDir;
using testing::ValueOrDie;

class WorkloadNodesTest : public ::testing::TestWithParam<testing::StoreKind> {
 protected:
  void SetUp() override {
    testing::TestStoreLocation where = testing::NewStoreLocation(GetParam(), dir_.path());
    if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
    location_ = where.location;
    store_ = testing::OpenLocationOrDie(location_);
    KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(task_, w.PutTask(testing::MakeTask("rmsnorm", "norm", 4096)));
      WorkloadNode workload;
      workload.name = "chat";
      workload.workload_hash = "abc";
      workload.attrs_json = R"({"device":"cuda"})";
      KOPE_ASSIGN_OR_RETURN(workload_, w.PutWorkload(workload));
      return Status::Ok();
    }));
  }

  Result<bool> AddEdge(FromWorkloadEdge edge) {
    Result<bool> added = false;
    Status status = store_->Write([&](GraphWriter& w) -> Status {
      added = w.AddFromWorkload(edge);
      return added.status();
    });
    if (!status.ok()) return status;
    return added;
  }

  FromWorkloadEdge Edge(double weight = 0.25) const {
    FromWorkloadEdge e;
    e.workload_id = workload_;
    e.task_id = task_;
    e.phases = {"decode", "prefill"};
    e.weight = weight;
    return e;
  }

  TempDir dir_;
  std::string location_;
  std::unique_ptr<GraphStore> store_;
  NodeId task_ = 0;
  NodeId workload_ = 0;
};

TEST_P(WorkloadNodesTest, AWorkloadIsOneNodePerNameAndHash) {
  WorkloadNode stored = ValueOrDie(store_->GetWorkload(workload_));
  EXPECT_EQ(stored.key, WorkloadKey("chat", "abc"));
  EXPECT_EQ(stored.attrs_json, R"({"device":"cuda"})");
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    WorkloadNode same;
    same.name = "chat";
    same.workload_hash = "abc";
    EXPECT_EQ(ValueOrDie(w.PutWorkload(same)), workload_);
    same.workload_hash = "def";
    EXPECT_NE(ValueOrDie(w.PutWorkload(same)), workload_);
    return Status::Ok();
  }));
  EXPECT_EQ(ValueOrDie(store_->ListWorkloads()).size(), 2u);
  EXPECT_EQ(ValueOrDie(store_->FindByKey(NodeKind::kWorkload, WorkloadKey("chat", "abc"))),
            workload_);
  EXPECT_EQ(FormatNodeRef(ValueOrDie(ParseNodeRef("w2"))), "workload:2");
}

TEST_P(WorkloadNodesTest, AnEdgeIsAddedOnce) {
  EXPECT_TRUE(ValueOrDie(AddEdge(Edge())));
  EXPECT_FALSE(ValueOrDie(AddEdge(Edge(0.5))));  // exists: unchanged
  std::vector<FromWorkloadEdge> edges = ValueOrDie(store_->WorkloadTasks(workload_));
  ASSERT_EQ(edges.size(), 1u);
  EXPECT_EQ(edges[0].task_id, task_);
  EXPECT_EQ(edges[0].phases, (std::vector<std::string>{"decode", "prefill"}));
  EXPECT_EQ(edges[0].weight, 0.25);
  EXPECT_EQ(ValueOrDie(store_->TaskWorkloads(task_)).front().workload_id, workload_);
  StoreStats stats = ValueOrDie(store_->Stats());
  EXPECT_EQ(stats.workloads, 1);
  EXPECT_EQ(stats.from_workload_edges, 1);
  KOPE_ASSERT_OK(store_->CheckIntegrity());
}

TEST_P(WorkloadNodesTest, RefusesWhatBreaksTheModel) {
  FromWorkloadEdge no_task = Edge();
  no_task.task_id = 99;
  FromWorkloadEdge no_workload = Edge();
  no_workload.workload_id = 99;
  FromWorkloadEdge bad_attrs = Edge();
  bad_attrs.attrs_json = "[]";
  for (const FromWorkloadEdge& e : {no_task, no_workload, Edge(1.5), Edge(-0.1), bad_attrs}) {
    Result<bool> added = AddEdge(e);
    ASSERT_FALSE(added.ok());
    EXPECT_EQ(added.status().code(), StatusCode::kInvalidArgument) << added.status().message();
  }
  Status nameless = store_->Write(
      [](GraphWriter& w) -> Status { return w.PutWorkload(WorkloadNode{}).status(); });
  EXPECT_EQ(nameless.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValueOrDie(store_->Stats()).from_workload_edges, 0);
  EXPECT_EQ(store_->GetWorkload(99).status().code(), StatusCode::kNotFound);
}

TEST_P(WorkloadNodesTest, ADeploymentReportIsKeptOncePerContent) {
  auto add = [&](NodeId workload, std::string report) -> Result<NodeId> {
    Result<NodeId> id = NodeId{0};
    Status status = store_->Write([&](GraphWriter& w) -> Status {
      DeploymentRecord d;
      d.workload_id = workload;
      d.report_json = std::move(report);
      id = w.AddDeployment(d);
      return id.status();
    });
    if (!status.ok()) return status;
    return id;
  };
  const NodeId first = ValueOrDie(add(workload_, R"({"patches":["rmsnorm"]})"));
  EXPECT_EQ(ValueOrDie(add(workload_, R"({"patches":["rmsnorm"]})")), first);  // the same one
  const NodeId second = ValueOrDie(add(workload_, R"({"patches":[]})"));
  EXPECT_NE(second, first);
  std::vector<DeploymentRecord> kept = ValueOrDie(store_->WorkloadDeployments(workload_));
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].id, first);
  EXPECT_EQ(kept[0].report_json, R"({"patches":["rmsnorm"]})");
  EXPECT_EQ(kept[1].key, DeploymentKey(WorkloadKey("chat", "abc"), R"({"patches":[]})"));
  EXPECT_GT(kept[1].created_at, 0);
  EXPECT_EQ(add(99, "{}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add(workload_, "[1]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValueOrDie(store_->WorkloadDeployments(99)).empty());
  EXPECT_EQ(ValueOrDie(store_->Stats()).deployments, 2);
}

INSTANTIATE_TEST_SUITE_P(BothStores, WorkloadNodesTest, KOPE_ALL_STORES);

}  // namespace
}  // namespace kope::memory
