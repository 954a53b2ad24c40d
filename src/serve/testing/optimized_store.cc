#include "testing/optimized_store.h"

#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "kope/base/subprocess.h"
#include "testing/test_paths.h"

namespace kope::serve::testing {
namespace {

namespace fs = std::filesystem;

struct Holder {
  OptimizedStore value;
  ~Holder() {
    std::error_code ec;
    if (!value.dir.empty()) fs::remove_all(value.dir, ec);
  }
};

OptimizedStore Make() {
  OptimizedStore out;
  out.dir = MakeScratchDir("kope-serve-test");
  out.store = out.dir / "store.db";
  const fs::path binary = kope::testing::BinaryDir();
  ProcessOptions options;
  options.timeout_seconds = 300;
  options.extra_env = {"KOPE_CACHE_DIR=" + (binary / "serve-test-cache").string()};
  auto result =
      RunProcess({(binary / "kope").string(), "optimize",
                  (fs::path(kope::testing::SourceDir()) / "examples/rmsnorm").string(), "--store",
                  out.store.string(), "--attempts", "4", "--patience", "0", "--sol", "0",
                  "--no-confirm", "--json", "-q", "--out", (out.dir / "best.cc").string()},
                 options);
  if (!result.ok()) {
    out.error = result.status().ToString();
    return out;
  }
  nlohmann::json report = nlohmann::json::parse(result->output, nullptr, false);
  if (result->exit_code != 0 || !report.is_object() || !report.contains("run")) {
    out.error = "kope optimize failed: " + result->output;
    return out;
  }
  out.run = report["run"].get<int64_t>();
  return out;
}

}  // namespace

fs::path MakeScratchDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

const OptimizedStore& SharedOptimizedStore() {
  static Holder holder{Make()};
  return holder.value;
}

}  // namespace kope::serve::testing
