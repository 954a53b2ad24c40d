// Ranking scenarios as data (testdata/scenarios.json): a small graph, a request, and what the
// context must show: which items, in which section, which before which, which text.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "kope/context/context_builder.h"
#include "test_graph.h"
#include "testing/test_paths.h"

namespace kope::context {
namespace {

using memory::NodeId;
using nlohmann::json;
using testing::AttemptSpec;
using testing::GraphBuilder;
using testing::InsightSpec;
using testing::TempDir;

json LoadScenarios() {
  std::ifstream in(std::string(kope::testing::SourceDir()) +
                   "/src/context/testdata/scenarios.json");
  return json::parse(in);
}

class ScenarioTest : public ::testing::TestWithParam<int> {};

Status BuildGraph(memory::GraphWriter& w, const json& s,
                  std::map<std::string, memory::NodeRef>& refs) {
  GraphBuilder b(w);
  auto id = [&](const json& j, const char* key) -> NodeId {
    return j.contains(key) && j[key].is_string() ? refs.at(j[key].get<std::string>()).id : 0;
  };
  for (const json& h : s.value("hardware", json::array())) {
    KOPE_ASSIGN_OR_RETURN(
        NodeId n, b.Hardware(h["backend"].get<std::string>(), h["device"].get<std::string>(),
                             h["arch"].get<std::string>()));
    refs[h["ref"].get<std::string>()] = {memory::NodeKind::kHardware, n};
  }
  for (const json& t : s.value("tasks", json::array())) {
    KOPE_ASSIGN_OR_RETURN(NodeId n,
                          b.Task(t["name"].get<std::string>(), t["family"].get<std::string>(),
                                 t.value("size", 0.0), t.value("description", "")));
    refs[t["ref"].get<std::string>()] = {memory::NodeKind::kTask, n};
  }
  for (const json& r : s.value("runs", json::array())) {
    KOPE_ASSIGN_OR_RETURN(NodeId n, b.Run(id(r, "task"), id(r, "hardware")));
    refs[r["ref"].get<std::string>()] = {memory::NodeKind::kRun, n};
  }
  for (const json& a : s.value("attempts", json::array())) {
    AttemptSpec spec;
    spec.run = id(a, "run");
    spec.parent = id(a, "parent");
    spec.decision = a.value("decision", "");
    spec.verdict = a.value("verdict", "valid");
    spec.speedup = a.value("speedup", 1.0);
    spec.error = a.value("error", "");
    KOPE_ASSIGN_OR_RETURN(NodeId n, b.Attempt(spec));
    refs[a["ref"].get<std::string>()] = {memory::NodeKind::kAttempt, n};
  }
  for (const json& i : s.value("insights", json::array())) {
    InsightSpec spec;
    spec.kind = i.value("kind", "lesson");
    spec.text = i["text"].get<std::string>();
    spec.scope.op_family = i.value("family", "");
    spec.scope.backend = i.value("backend", "");
    spec.scope.device = i.value("device", "");
    spec.scope.arch = i.value("arch", "");
    spec.scope.size_min = i.value("size_min", 0.0);
    spec.scope.size_max = i.value("size_max", 0.0);
    spec.support = i.value("support", 0);
    spec.contradiction = i.value("contradiction", 0);
    spec.effect = i.value("effect", 1.5);
    KOPE_ASSIGN_OR_RETURN(NodeId n, b.Insight(spec));
    refs[i["ref"].get<std::string>()] = {memory::NodeKind::kInsight, n};
  }
  for (const json& u : s.value("used", json::array())) {
    memory::UsedEdge edge;
    edge.attempt_id = id(u, "attempt");
    edge.target = refs.at(u["target"].get<std::string>());
    edge.section = "insights";
    KOPE_RETURN_IF_ERROR(w.AddUsed(edge).status());
    KOPE_RETURN_IF_ERROR(w.CreditUsed(edge.attempt_id, u["credit"].get<double>()).status());
  }
  return Status::Ok();
}

TEST_P(ScenarioTest, ContextShowsWhatItShould) {
  const json s = LoadScenarios().at(static_cast<size_t>(GetParam()));
  SCOPED_TRACE(s["name"].get<std::string>());
  TempDir dir;
  auto store = testing::OpenStore(dir / "store.db");
  std::map<std::string, memory::NodeRef> refs;
  KOPE_ASSERT_OK(store->Write([&](memory::GraphWriter& w) { return BuildGraph(w, s, refs); }));

  const json& r = s["request"];
  ContextRequest request;
  request.node = r.contains("node") ? refs.at(r["node"].get<std::string>()).id : 0;
  request.task_id = r.contains("task") ? refs.at(r["task"].get<std::string>()).id : 0;
  const auto hw =
      testing::ValueOrDie(store->GetHardware(refs.at(r["hardware"].get<std::string>()).id));
  request.hardware.backend = hw.backend;
  request.hardware.device = hw.device;
  request.hardware.architecture = hw.arch;
  request.budget_tokens = r.value("budget", 8000);
  Result<BuiltContext> built = BuildContext(*store, request);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const BuiltContext& c = *built;
  auto position = [&](const json& ref) {
    return testing::Position(c, refs.at(ref.get<std::string>()));
  };

  const json& e = s["expect"];
  for (const json& ref : e.value("present", json::array())) {
    EXPECT_GE(position(ref), 0) << ref;
  }
  for (const json& ref : e.value("absent", json::array())) {
    EXPECT_EQ(position(ref), -1) << ref;
  }
  for (const json& pair : e.value("before", json::array())) {
    const int first = position(pair[0]);
    const int second = position(pair[1]);
    EXPECT_GE(first, 0) << pair[0];
    EXPECT_GE(second, 0) << pair[1];
    EXPECT_LT(first, second) << pair[0] << " should come before " << pair[1];
  }
  const json sections = e.value("section", json::object());
  for (const auto& [ref, section] : sections.items()) {
    const ContextItem* item = testing::FindItem(c, refs.at(ref));
    ASSERT_NE(item, nullptr) << ref;
    EXPECT_EQ(SectionName(item->section), section.get<std::string>()) << ref;
  }
  for (const json& text : e.value("contains", json::array())) {
    EXPECT_NE(c.user_prompt.find(text.get<std::string>()), std::string::npos) << text;
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioTest,
                         ::testing::Range(0, static_cast<int>(LoadScenarios().size())));

}  // namespace
}  // namespace kope::context
