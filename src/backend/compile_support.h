// Small pieces both compiling backends (CPU, CUDA) share. Internal to src/backend.
#ifndef KOPE_SRC_BACKEND_COMPILE_SUPPORT_H_
#define KOPE_SRC_BACKEND_COMPILE_SUPPORT_H_

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include "kope/base/status.h"

namespace kope {

// The compiler's output cut to a size a reader (or an LLM) can take, marked when cut.
std::string TrimCompilerLog(std::string log);

// A file name for diagnostics: the display name's last component with unsafe characters
// replaced, "kernel" + `extensions[0]` when empty, and `extensions[0]` appended when its
// extension is none of `extensions` (compilers choose the language by the extension).
std::string SafeSourceFileName(std::string_view display_name,
                               std::initializer_list<std::string_view> extensions);

// Creates the compile cache folder `dir` when missing and, inside it, a private work folder for
// one compile of `cache_key`, so that concurrent compiles of the same source never collide.
// Returns the work folder (the caller removes it); IoError when either cannot be created.
Result<std::filesystem::path> CreateCompileWorkDir(const std::filesystem::path& dir,
                                                   const std::string& cache_key);

}  // namespace kope

#endif  // KOPE_SRC_BACKEND_COMPILE_SUPPORT_H_
