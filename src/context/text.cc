#include "text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "kope/llm/proposal.h"

namespace kope::context::internal {
namespace {

constexpr std::array<std::string_view, 40> kStopWords = {
    "the",  "and",  "for",   "with",  "from", "into",  "over",   "that", "this", "then",
    "than", "are",  "was",   "were",  "its",  "use",   "using",  "per",  "via",  "not",
    "but",  "all",  "each",  "one",   "two",  "out",   "more",   "less", "can",  "has",
    "have", "when", "which", "while", "also", "after", "before", "only", "same", "other"};

bool IsWordChar(unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; }

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Backs `cut` off so that it does not end inside a UTF-8 sequence.
size_t Utf8Boundary(std::string_view text, size_t cut) {
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return cut;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

}  // namespace

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (word.size() >= 3 &&
        std::find(kStopWords.begin(), kStopWords.end(), word) == kStopWords.end()) {
      if (word.size() > 4 && word.back() == 's' && word[word.size() - 2] != 's') word.pop_back();
      words.push_back(word);
    }
    word.clear();
  };
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (IsWordChar(u)) {
      word.push_back(static_cast<char>(std::tolower(u)));
    } else {
      flush();
    }
  }
  flush();
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  return words;
}

std::vector<std::string> UnionWords(const std::vector<std::string>& a,
                                    const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

double Jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() && b.empty()) return 0;
  size_t common = 0;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++common;
      ++i;
      ++j;
    }
  }
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

std::string OneLine(std::string_view text, size_t max_chars) {
  std::string line;
  bool space = false;
  for (char c : TrimLeft(text)) {
    if (IsSpace(c)) {
      space = true;
      continue;
    }
    if (space && !line.empty()) line.push_back(' ');
    space = false;
    line.push_back(c);
  }
  if (line.size() <= max_chars) return line;
  size_t cut = max_chars > 3 ? max_chars - 3 : 0;
  size_t space_at = line.rfind(' ', cut);
  if (space_at != std::string::npos && space_at > cut / 2) cut = space_at;
  cut = Utf8Boundary(line, cut);
  return line.substr(0, cut) + "...";
}

std::string FirstSentence(std::string_view text, size_t max_chars) {
  text = TrimLeft(text);
  size_t end = text.size();
  for (std::string_view stop : {". ", ";", "\n"}) {
    size_t at = text.find(stop);
    if (at != std::string_view::npos && at > 0) end = std::min(end, at + (stop == ". " ? 1 : 0));
  }
  return OneLine(text.substr(0, end), max_chars);
}

std::string FirstLines(std::string_view text, size_t max_lines) {
  std::vector<std::string_view> lines = SplitLines(text);
  std::string out;
  for (size_t i = 0; i < lines.size() && i < max_lines; ++i) {
    out.append(lines[i]);
    out.push_back('\n');
  }
  if (lines.size() > max_lines) {
    out += "... (" + std::to_string(lines.size() - max_lines) + " more lines)\n";
  }
  return out;
}

std::string ExcerptCode(std::string_view source, size_t max_lines) {
  std::vector<std::string_view> kept;
  bool in_leading_comment = true;
  bool in_block = false;
  for (std::string_view line : SplitLines(source)) {
    std::string_view t = TrimLeft(line);
    if (in_leading_comment) {
      if (in_block) {
        if (t.find("*/") != std::string_view::npos) in_block = false;
        continue;
      }
      if (t.empty() || t.rfind("//", 0) == 0) continue;
      if (t.rfind("/*", 0) == 0) {
        in_block = t.find("*/", 2) == std::string_view::npos;
        continue;
      }
      in_leading_comment = false;
    }
    if (t.rfind("#include", 0) == 0) continue;
    if (t.empty() && (kept.empty() || TrimLeft(kept.back()).empty())) continue;
    kept.push_back(line);
  }
  size_t first = 0;
  if (kept.size() > max_lines) {
    for (size_t i = 0; i < kept.size(); ++i) {
      if (kept[i].find("__global__") != std::string_view::npos ||
          kept[i].find("kope_kernel") != std::string_view::npos ||
          kept[i].find("@triton.jit") != std::string_view::npos) {
        first = i >= 2 ? i - 2 : 0;
        break;
      }
    }
    first = std::min(first, kept.size() - max_lines);
  }
  std::string out;
  if (first > 0) out += "// ... (" + std::to_string(first) + " lines before)\n";
  const size_t last = std::min(kept.size(), first + max_lines);
  for (size_t i = first; i < last; ++i) {
    out.append(kept[i]);
    out.push_back('\n');
  }
  if (last < kept.size()) out += "// ... (" + std::to_string(kept.size() - last) + " more lines)\n";
  return out;
}

std::string DiffHunks(std::string_view unified_diff, size_t max_lines) {
  std::vector<std::string_view> lines;
  for (std::string_view line : SplitLines(unified_diff)) {
    if (line.rfind("--- ", 0) == 0 || line.rfind("+++ ", 0) == 0) continue;
    lines.push_back(line);
  }
  std::string out;
  for (size_t i = 0; i < lines.size() && i < max_lines; ++i) {
    out.append(lines[i]);
    out.push_back('\n');
  }
  if (lines.size() > max_lines) {
    out += "... (" + std::to_string(lines.size() - max_lines) + " more diff lines)\n";
  }
  return out;
}

std::string FenceLanguage(std::string_view source, std::string_view native) {
  return llm::FormatOfSource(source) == llm::SourceFormat::kModelNew ? "python"
                                                                     : std::string(native);
}

size_t LineCount(std::string_view text) {
  if (text.empty()) return 0;
  size_t n = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  return text.back() == '\n' ? n : n + 1;
}

std::string HumanCount(double value) {
  if (value <= 0) return "?";
  char buffer[32];
  const char* suffix[] = {"", "k", "M", "G", "T"};
  int i = 0;
  while (value >= 1000 && i < 4) {
    value /= 1000;
    ++i;
  }
  std::snprintf(buffer, sizeof(buffer), value < 10 && i > 0 ? "%.1f%s" : "%.0f%s", value,
                suffix[i]);
  return buffer;
}

}  // namespace kope::context::internal
