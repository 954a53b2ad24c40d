// Turns nvcc's, ptxas's and compute-sanitizer's output into values a reader
// (or an LLM) can act on: diagnostics, resource reports, the first memory error.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
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

// `k.cu(12): error: ...`, `k.cu(5): warning #177-D: ...` (cudafe++ / EDG) or
// `k.cu:12:5: error: ...` (the host compiler, GCC style); none for other lines and for nvcc's
// intermediate files.
std::optional<Diagnostic> CompilerDiagnostic(const std::string& line) {
  static const std::regex kFrontEnd(
      R"(^(.*?)\((\d+)\): (catastrophic error|error|warning|remark)(?: #[0-9]+(?:-[A-Z])?)?: (.*)$)");
  static const std::regex kHost(
      R"(^(.*?):(\d+):(?:(\d+):)? (fatal error|error|warning|note): (.*)$)");
  std::smatch m;
  if (std::regex_match(line, m, kFrontEnd)) {
    Diagnostic d;
    d.file = FileName(m[1].str());
    d.line = std::stoi(m[2].str());
    const std::string sev = m[3].str();
    d.severity = sev == "catastrophic error" ? "error" : sev == "remark" ? "note" : sev;
    d.message = m[4].str();
    return d;
  }
  if (std::regex_match(line, m, kHost) && !IsIntermediate(m[1].str())) {
    Diagnostic d;
    d.file = FileName(m[1].str());
    d.line = std::stoi(m[2].str());
    d.column = m[3].matched ? std::stoi(m[3].str()) : 0;
    d.severity = m[4].str() == "fatal error" ? "error" : m[4].str();
    d.message = m[5].str();
    return d;
  }
  return std::nullopt;
}

// `ptxas error   : ...`, `nvlink warning : ...`.
std::optional<Diagnostic> ToolDiagnostic(const std::string& line) {
  static const std::regex kPtxas(R"(^ptxas (error|fatal|warning)\s*: (.*)$)");
  static const std::regex kNvlink(R"(^nvlink (error|fatal|warning)\s*: (.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, kPtxas) && !std::regex_match(line, m, kNvlink)) {
    return std::nullopt;
  }
  Diagnostic d;
  d.severity = m[1].str() == "warning" ? "warning" : "error";
  d.message = (line.rfind("ptxas", 0) == 0 ? "ptxas: " : "nvlink: ") + m[2].str();
  return d;
}

// A line that continues the diagnostic before it (a source excerpt, a caret), not a summary.
bool IsExcerptLine(const std::string& line) {
  return !line.empty() && line.find("errors detected in the compilation") == std::string::npos &&
         line.find("error detected in the compilation") == std::string::npos &&
         line.rfind("Remark: ", 0) != 0 && line.find("In function") == std::string::npos;
}

// Reads the output a line at a time; each diagnostic of the compilers takes up to
// kMaxExcerptLines of the lines that follow it.
class DiagnosticReader {
 public:
  void Read(std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (std::optional<Diagnostic> compiler = CompilerDiagnostic(line)) {
      Add(std::move(*compiler), /*takes_excerpt=*/true);
    } else if (std::optional<Diagnostic> tool = ToolDiagnostic(line)) {
      Add(std::move(*tool), /*takes_excerpt=*/false);
    } else if (ReadUndefinedReference(line) || ReadLinkerLine(line)) {
      // read: a diagnostic of the linker, or a line it adds nothing from
    } else if (current_ != nullptr && excerpt_ < kMaxExcerptLines && IsExcerptLine(line)) {
      current_->message += "\n" + line;
      ++excerpt_;
    } else if (line.empty()) {
      current_ = nullptr;
    }
  }

  // The errors first, then the warnings, then the notes, at most `max_diagnostics`, their
  // messages trimmed.
  std::vector<Diagnostic> Finish(size_t max_diagnostics) {
    std::stable_sort(all_.begin(), all_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      return SeverityRank(a.severity) < SeverityRank(b.severity);
    });
    if (all_.size() > max_diagnostics) all_.resize(max_diagnostics);
    for (Diagnostic& d : all_) d.message = Trim(d.message, kMaxMessageChars);
    return std::move(all_);
  }

 private:
  void Add(Diagnostic d, bool takes_excerpt) {
    all_.push_back(std::move(d));
    current_ = takes_excerpt ? &all_.back() : nullptr;
    excerpt_ = 0;
  }

  // An undefined reference, reported once per symbol; false for other lines.
  bool ReadUndefinedReference(const std::string& line) {
    static const std::regex kUndefined(R"(undefined reference to `([^']*)')");
    std::smatch m;
    if (!std::regex_search(line, m, kUndefined)) return false;
    const std::string symbol = m[1].str();
    if (symbol == "kope_kernel") {
      if (seen_undefined_entry_) return true;
      seen_undefined_entry_ = true;
    }
    for (const Diagnostic& d : all_) {
      if (d.message.find("'" + symbol + "'") != std::string::npos) return true;
    }
    Diagnostic d;
    d.severity = "error";
    d.message = symbol == "kope_kernel"
                    ? "the source does not export the entry point: define extern \"C\" int "
                      "kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*)"
                    : "undefined reference to '" + symbol +
                          "' (not defined and not in the C++ standard library, libm or the "
                          "CUDA runtime)";
    Add(std::move(d), /*takes_excerpt=*/false);
    return true;
  }

  // The linker's own message (`ld: ...`, `collect2: error: ...`), without its summary and
  // "in function" lines; false for other lines.
  bool ReadLinkerLine(const std::string& line) {
    static const std::regex kLinker(R"(^(?:.*\bld(?:\.\w+)?|collect2): (?:error: )?(.*)$)");
    std::smatch m;
    if (!std::regex_match(line, m, kLinker)) return false;
    const std::string text = m[1].str();
    if (text.find("ld returned") != std::string::npos ||
        text.find("in function") != std::string::npos) {
      return true;
    }
    Diagnostic d;
    d.severity = "error";
    d.message = text;
    Add(std::move(d), /*takes_excerpt=*/false);
    return true;
  }

  std::vector<Diagnostic> all_;
  Diagnostic* current_ = nullptr;  // the diagnostic that takes the next excerpt lines
  size_t excerpt_ = 0;             // the excerpt lines it has taken
  bool seen_undefined_entry_ = false;
};

}  // namespace

std::vector<Diagnostic> ParseNvccOutput(std::string_view output, size_t max_diagnostics) {
  DiagnosticReader reader;
  std::istringstream in{std::string(output)};
  std::string line;
  while (std::getline(in, line)) reader.Read(line);
  return reader.Finish(max_diagnostics);
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
