#include "kope/backend/backend.h"

#include <cstdlib>

namespace kope {

std::filesystem::path DefaultCacheDir() {
  if (const char* dir = std::getenv("KOPE_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "kope";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "kope";
  }
  return std::filesystem::temp_directory_path() / "kope-cache";
}

}  // namespace kope
