// Lexical similarity of short texts: BM25 of a query over a small set of documents.
//
// For re-ranking candidates that other queries found (insights, exemplar decisions, error
// messages) against the task and the current code. Words are runs of letters and digits,
// lowercased, with a plural "s" removed ("loads" = "load"); words of one character are ignored.
// Document frequencies are counted within the given documents (the candidates are the corpus),
// with the IDF ln(1 + (N - df + 0.5) / (df + 0.5)), k1 = 1.2, b = 0.75. A document sharing no
// word with the query scores 0. Pure functions, thread-safe.
#ifndef KOPE_MEMORY_TEXT_TEXT_SIMILARITY_H_
#define KOPE_MEMORY_TEXT_TEXT_SIMILARITY_H_

#include <string>
#include <string_view>
#include <vector>

namespace kope::memory {

// The words of `text` as described above, in order, with repeats.
std::vector<std::string> TextWords(std::string_view text);

// One score per document, in the order given.
std::vector<double> LexicalBm25(const std::vector<std::string_view>& documents,
                                std::string_view query);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_TEXT_TEXT_SIMILARITY_H_
