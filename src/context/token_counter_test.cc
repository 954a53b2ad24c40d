#include "kope/context/token_counter.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "test_graph.h"

namespace kope::context {
namespace {

using testing::TempDir;
using testing::ValueOrDie;

TEST(EstimateTokens, CountsByCharacterClass) {
  EXPECT_EQ(EstimateTokens(""), 0);
  EXPECT_EQ(EstimateTokens("the"), 1);
  EXPECT_EQ(EstimateTokens("the cat"), 2);    // one space joins the word after it
  EXPECT_EQ(EstimateTokens("123456"), 2);     // digits in groups of three
  EXPECT_EQ(EstimateTokens("a+b;"), 4);       // each punctuation mark
  EXPECT_EQ(EstimateTokens("\n\n"), 2);       // each newline
  EXPECT_EQ(EstimateTokens("threadIdx"), 2);  // camelCase splits
  EXPECT_EQ(EstimateTokens("KOPE"), 2);       // capitals split about every three
  EXPECT_EQ(EstimateTokens("        x"), 3);  // indentation: a token per four spaces or so
  EXPECT_EQ(EstimateTokens("\xC3\xA9"), 1);   // two-byte code point
  EXPECT_EQ(EstimateTokens("\xE4\xB8\xAD"), 2);
  // A typical line of C++ lands near what byte-pair tokenizers give (about 16).
  const int64_t line = EstimateTokens("  for (int i = 0; i < n; ++i) {\n");
  EXPECT_GE(line, 14);
  EXPECT_LE(line, 20);
}

TEST(EstimateTokens, AddsUpOverNewlineTerminatedPieces) {
  std::mt19937 rng(5);
  const std::string alphabet = "abcXYZ_09 \t\n;{}()*+.\xC3\xA9";
  for (int round = 0; round < 500; ++round) {
    std::string a, b;
    for (int i = 0, n = static_cast<int>(rng() % 80); i < n; ++i)
      a += alphabet[rng() % alphabet.size()];
    for (int i = 0, n = static_cast<int>(rng() % 80); i < n; ++i)
      b += alphabet[rng() % alphabet.size()];
    a += "\n";
    EXPECT_EQ(EstimateTokens(a + b), EstimateTokens(a) + EstimateTokens(b)) << a << "|" << b;
  }
}

TEST(TokenCounter, DefaultsKeepAMargin) {
  TokenCounter counter;
  EXPECT_EQ(counter.Expected(100), 100);
  EXPECT_EQ(counter.Bound(100), 125);
  EXPECT_EQ(counter.Bound(0), 0);
}

TEST(TokenCounter, DerivedFromSamples) {
  std::vector<TokenSample> samples;
  for (int i = 0; i < 20; ++i) samples.push_back({1000, 1100 + 10 * i});  // ratios 1.10 .. 1.29
  TokenCounter c = CounterFromSamples(samples);
  EXPECT_EQ(c.samples, 20);
  EXPECT_NEAR(c.ratio, 1.195, 1e-9);
  EXPECT_NEAR(c.bound_ratio, 1.29 * kBoundMargin, 1e-9);
  // The bound covers every observation.
  for (const TokenSample& s : samples) EXPECT_GE(c.Bound(s.estimate), s.reported);
}

TEST(TokenCounter, FewSamplesKeepTheDefaultMarginAroundTheMedian) {
  TokenCounter c = CounterFromSamples({{1000, 700}, {1000, 720}});
  EXPECT_NEAR(c.ratio, 0.71, 1e-9);
  EXPECT_NEAR(c.bound_ratio, 0.71 * kDefaultBoundRatio, 1e-9);
}

TEST(TokenCounter, IgnoresTinyReports) {
  TokenCounter c = CounterFromSamples({{10, 30}, {1000, 900}});
  EXPECT_EQ(c.samples, 1);
  EXPECT_NEAR(c.ratio, 0.9, 1e-9);
}

TEST(TokenCalibration, RecordsLoadsAndFindsByPrefix) {
  TempDir dir;
  const auto path = dir / "store.db.tokens.json";
  {
    TokenCalibration cal(path);
    KOPE_ASSERT_OK(cal.Load());  // a missing file is empty
    for (int i = 0; i < 10; ++i) KOPE_ASSERT_OK(cal.Record("gpt-4o", 1000, 800));
    KOPE_ASSERT_OK(cal.Record("model-b", 1000, 1200));
    KOPE_ASSERT_OK(cal.Record("model-b", 10, 5));  // too small to count: ignored
  }
  TokenCalibration again(path);
  KOPE_ASSERT_OK(again.Load());
  EXPECT_EQ(again.CounterFor("gpt-4o").samples, 10);
  EXPECT_NEAR(again.CounterFor("gpt-4o-2024-08-06").ratio, 0.8, 1e-9);  // by prefix
  EXPECT_EQ(again.CounterFor("model-b").samples, 1);
  EXPECT_EQ(again.CounterFor("unknown").samples, 0);
  EXPECT_EQ(again.Counters().size(), 2u);
  EXPECT_FALSE(again.Record("", 100, 100).ok());
}

TEST(TokenCalibration, KeepsTheMostRecentSamples) {
  TokenCalibration cal;
  for (int i = 0; i < kMaxSamplesPerModel; ++i) KOPE_ASSERT_OK(cal.Record("m", 1000, 2000));
  for (int i = 0; i < kMaxSamplesPerModel; ++i) KOPE_ASSERT_OK(cal.Record("m", 1000, 1000));
  TokenCounter c = cal.CounterFor("m");
  EXPECT_EQ(c.samples, kMaxSamplesPerModel);
  EXPECT_NEAR(c.ratio, 1.0, 1e-9);
}

TEST(TokenCalibration, RefusesAFileThatIsNotOne) {
  TempDir dir;
  const auto path = dir / "tokens.json";
  std::ofstream(path) << "{\"something\": 1}";
  TokenCalibration cal(path);
  Status s = cal.Load();
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_EQ(cal.Record("m", 1000, 1000).code(), StatusCode::kCorruption);
}

TEST(TokenCalibration, ProcessesRecordingAtOnceLoseNothing) {
  TempDir dir;
  const auto path = dir / "tokens.json";
  constexpr int kProcesses = 4;
  constexpr int kEach = 25;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      TokenCalibration cal(path);
      int failures = cal.Load().ok() ? 0 : 1;
      for (int i = 0; i < kEach; ++i) failures += cal.Record("m", 1000, 1000 + p).ok() ? 0 : 1;
      ::_exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TokenCalibration cal(path);
  KOPE_ASSERT_OK(cal.Load());
  EXPECT_EQ(cal.CounterFor("m").samples, kProcesses * kEach);
}

TEST(CalibrationPathFor, BesideTheStore) {
  EXPECT_EQ(ValueOrDie(CalibrationPathFor("data/experience.db")).string(),
            "data/experience.db.tokens.json");
  EXPECT_FALSE(CalibrationPathFor("").ok());
}

}  // namespace
}  // namespace kope::context
