#include "kope/memory/text/error_signature.h"

#include <cctype>
#include <vector>

namespace kope::memory {
namespace {

constexpr size_t kMaxLines = 3;
constexpr size_t kMaxLength = 240;

bool IsPathChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' ||
         c == '-' || c == '+' || c == '~';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool MentionsError(std::string_view line) {
  for (size_t i = 0; i + 5 <= line.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) == 'e' &&
        std::tolower(static_cast<unsigned char>(line[i + 1])) == 'r' &&
        std::tolower(static_cast<unsigned char>(line[i + 2])) == 'r' &&
        std::tolower(static_cast<unsigned char>(line[i + 3])) == 'o' &&
        std::tolower(static_cast<unsigned char>(line[i + 4])) == 'r') {
      return true;
    }
  }
  return false;
}

// Replaces paths, numbers and whitespace runs in one line.
std::string NormalizeLine(std::string_view line) {
  std::string out;
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    // A path: a run of path characters that contains a '/' and starts at a token boundary, or
    // a file name that starts the line before a ':' (a compiler's "attempt_3.cc:12:5:").
    bool boundary = i == 0 || !IsPathChar(line[i - 1]);
    if (boundary && IsPathChar(c)) {
      size_t j = i;
      bool slash = false, dot = false;
      while (j < line.size() && IsPathChar(line[j])) {
        slash |= line[j] == '/';
        dot |= line[j++] == '.';
      }
      if (slash || (i == 0 && dot && j < line.size() && line[j] == ':')) {
        out += "<file>";
        i = j;
        continue;
      }
    }
    bool word_before =
        i > 0 && (std::isalnum(static_cast<unsigned char>(line[i - 1])) || line[i - 1] == '_');
    if (std::isdigit(static_cast<unsigned char>(c)) && !word_before) {
      size_t j = i;
      if (c == '0' && j + 1 < line.size() && (line[j + 1] == 'x' || line[j + 1] == 'X')) j += 2;
      while (j < line.size() &&
             (std::isxdigit(static_cast<unsigned char>(line[j])) || line[j] == '.')) {
        ++j;
      }
      out += 'N';
      i = j;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::string NormalizeError(std::string_view message) {
  std::vector<std::string_view> lines;
  std::string_view first_nonempty;
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    std::string_view line = Trim(message.substr(start, end - start));
    if (!line.empty()) {
      if (first_nonempty.empty()) first_nonempty = line;
      if (MentionsError(line) && lines.size() < kMaxLines) lines.push_back(line);
    }
    start = end + 1;
  }
  if (lines.empty() && !first_nonempty.empty()) lines.push_back(first_nonempty);
  std::string out;
  for (std::string_view line : lines) {
    if (!out.empty()) out += " | ";
    out += NormalizeLine(line);
  }
  if (out.size() > kMaxLength) out.resize(kMaxLength);
  return out;
}

}  // namespace kope::memory
