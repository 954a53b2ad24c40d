#include "kope/memory/decision_classes.h"

#include <algorithm>
#include <array>

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

// ASCII only, without the locale lookups of <cctype>: this runs for every attempt written.
bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The text once lowercased, with the positions where its words start and which first letters
// occur (most terms can be ruled out by their first letter alone).
struct Words {
  std::string text;
  std::vector<size_t> starts;
  std::array<bool, 256> first{};
};

Words IndexWords(std::string_view decision) {
  Words w;
  w.text.resize(decision.size());
  for (size_t i = 0; i < decision.size(); ++i) {
    w.text[i] = AsciiLower(decision[i]);
    if (IsWordChar(w.text[i]) && (i == 0 || !IsWordChar(w.text[i - 1]))) {
      w.starts.push_back(i);
      w.first[static_cast<unsigned char>(w.text[i])] = true;
    }
  }
  return w;
}

// One word of a text rule.
struct Term {
  std::string_view word;
  bool whole = false;  // must also end at a word end
};

// The rules with their text alternatives split into terms once.
struct CompiledRule {
  std::string_view name;
  std::vector<std::vector<Term>> text;
  const std::vector<std::string_view>* code = nullptr;
};

const std::vector<CompiledRule>& CompiledRules() {
  static const std::vector<CompiledRule> compiled = [] {
    std::vector<CompiledRule> out;
    for (const ClassRule& rule : Rules()) {
      CompiledRule c{rule.name, {}, &rule.code};
      for (std::string_view alternative : rule.text) {
        std::vector<Term> terms;
        while (!alternative.empty()) {
          size_t plus = alternative.find('+');
          Term t{alternative.substr(0, plus), false};
          if (!t.word.empty() && t.word.back() == '$') {
            t.word.remove_suffix(1);
            t.whole = true;
          }
          if (!t.word.empty()) terms.push_back(t);
          alternative =
              plus == std::string_view::npos ? std::string_view() : alternative.substr(plus + 1);
        }
        c.text.push_back(std::move(terms));
      }
      out.push_back(std::move(c));
    }
    return out;
  }();
  return compiled;
}

bool HasTerm(const Words& w, const Term& term) {
  if (!w.first[static_cast<unsigned char>(term.word[0])]) return false;
  for (size_t pos : w.starts) {
    if (w.text[pos] != term.word[0] || w.text.compare(pos, term.word.size(), term.word) != 0) {
      continue;
    }
    size_t end = pos + term.word.size();
    if (term.whole && end < w.text.size() && IsWordChar(w.text[end])) continue;
    return true;
  }
  return false;
}

std::string CollapseWhitespace(std::string_view code) {
  std::string out;
  out.reserve(code.size());
  bool space = false;
  for (char c : code) {
    if (IsSpace(c)) {
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
  const Words words = IndexWords(decision);
  const std::string flat = CollapseWhitespace(code);
  std::vector<std::string> classes;
  for (const CompiledRule& rule : CompiledRules()) {
    bool hit = std::any_of(rule.text.begin(), rule.text.end(), [&](const std::vector<Term>& terms) {
      return std::all_of(terms.begin(), terms.end(),
                         [&](const Term& t) { return HasTerm(words, t); });
    });
    hit = hit || (!flat.empty() &&
                  std::any_of(rule.code->begin(), rule.code->end(), [&](std::string_view r) {
                    return flat.find(r) != std::string::npos;
                  }));
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
