#include "kope/base/file.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kope {

Result<std::string> ReadFileText(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return Status::NotFound(path.string() + ": no such file");
  if (!fs::is_regular_file(st)) {
    return Status::IoError(path.string() + ": cannot read: not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path.string() + ": cannot read: " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return Status::IoError(path.string() + ": cannot read: " + std::strerror(errno));
  return contents.str();
}

Result<std::filesystem::path> MakeTempFolder(const std::filesystem::path& root,
                                             const std::string& prefix) {
  const std::filesystem::path base = root.empty() ? std::filesystem::temp_directory_path() : root;
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IoError("cannot create a scratch folder in " + base.string() + ": " +
                           std::strerror(errno));
  }
  return std::filesystem::path(pattern);
}

}  // namespace kope
