// PyTorch modules: a KernelBench problem's Model (eager, or under torch.compile) and a
// candidate's ModelNew, described to the Python bridge by an artifact and run by it.
#include <algorithm>
#include <system_error>

#include "kernel_kind.h"
#include "kope/base/hash.h"

namespace kope {
namespace {

// Loading a PyTorch kernel builds the model (and a candidate's extensions): minutes at most.
constexpr double kLoadSeconds = 900;
// A bridge process imports PyTorch before it answers.
constexpr double kStartSeconds = 60;
// A timed ModelNew call's Python launch is inside its timed region (see DecideTiming).
constexpr double kShortestJudgedSeconds = 1e-3;

class TorchModule final : public KernelKind {
 public:
  TorchModule(const Task& task, const TorchBridge& bridge) : task_(task), bridge_(bridge) {}

  bool bridge() const override { return true; }
  Result<CompiledKernel> BuildTaskKernel(const KernelSource&, KernelRole role,
                                         const std::filesystem::path& scratch) const override {
    const TorchMode mode = role == KernelRole::kCompiled ? TorchMode::kCompile : TorchMode::kEager;
    CompiledKernel k;
    KOPE_ASSIGN_OR_RETURN(k.artifact, WriteTorchArtifact(task_, mode, "", bridge_, scratch,
                                                         RoleName(role) + ".json"));
    return k;
  }
  Result<CompiledKernel> BuildCandidate(std::string_view source, std::string_view,
                                        const std::filesystem::path& scratch) const override {
    CompiledKernel k;
    KOPE_ASSIGN_OR_RETURN(k.artifact, WriteTorchArtifact(task_, TorchMode::kModelNew, source,
                                                         bridge_, scratch, "candidate.json"));
    return k;
  }
  RunnerOptions Recipe(const RunnerOptions& common, bool task_runner) const override;
  std::optional<RunnerOptions> CandidateRecipe(const RunnerOptions& common,
                                               std::string_view source) const override;
  double LoadTimeout(double call_timeout_seconds) const override {
    return std::max(call_timeout_seconds, kLoadSeconds);
  }
  // A ModelNew that does not build (syntax error, missing class, failing extension build).
  bool LoadFailureIsCompileError() const override { return true; }
  // A candidate's runner takes seconds to start (PyTorch's import): candidates that come
  // faster than that find two spares started ahead.
  size_t spares_ahead() const override { return 2; }
  double shortest_judged_seconds() const override { return kShortestJudgedSeconds; }

 private:
  const Task& task_;
  const TorchBridge& bridge_;
};

RunnerOptions TorchModule::Recipe(const RunnerOptions& common, bool task_runner) const {
  RunnerOptions o = common;
  UseTorchBridge(bridge_, &o, task_runner);
  o.start_timeout_seconds = std::max(o.start_timeout_seconds, kStartSeconds);
  // torch.compile and extension builds write precompiled headers and objects of hundreds of
  // megabytes into the sandbox's private tmpfs.
  SandboxLimits& l = o.sandbox.limits;
  l.max_file_bytes = std::max<uint64_t>(l.max_file_bytes, 2ull << 30);
  l.writable_bytes = std::max<uint64_t>(l.writable_bytes, 4ull << 30);
  l.cpu_seconds = std::max<uint64_t>(l.cpu_seconds, 1800);
  // A PyTorch task's runners run task code only: torch.compile's caches persist between
  // evaluations for them (the compiled reference point's, the reference's comparisons).
  std::error_code ec;
  if (task_runner && std::filesystem::is_directory(TorchCompileCacheDir(), ec)) {
    o.sandbox.writable.push_back(TorchCompileCacheDir());
  }
  return o;
}

// A ModelNew that builds a C++/CUDA extension as it is imported (torch.utils.cpp_extension:
// load_inline or load) gets a build folder kept between evaluations, keyed by its source's
// hash: the same source evaluated again finds its objects built (torch rewrites none of the
// files it generates when they are unchanged, so ninja has nothing to do) and its load phase
// is the import alone. Only a candidate of that very source is ever given the folder, writable:
// what one candidate builds can never reach another. A build lock that a killed runner left is
// removed first (one evaluation of a source at a time uses its folder).
std::optional<RunnerOptions> TorchModule::CandidateRecipe(const RunnerOptions& common,
                                                          std::string_view source) const {
  if (source.find("cpp_extension") == std::string_view::npos &&
      source.find("load_inline") == std::string_view::npos) {
    return std::nullopt;
  }
  namespace fs = std::filesystem;
  const fs::path folder = TorchExtensionCacheDir() / ContentHash({source, bridge_.python.string()});
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return std::nullopt;
  for (const fs::directory_entry& build : fs::directory_iterator(folder, ec)) {
    fs::remove(build.path() / "lock", ec);
  }
  RunnerOptions o = Recipe(common, /*task_runner=*/false);
  o.sandbox.writable.push_back(folder);
  o.exe_args.insert(o.exe_args.end(), {"--env", "TORCH_EXTENSIONS_DIR=" + folder.string()});
  return o;
}

}  // namespace

std::unique_ptr<KernelKind> TorchModuleKind(const Task& task, const TorchBridge& bridge) {
  return std::make_unique<TorchModule>(task, bridge);
}

}  // namespace kope
