// Turns nvcc's, ptxas's and compute-sanitizer's output into values a reader
// (or an LLM) can act on: diagnostics, resource reports, the first memory error.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>

#include "kope/backend/cuda/cuda_backend.h"

namespace kope {
namespace {

constexpr size_t kMaxExcerptLines = 3;
constexpr size_t kMaxMessageChars = 400;

int SeverityRank(const std::string& severity) {
  if (severity == "error") return 0;
  if (severity == "warning") return 1;
  return 2;
}

std::string Trim(std::string s, size_t max_chars) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.size() > max_chars) {
    s.resize(max_chars);
    s += " [...]";
  }
  return s;
}

std::string FileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// nvcc's generated intermediate files (tmpxft_..., *.cudafe1.cpp) mean nothing to a reader.
bool IsIntermediate(const std::string& file) {
  return file.find("tmpxft_") != std::string::npos || file.find(".cudafe1.") != std::string::npos;
}

int64_t ToInt(const std::string& s) { return s.empty() ? 0 : std::stoll(s); }

// "_Z5scalePKfPfl" -> "scale(float const*, float*, long)"; the name itself when it does not
// demangle.
std::string Demangle(const std::string& name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && text != nullptr ? text : name;
  std::free(text);
  return out;
}

}  // namespace

std::vector<Diagnostic> ParseNvccOutput(std::string_view output, size_t max_diagnostics) {
  // cudafe++ / EDG: `k.cu(12): error: ...`, `k.cu(5): warning #177-D: ...`.
  static const std::regex kFrontEnd(
      R"(^(.*?)\((\d+)\): (catastrophic error|error|warning|remark)(?: #[0-9]+(?:-[A-Z])?)?: (.*)$)");
  // The host compiler (GCC style): `k.cu:12:5: error: ...`.
  static const std::regex kHost(
      R"(^(.*?):(\d+):(?:(\d+):)? (fatal error|error|warning|note): (.*)$)");
  static const std::regex kPtxas(R"(^ptxas (error|fatal|warning)\s*: (.*)$)");
  static const std::regex kNvlink(R"(^nvlink (error|fatal|warning)\s*: (.*)$)");
  static const std::regex kUndefined(R"(undefined reference to `([^']*)')");
  static const std::regex kLinker(R"(^(?:.*\bld(?:\.\w+)?|collect2): (?:error: )?(.*)$)");

  std::vector<Diagnostic> all;
  std::istringstream in{std::string(output)};
  std::string line;
  Diagnostic* current = nullptr;
  size_t excerpt = 0;
  bool seen_undefined_entry = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_match(line, m, kFrontEnd)) {
      Diagnostic d;
      d.file = FileName(m[1].str());
      d.line = std::stoi(m[2].str());
      const std::string sev = m[3].str();
      d.severity = sev == "catastrophic error" ? "error" : sev == "remark" ? "note" : sev;
      d.message = m[4].str();
      all.push_back(std::move(d));
      current = &all.back();
      excerpt = 0;
    } else if (std::regex_match(line, m, kHost) && !IsIntermediate(m[1].str())) {
      Diagnostic d;
      d.file = FileName(m[1].str());
      d.line = std::stoi(m[2].str());
      d.column = m[3].matched ? std::stoi(m[3].str()) : 0;
      d.severity = m[4].str() == "fatal error" ? "error" : m[4].str();
      d.message = m[5].str();
      all.push_back(std::move(d));
      current = &all.back();
      excerpt = 0;
    } else if (std::regex_match(line, m, kPtxas) || std::regex_match(line, m, kNvlink)) {
      Diagnostic d;
      d.severity = m[1].str() == "warning" ? "warning" : "error";
      d.message = (line.rfind("ptxas", 0) == 0 ? "ptxas: " : "nvlink: ") + m[2].str();
      all.push_back(std::move(d));
      current = nullptr;
    } else if (std::regex_search(line, m, kUndefined)) {
      const std::string symbol = m[1].str();
      if (symbol == "kope_kernel") {
        if (seen_undefined_entry) continue;
        seen_undefined_entry = true;
      }
      bool duplicate = false;
      for (const Diagnostic& d : all) {
        if (d.message.find("'" + symbol + "'") != std::string::npos) duplicate = true;
      }
      if (duplicate) continue;
      Diagnostic d;
      d.severity = "error";
      d.message = symbol == "kope_kernel"
                      ? "the source does not export the entry point: define extern \"C\" int "
                        "kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*)"
                      : "undefined reference to '" + symbol +
                            "' (not defined and not in the C++ standard library, libm or the "
                            "CUDA runtime)";
      all.push_back(std::move(d));
      current = nullptr;
    } else if (std::regex_match(line, m, kLinker)) {
      const std::string text = m[1].str();
      if (text.find("ld returned") != std::string::npos ||
          text.find("in function") != std::string::npos) {
        continue;
      }
      Diagnostic d;
      d.severity = "error";
      d.message = text;
      all.push_back(std::move(d));
      current = nullptr;
    } else if (current != nullptr && excerpt < kMaxExcerptLines && !line.empty() &&
               line.find("errors detected in the compilation") == std::string::npos &&
               line.find("error detected in the compilation") == std::string::npos &&
               line.rfind("Remark: ", 0) != 0 && line.find("In function") == std::string::npos) {
      current->message += "\n" + line;
      ++excerpt;
    } else if (line.empty()) {
      current = nullptr;
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return SeverityRank(a.severity) < SeverityRank(b.severity);
  });
  if (all.size() > max_diagnostics) all.resize(max_diagnostics);
  for (Diagnostic& d : all) d.message = Trim(d.message, kMaxMessageChars);
  return all;
}

