#include "kope/agent/tunables.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "kope/agent/offline_proposer.h"
#include "kope/agent/reflection.h"
#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope::agent {
namespace {

constexpr char kSource[] = R"(#include <cstdint>
#define TILE 64  // kope:tune 16 32 64 128
constexpr int kThreads = 1;  // kope:tune 1, 2, 4
static constexpr int64_t kBlock = 4096;   // kope:tune 8192 4096 2048
const char* kName = "x";
int plain = 3;  // not tunable
)";

TEST(TunablesTest, FindsDefinesAndConstants) {
  TunableScan scan = FindTunables(kSource);
  EXPECT_TRUE(scan.problems.empty());
  ASSERT_EQ(scan.tunables.size(), 3u);
  EXPECT_EQ(scan.tunables[0].name, "TILE");
  EXPECT_EQ(scan.tunables[0].value, "64");
  EXPECT_EQ(scan.tunables[0].line, 2);
  EXPECT_EQ(scan.tunables[0].values, (std::vector<std::string>{"16", "32", "64", "128"}));
  EXPECT_EQ(scan.tunables[1].name, "kThreads");
  EXPECT_EQ(scan.tunables[1].values, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(scan.tunables[2].name, "kBlock");
  EXPECT_EQ(scan.tunables[2].value, "4096");
  EXPECT_EQ(std::string_view(kSource).substr(scan.tunables[2].value_offset,
                                             scan.tunables[2].value_length),
            "4096");
}

TEST(TunablesTest, ReportsBrokenAnnotationsAndKeepsTheRest) {
  const std::string source =
      "int f(int x) { return x; }  // kope:tune 1 2\n"  // not a declaration
      "#define A 1  // kope:tune\n"                     // no values
      "#define B 2  // kope:tune 1 2 2\n"               // a value twice
      "#define C(x) x  // kope:tune 1 2\n"              // a macro with parameters
      "constexpr int kD = 3;  // kope:tune 1 $ 3\n"     // a bad token
      "constexpr int kE = 8;  // kope:tune 2 4\n"       // current value inserted, sorted
      "constexpr int kE = 8;  // kope:tune 2 4 8\n"     // annotated twice
      "/* kope:tune 1 2 */ constexpr int kF = 1;\n"     // not in a // comment
      "  // prose that mentions kope:tune 1 2\n";       // a comment line: not an annotation
  TunableScan scan = FindTunables(source);
  ASSERT_EQ(scan.tunables.size(), 1u);
  EXPECT_EQ(scan.tunables[0].name, "kE");
  EXPECT_EQ(scan.tunables[0].values, (std::vector<std::string>{"2", "4", "8"}));
  ASSERT_EQ(scan.problems.size(), 7u);
  EXPECT_EQ(scan.problems[0].rfind("line 1: ", 0), 0u) << scan.problems[0];
  EXPECT_NE(scan.problems[6].find("line 8"), std::string::npos) << scan.problems[6];
}

TEST(TunablesTest, ApplyPointRewritesOnlyTheValues) {
  auto applied = ApplyPoint(kSource, {{"TILE", "128"}, {"kBlock", "2048"}});
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_NE(applied->find("#define TILE 128  // kope:tune 16 32 64 128"), std::string::npos);
  EXPECT_NE(applied->find("kBlock = 2048;   // kope:tune 8192 4096 2048"), std::string::npos);
  EXPECT_NE(applied->find("kThreads = 1;"), std::string::npos);
  TunableScan again = FindTunables(*applied);
  EXPECT_EQ(FormatPoint(CurrentPoint(again.tunables)), "TILE=128 kBlock=2048 kThreads=1");

  EXPECT_FALSE(ApplyPoint(kSource, {{"TILE", "100"}}).ok());
  EXPECT_FALSE(ApplyPoint(kSource, {{"NOPE", "1"}}).ok());
}

TEST(TunablesTest, NeighbourMovesStepOnePositionEachWay) {
  std::vector<TuningMove> moves = NeighbourMoves(FindTunables(kSource).tunables);
  std::vector<std::string> described;
  for (const TuningMove& m : moves) described.push_back(DescribeMove(m));
  EXPECT_EQ(described, (std::vector<std::string>{"tune TILE 64 -> 128", "tune TILE 64 -> 32",
                                                 "tune kThreads 1 -> 2", "tune kBlock 4096 -> 2048",
                                                 "tune kBlock 4096 -> 8192"}));
  EXPECT_EQ(moves[0].numeric_direction, 1);
  EXPECT_EQ(moves[3].list_direction, 1);
  EXPECT_EQ(moves[3].numeric_direction, -1);

  auto parsed = ParseMoveDescription("tune kBlock 4096 -> 2048");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->name, "kBlock");
  EXPECT_EQ(parsed->from, "4096");
  EXPECT_EQ(parsed->to, "2048");
  EXPECT_EQ(parsed->numeric_direction, -1);
  EXPECT_FALSE(ParseMoveDescription("vectorize the loop").has_value());
}

TEST(TunablesTest, OrderMovesContinuesWhatHelpedAndFollowsInsights) {
  const std::vector<Tunable> tunables = FindTunables(kSource).tunables;
  // The parent moved TILE up from 32 to 64 and that helped: keep going up first.
  std::vector<TuningMove> moves = OrderMoves(tunables, "tune TILE 32 -> 64", true, {});
  EXPECT_EQ(DescribeMove(moves[0]), "tune TILE 64 -> 128");
  // It did not help: source order.
  moves = OrderMoves(tunables, "tune kThreads 2 -> 1", false, {});
  EXPECT_EQ(DescribeMove(moves[0]), "tune TILE 64 -> 128");
  // An insight says larger kBlock is slower (contradicted four times): smaller kBlock first.
  memory::RankedInsight insight;
  insight.insight.text = TuningInsightText("kBlock", "softmax");
  insight.insight.support = 0;
  insight.insight.contradiction = 4;
  moves = OrderMoves(tunables, "", false, {insight});
  EXPECT_EQ(DescribeMove(moves[0]), "tune kBlock 4096 -> 2048");
  EXPECT_EQ(DescribeMove(moves.back()), "tune kBlock 4096 -> 8192");
}

TEST(TunablesTest, InsightTextNamesItsTunable) {
  EXPECT_EQ(TuningInsightText("kTile", "matmul"), "Larger kTile is faster for matmul kernels");
  EXPECT_EQ(TunableOfInsight("Larger kTile is faster for matmul kernels"), "kTile");
  EXPECT_FALSE(TunableOfInsight("simd helps matmul kernels").has_value());
}

// The bundled examples' seed kernels are what the offline proposer starts from.
TEST(TunablesTest, EveryBundledExampleHasAWellFormedSeed) {
  namespace fs = std::filesystem;
  int tasks = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(kope::testing::SourceDir()) / "examples")) {
    if (!fs::exists(entry.path() / "task.toml")) continue;
    ++tasks;
    auto task = LoadTask(entry.path());
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    std::vector<fs::path> seeds = FindSeedKernels(*task, "cpp");
    ASSERT_FALSE(seeds.empty()) << entry.path() << " has no annotated seed kernel";
    for (const fs::path& seed : seeds) {
      TunableScan scan = FindTunables(ReadFileText(seed).value_or(""));
      EXPECT_TRUE(scan.problems.empty()) << seed << ": " << scan.problems.front();
      EXPECT_GE(scan.tunables.size(), 2u) << seed;
    }
  }
  EXPECT_GE(tasks, 8);
}

}  // namespace
}  // namespace kope::agent
