#include "compile_support.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace kope {

namespace {
constexpr size_t kMaxLogBytes = 8000;
}  // namespace

std::string TrimCompilerLog(std::string log) {
  if (log.size() > kMaxLogBytes) {
    log.resize(kMaxLogBytes);
    log += "\n[... compiler output trimmed]";
  }
  return log;
}

std::string SafeSourceFileName(std::string_view display_name,
                               std::initializer_list<std::string_view> extensions) {
  const std::string first(*extensions.begin());
  std::string name = std::filesystem::path(std::string(display_name)).filename().string();
  if (name.empty()) name = "kernel" + first;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  const std::string extension = std::filesystem::path(name).extension().string();
  for (std::string_view accepted : extensions) {
    if (extension == accepted) return name;
  }
  return name + first;
}

}  // namespace kope