std::vector<KernelResources> ParsePtxasReport(std::string_view output) {
  static const std::regex kEntry(
      R"(ptxas info\s*: Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex kProperties(R"(ptxas info\s*: Function properties for (\S+))");
  static const std::regex kFrame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kUsed(R"(ptxas info\s*: Used (\d+) registers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  static const std::regex kCmem(R"((\d+) bytes cmem\[0\])");

  std::vector<KernelResources> out;
  auto find = [&](const std::string& function) -> KernelResources* {
    for (KernelResources& r : out) {
      if (r.function == function) return &r;
    }
    return nullptr;
  };
  std::istringstream in{std::string(output)};
  std::string line;
  KernelResources* current = nullptr;     // the entry the next "Used" line belongs to
  KernelResources* properties = nullptr;  // the function the next stack-frame line belongs to
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kEntry)) {
      KernelResources* r = find(m[1].str());
      if (r == nullptr) {
        out.push_back({});
        r = &out.back();
        r->function = m[1].str();
      }
      r->arch = m[2].str();
      current = r;
      properties = nullptr;
    } else if (std::regex_search(line, m, kProperties)) {
      properties = find(m[1].str());
    } else if (std::regex_search(line, m, kFrame)) {
      if (properties != nullptr) {
        properties->stack_bytes = ToInt(m[1].str());
        properties->spill_store_bytes = ToInt(m[2].str());
        properties->spill_load_bytes = ToInt(m[3].str());
      }
      properties = nullptr;
    } else if (std::regex_search(line, m, kUsed)) {
      if (current == nullptr) continue;  // a device function's report: not an entry
      current->registers = static_cast<int>(ToInt(m[1].str()));
      if (std::regex_search(line, m, kSmem)) current->shared_bytes = ToInt(m[1].str());
      if (std::regex_search(line, m, kCmem)) current->constant_bytes = ToInt(m[1].str());
      current = nullptr;
    }
  }
  for (KernelResources& r : out) r.function = Demangle(r.function);
  return out;
}

std::string FirstSanitizerError(std::string_view output) {
  std::istringstream in{std::string(output)};
  std::string line;
  std::string block;
  int lines = 0;
  while (std::getline(in, line)) {
    if (line.rfind("=========", 0) != 0) {
      if (!block.empty()) break;
      continue;
    }
    std::string text = line.substr(9);
    size_t start = text.find_first_not_of(' ');
    text = start == std::string::npos ? "" : text.substr(start);
    if (text.find("SUMMARY") != std::string::npos) break;  // "ERROR SUMMARY: 0 errors", ...
    if (block.empty()) {
      // The first line of a report: "Invalid __global__ write ...", "Race reported ...",
      // "Uninitialized __global__ memory read ...", "Program hit cudaErrorX ...".
      const bool starts =
          text.rfind("Invalid ", 0) == 0 || text.rfind("Race ", 0) == 0 ||
          text.find("hazard") != std::string::npos || text.rfind("Uninitialized ", 0) == 0 ||
          text.rfind("Program hit ", 0) == 0 || text.rfind("Out-of-range ", 0) == 0 ||
          text.rfind("Misaligned ", 0) == 0 || text.rfind("Error", 0) == 0;
      if (!starts) continue;
      block = text;
      lines = 1;
      continue;
    }
    if (text.empty() || lines >= 4) break;
    if (text.rfind("Saved host backtrace", 0) == 0 || text.rfind("Host Frame", 0) == 0) break;
    block += "\n" + text;
    ++lines;
  }
  return Trim(block, kMaxMessageChars);
}

}  // namespace kope
