// The model as every store keeps it: writes, upserts, derived fields, validation, rollback.
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "kope/base/hash.h"
#include "kope/memory/record.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "test_graph.h"
#include "testing/test_stores.h"

namespace kope::memory {
namespace {

using testing::KernelSource;
using testing::MakeHardware;
using testing::MakeTask;
using testing::TempDir;
using testing::ValueOrDie;

class StoreTest : public ::testing::TestWithParam<testing::StoreKind> {
 protected:
  void SetUp() override {
    testing::TestStoreLocation where = testing::NewStoreLocation(GetParam(), dir_.path());
    if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
    location_ = where.location;
    store_ = testing::OpenLocationOrDie(location_);
  }

  // Puts a task, hardware and run; returns the run id.
  NodeId PutRun() {
    NodeId run = 0;
    CheckOk(store_->Write([&](GraphWriter& w) -> Status {
      KOPE_ASSIGN_OR_RETURN(NodeId task, w.PutTask(MakeTask("softmax_rows", "softmax", 65536)));
      KOPE_ASSIGN_OR_RETURN(NodeId hw, w.PutHardware(MakeHardware("cpu", "Xeon", "x86_64-avx512")));
      RunNode r;
      r.task_id = task;
      r.hardware_id = hw;
      r.label = "optimize";
      KOPE_ASSIGN_OR_RETURN(run, w.PutRun(r));
      return Status::Ok();
    }));
    return run;
  }

  Result<NodeId> PutAttempt(NodeId run, NodeId parent, const std::string& decision,
                            const std::string& source) {
    NodeId id = 0;
    Status s = store_->Write([&](GraphWriter& w) -> Status {
      AttemptNode a;
      a.run_id = run;
      a.parent_id = parent;
      a.decision = decision;
      a.proposer = "test";
      KOPE_ASSIGN_OR_RETURN(id, w.PutAttempt(a, source));
      return Status::Ok();
    });
    if (!s.ok()) return s;
    return id;
  }

  // Like ASSERT for a Status inside a helper that returns a value.
  static void CheckOk(const Status& s) { ASSERT_TRUE(s.ok()) << s.ToString(); }

  TempDir dir_;
  std::string location_;
  std::unique_ptr<GraphStore> store_;
};

TEST_P(StoreTest, NewStoreIsEmptyAtTheCurrentSchema) {
  StoreStats stats = ValueOrDie(store_->Stats());
  EXPECT_EQ(stats.schema_version, kSqliteSchemaVersion);
  EXPECT_EQ(stats.tasks + stats.attempts + stats.outcomes + stats.insights, 0);
  EXPECT_GT(stats.store_bytes, 0);
  KOPE_ASSERT_OK(store_->CheckIntegrity());
}

TEST_P(StoreTest, NodesRoundTripWithAllFields) {
  NodeId run = PutRun();
  RunNode stored_run = ValueOrDie(store_->GetRun(run));
  EXPECT_EQ(stored_run.label, "optimize");
  EXPECT_TRUE(IsValidKey(stored_run.key));
  TaskNode task = ValueOrDie(store_->GetTask(stored_run.task_id));
  EXPECT_EQ(task.name, "softmax_rows");
  EXPECT_EQ(task.op_family, "softmax");
  EXPECT_EQ(task.size, 65536);
  EXPECT_EQ(task.key, TaskKey("softmax_rows", ""));
  EXPECT_GT(task.created_at, 0);
  HardwareNode hw = ValueOrDie(store_->GetHardware(stored_run.hardware_id));
  EXPECT_EQ(hw.arch, "x86_64-avx512");

  std::string source = KernelSource(5, 1, "v1");
  NodeId a = ValueOrDie(PutAttempt(run, 0, "baseline", source));
  AttemptNode attempt = ValueOrDie(store_->GetAttempt(a));
  EXPECT_EQ(attempt.run_id, run);
  EXPECT_EQ(attempt.task_id, task.id);
  EXPECT_EQ(attempt.hardware_id, hw.id);
  EXPECT_EQ(attempt.parent_id, 0);
  EXPECT_EQ(attempt.source_hash, ContentHash(source));
  EXPECT_EQ(ValueOrDie(store_->GetSource(attempt.source_hash)), source);
  EXPECT_EQ(attempt.diff, "");

  NodeId o = 0;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    OutcomeNode outcome = testing::Valid(1.25);
    outcome.attempt_id = a;
    outcome.error_message = "warning only";
    KOPE_ASSIGN_OR_RETURN(o, w.PutOutcome(outcome));
    return Status::Ok();
  }));
  OutcomeNode outcome = ValueOrDie(store_->GetOutcome(o));
  EXPECT_EQ(outcome.verdict, "valid");
  EXPECT_EQ(outcome.speedup, 1.25);
  EXPECT_EQ(outcome.op_family, "softmax");
  EXPECT_EQ(outcome.task_id, task.id);
  EXPECT_EQ(outcome.error_signature, "warning only");
  EXPECT_EQ(outcome.evidence_json, testing::Valid(1.25).evidence_json);

  EXPECT_EQ(store_->GetAttempt(999).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetTask(999).status().code(), StatusCode::kNotFound);
}

