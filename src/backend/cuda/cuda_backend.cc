#include "kope/backend/cuda/cuda_backend.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../compile_support.h"
#include "cuda_internal.h"
#include "kope/backend/kernel_resources_json.h"
#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/base/subprocess.h"
#include "kope/runner/sandbox.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

// The folder holding nvcc's toolkit (bin/..), for the compiler's sandbox when it is not under /usr.
fs::path ToolkitRoot(const std::string& nvcc) {
  std::error_code ec;
  fs::path p = fs::canonical(nvcc, ec);
  if (ec) return {};
  return p.parent_path().parent_path();
}

std::string ResolveNvcc(const CudaBackendOptions& options) {
  if (!options.nvcc.empty()) return options.nvcc;
  if (const char* env = std::getenv("KOPE_NVCC"); env != nullptr && *env != '\0') return env;
#ifdef KOPE_NVCC_PATH
  if (access(KOPE_NVCC_PATH, X_OK) == 0) return KOPE_NVCC_PATH;
#endif
  return "nvcc";
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(CudaBackendOptions options, std::string nvcc, std::string nvcc_version,
              std::string abi_header, std::string arch)
      : options_(std::move(options)),
        nvcc_(std::move(nvcc)),
        nvcc_version_(std::move(nvcc_version)),
        abi_header_(std::move(abi_header)),
        arch_(std::move(arch)) {}

  std::string_view name() const override { return "cuda"; }
  std::string_view language() const override { return "cuda"; }
  std::string runner_device() const override { return "cuda:" + std::to_string(options_.device); }

  Result<CompiledKernel> Compile(std::string_view source, std::string_view display_name) override {
    const std::string file = SafeSourceFileName(display_name, {".cu"});
    std::vector<std::string> argv = NvccCommand(nvcc_, arch_, options_.include_dir,
                                                options_.extra_flags, "kernel.cu", "kernel.so");
    std::string joined;
    for (size_t i = 1; i < argv.size(); ++i) joined += argv[i] + "\n";
    CompiledKernel out;
    out.cache_key = ContentHash({source, joined, nvcc_version_, abi_header_, arch_});
    const fs::path dir = options_.cache_dir / "cuda";
    const CacheEntry entry{dir / (out.cache_key + ".so"), dir / (out.cache_key + ".json")};
    if (FromCache(entry, out)) return out;
    KOPE_ASSIGN_OR_RETURN(const fs::path work, CreateCompileWorkDir(dir, out.cache_key));
    Status built = Build(source, file, std::move(argv), work, entry, out);
    std::error_code ec;
    fs::remove_all(work, ec);
    if (!built.ok()) return built;
    return out;
  }

  Result<HardwareInfo> Hardware() override {
    std::lock_guard<std::mutex> lock(hardware_mu_);
    if (!hardware_) {
      KOPE_ASSIGN_OR_RETURN(cuda_internal::GpuProperties gpu,
                            cuda_internal::QueryGpu(options_.device));
      KOPE_ASSIGN_OR_RETURN(HardwareInfo hw,
                            cuda_internal::DescribeGpu(options_, gpu, nvcc_, nvcc_version_, arch_));
      hardware_ = std::move(hw);
    }
    return *hardware_;
  }

  Result<KernelProfile> Profile(const CompiledKernel& kernel, const LaunchShapes& shapes) override {
    if (!kernel.ok()) return Status::InvalidArgument("the kernel did not compile");
    return cuda_internal::RunProfiler(Tools(), kernel.artifact, shapes);
  }

  Result<SanitizerReport> Sanitize(const CompiledKernel& kernel,
                                   const std::vector<LaunchShapes>& shapes) override {
    if (!kernel.ok()) return Status::InvalidArgument("the kernel did not compile");
    return cuda_internal::RunSanitizers(Tools(), kernel.artifact, shapes);
  }

 private:
  // A compiled kernel in the cache and its resource report beside it.
  struct CacheEntry {
    fs::path artifact;
    fs::path report;
  };

  // Fills `out` from the cache; false when the kernel is not there.
  static bool FromCache(const CacheEntry& entry, CompiledKernel& out) {
    std::error_code ec;
    if (!fs::exists(entry.artifact, ec)) return false;
    out.artifact = entry.artifact;
    out.cache_hit = true;
    if (Result<std::string> text = ReadFileText(entry.report); text.ok()) {
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.contains("resources"))
        out.resources = KernelResourcesFromJson(j["resources"].dump());
    }
    return true;
  }

  // nvcc reads untrusted source: inside bubblewrap it sees the system, the toolkit, the ABI
  // header and its work folder only, with no network. `argv` as it is where bubblewrap is not.
  std::vector<std::string> Sandboxed(std::vector<std::string> argv, const fs::path& work) const {
    if (!BubblewrapAvailable()) return argv;
    SandboxOptions sandbox;
    sandbox.scratch_dir = work;
    sandbox.read_only = {options_.include_dir};
    // nvcc by its real path (/usr/local/cuda is often a link through /etc/alternatives), with
    // its toolkit shown where it is not under /usr.
    std::error_code ec;
    const fs::path real = fs::canonical(nvcc_, ec);
    if (!ec) argv[0] = real.string();
    const fs::path root = ToolkitRoot(nvcc_);
    if (!root.empty() && root.string().rfind("/usr/", 0) != 0) sandbox.read_only.push_back(root);
    if (fs::exists("/etc/alternatives", ec)) sandbox.read_only.push_back("/etc/alternatives");
    sandbox.limits.writable_bytes = 1ull << 30;  // nvcc's temporaries go to /tmp
    Result<std::vector<std::string>> wrapped = BubblewrapCommand(sandbox, argv);
    return wrapped.ok() ? std::move(wrapped).value() : argv;
  }

  // Runs nvcc on `source` in `work` and fills `out`: the log, resources and diagnostics, and the
  // artifact stored in the cache when it built. A kernel that does not build is no error.
  Status Build(std::string_view source, const std::string& file, std::vector<std::string> argv,
               const fs::path& work, const CacheEntry& entry, CompiledKernel& out) const {
    {
      // The source is written under the candidate's own name so that diagnostics name it;
      // nvcc is given that name.
      std::ofstream src(work / file, std::ios::binary);
      src.write(source.data(), static_cast<std::streamsize>(source.size()));
      if (!src) return Status::IoError("cannot write the source in " + work.string());
    }
    for (std::string& arg : argv) {
      if (arg == "kernel.cu") arg = file;
    }
    ProcessOptions popts;
    popts.timeout_seconds = options_.compile_timeout_seconds;
    popts.working_dir = work;
    popts.extra_env = {"LC_ALL=C"};
    Result<ProcessResult> run = RunProcess(Sandboxed(std::move(argv), work), popts);
    if (!run.ok()) return run.status().WithContext("running " + nvcc_);
    out.seconds = run->seconds;
    out.log = TrimCompilerLog(run->output);
    out.resources = ParsePtxasReport(run->output);
    if (run->timed_out) {
      out.diagnostics.push_back({file, 0, 0, "error",
                                 "nvcc did not finish within " +
                                     std::to_string(options_.compile_timeout_seconds) + " s"});
      return Status::Ok();
    }
    out.diagnostics = ParseNvccOutput(run->output);  // errors, or warnings if it built
    if (!run->ok()) {
      if (out.diagnostics.empty()) {
        out.diagnostics.push_back({file, 0, 0, "error", "nvcc failed: " + out.log});
      }
      return Status::Ok();
    }
    KOPE_RETURN_IF_ERROR(Store(work, entry, out.resources));
    out.artifact = entry.artifact;
    return Status::Ok();
  }

  // Moves the built kernel and its resource report into the cache, the report first: an
  // artifact in the cache always has its report beside it.
  static Status Store(const fs::path& work, const CacheEntry& entry,
                      const std::vector<KernelResources>& resources) {
    {
      std::ofstream r(work / "report.json");
      r << nlohmann::json{{"resources", nlohmann::json::parse(KernelResourcesToJson(resources))}}
               .dump(1)
        << "\n";
    }
    std::error_code ec;
    fs::rename(work / "report.json", entry.report, ec);
    if (!ec) fs::rename(work / "kernel.so", entry.artifact, ec);
    if (ec) return Status::IoError("cannot store " + entry.artifact.string() + ": " + ec.message());
    return Status::Ok();
  }

  cuda_internal::ToolContext Tools() const {
    cuda_internal::ToolContext t;
    t.options = options_;
    t.scratch_root = options_.cache_dir;
    return t;
  }

  CudaBackendOptions options_;
  std::string nvcc_;
  std::string nvcc_version_;
  std::string abi_header_;
  std::string arch_;
  std::mutex hardware_mu_;
  std::optional<HardwareInfo> hardware_;
};

}  // namespace

