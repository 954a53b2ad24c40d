// The Python bridge: PyTorch problems (KernelBench format) run by kope.
//
// A task whose baseline is a PyTorch problem file (`[baseline] torch = "problem.py"`) has its
// baseline and reference run by the bridge (python/kope_bridge): a Python process that speaks
// kope-runner's protocol, started in the same sandbox, that imports PyTorch once and runs the
// problem's `Model` eagerly, under torch.compile, or a KernelBench-format candidate's `ModelNew`
// on the tensors in kope's arena. Native candidates (the C ABI) keep running in kope-runner.
// What a bridge process loads is an artifact: a JSON file describing the problem, the mode and
// the size sets (WriteTorchArtifact). docs/KERNELBENCH.md has the whole story.
#ifndef KOPE_TORCH_BRIDGE_BRIDGE_H_
#define KOPE_TORCH_BRIDGE_BRIDGE_H_

#include <filesystem>
#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/runner/runner.h"
#include "kope/runner/sandbox.h"
#include "kope/task/task.h"

namespace kope {

struct TorchBridge {
  std::filesystem::path python;         // the interpreter that has PyTorch
  std::filesystem::path environment;    // its virtual environment (shown to the sandbox)
  std::filesystem::path package_dir;    // holds kope_bridge_main.py and kope_bridge/
  std::filesystem::path flush_library;  // libkope-flush.so (clflush for CPU timing); may be empty
};

// The interpreter is $KOPE_PYTHON, else the project's .venv (scripts/setup makes it). NotFound,
// with what to run, when there is none or it cannot import torch (checked once per process).
Result<TorchBridge> FindTorchBridge();

// Makes `options` start a bridge process instead of kope-runner. A task's runner (`task`: the
// reference, the torch.compile reference point) imports torch.compile's front end while it
// waits for its first request; a candidate's does not, so that it is ready sooner.
void UseTorchBridge(const TorchBridge& bridge, RunnerOptions* options, bool task = false);

enum class TorchMode {
  kEager,     // the problem's Model, as written
  kCompile,   // the problem's Model under torch.compile (default mode)
  kModelNew,  // a KernelBench-format candidate: its ModelNew, same init inputs
};
std::string_view TorchModeName(TorchMode mode);

// Where torch.compile's caches persist between evaluations (DefaultCacheDir()/torch-compile):
// a PyTorch task's runners get it writable (task code only; candidates never do).
std::filesystem::path TorchCompileCacheDir();
// Where the extension builds of ModelNew candidates persist, one folder per candidate source
// (DefaultCacheDir()/torch-extensions).
std::filesystem::path TorchExtensionCacheDir();

// Whether a candidate file name is a KernelBench-format candidate (a .py file).
bool IsTorchCandidateName(std::string_view name);

// Writes the artifact a bridge process loads, `dir / file_name`, for `task` (which must have a
// torch baseline). `candidate_source` is the ModelNew source for kModelNew, else ignored.
// kCompile keeps torch.compile's caches in TorchCompileCacheDir(), across evaluations.
Result<std::filesystem::path> WriteTorchArtifact(const Task& task, TorchMode mode,
                                                 std::string_view candidate_source,
                                                 const TorchBridge& bridge,
                                                 const std::filesystem::path& dir,
                                                 const std::string& file_name);

// How a problem file's code is confined while it is imported. A problem file is code: the
// importer runs it (on PyTorch's meta device, then on a small real instance) in the sandbox of
// a PyTorch candidate's runner (kope/runner/sandbox.h): bubblewrap where it works (no network,
// the file system read-only and the source, build and home folders hidden, its own PID
// namespace, so no process outlives it), the rlimits of `limits`, a clean environment (nothing
// of kope's own: no API keys), its own process group, killed at `timeout_seconds`. Its only
// writable folder is a fresh scratch folder; the task folder is written by kope from there.
struct ProblemImportOptions {
  double timeout_seconds = 600;
  SandboxLimits limits{.cpu_seconds = 600};
  bool use_bubblewrap = true;  // false: rlimits, clean environment and process group only
};

// Turns one KernelBench problem file into a kope task folder `out_dir` (task.toml and a copy of
// the problem), then loads it to check it. A problem the importer cannot convert, or whose code
// fails, is killed by a limit or is denied what it tried, is InvalidArgument with the
// importer's reason; one that does not return within the timeout is DeadlineExceeded. Either
// names the problem file.
Result<Task> ImportKernelBenchProblem(const TorchBridge& bridge,
                                      const std::filesystem::path& problem,
                                      const std::filesystem::path& out_dir,
                                      const ProblemImportOptions& options = {});

// Whether `path` names a KernelBench problem file (a regular .py file).
bool IsKernelBenchProblem(const std::filesystem::path& path);

// Loads a task folder, or a KernelBench problem file evaluated in place: the file is imported
// once into kope's cache (DefaultCacheDir()/kernelbench/<content hash>) and loaded from there.
Result<Task> LoadTaskOrProblem(const std::filesystem::path& path);

}  // namespace kope

#endif  // KOPE_TORCH_BRIDGE_BRIDGE_H_
