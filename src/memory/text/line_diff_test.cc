#include "kope/memory/text/line_diff.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace kope::memory {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    out.push_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

// Applies a unified diff to `old_text` the way patch(1) does, checking every context and
// removed line against the old text.
std::string Apply(const std::string& old_text, const std::string& diff) {
  std::vector<std::string> old_lines = Lines(old_text);
  std::vector<std::string> diff_lines = Lines(diff);
  std::string out;
  size_t next_old = 0;  // old lines copied so far
  for (size_t i = 2; i < diff_lines.size(); ++i) {
    const std::string& line = diff_lines[i];
    if (line.rfind("@@ -", 0) == 0) {
      int start = std::stoi(line.substr(4));
      size_t comma = line.find(',');
      size_t space = line.find(' ', 4);
      int count =
          (comma != std::string::npos && comma < space) ? std::stoi(line.substr(comma + 1)) : 1;
      size_t first = count == 0 ? static_cast<size_t>(start) : static_cast<size_t>(start - 1);
      EXPECT_GE(first, next_old) << "hunks overlap or go backwards";
      while (next_old < first) out += old_lines[next_old++];
      continue;
    }
    std::string body = line.substr(1);
    bool no_newline = i + 1 < diff_lines.size() && diff_lines[i + 1].rfind("\\ ", 0) == 0;
    if (no_newline) body.pop_back();
    if (line[0] == ' ' || line[0] == '-') {
      EXPECT_LT(next_old, old_lines.size());
      if (next_old < old_lines.size()) {
        EXPECT_EQ(old_lines[next_old], body);
      }
      ++next_old;
      if (line[0] == ' ') out += body;
    } else if (line[0] == '+') {
      out += body;
    }
    if (no_newline) ++i;
  }
  while (next_old < old_lines.size()) out += old_lines[next_old++];
  return out;
}

TEST(LineDiffTest, EqualTextsGiveNoDiff) {
  EXPECT_EQ(UnifiedDiff("a\nb\n", "a\nb\n"), "");
  EXPECT_EQ(UnifiedDiff("", ""), "");
}

TEST(LineDiffTest, OneChangedLineWithContext) {
  std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  EXPECT_EQ(UnifiedDiff(a, b),
            "--- a/parent\n+++ b/attempt\n"
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(LineDiffTest, DistantChangesMakeSeparateHunks) {
  std::string a, b;
  for (int i = 0; i < 30; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 3 || i == 25 ? "x" : std::to_string(i)) + "\n";
  }
  DiffOptions two;
  two.context = 2;
  std::string diff = UnifiedDiff(a, b, two);
  EXPECT_EQ(diff,
            "--- a/parent\n+++ b/attempt\n"
            "@@ -2,5 +2,5 @@\n 1\n 2\n-3\n+x\n 4\n 5\n"
            "@@ -24,5 +24,5 @@\n 23\n 24\n-25\n+x\n 26\n 27\n");
}

TEST(LineDiffTest, InsertionIntoEmptyAndDeletionOfAll) {
  EXPECT_EQ(UnifiedDiff("", "a\nb\n"), "--- a/parent\n+++ b/attempt\n@@ -0,0 +1,2 @@\n+a\n+b\n");
  EXPECT_EQ(UnifiedDiff("a\n", ""), "--- a/parent\n+++ b/attempt\n@@ -1 +0,0 @@\n-a\n");
}

TEST(LineDiffTest, MissingFinalNewlineIsMarked) {
  std::string diff = UnifiedDiff("a\nb", "a\nb\n");
  EXPECT_EQ(diff,
            "--- a/parent\n+++ b/attempt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
            "+b\n");
  EXPECT_EQ(Apply("a\nb", diff), "a\nb\n");
}

TEST(LineDiffTest, ScriptIsMinimalForAMovedBlock) {
  // Moving one line down by two costs one deletion and one insertion.
  std::string diff = UnifiedDiff("a\nb\nc\nd\n", "b\nc\na\nd\n");
  int changes = 0;
  for (const std::string& line : Lines(diff)) {
    if ((line[0] == '+' || line[0] == '-') && line.rfind("+++", 0) != 0 &&
        line.rfind("---", 0) != 0) {
      ++changes;
    }
  }
  EXPECT_EQ(changes, 2) << diff;
}

TEST(LineDiffTest, RandomEditsRoundTripThroughPatch) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> lines;
    int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) lines.push_back("line " + std::to_string(rng() % 12) + "\n");
    std::string a;
    for (const auto& l : lines) a += l;
    int edits = static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      int op = static_cast<int>(rng() % 3);
      size_t at = lines.empty() ? 0 : rng() % (lines.size() + (op == 0 ? 1 : 0));
      if (op == 0 || lines.empty()) {
        lines.insert(lines.begin() + std::min(at, lines.size()), "new " + std::to_string(e) + "\n");
      } else if (op == 1 && at < lines.size()) {
        lines.erase(lines.begin() + at);
      } else if (at < lines.size()) {
        lines[at] = "changed " + std::to_string(e) + "\n";
      }
    }
    std::string b;
    for (const auto& l : lines) b += l;
    if (rng() % 4 == 0 && !b.empty()) b.pop_back();  // sometimes no final newline
    DiffOptions options;
    options.context = static_cast<int>(rng() % 4);
    std::string diff = UnifiedDiff(a, b, options);
    EXPECT_EQ(Apply(a, diff), b) << "round " << round << "\n" << diff;
    // A capped search still gives a correct (not minimal) diff.
    DiffOptions cap;
    cap.max_edit_distance = 1;
    std::string capped = UnifiedDiff(a, b, cap);
    EXPECT_EQ(Apply(a, capped), b) << "round " << round << "\n" << capped;
  }
}

TEST(LineDiffTest, AddedLinesSkipsHeadersAndContext) {
  std::string diff = UnifiedDiff("a\nb\n", "a\n+++x\n#pragma omp parallel for\n");
  EXPECT_EQ(AddedLines(diff), "+++x\n#pragma omp parallel for\n");
}

}  // namespace
}  // namespace kope::memory
