#include "kope/memory/text/decision_classes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kope::memory {
namespace {

using Classes = std::vector<std::string>;

struct Case {
  const char* decision;
  const char* code;
  Classes expected;
};

// The rules as a table: decision text, code, the classes they must give.
const Case kCases[] = {
    {"Parallelize the outer loop with OpenMP", "", {"multi-threading"}},
    {"",
     "#pragma omp parallel for schedule(static)\nfor (int i = 0; i < n; ++i)",
     {"multi-threading"}},
    {"", "#pragma  omp\tsimd\nfor (...)", {"simd"}},
    {"use AVX-512 intrinsics", "__m512 v = _mm512_loadu_ps(p);", {"simd"}},
    {"", "__m256 acc = _mm256_setzero_ps();", {"simd"}},
    {"Vectorized loads", "float4 v = reinterpret_cast<const float4*>(x)[i];", {"vectorize-loads"}},
    {"", "const float4* in4 = (const float4*)in;", {"vectorize-loads"}},
    {"tile the matmul through shared memory",
     "__shared__ float tile[32][33];",
     {"tile-shared-memory"}},
    {"warp shuffle reduction for the row sum",
     "v += __shfl_xor_sync(0xffffffff, v, o);",
     {"warp-shuffle-reduction"}},
    {"online softmax: running max and sum in one pass", "", {"online-softmax"}},
    {"fuse the bias and ReLU epilogue", "", {"fuse-epilogue"}},
    {"split-K over 4 blocks", "", {"split-k"}},
    {"persistent kernel looping over tiles", "", {"persistent-kernel"}},
    {"use tensor cores via WMMA", "wmma::mma_sync(c, a, b, c);", {"tensor-cores"}},
    {"double-buffer with cp.async", "", {"async-copy"}},
    {"raise occupancy", "", {"increase-occupancy"}},
    {"reduce register pressure", "", {"reduce-registers"}},
    {"unroll the inner loop by 4", "", {"loop-unroll"}},
    {"", "#pragma unroll\nfor (int k = 0; k < 8; ++k)", {"loop-unroll"}},
    {"transpose B to column-major layout", "", {"change-layout"}},
    {"grid-stride loop", "", {"grid-stride"}},
    {"", "for (int i = idx; i < n; i += blockDim.x * gridDim.x)", {"grid-stride"}},
    {"cache blocking of the k loop for L2", "", {"cache-blocking"}},
    {"tune block size from 128 to 256", "", {"tune-parameters"}},
    // Words inside other words do not count.
    {"handle the gamma and comma cases; nonpersistent", "", {}},
    {"", "", {}},
    // Several classes at once, sorted.
    {"unroll and use OpenMP threads", "__m256 x;", {"loop-unroll", "multi-threading", "simd"}},
};

TEST(DecisionClassesTest, RulesTable) {
  for (const Case& c : kCases) {
    EXPECT_EQ(ClassifyDecision(c.decision, c.code), c.expected)
        << "decision '" << c.decision << "' code '" << c.code << "'";
  }
}

TEST(DecisionClassesTest, EveryRuleNamesAVocabularyClassAndViceVersa) {
  for (std::string_view name : DecisionClassVocabulary()) {
    EXPECT_TRUE(IsDecisionClass(name));
  }
  EXPECT_EQ(DecisionClassVocabulary().size(), 18u);
  EXPECT_FALSE(IsDecisionClass("magic"));
  // Each vocabulary class is reachable by some rule (its own name as decision text, mostly).
  for (std::string_view name : DecisionClassVocabulary()) {
    bool reached = false;
    for (const Case& c : kCases) {
      for (const auto& e : c.expected) reached |= e == name;
    }
    EXPECT_TRUE(reached) << name << " has no case in the table";
  }
}

TEST(DecisionClassesTest, MergeIsSortedAndUnique) {
  EXPECT_EQ(MergeClasses({"simd", "loop-unroll"}, {"simd", "cache-blocking"}),
            (Classes{"cache-blocking", "loop-unroll", "simd"}));
}

}  // namespace
}  // namespace kope::memory
