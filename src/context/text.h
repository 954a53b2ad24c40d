// Text functions of the context builder: words for similarity, shortening, code excerpts.
// Pure functions, thread-safe.
#ifndef KOPE_SRC_CONTEXT_TEXT_H_
#define KOPE_SRC_CONTEXT_TEXT_H_

#include <string>
#include <string_view>
#include <vector>

namespace kope::context::internal {

// Lowercased words of three or more letters or digits, without common English stop words, with
// a plural "s" removed; sorted and unique. Decision-class names split at '-'.
std::vector<std::string> Words(std::string_view text);

// Sorted unique union.
std::vector<std::string> UnionWords(const std::vector<std::string>& a,
                                    const std::vector<std::string>& b);

// |a ∩ b| / |a ∪ b| of two sorted unique word lists; 0 when both are empty.
double Jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b);

// The text on one line (whitespace runs collapsed), at most `max_chars` bytes, cut at a word
// boundary with "..." when longer; never splits a UTF-8 sequence.
std::string OneLine(std::string_view text, size_t max_chars);

// The first sentence (up to ". ", ";" or a newline), on one line, at most `max_chars`.
std::string FirstSentence(std::string_view text, size_t max_chars);

// At most `max_lines` lines of `text`, with "... (N more lines)" when cut.
std::string FirstLines(std::string_view text, size_t max_lines);

// A kernel's source shortened to the code that matters: without #include lines, a leading
// comment block and runs of blank lines; when still longer than `max_lines`, the window that
// starts just before the first kernel definition (`__global__`, `kope_kernel`, `@triton.jit`),
// with markers for what was left out.
std::string ExcerptCode(std::string_view source, size_t max_lines);

// The hunks of a unified diff without its "---"/"+++" header, at most `max_lines` lines.
std::string DiffHunks(std::string_view unified_diff, size_t max_lines);

// The fence language to show `source` in: "python" for a ModelNew module, else `native`.
std::string FenceLanguage(std::string_view source, std::string_view native);

// Number of lines (a last line without a newline counts).
size_t LineCount(std::string_view text);

// "1.5e+04"-style sizes as "15k", "2.1M"; "?" for 0.
std::string HumanCount(double value);

}  // namespace kope::context::internal

#endif  // KOPE_SRC_CONTEXT_TEXT_H_
