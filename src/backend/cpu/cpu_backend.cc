#include "kope/backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "../compile_support.h"
#include "cpu_hardware.h"
#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/base/subprocess.h"
#include "kope/runner/sandbox.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

// Linked beside every kernel: an undefined reference unless the kernel exports
// `kope_kernel` with C linkage, which --no-undefined turns into a link error.
constexpr const char* kEntryCheckFile = "kope_entry_check.cc";
constexpr const char* kEntryCheckSource =
    "#include \"kope/kernel.h\"\n"
    "extern \"C\" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*);\n"
    "extern \"C\" void* const kope_entry_check_ = reinterpret_cast<void*>(&kope_kernel);\n";

class CpuBackend final : public Backend {
 public:
  CpuBackend(CpuBackendOptions options, std::string compiler_version, std::string abi_header,
             std::string cpu_flags)
      : options_(std::move(options)),
        compiler_version_(std::move(compiler_version)),
        abi_header_(std::move(abi_header)),
        cpu_flags_(std::move(cpu_flags)) {}

  std::string_view name() const override { return "cpu"; }
  std::string_view language() const override { return "cpp"; }

  Result<CompiledKernel> Compile(std::string_view source, std::string_view display_name) override {
    std::vector<std::string> flags = Flags();
    std::string joined;
    for (const std::string& f : flags) joined += f + "\n";
    CompiledKernel out;
    out.cache_key = ContentHash({source, joined, compiler_version_, abi_header_, cpu_flags_});
    fs::path dir = options_.cache_dir / "cpu";
    fs::path artifact = dir / (out.cache_key + ".so");
    std::error_code ec;
    if (fs::exists(artifact, ec)) {
      out.artifact = artifact;
      out.cache_hit = true;
      return out;
    }
    KOPE_ASSIGN_OR_RETURN(const fs::path work, CreateCompileWorkDir(dir, out.cache_key));
    std::string file = SafeSourceFileName(display_name, {".cc", ".cpp"});
    {
      std::ofstream src(work / file, std::ios::binary);
      src.write(source.data(), static_cast<std::streamsize>(source.size()));
      std::ofstream check(work / kEntryCheckFile);
      check << kEntryCheckSource;
      if (!src || !check) return Status::IoError("cannot write the sources in " + work.string());
    }
    std::vector<std::string> argv = {options_.compiler};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {file, kEntryCheckFile, "-o", "kernel.so"});
    // The compiler reads untrusted source: inside bubblewrap where it works it
    // sees only the system, the ABI header and its work folder (an
    // `#include "/home/..."` finds nothing), and has no network.
    if (BubblewrapAvailable()) {
      SandboxOptions sandbox;
      sandbox.scratch_dir = work;
      sandbox.read_only = {options_.include_dir};
      Result<std::vector<std::string>> wrapped = BubblewrapCommand(sandbox, argv);
      if (wrapped.ok()) argv = std::move(wrapped).value();
    }
    ProcessOptions popts;
    popts.timeout_seconds = options_.compile_timeout_seconds;
    popts.working_dir = work;
    popts.extra_env = {"LC_ALL=C"};
    Result<ProcessResult> run = RunProcess(argv, popts);
    if (!run.ok()) {
      fs::remove_all(work, ec);
      return run.status().WithContext("running " + options_.compiler);
    }
    out.seconds = run->seconds;
    out.log = TrimCompilerLog(run->output);
    if (run->timed_out) {
      out.diagnostics.push_back({file, 0, 0, "error",
                                 "the compiler did not finish within " +
                                     std::to_string(options_.compile_timeout_seconds) + " s"});
    } else if (!run->ok()) {
      out.diagnostics = ParseCompilerOutput(run->output);
      if (out.diagnostics.empty()) {
        out.diagnostics.push_back({file, 0, 0, "error", "the compiler failed: " + out.log});
      }
    } else {
      fs::rename(work / "kernel.so", artifact, ec);
      if (ec) {
        fs::remove_all(work, ec);
        return Status::IoError("cannot store " + artifact.string() + ": " + ec.message());
      }
      out.artifact = artifact;
      out.diagnostics = ParseCompilerOutput(run->output);  // warnings, if any
    }
    fs::remove_all(work, ec);
    return out;
  }

  Result<HardwareInfo> Hardware() override {
    std::lock_guard<std::mutex> lock(hardware_mu_);
    if (!hardware_) {
      KOPE_ASSIGN_OR_RETURN(HardwareInfo hw, DescribeCpu(options_, compiler_version_));
      hardware_ = std::move(hw);
    }
    return *hardware_;
  }

 private:
  std::vector<std::string> Flags() const {
    std::vector<std::string> flags = {"-std=c++20",
                                      "-O3",
                                      "-march=native",
                                      "-fopenmp",
                                      "-fPIC",
                                      "-shared",
                                      "-fdiagnostics-color=never",
                                      "-I" + options_.include_dir.string(),
                                      "-Wl,--no-undefined"};
    flags.insert(flags.end(), options_.extra_flags.begin(), options_.extra_flags.end());
    return flags;
  }

  CpuBackendOptions options_;
  std::string compiler_version_;
  std::string abi_header_;
  std::string cpu_flags_;
  std::mutex hardware_mu_;
  std::optional<HardwareInfo> hardware_;
};

}  // namespace

Result<std::unique_ptr<Backend>> CreateCpuBackend(CpuBackendOptions options) {
  if (const char* cxx = std::getenv("KOPE_CXX"); cxx != nullptr && *cxx != '\0') {
    options.compiler = cxx;
  }
  if (options.cache_dir.empty()) options.cache_dir = DefaultCacheDir();
  if (options.include_dir.empty()) options.include_dir = KOPE_INCLUDE_DIR;
  Result<std::string> header = ReadFileText(options.include_dir / "kope" / "kernel.h");
  if (!header.ok()) {
    return Status::NotFound("the kernel ABI header kope/kernel.h is not in " +
                            options.include_dir.string());
  }
  ProcessOptions popts;
  popts.timeout_seconds = 30;
  Result<ProcessResult> version = RunProcess({options.compiler, "--version"}, popts);
  if (!version.ok() || !version->ok()) {
    return Status::NotFound("the C++ compiler '" + options.compiler +
                            "' does not run; install g++ (scripts/setup) or set KOPE_CXX");
  }
  std::string first_line = version->output.substr(0, version->output.find('\n'));
  return std::unique_ptr<Backend>(
      new CpuBackend(std::move(options), first_line, *header, CpuFeatureFlags()));
}

}  // namespace kope
