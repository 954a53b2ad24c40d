// Experience packs: export, import, merging without duplicates, family subgraphs, bad lines.
#include "kope/memory/exchange.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <tuple>

#include "test_graph.h"
#include "testing/test_stores.h"

namespace kope::memory {
namespace {

using testing::KernelSource;
using testing::MakeHardware;
using testing::MakeTask;
using testing::TempDir;
using testing::ValueOrDie;

struct Ids {
  NodeId softmax_root = 0, softmax_child = 0, transfer = 0, matmul_root = 0, insight = 0;
};

// Two families; the matmul attempt `transfer` derives from a softmax attempt (a transferred
// kernel), so that the matmul subgraph must carry that softmax ancestor along.
Ids Fill(GraphStore& store, const std::string& tag = "") {
  Ids ids;
  Status s = store.Write([&](GraphWriter& w) -> Status {
    KOPE_ASSIGN_OR_RETURN(NodeId hw, w.PutHardware(MakeHardware("cuda", "NVIDIA H100", "sm_90")));
    KOPE_ASSIGN_OR_RETURN(NodeId sm, w.PutTask(MakeTask("softmax_rows" + tag, "softmax", 1e5)));
    KOPE_ASSIGN_OR_RETURN(NodeId mm, w.PutTask(MakeTask("matmul" + tag, "matmul", 1e6)));
    RunNode r1;
    r1.task_id = sm;
    r1.hardware_id = hw;
    r1.config_json = R"({"budget":{"attempts":30}})";
    KOPE_ASSIGN_OR_RETURN(NodeId run1, w.PutRun(r1));
    RunNode r2 = r1;
    r2.task_id = mm;
    KOPE_ASSIGN_OR_RETURN(NodeId run2, w.PutRun(r2));
    auto attempt = [&](NodeId run, NodeId parent, const std::string& decision, int variant,
                       OutcomeNode o) -> Result<NodeId> {
      AttemptNode a;
      a.run_id = run;
      a.parent_id = parent;
      a.decision = decision;
      a.prompt_tokens = 1000 + variant;
      a.cost_usd = 0.25 * variant;
      KOPE_ASSIGN_OR_RETURN(NodeId id, w.PutAttempt(a, KernelSource(6, variant, decision)));
      o.attempt_id = id;
      KOPE_RETURN_IF_ERROR(w.PutOutcome(o).status());
      return id;
    };
    KOPE_ASSIGN_OR_RETURN(ids.softmax_root,
                          attempt(run1, 0, "baseline" + tag, 0, testing::Valid(1)));
    KOPE_ASSIGN_OR_RETURN(ids.softmax_child,
                          attempt(run1, ids.softmax_root, "float4 loads", 1, testing::Valid(1.6)));
    KOPE_ASSIGN_OR_RETURN(ids.matmul_root,
                          attempt(run2, 0, "naive matmul", 2,
                                  testing::Failed("compile_error", "x.cu(3): error: oops")));
    KOPE_ASSIGN_OR_RETURN(
        ids.transfer,
        attempt(run2, ids.softmax_child, "transfer the float4 kernel", 3, testing::Valid(2.5)));
    InsightNode insight;
    insight.text = "float4 loads give 1.6x on softmax rows";
    insight.scope.op_family = "softmax";
    insight.classes = {"vectorize-loads"};
    KOPE_ASSIGN_OR_RETURN(ids.insight, w.PutInsight(insight));
    auto outcomes = store.Outcomes(ids.softmax_child);
    KOPE_RETURN_IF_ERROR(outcomes.status());
    KOPE_RETURN_IF_ERROR(
        w.AddEvidence({ids.insight, outcomes->front().id, EvidenceRelation::kSupportedBy, 1.6, 0})
            .status());
    KOPE_RETURN_IF_ERROR(w.AddUsed({ids.softmax_child,
                                    {NodeKind::kInsight, ids.insight},
                                    "insights",
                                    0.9,
                                    30,
                                    std::nullopt})
                             .status());
    KOPE_RETURN_IF_ERROR(w.AddUsed({ids.transfer,
                                    {NodeKind::kAttempt, ids.softmax_child},
                                    "exemplars",
                                    0.8,
                                    200,
                                    std::nullopt})
                             .status());
    return w.CreditUsed(ids.softmax_child, 0.6).status();
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return ids;
}

std::vector<std::string> RecordLines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  std::string line;
  std::getline(in, line);  // the header carries the export time
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

int64_t Nodes(const StoreStats& s) {
  return s.tasks + s.hardware + s.runs + s.attempts + s.outcomes + s.insights;
}

// Exports from the first store kind, imports into the second: a laptop's graph joins the team's
// (SQLite to PostgreSQL) and the other way round.
class ExchangeTest
    : public ::testing::TestWithParam<std::tuple<testing::StoreKind, testing::StoreKind>> {
 protected:
  // A fresh store: the exporting kind for "a", the importing kind for the others.
  std::unique_ptr<GraphStore> Open(const std::string& name) {
    testing::StoreKind kind = name == "a.db" ? std::get<0>(GetParam()) : std::get<1>(GetParam());
    testing::TestStoreLocation where = testing::NewStoreLocation(kind, dir_.path(), name);
    if (where.location.empty()) std::abort();  // SetUp skipped the test where a kind is missing
    return testing::OpenLocationOrDie(where.location);
  }
  void SetUp() override {
    for (testing::StoreKind kind : {std::get<0>(GetParam()), std::get<1>(GetParam())}) {
      testing::TestStoreLocation where = testing::NewStoreLocation(kind, dir_.path(), "probe.db");
      if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
    }
  }
  TempDir dir_;
};

TEST_P(ExchangeTest, WholeGraphRoundTripsAndReimportAddsNothing) {
  auto a = Open("a.db");
  Ids ids = Fill(*a);
  ExchangeReport out = ValueOrDie(ExportJsonlFile(*a, {}, dir_ / "pack.jsonl"));
  EXPECT_EQ(out.records["attempt"], 4);
  EXPECT_EQ(out.records["source"], 4);
  EXPECT_EQ(out.records["used"], 2);

  auto b = Open("b.db");
  ExchangeReport in = ValueOrDie(ImportJsonlFile(*b, dir_ / "pack.jsonl"));
  StoreStats sa = ValueOrDie(a->Stats()), sb = ValueOrDie(b->Stats());
  EXPECT_EQ(in.new_nodes, Nodes(sa));
  EXPECT_EQ(in.new_edges, 3);
  EXPECT_EQ(Nodes(sb), Nodes(sa));
  EXPECT_EQ(sb.sources, sa.sources);

  // The same graph: a second export is identical record for record.
  ValueOrDie(ExportJsonlFile(*b, {}, dir_ / "again.jsonl"));
  EXPECT_EQ(RecordLines(dir_ / "pack.jsonl"), RecordLines(dir_ / "again.jsonl"));

  // Derived state came along: lineage, insight counts, credit.
  AttemptNode transfer = ValueOrDie(a->GetAttempt(ids.transfer));
  NodeId transfer_b = ValueOrDie(b->FindByKey(NodeKind::kAttempt, transfer.key));
  std::vector<AttemptView> lineage = ValueOrDie(b->Lineage(transfer_b));
  ASSERT_EQ(lineage.size(), 3u);
  EXPECT_EQ(lineage[0].attempt.decision, "baseline");
  EXPECT_EQ(lineage[2].attempt.diff, transfer.diff);
  EXPECT_EQ(lineage[1].attempt.prompt_tokens, 1001);
  EXPECT_EQ(lineage[1].attempt.cost_usd, 0.25);  // as written, through both stores
  NodeId insight_b =
      ValueOrDie(b->FindByKey(NodeKind::kInsight, ValueOrDie(a->GetInsight(ids.insight)).key));
  EXPECT_EQ(ValueOrDie(b->GetInsight(insight_b)).support, 1);
  EXPECT_NEAR(ValueOrDie(b->GetInsight(insight_b)).effect_size, 1.6, 1e-12);
  UsageStats usage = ValueOrDie(b->Usage({{NodeKind::kInsight, insight_b}}))[0];
  EXPECT_EQ(usage.shown, 1);
  EXPECT_NEAR(usage.credit, 0.6, 1e-12);  // its attempt's only used edge

  // Importing the same pack again changes nothing.
  ExchangeReport twice = ValueOrDie(ImportJsonlFile(*b, dir_ / "pack.jsonl"));
  EXPECT_EQ(twice.new_nodes, 0);
  EXPECT_EQ(twice.new_edges, 0);
  EXPECT_EQ(ValueOrDie(b->GetInsight(insight_b)).support, 1);
  EXPECT_EQ(ValueOrDie(b->Usage({{NodeKind::kInsight, insight_b}}))[0].shown, 1);
  KOPE_ASSERT_OK(b->CheckIntegrity());
}

TEST_P(ExchangeTest, PacksFromTwoStoresMerge) {
  auto a = Open("a.db");
  auto b = Open("b.db");
  Fill(*a);
  Fill(*b, "_b");  // shares the hardware and the insight (same content), not the tasks
  ValueOrDie(ExportJsonlFile(*a, {}, dir_ / "a.jsonl"));
  StoreStats before = ValueOrDie(b->Stats());
  ExchangeReport in = ValueOrDie(ImportJsonlFile(*b, dir_ / "a.jsonl"));
  StoreStats after = ValueOrDie(b->Stats());
  EXPECT_EQ(after.hardware, 1);
  EXPECT_EQ(after.insights, 1);
  EXPECT_EQ(after.tasks, 4);
  EXPECT_EQ(after.attempts, 8);
  EXPECT_EQ(in.new_nodes, Nodes(after) - Nodes(before));
  // The shared insight now has the evidence of both stores.
  std::vector<RankedInsight> insights = ValueOrDie(b->FindInsights(testing::InFamily("softmax")));
  ASSERT_EQ(insights.size(), 1u);
  EXPECT_EQ(insights[0].insight.support, 2);
}

TEST_P(ExchangeTest, FamilySubgraphIsClosed) {
  auto a = Open("a.db");
  Ids ids = Fill(*a);
  ExchangeReport matmul =
      ValueOrDie(ExportJsonlFile(*a, ExportFilter{"matmul"}, dir_ / "matmul.jsonl"));
  // Both matmul attempts, plus the softmax ancestors of the transferred kernel and their task.
  EXPECT_EQ(matmul.records["attempt"], 4);
  EXPECT_EQ(matmul.records["task"], 2);
  EXPECT_EQ(matmul.records["insight"], 0);
  EXPECT_EQ(matmul.records["evidence"], 0);
  EXPECT_EQ(matmul.records["used"], 1);  // transfer used the softmax exemplar, which came along
  auto c = Open("c.db");
  ValueOrDie(ImportJsonlFile(*c, dir_ / "matmul.jsonl"));
  EXPECT_EQ(ValueOrDie(c->Stats()).attempts, 4);

  ExchangeReport softmax =
      ValueOrDie(ExportJsonlFile(*a, ExportFilter{"softmax"}, dir_ / "softmax.jsonl"));
  EXPECT_EQ(softmax.records["task"], 1);
  EXPECT_EQ(softmax.records["attempt"], 2);
  EXPECT_EQ(softmax.records["insight"], 1);
  EXPECT_EQ(softmax.records["evidence"], 1);
  EXPECT_EQ(softmax.records["used"], 1);  // the edge from the matmul attempt stays behind
  auto d = Open("d.db");
  ValueOrDie(ImportJsonlFile(*d, dir_ / "softmax.jsonl"));
  EXPECT_EQ(ValueOrDie(d->FindInsights(testing::InFamily("softmax")))[0].insight.support, 1);
  (void)ids;
}

TEST_P(ExchangeTest, MalformedLinesNameTheLineAndImportNothing) {
  auto a = Open("a.db");
  Fill(*a);
  ValueOrDie(ExportJsonlFile(*a, {}, dir_ / "pack.jsonl"));
  std::vector<std::string> lines;
  {
    std::ifstream in(dir_ / "pack.jsonl");
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  ASSERT_GT(lines.size(), 12u);
  struct Breakage {
    const char* what;
    size_t line;  // 0-based line to replace
    std::string replacement;
    const char* message;
  };
  const std::string key(32, 'a');
  std::vector<Breakage> cases = {
      {"not JSON", 7, "{\"type\": \"attempt\", ", "not valid JSON"},
      {"number too large", 6, R"({"type":"attempt","n":1796e186006208})", "not valid JSON"},
      {"unknown type", 5, R"({"type":"widget"})", "unknown record type 'widget'"},
      {"missing field", 1, R"({"type":"task","key":")" + key + R"("})", "field 'name'"},
      {"bad verdict", lines.size() - 6,
       R"({"type":"outcome","key":")" + key + R"(","attempt":")" + key +
           R"(","stage":"unit","verdict":"fast"})",
       "unknown verdict 'fast'"},
      {"dangling reference", 4,
       R"({"type":"run","key":")" + key + R"(","task":")" + std::string(32, 'b') +
           R"(","hardware":")" + std::string(32, 'c') + R"("})",
       "neither earlier in the file nor in the store"},
      {"no header", 0, R"({"type":"task"})", "first line must be the kope-experience header"},
  };
  auto b = Open("b.db");
  Fill(*b, "_b");
  StoreStats before = ValueOrDie(b->Stats());
  for (const Breakage& c : cases) {
    std::vector<std::string> broken = lines;
    broken[c.line] = c.replacement;
    // Keep the broken line late in the file where possible: the earlier lines are fine and must
    // not be imported either.
    std::ofstream out(dir_ / "broken.jsonl", std::ios::trunc);
    for (const std::string& l : broken) out << l << "\n";
    out.close();
    auto result = ImportJsonlFile(*b, dir_ / "broken.jsonl");
    ASSERT_FALSE(result.ok()) << c.what;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << c.what;
    const std::string& message = result.status().message();
    EXPECT_NE(message.find("broken.jsonl:" + std::to_string(c.line + 1) + ": "), std::string::npos)
        << c.what << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
    StoreStats after = ValueOrDie(b->Stats());
    EXPECT_EQ(Nodes(after), Nodes(before)) << c.what;
    EXPECT_EQ(after.sources, before.sources) << c.what;
  }
  EXPECT_EQ(ImportJsonlFile(*b, dir_ / "missing.jsonl").status().code(), StatusCode::kIoError);
}

