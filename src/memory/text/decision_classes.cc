#include "kope/memory/text/decision_classes.h"

#include <algorithm>
#include <array>
#include <cstdint>

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

const std::vector<ClassRule>& RuleTable() {
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

// One word of a text rule.
struct Term {
  std::string_view word;
  bool whole = false;  // must also end at a word end
};

// A set of patterns, looked up by their first two bytes: a text is scanned once, and at each
// position only the few patterns filed under the bytes there are compared. This runs for every
// attempt written, so a text is scanned once rather than once per pattern.
class PatternSet {
 public:
  // Adds a pattern (at least one byte) and returns its index; equal patterns share one.
  size_t Add(std::string_view pattern) {
    for (size_t i = 0; i < patterns_.size(); ++i) {
      if (patterns_[i] == pattern) return i;
    }
    patterns_.push_back(pattern);
    return patterns_.size() - 1;
  }

  // Builds the lookup table; call once, after the last Add.
  void Build() {
    std::vector<uint32_t> counts(kKeys + 1, 0);
    for (std::string_view p : patterns_) {
      if (p.size() >= 2) ++counts[Key(p[0], p[1])];
    }
    first_.assign(kKeys + 1, 0);
    for (size_t k = 0; k < kKeys; ++k) first_[k + 1] = first_[k] + counts[k];
    ids_.resize(first_[kKeys]);
    std::vector<uint32_t> next(first_.begin(), first_.end() - 1);
    for (size_t i = 0; i < patterns_.size(); ++i) {
      std::string_view p = patterns_[i];
      if (p.size() >= 2) {
        ids_[next[Key(p[0], p[1])]++] = static_cast<uint16_t>(i);
      } else {
        short_.push_back(i);
      }
    }
  }

  size_t size() const { return patterns_.size(); }

  // Calls found(index, end) for each pattern that occurs in `text` at `pos` (end: the position
  // after it).
  template <typename Found>
  void MatchAt(std::string_view text, size_t pos, Found&& found) const {
    const char second = pos + 1 < text.size() ? text[pos + 1] : '\0';
    const size_t key = Key(text[pos], second);
    for (uint32_t j = first_[key]; j < first_[key + 1]; ++j) {
      std::string_view p = patterns_[ids_[j]];
      if (text.size() - pos >= p.size() && text.compare(pos, p.size(), p) == 0) {
        found(ids_[j], pos + p.size());
      }
    }
    for (size_t i : short_) {
      if (text[pos] == patterns_[i][0]) found(i, pos + 1);
    }
  }

 private:
  // Two bytes hashed into 4096 buckets (16 KiB of offsets): a collision costs a comparison.
  static constexpr size_t kKeys = 1 << 12;
  static size_t Key(char a, char b) {
    return (static_cast<size_t>(static_cast<unsigned char>(a)) * 31 +
            static_cast<unsigned char>(b)) &
           (kKeys - 1);
  }
  std::vector<std::string_view> patterns_;
  std::vector<uint32_t> first_;  // ids_[first_[key] .. first_[key + 1]): the bucket's patterns
  std::vector<uint16_t> ids_;
  std::vector<size_t> short_;  // one-byte patterns (none today)
};

// The rules compiled once: text alternatives as lists of term numbers, code rules as pattern
// numbers.
struct CompiledRule {
  std::string_view name;
  std::vector<std::vector<size_t>> text;  // indexes into Compiled::terms
  std::vector<size_t> code;               // indexes into Compiled::code
};

struct Compiled {
  std::vector<Term> terms;  // distinct (word, whole) pairs
  PatternSet words;         // the terms' words
  std::vector<std::vector<size_t>> terms_of_word;
  PatternSet code;
  std::vector<CompiledRule> rules;
};

const Compiled& Rules() {
  static const Compiled compiled = [] {
    Compiled c;
    for (const ClassRule& rule : RuleTable()) {
      CompiledRule r{rule.name, {}, {}};
      for (std::string_view alternative : rule.text) {
        std::vector<size_t> terms;
        while (!alternative.empty()) {
          size_t plus = alternative.find('+');
          Term t{alternative.substr(0, plus), false};
          if (!t.word.empty() && t.word.back() == '$') {
            t.word.remove_suffix(1);
            t.whole = true;
          }
          if (!t.word.empty()) {
            size_t id = 0;
            while (id < c.terms.size() &&
                   !(c.terms[id].word == t.word && c.terms[id].whole == t.whole)) {
              ++id;
            }
            if (id == c.terms.size()) {
              c.terms.push_back(t);
              size_t word = c.words.Add(t.word);
              if (c.terms_of_word.size() <= word) c.terms_of_word.resize(word + 1);
              c.terms_of_word[word].push_back(id);
            }
            terms.push_back(id);
          }
          alternative =
              plus == std::string_view::npos ? std::string_view() : alternative.substr(plus + 1);
        }
        r.text.push_back(std::move(terms));
      }
      for (std::string_view pattern : rule.code) r.code.push_back(c.code.Add(pattern));
      c.rules.push_back(std::move(r));
    }
    c.words.Build();
    c.code.Build();
    return c;
  }();
  return compiled;
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
  const Compiled& c = Rules();
  // Which terms occur in the lowercased decision at a word start (and, for whole terms, end at
  // a word end).
  std::vector<bool> term_hit(c.terms.size(), false);
  std::string text(decision.size(), '\0');
  for (size_t i = 0; i < decision.size(); ++i) text[i] = AsciiLower(decision[i]);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!IsWordChar(text[i]) || (i > 0 && IsWordChar(text[i - 1]))) continue;
    c.words.MatchAt(text, i, [&](size_t word, size_t end) {
      const bool at_word_end = end >= text.size() || !IsWordChar(text[end]);
      for (size_t term : c.terms_of_word[word]) {
        if (!c.terms[term].whole || at_word_end) term_hit[term] = true;
      }
    });
  }
  // Which code patterns occur anywhere in the code, whitespace collapsed.
  std::vector<bool> code_hit(c.code.size(), false);
  const std::string flat = CollapseWhitespace(code);
  for (size_t i = 0; i < flat.size(); ++i) {
    c.code.MatchAt(flat, i, [&](size_t pattern, size_t) { code_hit[pattern] = true; });
  }
  std::vector<std::string> classes;
  for (const CompiledRule& rule : c.rules) {
    bool hit = std::any_of(rule.text.begin(), rule.text.end(), [&](const std::vector<size_t>& t) {
      return std::all_of(t.begin(), t.end(), [&](size_t term) { return term_hit[term]; });
    });
    hit = hit || std::any_of(rule.code.begin(), rule.code.end(),
                             [&](size_t pattern) { return code_hit[pattern]; });
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
