// The CPU backend: kernels compiled by the system C++ compiler into shared
// objects, cached by content.
//
// Compile flags: -std=c++20 -O3 -march=native -fopenmp -fPIC -shared, the
// kernel ABI header on the include path, and a link that fails when the
// source does not export `kope_kernel` or leaves a symbol undefined. The
// cache key covers the source, the flags, the compiler's version, the ABI
// header and the CPU's feature flags (because of -march=native); artifacts are
// written to a temporary name and renamed, so concurrent compiles and crashes
// never leave a torn file. Thread-safe.
#ifndef KOPE_BACKEND_CPU_CPU_BACKEND_H_
#define KOPE_BACKEND_CPU_CPU_BACKEND_H_

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kope/backend/backend.h"

namespace kope {

struct CpuBackendOptions {
  std::filesystem::path cache_dir;    // empty: DefaultCacheDir()
  std::string compiler = "g++";       // $KOPE_CXX overrides the default
  std::filesystem::path include_dir;  // the folder holding kope/kernel.h; empty: the source tree's
  double compile_timeout_seconds = 120;
  std::vector<std::string> extra_flags;
};

Result<std::unique_ptr<Backend>> CreateCpuBackend(CpuBackendOptions options = {});

// Parses GCC/Clang output into diagnostics, errors first, keeping at most
// `max_diagnostics` and a few excerpt lines each. Exposed for tests.
std::vector<Diagnostic> ParseCompilerOutput(std::string_view output, size_t max_diagnostics = 8);

}  // namespace kope

#endif  // KOPE_BACKEND_CPU_CPU_BACKEND_H_
