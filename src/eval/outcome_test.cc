// The outcome's JSON record and text report (outcome.h): the evidence behind a flag.
#include "kope/eval/outcome.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kope {
namespace {

Outcome ValidOutcome() {
  Outcome o;
  o.verdict = Verdict::kValid;
  o.task = "t";
  o.candidate_time = TimingSummary{};
  o.candidate_time->median_s = 20e-6;
  o.candidate_time->samples = 100;
  o.baseline_time = o.candidate_time;
  o.speedup = 1.0;
  return o;
}

TEST(OutcomeTest, TheFastestVerifiedCallIsRecordedAndShownWithItsFlag) {
  Outcome o = ValidOutcome();
  o.fastest_verified_bench_s = 250e-6;
  nlohmann::json j = nlohmann::json::parse(OutcomeToJson(o));
  EXPECT_DOUBLE_EQ(j["fastest_verified_bench_s"].get<double>(), 250e-6);
  EXPECT_EQ(FormatOutcome(o).find("fastest verified call"), std::string::npos);  // no flag
  o.flags.emplace_back(kFlagTimedFasterThanVerified);
  const std::string text = FormatOutcome(o);
  EXPECT_NE(text.find("verified  250"), std::string::npos) << text;
}

TEST(OutcomeTest, NoVerifiedCallNoField) {
  nlohmann::json j = nlohmann::json::parse(OutcomeToJson(ValidOutcome()));
  EXPECT_FALSE(j.contains("fastest_verified_bench_s"));
}

}  // namespace
}  // namespace kope
