// OutcomeJson: the bytes `kope memory show` prints for an outcome, and the export's outcome
// line built from the same fields with the attempt named by its key.
#include "kope/memory/outcome_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "kope/memory/exchange.h"
#include "test_graph.h"

namespace kope::memory {
namespace {

OutcomeNode Sample() {
  OutcomeNode o;
  o.id = 12;
  o.key = std::string(32, 'e');
  o.attempt_id = 7;
  o.verdict = "valid";
  o.speedup = 2.5;
  o.time_ms = 0.125;
  o.error_signature = "";
  o.evidence_json = R"({"median_ms":0.125,"trials":5})";
  o.created_at = 1700000000000;
  return o;
}

TEST(OutcomeJsonTest, WritesTheFieldsWithTheStoreIds) {
  EXPECT_EQ(OutcomeJson(Sample()),
            R"({"attempt":7,"created_at":1700000000000,"error_message":"","error_signature":"",)"
            R"("evidence":{"median_ms":0.125,"trials":5},"flagged":false,"id":12,"key":")" +
                std::string(32, 'e') +
                R"(","roofline":null,"speedup":2.5,"stage":"unit","time_ms":0.125,)"
                R"("verdict":"valid"})");
}

TEST(OutcomeJsonTest, EvidenceThatIsNotAnObjectAndBadUtf8AreWrittenSafely) {
  OutcomeNode o = Sample();
  o.evidence_json = "not json";
  o.error_message = "bad \xff byte";
  const std::string text = OutcomeJson(o);
  EXPECT_NE(text.find(R"("evidence":{})"), std::string::npos) << text;
  EXPECT_NE(text.find("\"error_message\":\"bad \xef\xbf\xbd byte\""), std::string::npos) << text;
}

TEST(OutcomeJsonTest, TheExportNamesTheAttemptByItsKey) {
  testing::TempDir dir;
  auto store = testing::OpenOrDie(dir / "s.db");
  EvaluationRecord r;
  r.task = testing::MakeTask("t", "f", 8);
  r.hardware = testing::MakeHardware("cpu", "d", "x86");
  r.attempt.decision = "d";
  r.source = "src";
  r.outcome = testing::Valid(2.0);
  RecordedIds ids = testing::ValueOrDie(RecordEvaluation(*store, r));
  std::vector<OutcomeNode> outcomes = testing::ValueOrDie(store->Outcomes(ids.attempt));
  ASSERT_EQ(outcomes.size(), 1u);
  const std::string attempt_key = testing::ValueOrDie(store->GetAttempt(ids.attempt)).key;

  std::ostringstream out;
  ASSERT_TRUE(ExportJsonl(*store, ExportFilter{}, out).ok());
  std::string line;
  std::istringstream lines(out.str());
  while (std::getline(lines, line) && line.find(R"("type":"outcome")") == std::string::npos) {
  }
  nlohmann::json exported = nlohmann::json::parse(line);
  exported.erase("type");
  nlohmann::json shown = nlohmann::json::parse(OutcomeJson(outcomes[0]));
  shown.erase("id");
  shown["attempt"] = attempt_key;
  EXPECT_EQ(exported, shown);
}

}  // namespace
}  // namespace kope::memory
