// Nsight Compute and compute-sanitizer around kope-cuda-launch.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include "cuda_internal.h"
#include "kope/base/subprocess.h"
#include "kope/runner/sandbox.h"
#include "kope/task/dtype.h"

namespace kope {
namespace cuda_internal {
namespace {

namespace fs = std::filesystem;

// The compact metric set, with the unit each is read in (--print-units base).
struct MetricSpec {
  const char* metric;
  const char* name;  // as stored in the profile
};
constexpr MetricSpec kMetrics[] = {
    {"gpu__time_duration.sum", "duration_ns"},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram_throughput_pct"},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", "achieved_occupancy_pct"},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm_throughput_pct"},
    {"lts__t_sector_hit_rate.pct", "l2_hit_rate_pct"},
    {"lts__throughput.avg.pct_of_peak_sustained_elapsed", "l2_throughput_pct"},
    {"l1tex__throughput.avg.pct_of_peak_sustained_active", "l1_throughput_pct"},
    {"launch__registers_per_thread", "registers_per_thread"},
};

// The units whose throughput decides the limiter, by stored name.
constexpr std::pair<const char*, const char*> kLimiters[] = {
    {"dram_throughput_pct", "dram"},
    {"l2_throughput_pct", "l2"},
    {"l1_throughput_pct", "l1"},
    {"sm_throughput_pct", "sm"},
};

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  return fields;
}

std::optional<double> ParseNumber(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  if (s.empty() || s == "n/a") return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') return std::nullopt;
  return v;
}

std::string FindTool(const std::string& tool) {
  if (tool.find('/') != std::string::npos) return access(tool.c_str(), X_OK) == 0 ? tool : "";
  const char* env = std::getenv("PATH");
  std::string dirs = std::string(env != nullptr ? env : "") + ":/usr/local/cuda/bin";
  std::stringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + tool;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<fs::path> FindLauncher(const CudaBackendOptions& options) {
  if (!options.launcher.empty()) return options.launcher;
  if (const char* env = std::getenv("KOPE_CUDA_LAUNCH"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = self.parent_path() / "kope-cuda-launch";
    if (access(beside.c_str(), X_OK) == 0) return beside;
  }
  return Status::NotFound("kope-cuda-launch not found beside this program; set KOPE_CUDA_LAUNCH");
}

// A scratch folder for one tool run, removed with the object.
class ToolScratch {
 public:
  explicit ToolScratch(const fs::path& root) {
    std::error_code ec;
    path_ =
        root / ("tool-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path_, ec);
    if (ec) path_.clear();
  }
  ~ToolScratch() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs `tool_argv` (the tool, its options, the launcher and its options), inside
// bubblewrap with the GPU visible where bubblewrap works.
Result<ProcessResult> RunTool(const ToolContext& context, const std::string& tool_path,
                              std::vector<std::string> argv, const fs::path& artifact,
                              const fs::path& launcher, std::string* sandbox_note) {
  ToolScratch scratch(context.scratch_root);
  if (scratch.path().empty()) return Status::IoError("cannot create a scratch folder for a tool");
  // The kernel is copied into the scratch folder: the tool sees nothing else of the cache.
  std::error_code ec;
  const fs::path kernel = scratch.path() / "kernel.so";
  fs::copy_file(artifact, kernel, ec);
  if (ec) return Status::IoError("copying " + artifact.string() + ": " + ec.message());
  for (std::string& a : argv) {
    if (a == "@KERNEL@") a = kernel.string();
  }
  if (BubblewrapAvailable()) {
    SandboxOptions sandbox;
    sandbox.scratch_dir = scratch.path();
    sandbox.limits.writable_bytes = 2ull << 30;
    AddGpuAccess(context.options.device, &sandbox);
    sandbox.read_only.push_back(launcher);
    // The tool's own installation (ncu lives in /opt/nvidia/... behind a link in the toolkit).
    const fs::path real = fs::canonical(tool_path, ec);
    if (!ec) argv[0] = real.string();
    for (const fs::path& p : {fs::path(tool_path), real}) {
      const fs::path root = p.parent_path().parent_path();
      if (!root.empty() && root.string().rfind("/usr", 0) != 0) sandbox.read_only.push_back(root);
    }
    if (fs::exists("/etc/alternatives", ec)) sandbox.read_only.push_back("/etc/alternatives");
    // The toolkit's ncu is a script that runs Nsight Compute from /opt/nvidia.
    if (fs::exists("/opt/nvidia", ec)) sandbox.read_only.push_back("/opt/nvidia");
    Result<std::vector<std::string>> wrapped = BubblewrapCommand(sandbox, argv);
    if (wrapped.ok()) argv = std::move(wrapped).value();
  } else if (sandbox_note != nullptr) {
    *sandbox_note = "run without bubblewrap (not available here)";
  }
  ProcessOptions popts;
  popts.timeout_seconds = context.options.tool_timeout_seconds;
  popts.working_dir = scratch.path();
  popts.extra_env = {"HOME=" + scratch.path().string(), "TMPDIR=/tmp"};
  popts.max_output_bytes = 4 << 20;
  return RunProcess(argv, popts);
}

std::vector<std::string> LauncherArgs(const fs::path& launcher, int device, int warmup,
                                      bool profile, const std::vector<LaunchShapes>& sets) {
  std::vector<std::string> args = {
      launcher.string(),     "--kernel", "@KERNEL@", "--device", std::to_string(device), "--warmup",
      std::to_string(warmup)};
  if (profile) args.push_back("--profile");
  for (const LaunchShapes& s : sets) {
    args.push_back("--set");
    args.push_back(LaunchSetArgument(s));
  }
  return args;
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

}  // namespace

std::string LaunchSetArgument(const LaunchShapes& shapes) {
  auto list = [](const std::vector<LaunchShapes::Tensor>& tensors) {
    std::string s;
    for (const LaunchShapes::Tensor& t : tensors) {
      if (!s.empty()) s += ",";
      s += DTypeName(static_cast<DType>(t.dtype));  // kope-cuda-launch parses every name
      s += ":";
      for (size_t d = 0; d < t.shape.size(); ++d) {
        s += (d ? "x" : "") + std::to_string(t.shape[d]);
      }
    }
    return s;
  };
  return list(shapes.inputs) + ";" + list(shapes.outputs);
}

Result<KernelProfile> RunProfiler(const ToolContext& context, const fs::path& artifact,
                                  const LaunchShapes& shapes) {
  KernelProfile profile;
  const std::string ncu = FindTool(context.options.ncu);
  if (ncu.empty()) {
    profile.note = "Nsight Compute (" + context.options.ncu + ") is not installed here";
    return profile;
  }
  KOPE_ASSIGN_OR_RETURN(fs::path launcher, FindLauncher(context.options));
  std::string metrics;
  for (const MetricSpec& m : kMetrics)
    metrics += (metrics.empty() ? "" : ",") + std::string(m.metric);
  std::vector<std::string> argv = {ncu,
                                   "--csv",
                                   "--page",
                                   "raw",
                                   "--print-units",
                                   "base",
                                   "--clock-control",
                                   "none",
                                   "--cache-control",
                                   "all",
                                   "--profile-from-start",
                                   "off",
                                   "--metrics",
                                   metrics};
  std::vector<std::string> launch =
      LauncherArgs(launcher, context.options.device, 2, /*profile=*/true, {shapes});
  argv.insert(argv.end(), launch.begin(), launch.end());
  std::string sandbox_note;
  KOPE_ASSIGN_OR_RETURN(ProcessResult run,
                        RunTool(context, ncu, argv, artifact, launcher, &sandbox_note));
  Result<ProcessResult> version = RunProcess({ncu, "--version"});
  profile.tool = "ncu";
  if (version.ok() && version->ok()) {
    std::istringstream in(version->output);
    std::string line, last;
    while (std::getline(in, line)) {
      if (!line.empty()) last = line;
    }
    if (size_t v = last.find("Version "); v != std::string::npos) {
      profile.tool = "ncu " + last.substr(v + 8, last.find(' ', v + 8) - v - 8);
    }
  }
  Result<KernelProfile> parsed = ParseNcuCsv(run.output);
  if (!run.ok() || !parsed.ok()) {
    profile.note = std::string("Nsight Compute could not profile the kernel") +
                   (run.timed_out ? " (timed out)" : "") + ": " + Tail(run.output, 600);
    return profile;
  }
  parsed->tool = profile.tool;
  parsed->note = sandbox_note;
  return parsed;
}

Result<SanitizerReport> RunSanitizers(const ToolContext& context, const fs::path& artifact,
                                      const std::vector<LaunchShapes>& shapes) {
  SanitizerReport report;
  const std::string tool = FindTool(context.options.sanitizer);
  if (tool.empty()) {
    report.note = "compute-sanitizer (" + context.options.sanitizer + ") is not installed here";
    return report;
  }
  KOPE_ASSIGN_OR_RETURN(fs::path launcher, FindLauncher(context.options));
  for (const char* name : {"memcheck", "racecheck", "initcheck"}) {
    std::vector<std::string> argv = {tool, "--tool",        name, "--error-exitcode",
                                     "86", "--print-limit", "5"};
    if (std::string_view(name) == "memcheck") {
      argv.insert(argv.end(), {"--check-device-heap", "yes"});
    }
    std::vector<std::string> launch =
        LauncherArgs(launcher, context.options.device, 0, /*profile=*/false, shapes);
    argv.insert(argv.end(), launch.begin(), launch.end());
    std::string sandbox_note;
    KOPE_ASSIGN_OR_RETURN(ProcessResult run,
                          RunTool(context, tool, argv, artifact, launcher, &sandbox_note));
    const std::string error = FirstSanitizerError(run.output);
    const bool summary = run.output.find("ERROR SUMMARY") != std::string::npos ||
                         run.output.find("RACECHECK SUMMARY") != std::string::npos;
    if (!error.empty() || run.exit_code == 86) {
      report.tools.push_back(name);
      report.clean = false;
      report.first_error =
          std::string(name) + ": " + (error.empty() ? Tail(run.output, 400) : error);
      return report;
    }
    if (!run.ok() || !summary) {
      // The tool could not run the program (an unsupported device, a launcher failure):
      // say so and go on; the gate did not close.
      report.note += (report.note.empty() ? "" : "; ") + std::string(name) + " did not run" +
                     (run.timed_out ? " (timed out)" : "") + ": " + Tail(run.output, 300);
      continue;
    }
    report.tools.push_back(name);
    if (!sandbox_note.empty() && report.note.find(sandbox_note) == std::string::npos) {
      report.note += (report.note.empty() ? "" : "; ") + sandbox_note;
    }
  }
  return report;
}

}  // namespace cuda_internal

Result<KernelProfile> ParseNcuCsv(std::string_view csv) {
  std::istringstream in{std::string(csv)};
  std::string line;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;  // ==PROF== lines and the launcher's output
    std::vector<std::string> fields = cuda_internal::SplitCsvLine(line);
    if (header.empty()) {
      if (std::find(fields.begin(), fields.end(), "ID") == fields.end()) continue;
      header = std::move(fields);
      continue;
    }
    if (fields.size() != header.size()) continue;
    if (fields[0].empty()) continue;  // the units row
    rows.push_back(std::move(fields));
  }
  if (header.empty()) return Status::InvalidArgument("no CSV header in Nsight Compute's output");
  if (rows.empty()) return Status::InvalidArgument("Nsight Compute profiled no kernel launch");
  auto column = [&](const std::string& name) -> int {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const int duration = column("gpu__time_duration.sum");
  const int kernel_name = column("Kernel Name");
  size_t longest = 0;
  double longest_ns = -1;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::optional<double> ns =
        duration >= 0 ? cuda_internal::ParseNumber(rows[r][static_cast<size_t>(duration)])
                      : std::nullopt;
    if (ns && *ns > longest_ns) {
      longest_ns = *ns;
      longest = r;
    }
  }
  KernelProfile p;
  p.launches = static_cast<int>(rows.size());
  if (kernel_name >= 0) p.kernel = rows[longest][static_cast<size_t>(kernel_name)];
  std::map<std::string, double> values;
  std::vector<std::string> missing;
  for (const cuda_internal::MetricSpec& m : cuda_internal::kMetrics) {
    const int c = column(m.metric);
    std::optional<double> v =
        c >= 0 ? cuda_internal::ParseNumber(rows[longest][static_cast<size_t>(c)]) : std::nullopt;
    if (v) {
      p.metrics.emplace_back(m.name, *v);
      values[m.name] = *v;
    } else {
      missing.push_back(m.metric);
    }
  }
  double best = -1;
  for (const auto& [metric, unit] : cuda_internal::kLimiters) {
    auto it = values.find(metric);
    if (it != values.end() && it->second > best) {
      best = it->second;
      p.limiter = unit;
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    p.note = "not read: " + list;
  }
  return p;
}

}  // namespace kope
