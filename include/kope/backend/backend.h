// Backend: turns kernel source into something a runner can load, and
// describes the hardware it runs on.
//
// One implementation per target (CPU now, CUDA next). A compile error is a
// value (CompiledKernel::ok() false, with diagnostics); a Status error means
// the backend itself failed (no compiler, unwritable cache). Implementations
// are thread-safe: several compiles may run at once.
#ifndef KOPE_BACKEND_BACKEND_H_
#define KOPE_BACKEND_BACKEND_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kope/backend/hardware.h"
#include "kope/base/status.h"

namespace kope {

// One compiler message, trimmed to what a reader needs.
struct Diagnostic {
  std::string file;  // as the source was named, e.g. "optimized.cc"
  int line = 0;      // 1-based; 0 when the message has no location (linker)
  int column = 0;
  std::string severity;  // "error", "warning", "note"
  std::string message;   // the message, plus the source excerpt lines the compiler printed
};

struct CompiledKernel {
  std::filesystem::path artifact;       // the loadable object; empty when compilation failed
  std::vector<Diagnostic> diagnostics;  // errors first, at most a handful
  std::string log;                      // the compiler's output, trimmed
  std::string cache_key;                // content address of (source, flags, compiler, ABI header)
  bool cache_hit = false;
  double seconds = 0;  // compile wall time (0 on a cache hit)
  bool ok() const { return !artifact.empty(); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu" or "cuda".
  virtual std::string_view name() const = 0;
  // The task language this backend compiles: "cpp" or "cuda".
  virtual std::string_view language() const = 0;
  // Compiles `source` (the text of one kernel file); `display_name` is used in diagnostics.
  virtual Result<CompiledKernel> Compile(std::string_view source,
                                         std::string_view display_name) = 0;
  // The machine's description, with measured bandwidth and peak (measured once, then cached).
  virtual Result<HardwareInfo> Hardware() = 0;
};

// Where kope caches compiled kernels and hardware figures:
// $KOPE_CACHE_DIR, else $XDG_CACHE_HOME/kope, else ~/.cache/kope.
std::filesystem::path DefaultCacheDir();

}  // namespace kope

#endif  // KOPE_BACKEND_BACKEND_H_
