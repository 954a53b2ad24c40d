#include "kope/torch_bridge/bridge.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kope/backend/backend.h"
#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/base/subprocess.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const size_t cut = s.rfind('\n');
  return s.size() > 1500 && cut != std::string::npos ? s.substr(cut + 1) : s;
}

Result<TorchBridge> LocateBridge() {
  TorchBridge bridge;
  // The source tree: two levels above the running kope (build/<variant>/kope), else where it
  // was built from.
  std::error_code ec;
  fs::path root = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path().parent_path();
  if (ec || !fs::exists(root / "python" / "kope_bridge_main.py", ec)) root = KOPE_SOURCE_DIR;
  bridge.package_dir = root / "python";
  if (const char* env = std::getenv("KOPE_PYTHON"); env != nullptr && *env != '\0') {
    bridge.python = env;
  } else {
    bridge.python = root / ".venv" / "bin" / "python3";
  }
  if (!fs::exists(bridge.python, ec)) {
    return Status::NotFound("no Python for the PyTorch bridge at " + bridge.python.string() +
                            ": run scripts/setup (it makes .venv with PyTorch) or set KOPE_PYTHON");
  }
  // The environment's root: <root>/bin/python3.
  bridge.environment = fs::absolute(bridge.python).parent_path().parent_path();
  const fs::path flush = fs::path(KOPE_FLUSH_LIBRARY);
  if (fs::exists(flush, ec)) bridge.flush_library = flush;
  ProcessOptions options;
  options.timeout_seconds = 120;
  Result<ProcessResult> probe =
      RunProcess({bridge.python.string(), "-c", "import torch, numpy"}, options);
  if (!probe.ok()) return probe.status().WithContext("starting " + bridge.python.string());
  if (!probe->ok()) {
    return Status::NotFound(bridge.python.string() + " cannot import PyTorch (" +
                            Trimmed(probe->output) + "): run scripts/setup or set KOPE_PYTHON");
  }
  return bridge;
}

// An executable named `name` in the parent's PATH, else empty.
fs::path FindExecutable(const std::string& name) {
  const char* env = std::getenv("PATH");
  std::stringstream dirs(env != nullptr ? env : "");
  std::error_code ec;
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir) / name;
    if (!dir.empty() && dir[0] == '/' && access(candidate.c_str(), X_OK) == 0 &&
        fs::is_regular_file(candidate, ec)) {
      return candidate;
    }
  }
  return {};
}

