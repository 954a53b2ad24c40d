// profile.json reading (a checked-in sample and a table of malformed ones) and the terminal
// summary of the sample (testdata/profile/summary.txt).
#include "kope/deploy/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;

fs::path DataDir() { return fs::path(kope::testing::SourceDir()) / "src/deploy/testdata/profile"; }

TEST(ProfileTest, ReadsTheSample) {
  Result<Profile> p = ReadProfile(DataDir() / "profile.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->workload_name, "tiny-llama");
  EXPECT_EQ(p->device, "cpu");
  ASSERT_EQ(p->phases.size(), 4u);
  EXPECT_EQ(p->phases[1].phase, "decode");
  EXPECT_EQ(p->phases[1].steps, 4);
  EXPECT_EQ(p->phases[1].wall_ms, 1.75);
  EXPECT_EQ(p->weighted.decode_share, 0.42);
  ASSERT_EQ(p->opportunities.size(), 3u);
  EXPECT_EQ(p->opportunities[0].phases, (std::vector<std::string>{"decode", "prefill"}));
  EXPECT_EQ(p->opportunities[0].task, "tasks/llamamlp_decode");
  EXPECT_FALSE(p->opportunities[2].task.has_value());
}

TEST(ProfileTest, SummaryOfTheSample) {
  Result<Profile> p = ReadProfile(DataDir() / "profile.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Result<std::string> expected = ReadFileText(DataDir() / "summary.txt");
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(ProfileSummary(*p, {"out", 8}), *expected);
  // Fewer listed when asked.
  const std::string two = ProfileSummary(*p, {"out", 2});
  EXPECT_NE(two.find("top 2 of 3 opportunities"), std::string::npos) << two;
  EXPECT_EQ(two.find("aten_add_decode"), std::string::npos) << two;
}

// A malformed profile: one change to the sample (a JSON pointer and its new value, or a removal)
// and the error it must give.
struct BadProfile {
  std::string pointer;
  std::string value;  // JSON; "" removes the field
  std::string error;  // after "<file>: "
};

const BadProfile kBadProfiles[] = {
    {"/schema", "2", "schema: version 2 is not one this kope reads (1)"},
    {"/schema", "", "schema: missing (expected an integer)"},
    {"/phases", "", "phases: missing (expected an array)"},
    {"/phases", "{}", "phases: expected an array"},
    {"/phases/2/wall_ms", "\"fast\"", "phases[2].wall_ms: expected a number"},
    {"/phases/0/phase", "\"warmup\"", "phases[0].phase: \"warmup\" is neither prefill nor decode"},
    {"/phases/3/steps", "", "phases[3].steps: missing (expected an integer)"},
    {"/weighted", "[]", "weighted: expected an object"},
    {"/weighted/decode_share", "", "weighted.decode_share: missing (expected a number)"},
    {"/opportunities/1/task", "3", "opportunities[1].task: expected a string or null"},
    {"/opportunities/0/phases", "[1]", "opportunities[0].phases: expected an array of strings"},
    {"/opportunities/2/amdahl_ceiling", "",
     "opportunities[2].amdahl_ceiling: missing (expected a number)"},
};

class BadProfileTest : public ::testing::TestWithParam<BadProfile> {};

TEST_P(BadProfileTest, GivesItsError) {
  Result<std::string> text = ReadFileText(DataDir() / "profile.json");
  ASSERT_TRUE(text.ok());
  nlohmann::json j = nlohmann::json::parse(*text);
  const nlohmann::json::json_pointer pointer(GetParam().pointer);
  if (GetParam().value.empty()) {
    j[pointer.parent_pointer()].erase(pointer.back());
  } else {
    j[pointer] = nlohmann::json::parse(GetParam().value);
  }
  Result<Profile> p = ParseProfile(j.dump(), "profile.json");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(p.status().message(), "profile.json: " + GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(Table, BadProfileTest, ::testing::ValuesIn(kBadProfiles));

TEST(ProfileTest, NotJsonIsCorruption) {
  for (const char* text : {"", "{", "[1, 2]", "\"profile\""}) {
    Result<Profile> p = ParseProfile(text, "p.json");
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().message(), "p.json: not a JSON object") << text;
  }
}

TEST(ProfileTest, MissingFileIsAnError) {
  EXPECT_FALSE(ReadProfile(DataDir() / "absent.json").ok());
}

}  // namespace
}  // namespace kope::deploy
