// `kope:tune` in Python sources (a Triton ModelNew's block sizes), as a table of cases: each
// source, the tunables it declares ("NAME=VALUE [V1 V2 ...] line N") and the problems reported.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kope/agent/tunables.h"

namespace kope::agent {
namespace {

struct Case {
  const char* what;
  std::string source;
  std::vector<std::string> tunables;
  std::vector<std::string> problems;  // a substring of each problem, in order
};

std::string Describe(const Tunable& t) {
  std::string values;
  for (const std::string& v : t.values) values += (values.empty() ? "" : " ") + v;
  return t.name + "=" + t.value + " [" + values + "] line " + std::to_string(t.line);
}

const std::string kImports = "import torch\nimport triton\nimport triton.language as tl\n";

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"a module constant",
       kImports + "BLOCK = 1024  # kope:tune 256 512 1024 2048\n",
       {"BLOCK=1024 [256 512 1024 2048] line 4"},
       {}},
      {"a constexpr default in the signature",
       kImports + "@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr = 128):  # kope:tune 64, "
                  "128, 256\n    pass\n",
       {"BLOCK=128 [64 128 256] line 5"},
       {}},
      {"a constexpr default on its own line of the signature",
       kImports + "@triton.jit\ndef k(\n    x_ptr,\n    BLOCK: tl.constexpr = 64,  # kope:tune "
                  "32 64 128\n):\n    pass\n",
       {"BLOCK=64 [32 64 128] line 7"},
       {}},
      {"a keyword argument of the launch",
       kImports + "def f(x, y, n):\n    k[(1,)](x, y, n, BLOCK_SIZE=1024)  # kope:tune 512 "
                  "1024\n",
       {"BLOCK_SIZE=1024 [512 1024] line 5"},
       {}},
      {"the named form beside one of several assignments",
       kImports + "def f(a, b):\n    k[(1,)](a, b, BLOCK_M=64, BLOCK_N=32)  # kope:tune BLOCK_N "
                  "= 16, 32, 64\n",
       {"BLOCK_N=32 [16 32 64] line 5"},
       {}},
      {"named annotations above the line, stacked",
       kImports + "# kope:tune BLOCK_M = 32, 64, 128\n# kope:tune BLOCK_N = 32, 64\n"
                  "matmul[grid](a, b, c, BLOCK_M=64, BLOCK_N=64)\n",
       {"BLOCK_M=64 [32 64 128] line 6", "BLOCK_N=64 [32 64] line 6"},
       {}},
      {"a named annotation above a constant, a blank line between",
       kImports + "    # kope:tune num_warps = 2, 4, 8\n\n    num_warps = 4\n",
       {"num_warps=4 [2 4 8] line 6"},
       {}},
      {"a current value missing from the list is inserted in order",
       kImports + "BLOCK = 96  # kope:tune 64 128\n",
       {"BLOCK=96 [64 96 128] line 4"},
       {}},
      {"an annotated type other than constexpr",
       kImports + "ROWS: int = 4  # kope:tune 1 2 4\n",
       {"ROWS=4 [1 2 4] line 4"},
       {}},
      {"prose on a comment line is no annotation",
       kImports + "# The tuner reads kope:tune comments.\nBLOCK = 128\n",
       {},
       {}},
      {"several assignments and no name",
       kImports + "k[(1,)](x, BLOCK_M=64, BLOCK_N=64)  # kope:tune 32 64\n",
       {},
       {"line 4: the line assigns several names"}},
      {"no assignment of a value",
       kImports + "y = torch.relu(x)  # kope:tune 1 2\n",
       {},
       {"line 4: kope:tune must annotate `NAME = VALUE`"}},
      {"a computed value is no value",
       kImports + "BLOCK = triton.next_power_of_2(n)  # kope:tune 64 128\n",
       {},
       {"must annotate"}},
      {"the named tunable is not on the line",
       kImports + "BLOCK = 128  # kope:tune WARPS = 2, 4\n",
       {},
       {"line 4: kope:tune WARPS: the line assigns no WARPS"}},
      {"the line after a named annotation does not assign it",
       kImports + "# kope:tune BLOCK = 64, 128\nGRID = 4\nBLOCK = 128\n",
       {},
       {"line 4: kope:tune BLOCK: the next line (5) assigns no BLOCK"}},
      {"a named annotation at the end of the file",
       kImports + "BLOCK = 128\n# kope:tune BLOCK = 64, 128\n",
       {},
       {"line 5: kope:tune BLOCK is followed by no line that assigns it"}},
      {"a value twice, then the same name twice",
       kImports + "A = 1  # kope:tune 1 2 2\nB = 1  # kope:tune 1 2\nB = 2  # kope:tune 1 2\n",
       {"B=1 [1 2] line 5"},
       {"line 4: kope:tune for A lists a value twice", "line 6: B is annotated twice"}},
      {"attributes, comparisons and augmented assignments are not assignments",
       kImports + "self.block = 64  # kope:tune 32 64\nok = n == 64  # kope:tune 32 64\n"
                  "n += 1  # kope:tune 1 2\n",
       {},
       {"must annotate", "must annotate", "must annotate"}},
      {"a # inside a string is not the comment",
       kImports + "NAME = 3  # kope:tune 1 2 3\nlabel = \"# kope:tune 1 2\"\n",
       {"NAME=3 [1 2 3] line 4"},
       {"line 5: kope:tune must be in a # comment"}},
      {"C++ in a load_inline string keeps the C rules",
       kImports + "src = '''\nconstexpr int kBlock = 256;  // kope:tune 128 256 512\n'''\n",
       {"kBlock=256 [128 256 512] line 5"},
       {}},
      {"a C source is not read as Python",
       "#include <cstdint>\n#define TILE 64  // kope:tune 32 64\n"
       "int x = 1;  # kope:tune 1 2\n",
       {"TILE=64 [32 64] line 2"},
       {"line 3: kope:tune must be in a // comment"}},
  };
  return cases;
}

