#include "compile_support.h"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <random>
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

Result<std::filesystem::path> CreateCompileWorkDir(const std::filesystem::path& dir,
                                                   const std::string& cache_key) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::IoError("cannot create compile cache " + dir.string() + ": " + ec.message());
  }
  const std::filesystem::path work = dir / ("tmp-" + cache_key + "-" + std::to_string(getpid()) +
                                            "-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(work, ec);
  if (ec) return Status::IoError("cannot create " + work.string() + ": " + ec.message());
  return work;
}

}  // namespace kope