TEST_P(StoreTest, PutsAreUpsertsByContentKey) {
  NodeId run = PutRun();
  NodeId again = 0;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    KOPE_ASSIGN_OR_RETURN(again, w.PutTask(MakeTask("softmax_rows", "softmax", 65536)));
    return Status::Ok();
  }));
  EXPECT_EQ(again, ValueOrDie(store_->GetRun(run)).task_id);
  std::string source = KernelSource(4, 0, "same");
  NodeId a1 = ValueOrDie(PutAttempt(run, 0, "d", source));
  NodeId a2 = ValueOrDie(PutAttempt(run, 0, "d", source));
  EXPECT_EQ(a1, a2);
  NodeId a3 = ValueOrDie(PutAttempt(run, 0, "another decision, same source", source));
  EXPECT_NE(a3, a1);
  StoreStats stats = ValueOrDie(store_->Stats());
  EXPECT_EQ(stats.tasks, 1);
  EXPECT_EQ(stats.attempts, 2);
  EXPECT_EQ(stats.sources, 1);  // stored once
}

TEST_P(StoreTest, DiffAndClassesAreDerivedFromTheChange) {
  NodeId run = PutRun();
  std::string parent_source = "#pragma omp parallel for\nfor (i...) y[i] = x[i];\n";
  std::string child_source =
      "#pragma omp parallel for\nfor (i...) { __m256 v = _mm256_loadu_ps(x + i); }\n";
  NodeId parent = ValueOrDie(PutAttempt(run, 0, "parallelize rows", parent_source));
  NodeId child = ValueOrDie(PutAttempt(run, parent, "inner loop with AVX2", child_source));
  AttemptNode p = ValueOrDie(store_->GetAttempt(parent));
  AttemptNode c = ValueOrDie(store_->GetAttempt(child));
  EXPECT_EQ(p.classes, std::vector<std::string>{"multi-threading"});
  EXPECT_EQ(c.classes, std::vector<std::string>{"simd"});  // the pragma was already there
  EXPECT_EQ(c.parent_id, parent);
  EXPECT_NE(c.diff.find("-for (i...) y[i] = x[i];\n+for (i...) { __m256"), std::string::npos)
      << c.diff;
}

TEST_P(StoreTest, StatedClassesAreKeptBesideDerivedOnes) {
  NodeId run = PutRun();
  NodeId id = 0;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    AttemptNode a;
    a.run_id = run;
    a.decision = "unroll by 8";
    a.classes = {"tune-parameters", "my-own-tag"};
    KOPE_ASSIGN_OR_RETURN(id, w.PutAttempt(a, "x"));
    return Status::Ok();
  }));
  EXPECT_EQ(ValueOrDie(store_->GetAttempt(id)).classes,
            (std::vector<std::string>{"loop-unroll", "my-own-tag", "tune-parameters"}));
}