TEST(PythonTunablesTest, TableOfCases) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.what);
    TunableScan scan = FindTunables(c.source);
    std::vector<std::string> found;
    for (const Tunable& t : scan.tunables) found.push_back(Describe(t));
    EXPECT_EQ(found, c.tunables);
    ASSERT_EQ(scan.problems.size(), c.problems.size())
        << (scan.problems.empty() ? "" : scan.problems.front());
    for (size_t i = 0; i < c.problems.size(); ++i) {
      EXPECT_NE(scan.problems[i].find(c.problems[i]), std::string::npos) << scan.problems[i];
    }
    for (const Tunable& t : scan.tunables) {
      EXPECT_EQ(c.source.substr(t.value_offset, t.value_length), t.value) << t.name;
    }
  }
}

// The tuner's step on a Triton kernel: only the value changes, and the result tunes again.
TEST(PythonTunablesTest, ApplyPointRewritesATritonKernelsBlockSizes) {
  const std::string source = kImports +
                             "@triton.jit\n"
                             "def k(x_ptr, n, BLOCK: tl.constexpr = 128):  # kope:tune 64 128 256\n"
                             "    pass\n"
                             "# kope:tune WARPS = 2, 4, 8\n"
                             "WARPS = 4\n"
                             "def launch(x, n):\n"
                             "    k[(1,)](x, n, num_warps=WARPS)\n";
  TunableScan scan = FindTunables(source);
  ASSERT_TRUE(scan.problems.empty()) << scan.problems.front();
  ASSERT_EQ(scan.tunables.size(), 2u);
  auto applied = ApplyPoint(source, {{"BLOCK", "256"}, {"WARPS", "8"}});
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_NE(applied->find("BLOCK: tl.constexpr = 256):  # kope:tune 64 128 256"),
            std::string::npos);
  EXPECT_NE(applied->find("# kope:tune WARPS = 2, 4, 8\nWARPS = 8\n"), std::string::npos);
  std::vector<std::string> moves;
  for (const TuningMove& m : NeighbourMoves(FindTunables(*applied).tunables)) {
    moves.push_back(DescribeMove(m));
  }
  EXPECT_EQ(moves, (std::vector<std::string>{"tune BLOCK 256 -> 128", "tune WARPS 8 -> 4"}));
}

}  // namespace
}  // namespace kope::agent
