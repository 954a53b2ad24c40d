#include "kope/memory/text/text_similarity.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace kope::memory {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         static_cast<unsigned char>(c) >= 0x80;
}

constexpr double kK1 = 1.2;
constexpr double kB = 0.75;

}  // namespace

std::vector<std::string> TextWords(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !IsWordChar(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && IsWordChar(text[i])) ++i;
    if (i - start < 2) continue;
    std::string word(text.substr(start, i - start));
    for (char& c : word) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    if (word.size() > 3 && word.back() == 's' && word[word.size() - 2] != 's') word.pop_back();
    words.push_back(std::move(word));
  }
  return words;
}

std::vector<double> LexicalBm25(const std::vector<std::string_view>& documents,
                                std::string_view query) {
  std::vector<double> scores(documents.size(), 0.0);
  std::unordered_set<std::string> terms;
  for (std::string& w : TextWords(query)) terms.insert(std::move(w));
  if (terms.empty() || documents.empty()) return scores;

  // Term counts of the query's terms in each document, and the documents' lengths.
  std::vector<std::unordered_map<std::string, int>> counts(documents.size());
  std::vector<double> lengths(documents.size(), 0.0);
  std::unordered_map<std::string, int> df;
  double total_length = 0;
  for (size_t d = 0; d < documents.size(); ++d) {
    std::vector<std::string> words = TextWords(documents[d]);
    lengths[d] = static_cast<double>(words.size());
    total_length += lengths[d];
    for (std::string& w : words) {
      if (terms.count(w) > 0 && counts[d][w]++ == 0) ++df[w];
    }
  }
  const double n = static_cast<double>(documents.size());
  const double average = total_length > 0 ? total_length / n : 1.0;
  for (size_t d = 0; d < documents.size(); ++d) {
    double score = 0;
    for (const auto& [term, tf] : counts[d]) {
      const double f = static_cast<double>(df[term]);
      const double idf = std::log(1.0 + (n - f + 0.5) / (f + 0.5));
      const double freq = static_cast<double>(tf);
      score += idf * freq * (kK1 + 1) / (freq + kK1 * (1 - kB + kB * lengths[d] / average));
    }
    scores[d] = score;
  }
  return scores;
}

}  // namespace kope::memory