std::string EnvOr(const char* name, const std::string& fallback = "") {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// Whether the sandbox shows `path` already (the system's /usr, or a folder in `shown`).
bool Shown(const fs::path& path, const std::vector<fs::path>& shown) {
  for (const fs::path& dir : shown) {
    const fs::path rel = path.lexically_relative(dir);
    if (!rel.empty() && *rel.begin() != "..") return true;
  }
  return false;
}

// What a candidate's extension build needs (torch.utils.cpp_extension: ninja, the host
// compiler, nvcc and CUDA_HOME), as the bridge's --env arguments and the folders to show: the
// runner's environment is kope's own list, without the parent's PATH, CC, CXX or CUDA_HOME.
struct Toolchain {
  std::vector<std::string> env;  // NAME=VALUE
  std::vector<fs::path> folders;
};

Toolchain FindToolchain(const TorchBridge& bridge) {
  Toolchain t;
  std::error_code ec;
  const std::vector<fs::path> system = {"/usr", "/bin", "/lib", bridge.environment};
  std::vector<std::string> path = {(bridge.environment / "bin").string()};
  // CUDA_HOME, CUDA_PATH, else the toolkit of the nvcc on PATH, else /usr/local/cuda.
  fs::path cuda = EnvOr("CUDA_HOME", EnvOr("CUDA_PATH"));
  if (cuda.empty()) {
    const fs::path nvcc = FindExecutable("nvcc");
    if (!nvcc.empty()) cuda = fs::canonical(nvcc, ec).parent_path().parent_path();
    if (cuda.empty() && fs::exists("/usr/local/cuda/bin/nvcc", ec)) cuda = "/usr/local/cuda";
  }
  if (!cuda.empty() && fs::is_directory(cuda, ec)) {
    t.env.push_back("CUDA_HOME=" + cuda.string());
    path.push_back((cuda / "bin").string());
    if (!Shown(cuda, system)) t.folders.push_back(cuda);
  }
  for (const char* name : {"CC", "CXX"}) {
    const std::string compiler = EnvOr(name);
    if (compiler.empty()) continue;
    t.env.push_back(std::string(name) + "=" + compiler);
    // A compiler of its own prefix (/opt/gcc-13/bin/g++): that prefix is shown.
    const fs::path prefix = fs::path(compiler).parent_path().parent_path();
    if (fs::path(compiler).is_absolute() && !Shown(compiler, system) && !prefix.empty()) {
      t.folders.push_back(prefix);
    }
  }
  // Debian's cc and c++ are links through /etc/alternatives, which the sandbox hides.
  if (fs::is_directory("/etc/alternatives", ec)) t.folders.push_back("/etc/alternatives");
  std::string joined;
  for (const std::string& dir : path) joined += dir + ":";
  t.env.push_back("PATH=" + joined + "/usr/local/bin:/usr/bin:/bin");
  return t;
}

// The importer's command: a clean environment (nothing of kope's own, no API keys) and the
// rlimits a PyTorch candidate's runner sets itself (kope_bridge/serve.py, apply_limits).
std::vector<std::string> ImporterCommand(const TorchBridge& bridge, const SandboxLimits& limits,
                                         const fs::path& problem, const fs::path& out_dir) {
  return {"/usr/bin/env",
          "-i",
          "PATH=/usr/local/bin:/usr/bin:/bin",
          "LANG=C.UTF-8",
          "PYTHONPATH=" + bridge.package_dir.string(),
          bridge.python.string(),
          "-B",
          "-m",
          "kope_bridge.importer",
          "--cpu-seconds",
          std::to_string(limits.cpu_seconds),
          "--max-file-bytes",
          std::to_string(limits.max_file_bytes),
          "--max-address-space-bytes",
          std::to_string(limits.max_address_space_bytes),
          "--max-processes",
          std::to_string(limits.max_processes),
          problem.string(),
          out_dir.string()};
}

// Runs the importer on `problem` (absolute), writing into `scratch`/out: under bubblewrap with
// the folders a PyTorch candidate's runner is shown, the problem file itself and `scratch`
// (writable) besides, where bubblewrap works and is not turned off.
Result<ProcessResult> RunImporter(const TorchBridge& bridge, const fs::path& problem,
                                  const fs::path& scratch, const ProblemImportOptions& options) {
  RunnerOptions runner;
  UseTorchBridge(bridge, &runner);
  SandboxOptions sandbox;
  sandbox.scratch_dir = scratch;
  sandbox.read_only = runner.sandbox.read_only;
  sandbox.read_only.push_back(problem);
  sandbox.limits = options.limits;
  sandbox.use_bubblewrap = options.use_bubblewrap;
  std::vector<std::string> argv = ImporterCommand(bridge, options.limits, problem, scratch / "out");
  if (options.use_bubblewrap && BubblewrapAvailable()) {
    KOPE_ASSIGN_OR_RETURN(argv, BubblewrapCommand(sandbox, argv));
  }
  ProcessOptions process;
  process.timeout_seconds = options.timeout_seconds;
  process.working_dir = scratch;
  return RunProcess(argv, process);
}

// How the importer ended, as the import's status.
Status ImporterStatus(const fs::path& problem, const ProcessResult& run,
                      const ProblemImportOptions& options) {
  const std::string prefix = problem.string() + ": cannot import: ";
  if (run.timed_out) {
    std::ostringstream limit;
    limit << options.timeout_seconds;
    return Status::DeadlineExceeded(prefix + "the problem's code did not return within " +
                                    limit.str() + " s (killed)");
  }
  if (run.ok()) return Status::Ok();
  std::string why = Trimmed(run.output);
  // bubblewrap exits with 128 + the signal that ended the importer; without it the signal is
  // the process's own.
  const int signal = run.term_signal != 0                 ? run.term_signal
                     : run.exit_code > 128 && why.empty() ? run.exit_code - 128
                                                          : 0;
  if (signal != 0) {
    why = std::string("the importer was killed by ") + sigabbrev_np(signal) +
          (signal == SIGXCPU || signal == SIGKILL
               ? " (its CPU time limit is " + std::to_string(options.limits.cpu_seconds) + " s)"
               : "") +
          (why.empty() ? "" : ": " + why);
  }
  if (why.empty()) why = "the importer failed with exit code " + std::to_string(run.exit_code);
  return Status::InvalidArgument(prefix + why);
}

// The task folder, from what the importer wrote in the sandbox: its task.toml (a regular file,
// not a link the problem's code planted) and the problem file itself, from where kope read it.
Status CopyImported(const fs::path& scratch, const fs::path& problem, const fs::path& out_dir) {
  std::error_code ec;
  const fs::path toml = scratch / "out" / "task.toml";
  if (!fs::is_directory(fs::symlink_status(scratch / "out", ec)) ||
      !fs::is_regular_file(fs::symlink_status(toml, ec))) {
    return Status::InvalidArgument(problem.string() + ": cannot import: the importer wrote no " +
                                   "task.toml");
  }
  fs::create_directories(out_dir, ec);
  const auto overwrite = fs::copy_options::overwrite_existing;
  if (!ec) fs::copy_file(toml, out_dir / "task.toml", overwrite, ec);
  if (!ec) fs::copy_file(problem, out_dir / "problem.py", overwrite, ec);
  if (ec) return Status::IoError("writing " + out_dir.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<TorchBridge> FindTorchBridge() {
  static std::once_flag once;
  static Result<TorchBridge> found = Status::Internal("unset");
  std::call_once(once, [] { found = LocateBridge(); });
  return found;
}

void UseTorchBridge(const TorchBridge& bridge, RunnerOptions* options, bool task) {
  options->runner_exe = bridge.python;
  options->exe_args = {"-B", (bridge.package_dir / "kope_bridge_main.py").string()};
  if (task) options->exe_args.push_back("--preload-compiler");
  const Toolchain toolchain = FindToolchain(bridge);
  for (const std::string& assignment : toolchain.env) {
    options->exe_args.insert(options->exe_args.end(), {"--env", assignment});
  }
  for (const fs::path& folder : toolchain.folders) options->sandbox.read_only.push_back(folder);
  options->sandbox.read_only.push_back(bridge.environment);
  options->sandbox.read_only.push_back(bridge.package_dir);
  if (!bridge.flush_library.empty()) options->sandbox.read_only.push_back(bridge.flush_library);
}

std::string_view TorchModeName(TorchMode mode) {
  switch (mode) {
    case TorchMode::kEager:
      return "eager";
    case TorchMode::kCompile:
      return "compile";
    case TorchMode::kModelNew:
      return "modelnew";
  }
  return "eager";
}

fs::path TorchCompileCacheDir() { return DefaultCacheDir() / "torch-compile"; }

fs::path TorchExtensionCacheDir() { return DefaultCacheDir() / "torch-extensions"; }

bool IsTorchCandidateName(std::string_view name) {
  return name.size() > 3 && name.substr(name.size() - 3) == ".py";
}

Result<fs::path> WriteTorchArtifact(const Task& task, TorchMode mode,
                                    std::string_view candidate_source, const TorchBridge& bridge,
                                    const fs::path& dir, const std::string& file_name) {
  auto source_it = task.baselines.find("torch");
  if (source_it == task.baselines.end() || !task.torch) {
    return Status::InvalidArgument("task " + task.name + " has no PyTorch baseline");
  }
  KOPE_ASSIGN_OR_RETURN(std::string problem, ReadFileText(source_it->second.path));
  nlohmann::json spec;
  spec["mode"] = TorchModeName(mode);
  spec["problem"] = problem;
  spec["problem_name"] = source_it->second.path.filename().string();
  if (mode == TorchMode::kModelNew) spec["candidate"] = std::string(candidate_source);
  spec["n_forward_inputs"] = task.inputs.size() - task.torch->parameters.size();
  spec["parameters"] = task.torch->parameters;
  nlohmann::json scalars = nlohmann::json::array();  // forward inputs passed as numbers
  for (size_t i = 0; i < task.inputs.size(); ++i) {
    const auto& names = task.torch->scalars;
    if (std::find(names.begin(), names.end(), task.inputs[i].name) != names.end()) {
      scalars.push_back(i);
    }
  }
  spec["scalars"] = scalars;
  spec["torch_ops"] = task.torch->forbid_torch_ops ? "forbid" : "allow";
  if (!bridge.flush_library.empty()) spec["flush_library"] = bridge.flush_library.string();
  if (mode == TorchMode::kEager || mode == TorchMode::kCompile) {  // task code only
    std::error_code ec;
    fs::create_directories(TorchCompileCacheDir(), ec);
    if (!ec) spec["compile_cache"] = TorchCompileCacheDir().string();
  }
  nlohmann::json sets = nlohmann::json::array();
  for (const SizeSet& set : AllSizeSets(task)) {
    nlohmann::json globals = nlohmann::json::object();
    for (const std::string& g : task.torch->globals) {
      auto it = set.sizes.find(g);
      if (it != set.sizes.end()) globals[g] = it->second;
    }
    // Every input's shape, the module's parameters included (two size sets may differ in
    // parameters only: KernelBench level 2's 58 and 60 in out_channels): the bridge picks a
    // call's size set by them, without running get_inputs() on the meta device (whose first
    // use imports PyTorch's decompositions: seconds, in a candidate's runner).
    nlohmann::json shapes = nlohmann::json::array();
    for (const TensorSpec& input : task.inputs) {
      KOPE_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ResolveShape(input, set));
      shapes.push_back(shape);
    }
    sets.push_back({{"label", set.label}, {"globals", globals}, {"shapes", shapes}});
  }
  spec["size_sets"] = sets;
  const fs::path path = dir / file_name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << spec.dump();
  if (!out.good()) return Status::IoError("cannot write " + path.string());
  return path;
}

Result<Task> ImportKernelBenchProblem(const TorchBridge& bridge, const fs::path& problem,
                                      const fs::path& out_dir,
                                      const ProblemImportOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(problem, ec)) {
    return Status::NotFound(problem.string() + ": no such problem file");
  }
  KOPE_ASSIGN_OR_RETURN(const fs::path scratch, MakeTempFolder("", "kope-import"));
  Result<ProcessResult> run = RunImporter(bridge, fs::absolute(problem), scratch, options);
  Status status = run.ok() ? ImporterStatus(problem, *run, options)
                           : run.status().WithContext("importing " + problem.string());
  if (status.ok()) status = CopyImported(scratch, problem, out_dir);
  fs::remove_all(scratch, ec);
  if (!status.ok()) return status;
  return LoadTask(out_dir);
}

bool IsKernelBenchProblem(const fs::path& path) {
  std::error_code ec;
  return path.extension() == ".py" && fs::is_regular_file(path, ec);
}

Result<Task> LoadTaskOrProblem(const fs::path& path) {
  if (!IsKernelBenchProblem(path)) return LoadTask(path);
  KOPE_ASSIGN_OR_RETURN(std::string source, ReadFileText(path));
  // Keyed by the problem's text and the importer's own sources: a changed importer re-imports.
  std::string key_material = source;
  for (const char* part : {"importer.py", "problem.py"}) {
    Result<std::string> text =
        ReadFileText(fs::path(KOPE_SOURCE_DIR) / "python/kope_bridge" / part);
    if (text.ok()) key_material += *text;
  }
  const fs::path dir = DefaultCacheDir() / "kernelbench" /
                       (path.stem().string() + "-" + ContentHash(key_material).substr(0, 16));
  std::error_code ec;
  if (fs::is_regular_file(dir / "task.toml", ec)) return LoadTask(dir);
  KOPE_ASSIGN_OR_RETURN(TorchBridge bridge, FindTorchBridge());
  // Imported beside, then renamed: a crash never leaves a half-written task in the cache.
  const fs::path partial = dir.string() + ".partial-" + std::to_string(::getpid());
  fs::remove_all(partial, ec);
  Result<Task> imported = ImportKernelBenchProblem(bridge, path, partial);
  if (!imported.ok()) {
    fs::remove_all(partial, ec);
    return imported.status();
  }
  fs::rename(partial, dir, ec);
  if (ec) fs::remove_all(partial, ec);  // another process got there first
  return LoadTask(dir);
}

}  // namespace kope