TEST_P(StoreTest, InvalidWritesAreRefusedAndRolledBack) {
  NodeId run = PutRun();
  NodeId a = ValueOrDie(PutAttempt(run, 0, "root", "src"));
  struct BadWrite {
    const char* what;
    std::function<Status(GraphWriter&)> write;
  };
  std::vector<BadWrite> cases = {
      {"unknown verdict",
       [&](GraphWriter& w) {
         OutcomeNode o;
         o.attempt_id = a;
         o.verdict = "great";
         return w.PutOutcome(o).status();
       }},
      {"missing attempt",
       [&](GraphWriter& w) {
         OutcomeNode o = testing::Valid(1);
         o.attempt_id = 12345;
         return w.PutOutcome(o).status();
       }},
      {"missing parent",
       [&](GraphWriter& w) {
         AttemptNode n;
         n.run_id = run;
         n.parent_id = 777;
         return w.PutAttempt(n, "s").status();
       }},
      {"missing run",
       [&](GraphWriter& w) {
         AttemptNode n;
         n.run_id = 999;
         return w.PutAttempt(n, "s").status();
       }},
      {"attrs not an object",
       [&](GraphWriter& w) {
         TaskNode t = MakeTask("x", "y", 1);
         t.attrs_json = "[1,2]";
         return w.PutTask(t).status();
       }},
      {"class with a space",
       [&](GraphWriter& w) {
         AttemptNode n;
         n.run_id = run;
         n.classes = {"two words"};
         return w.PutAttempt(n, "s2").status();
       }},
      {"speedup not finite",
       [&](GraphWriter& w) {
         OutcomeNode o = testing::Valid(1);
         o.attempt_id = a;
         o.speedup = std::numeric_limits<double>::quiet_NaN();
         return w.PutOutcome(o).status();
       }},
      {"source hash mismatch",
       [&](GraphWriter& w) {
         AttemptNode n;
         n.run_id = run;
         n.source_hash = ContentHash("other");
         return w.PutAttempt(n, "s3").status();
       }},
      {"bad key",
       [&](GraphWriter& w) {
         TaskNode t = MakeTask("x", "y", 1);
         t.key = "not-a-key";
         return w.PutTask(t).status();
       }},
  };
  for (const BadWrite& bad : cases) {
    Status s = store_->Write([&](GraphWriter& w) -> Status {
      // A good write first: it must be rolled back with the bad one.
      KOPE_RETURN_IF_ERROR(
          w.PutTask(MakeTask(std::string("rolled back ") + bad.what, "f", 1)).status());
      return bad.write(w);
    });
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad.what << ": " << s.ToString();
  }
  StoreStats stats = ValueOrDie(store_->Stats());
  EXPECT_EQ(stats.tasks, 1);
  EXPECT_EQ(stats.attempts, 1);
  EXPECT_EQ(stats.outcomes, 0);
}

TEST_P(StoreTest, ExceptionInABodyRollsBackAndPropagates) {
  EXPECT_THROW((void)store_->Write([&](GraphWriter& w) -> Status {
    (void)w.PutTask(MakeTask("t", "f", 1));
    throw std::runtime_error("boom");
  }),
               std::runtime_error);
  EXPECT_EQ(ValueOrDie(store_->Stats()).tasks, 0);
  // The store is usable afterwards.
  PutRun();
  EXPECT_EQ(ValueOrDie(store_->Stats()).tasks, 1);
}

TEST_P(StoreTest, NestedWriteIsRefusedButQueriesSeeTheBodysWrites) {
  Status nested;
  KOPE_ASSERT_OK(store_->Write([&](GraphWriter& w) -> Status {
    KOPE_ASSIGN_OR_RETURN(NodeId task, w.PutTask(MakeTask("t", "f", 1)));
    EXPECT_EQ(ValueOrDie(store_->GetTask(task)).name, "t");
    nested = store_->Write([](GraphWriter&) { return Status::Ok(); });
    return Status::Ok();
  }));
  EXPECT_EQ(nested.code(), StatusCode::kFailedPrecondition);
}