std::optional<ComputeCapability> ParseComputeCapability(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = s.find_first_not_of(" \t");
  if (start == std::string::npos) return std::nullopt;
  s = s.substr(start);
  if (s.rfind("sm_", 0) == 0 || s.rfind("compute_", 0) == 0) s = s.substr(s.find('_') + 1);
  while (!s.empty() && std::isalpha(static_cast<unsigned char>(s.back()))) s.pop_back();
  auto all_digits = [](const std::string& t) {
    return !t.empty() && t.size() <= 3 && std::all_of(t.begin(), t.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
  };
  ComputeCapability cc;
  if (size_t dot = s.find('.'); dot != std::string::npos) {
    const std::string a = s.substr(0, dot), b = s.substr(dot + 1);
    if (!all_digits(a) || !all_digits(b) || b.size() != 1) return std::nullopt;
    cc.major = std::stoi(a);
    cc.minor = std::stoi(b);
  } else {
    if (!all_digits(s) || s.size() < 2) return std::nullopt;
    cc.major = std::stoi(s.substr(0, s.size() - 1));
    cc.minor = s.back() - '0';
  }
  if (cc.major < 1) return std::nullopt;
  return cc;
}

std::string ArchForCapability(ComputeCapability cc) {
  std::string arch = "sm_" + std::to_string(cc.major) + std::to_string(cc.minor);
  // Hopper and Blackwell datacenter parts: the arch-specific target unlocks wgmma,
  // setmaxnreg, tcgen05; the binary then runs on exactly that capability, which is the
  // GPU kope compiles for.
  if ((cc.major == 9 && cc.minor == 0) || (cc.major == 10 && (cc.minor == 0 || cc.minor == 3))) {
    arch += "a";
  }
  return arch;
}

std::string GencodeFlag(std::string_view arch) {
  std::string a(arch);
  std::string compute = a.rfind("sm_", 0) == 0 ? "compute_" + a.substr(3) : a;
  return "-gencode=arch=" + compute + ",code=" + a;
}

std::vector<std::string> NvccCommand(const std::string& nvcc, std::string_view arch,
                                     const fs::path& include_dir,
                                     const std::vector<std::string>& extra_flags,
                                     const std::string& source_file, const std::string& output) {
  std::vector<std::string> argv = {nvcc,
                                   "-std=c++17",
                                   "-O3",
                                   GencodeFlag(arch),
                                   "-lineinfo",
                                   "-Xcompiler",
                                   "-fPIC",
                                   "-shared",
                                   "-cudart",
                                   "shared",
                                   "-Xptxas",
                                   "-v",
                                   "-I" + include_dir.string()};
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  // The link fails unless the source defines kope_kernel with C linkage, or when a
  // symbol stays undefined.
  argv.insert(argv.end(), {source_file, "-o", output, "-Xlinker", "--no-undefined", "-Xlinker",
                           "--require-defined=kope_kernel"});
  return argv;
}

Result<std::unique_ptr<Backend>> CreateCudaBackend(CudaBackendOptions options) {
  if (options.cache_dir.empty()) options.cache_dir = DefaultCacheDir();
  if (options.include_dir.empty()) options.include_dir = KOPE_INCLUDE_DIR;
  if (const char* v = std::getenv("KOPE_NCU"); v != nullptr && *v != '\0') options.ncu = v;
  if (const char* v = std::getenv("KOPE_COMPUTE_SANITIZER"); v != nullptr && *v != '\0') {
    options.sanitizer = v;
  }
  Result<std::string> header = ReadFileText(options.include_dir / "kope" / "kernel.h");
  if (!header.ok()) {
    return Status::NotFound("the kernel ABI header kope/kernel.h is not in " +
                            options.include_dir.string());
  }
  const std::string nvcc = ResolveNvcc(options);
  ProcessOptions popts;
  popts.timeout_seconds = 30;
  Result<ProcessResult> version = RunProcess({nvcc, "--version"}, popts);
  if (!version.ok() || !version->ok()) {
    return Status::NotFound("nvcc ('" + nvcc +
                            "') does not run; install the CUDA toolkit or set KOPE_NVCC");
  }
  // "Cuda compilation tools, release 13.0, V13.0.88" and the build line.
  std::string nvcc_version;
  {
    std::istringstream in(version->output);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("release") != std::string::npos || line.rfind("Build", 0) == 0) {
        nvcc_version += (nvcc_version.empty() ? "" : "; ") + line;
      }
    }
    if (nvcc_version.empty()) nvcc_version = version->output;
  }
  std::string arch = options.arch;
  if (arch.empty()) {
    if (const char* env = std::getenv("KOPE_CUDA_ARCH"); env != nullptr && *env != '\0') arch = env;
  }
  if (arch.empty()) {
    Result<cuda_internal::GpuProperties> gpu = cuda_internal::QueryGpu(options.device);
    if (!gpu.ok()) {
      return Status::FailedPrecondition(
          "no CUDA GPU to compile for (" + gpu.status().message() +
          "); set KOPE_CUDA_ARCH (e.g. sm_90a) to compile without one");
    }
    arch = ArchForCapability(gpu->cc);
  }
  if (!ParseComputeCapability(arch)) {
    return Status::InvalidArgument("'" + arch + "' is not a CUDA target such as sm_90a");
  }
  return std::unique_ptr<Backend>(
      new CudaBackend(std::move(options), nvcc, nvcc_version, *header, arch));
}

}  // namespace kope
