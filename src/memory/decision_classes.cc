#include "kope/memory/decision_classes.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace kope::memory {
namespace {

// One class's rules. A text rule matches the lowercased decision: words separated by '+' must
// all occur, each at a word start; a trailing '$' also requires a word end. A code rule is a
// case-sensitive substring of the code with runs of whitespace collapsed to one space.
struct ClassRule {
  std::string_view name;
  std::vector<std::string_view> text;
  std::vector<std::string_view> code;
};

const std::vector<ClassRule>& Rules() {
  static const std::vector<ClassRule> rules = {
      {"vectorize-loads",
       {"vectoriz+load", "vector load", "wide load", "128-bit load", "float4", "float2$",
        "ld.global.v4"},
       {"float4", "float2 ", "float2*", "int4 ", "int4*", "ld.global.v4", "double2"}},
      {"tile-shared-memory",
       {"shared memory", "shared-memory", "smem$", "tile+shared", "tiling+shared"},
       {"__shared__"}},
      {"warp-shuffle-reduction",
       {"warp shuffle", "warp-shuffle", "shfl", "warp reduc", "warp-level reduc"},
       {"__shfl_", "__reduce_add_sync", "cub::WarpReduce"}},
      {"online-softmax",
       {"online softmax", "online-softmax", "single-pass softmax", "one-pass softmax",
        "single pass softmax", "running max"},
       {}},
      {"fuse-epilogue", {"fuse", "fusing", "fusion", "epilogue"}, {}},
      {"split-k", {"split-k", "split k$", "splitk"}, {}},
      {"persistent-kernel", {"persistent"}, {}},
      {"tensor-cores",
       {"tensor core", "tensor-core", "wmma", "mma$", "wgmma", "hmma"},
       {"wmma::", "mma.sync", "wgmma", "__hmma", "mma_sync"}},
      {"async-copy",
       {"cp.async", "async copy", "async-copy", "asynchronous copy", "memcpy_async", "tma$"},
       {"cp.async", "memcpy_async", "__pipeline_"}},
      {"increase-occupancy", {"occupancy"}, {}},
      {"reduce-registers",
       {"register pressure", "fewer registers", "reduce register", "register usage",
        "register spill", "maxrregcount"},
       {}},
      {"loop-unroll", {"unroll"}, {"#pragma unroll", "#pragma GCC unroll", "#pragma clang loop"}},
      {"change-layout",
       {"layout", "transpos", "row-major", "column-major", "col-major", "nhwc", "nchw",
        "structure of arrays", "array of structures", "soa$", "aos$"},
       {}},
      {"grid-stride",
       {"grid-stride", "grid stride"},
       {"blockDim.x * gridDim.x", "gridDim.x * blockDim.x", "blockDim.x*gridDim.x",
        "gridDim.x*blockDim.x"}},
      {"multi-threading",
       {"multi-thread", "multithread", "openmp", "omp$", "parallel for", "thread pool",
        "across cores", "parallelize across", "parallelise across", "more threads"},
       {"#pragma omp parallel", "#pragma omp for", "#pragma omp task", "std::thread",
        "std::jthread", "pthread_create", "std::async"}},
      {"simd",
       {"simd", "avx", "sse", "neon", "intrinsic", "vectoriz+loop", "auto-vectoriz",
        "vector instruction"},
       {"__m128", "__m256", "__m512", "_mm_", "_mm256_", "_mm512_", "#pragma omp simd",
        "float32x4_t", "svfloat32_t", "vector_size", "vld1q_", "#pragma GCC ivdep"}},
      {"cache-blocking",
       {"cache block", "cache-block", "block+cache", "tile+cache", "tiling+cache", "loop tiling",
        "loop blocking", "blocked loop"},
       {}},
      {"tune-parameters",
       {"tune", "tuning", "retun", "autotun", "parameter sweep", "sweep", "block size", "tile size",
        "thread count"},
       {}},
  };
  return rules;
}

constexpr std::array<std::string_view, 18> kVocabulary = {"vectorize-loads",
                                                          "tile-shared-memory",
                                                          "warp-shuffle-reduction",
                                                          "online-softmax",
                                                          "fuse-epilogue",
                                                          "split-k",
                                                          "persistent-kernel",
                                                          "tensor-cores",
                                                          "async-copy",
                                                          "increase-occupancy",
                                                          "reduce-registers",
                                                          "loop-unroll",
                                                          "change-layout",
                                                          "grid-stride",
                                                          "multi-threading",
                                                          "simd",
                                                          "cache-blocking",
                                                          "tune-parameters"};

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// `word` occurs in `text` at a word start (and at a word end if `whole`).
bool HasWord(std::string_view text, std::string_view word, bool whole) {
  for (size_t pos = text.find(word); pos != std::string_view::npos;
       pos = text.find(word, pos + 1)) {
    if (pos > 0 && IsWordChar(text[pos - 1])) continue;
    size_t end = pos + word.size();
    if (whole && end < text.size() && IsWordChar(text[end])) continue;
    return true;
  }
  return false;
}

bool MatchesTextRule(std::string_view text, std::string_view rule) {
  while (!rule.empty()) {
    size_t plus = rule.find('+');
    std::string_view word = rule.substr(0, plus);
    bool whole = !word.empty() && word.back() == '$';
    if (whole) word.remove_suffix(1);
    if (!HasWord(text, word, whole)) return false;
    rule = plus == std::string_view::npos ? std::string_view() : rule.substr(plus + 1);
  }
  return true;
}

std::string Lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string CollapseWhitespace(std::string_view code) {
  std::string out;
  out.reserve(code.size());
  bool space = false;
  for (char c : code) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::span<const std::string_view> DecisionClassVocabulary() { return kVocabulary; }

bool IsDecisionClass(std::string_view name) {
  return std::find(kVocabulary.begin(), kVocabulary.end(), name) != kVocabulary.end();
}

std::vector<std::string> ClassifyDecision(std::string_view decision, std::string_view code) {
  std::string text = Lowercase(decision);
  std::string flat = CollapseWhitespace(code);
  std::vector<std::string> classes;
  for (const ClassRule& rule : Rules()) {
    bool hit = std::any_of(rule.text.begin(), rule.text.end(),
                           [&](std::string_view r) { return MatchesTextRule(text, r); }) ||
               std::any_of(rule.code.begin(), rule.code.end(),
                           [&](std::string_view r) { return flat.find(r) != std::string::npos; });
    if (hit) classes.emplace_back(rule.name);
  }
  std::sort(classes.begin(), classes.end());
  return classes;
}

std::vector<std::string> MergeClasses(std::vector<std::string> a,
                                      const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

}  // namespace kope::memory
