// Turns GCC/Clang output into a few diagnostics a reader (or an LLM) can act on.
#include <algorithm>
#include <regex>
#include <sstream>
#include <string>

#include "kope/backend/cpu/cpu_backend.h"

namespace kope {
namespace {

constexpr size_t kMaxExcerptLines = 3;
constexpr size_t kMaxMessageChars = 400;

int SeverityRank(const std::string& severity) {
  if (severity == "error" || severity == "fatal error") return 0;
  if (severity == "warning") return 1;
  return 2;
}

std::string Trim(std::string s, size_t max_chars) {
  if (s.size() > max_chars) {
    s.resize(max_chars);
    s += " [...]";
  }
  return s;
}

}  // namespace

std::vector<Diagnostic> ParseCompilerOutput(std::string_view output, size_t max_diagnostics) {
  static const std::regex kLocated(
      R"(^(.*?):(\d+):(?:(\d+):)? (fatal error|error|warning|note): (.*)$)");
  static const std::regex kLinker(R"(^(?:.*\bld(?:\.\w+)?|collect2): (?:error: )?(.*)$)");
  static const std::regex kUndefined(R"(undefined reference to `([^']*)')");

  std::vector<Diagnostic> all;
  std::istringstream in{std::string(output)};
  std::string line;
  Diagnostic* current = nullptr;
  size_t excerpt = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kLocated)) {
      Diagnostic d;
      d.file = std::filesystem::path(m[1].str()).filename().string();
      d.line = std::stoi(m[2].str());
      d.column = m[3].matched ? std::stoi(m[3].str()) : 0;
      d.severity = m[4].str() == "fatal error" ? "error" : m[4].str();
      d.message = m[5].str();
      all.push_back(std::move(d));
      current = &all.back();
      excerpt = 0;
    } else if (std::regex_search(line, m, kUndefined)) {
      Diagnostic d;
      d.severity = "error";
      d.message = m[1].str() == "kope_kernel"
                      ? "the source does not export the entry point: define "
                        "extern \"C\" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, "
                        "void*)"
                      : "undefined reference to '" + m[1].str() +
                            "' (not defined and not in the "
                            "C++ standard library, libm or OpenMP)";
      all.push_back(std::move(d));
      current = nullptr;
    } else if (std::regex_match(line, m, kLinker)) {
      // Context lines ("in function `f':") and the final summary say nothing new.
      const std::string text = m[1].str();
      if (text.find("ld returned") != std::string::npos ||
          text.find("in function") != std::string::npos) {
        continue;
      }
      Diagnostic d;
      d.severity = "error";
      d.message = m[1].str();
      all.push_back(std::move(d));
      current = nullptr;
    } else if (current != nullptr && excerpt < kMaxExcerptLines &&
               line.find("In function") == std::string::npos && !line.empty()) {
      current->message += "\n" + line;
      ++excerpt;
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return SeverityRank(a.severity) < SeverityRank(b.severity);
  });
  if (all.size() > max_diagnostics) all.resize(max_diagnostics);
  for (Diagnostic& d : all) d.message = Trim(d.message, kMaxMessageChars);
  return all;
}

}  // namespace kope