TEST_P(ExchangeTest, TamperedSourceIsRejected) {
  auto a = Open("a.db");
  Fill(*a);
  std::ostringstream pack;
  ValueOrDie(ExportJsonl(*a, {}, pack));
  std::string text = pack.str();
  size_t pos = text.find("x[0] += 1;");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 10, "x[0] -= 1;");
  testing::WriteBytes(dir_ / "tampered.jsonl", text);
  auto b = Open("b.db");
  auto result = ImportJsonlFile(*b, dir_ / "tampered.jsonl");
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("does not match its hash"), std::string::npos)
      << result.status().message();
  EXPECT_EQ(Nodes(ValueOrDie(b->Stats())), 0);
}

std::string ExchangeName(
    const ::testing::TestParamInfo<std::tuple<testing::StoreKind, testing::StoreKind>>& info) {
  auto name = [](testing::StoreKind kind) {
    return testing::StoreKindName(::testing::TestParamInfo<testing::StoreKind>(kind, 0));
  };
  return name(std::get<0>(info.param)) + "To" + name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(BothStores, ExchangeTest,
                         ::testing::Combine(::testing::Values(testing::StoreKind::kSqlite,
                                                              testing::StoreKind::kPostgres),
                                            ::testing::Values(testing::StoreKind::kSqlite,
                                                              testing::StoreKind::kPostgres)),
                         ExchangeName);

}  // namespace
}  // namespace kope::memory