TEST_P(StoreTest, RecordEvaluationWritesEverythingInOneTransaction) {
  EvaluationRecord r;
  r.task = MakeTask("relu", "elementwise", 1 << 20, "y = max(x, 0)");
  r.hardware = MakeHardware("cpu", "Xeon", "x86_64-avx512");
  r.run.label = "eval";
  r.run.compiler = "g++ 12.2.0";
  r.attempt.decision = "baseline";
  r.attempt.proposer = "human";
  r.source = "extern \"C\" int kope_kernel(...) { return 0; }\n";
  r.outcome = testing::Valid(1.0);
  RecordedIds ids = ValueOrDie(RecordEvaluation(*store_, r));
  EXPECT_EQ(ValueOrDie(store_->GetOutcome(ids.outcome)).attempt_id, ids.attempt);
  EXPECT_EQ(ValueOrDie(store_->GetAttempt(ids.attempt)).run_id, ids.run);
  EXPECT_EQ(ValueOrDie(store_->GetRun(ids.run)).compiler, "g++ 12.2.0");

  // A second evaluation of the same task and hardware reuses them, in a new run, or in the
  // given run.
  r.attempt.decision = "second";
  RecordedIds second = ValueOrDie(RecordEvaluation(*store_, r));
  EXPECT_EQ(second.task, ids.task);
  EXPECT_EQ(second.hardware, ids.hardware);
  EXPECT_NE(second.run, ids.run);
  r.run_id = ids.run;
  r.attempt.decision = "third";
  r.attempt.parent_id = ids.attempt;
  RecordedIds third = ValueOrDie(RecordEvaluation(*store_, r));
  EXPECT_EQ(third.run, ids.run);

  // A failing part leaves nothing behind.
  r.run_id = 0;
  r.task.name = "other";
  r.outcome.verdict = "nope";
  EXPECT_FALSE(RecordEvaluation(*store_, r).ok());
  StoreStats stats = ValueOrDie(store_->Stats());
  EXPECT_EQ(stats.tasks, 1);
  EXPECT_EQ(stats.runs, 2);
  EXPECT_EQ(stats.attempts, 3);
  EXPECT_EQ(stats.outcomes, 3);
}

TEST_P(StoreTest, ThreadsAndSecondConnectionWriteConcurrently) {
  NodeId run = PutRun();
  std::unique_ptr<GraphStore> second = testing::OpenLocationOrDie(location_);
  constexpr int kPerWriter = 40;
  auto writer = [&](GraphStore* store, int tag) {
    for (int i = 0; i < kPerWriter; ++i) {
      Status s = store->Write([&](GraphWriter& w) -> Status {
        AttemptNode a;
        a.run_id = run;
        a.decision = "writer " + std::to_string(tag) + " attempt " + std::to_string(i);
        KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutAttempt(a, a.decision));
        OutcomeNode o = testing::Valid(1.0 + i);
        o.attempt_id = id;
        return w.PutOutcome(o).status();
      });
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
  };
  std::thread t1(writer, store_.get(), 1), t2(writer, store_.get(), 2), t3(writer, second.get(), 3);
  t1.join();
  t2.join();
  t3.join();
  EXPECT_EQ(ValueOrDie(store_->Stats()).attempts, 3 * kPerWriter);
  EXPECT_EQ(ValueOrDie(second->Stats()).outcomes, 3 * kPerWriter);
  KOPE_ASSERT_OK(store_->CheckIntegrity());
}

INSTANTIATE_TEST_SUITE_P(BothStores, StoreTest, KOPE_ALL_STORES);

}  // namespace
}  // namespace kope::memory
