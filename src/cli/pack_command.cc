// `kope pack`: experience packs of verified kernels.
//   build SPEC --out FILE [--kernel NAME]... [--language cpp|cuda]... [--quick]
//   list FILE
// build evaluates every kernel of the pack source folder SPEC on its family's tasks and writes
// the pack file; exit 0 when every verdict is valid, 1 when one is not (the file is written
// either way: failures are experience too), 2 for a pack folder that does not load.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>

#include "commands.h"
#include "eval_backend.h"
#include "kope/pack/build.h"
#include "kope/pack/pack_file.h"
#ifdef KOPE_HAVE_CUDA
#include "kope/backend/cuda/cuda_backend.h"
#endif

namespace kope::cli {
namespace {

struct PackArgs {
  std::string spec;
  std::string out;
  std::string file;
  std::vector<std::string> kernels;
  std::vector<std::string> languages;
  bool quick = false;
  int trials = 5;
};

int Fail(const std::string& what, const Status& status) {
  std::cerr << "kope pack " << what << ": " << status.message() << "\n";
  return status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound ||
                 status.code() == StatusCode::kCorruption
             ? 2
             : 1;
}

// One backend per language, made on first use.
class Backends {
 public:
  Result<Backend*> For(const std::string& language) {
    auto it = backends_.find(language);
    if (it != backends_.end()) return it->second.get();
    std::string name = language == "cuda" ? "cuda" : "cpu";
#ifdef KOPE_HAVE_CUDA
    if (name == "cuda" && !CudaDevicePresent()) {
      return Status::FailedPrecondition("no CUDA device here: not verified");
    }
#else
    if (name == "cuda") {
      return Status::FailedPrecondition("this kope was built without the CUDA toolkit");
    }
#endif
    KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, MakeEvalBackend(name));
    Backend* raw = b.get();
    backends_[language] = std::move(b);
    return raw;
  }

 private:
  std::map<std::string, std::unique_ptr<Backend>> backends_;
};

void PrintReport(const pack::PackBuildReport& report) {
  std::cout << fmt::format("{:<24} {:<24} {:<10} {:>11} {:>11} {:>8} {:>9}\n", "kernel", "task",
                           "verdict", "kernel ms", "baseline ms", "speedup", "roofline");
  for (const pack::PackVerdict& v : report.verdicts) {
    std::cout << fmt::format("{:<24} {:<24} {:<10} {:>11.4f} {:>11.4f} {:>7.2f}x {:>8.1f}%\n",
                             v.kernel, v.task, v.verdict, v.time_ms, v.baseline_ms, v.speedup,
                             100 * v.roofline);
    if (!v.message.empty()) std::cout << "  " << v.message.substr(0, 400) << "\n";
  }
  for (const std::string& s : report.skipped) std::cout << "skipped " << s << "\n";
}

int RunBuild(const PackArgs& args) {
  Result<pack::PackSource> source = pack::LoadPackSource(args.spec);
  if (!source.ok()) return Fail("build", source.status());
  Backends backends;
  pack::PackBuildOptions options;
  options.out = args.out;
  options.kernels = args.kernels;
  options.languages = args.languages;
  options.quick = args.quick;
  options.eval.trials = args.trials;
  options.backend = [&](const std::string& language) { return backends.For(language); };
  options.progress = [](std::string_view line) { std::cerr << line << "\n"; };
  Result<pack::PackBuildReport> report = pack::BuildPack(*source, options);
  if (!report.ok()) return Fail("build", report.status());
  PrintReport(*report);
  std::cout << fmt::format("wrote {} ({} lines): {} evaluations of pack {}\n", args.out,
                           report->written.lines, report->verdicts.size(), source->name);
  return report->all_valid() ? 0 : 1;
}

int RunList(const PackArgs& args) {
  Result<pack::PackFileInfo> info = pack::ReadPackFile(args.file);
  if (!info.ok()) return Fail("list", info.status());
  std::cout << fmt::format("pack {}: {}\n", info->name, info->description);
  for (const std::string& h : info->hardware) std::cout << "  measured on " << h << "\n";
  std::cout << fmt::format("{:<24} {:<16} {:<12} {:<6} {:<10} {}\n", "kernel", "op", "family",
                           "lang", "valid", "roles");
  for (const pack::PackFileKernel& k : info->kernels) {
    std::string roles;
    for (const pack::RoleSpec& r : k.spec.inputs) roles += (roles.empty() ? "" : ",") + r.role;
    roles += " ->";
    for (const pack::RoleSpec& r : k.spec.outputs) roles += " " + r.role;
    std::cout << fmt::format("{:<24} {:<16} {:<12} {:<6} {:<10} {}\n", k.spec.name, k.spec.op,
                             k.spec.family, k.spec.language,
                             fmt::format("{}/{}", k.valid, k.outcomes), roles);
  }
  std::string records;
  for (const auto& [type, n] : info->records) records += fmt::format(" {} {}", n, type);
  std::cout << "records:" << records << "\ncontent hash " << info->content_hash << "\n";
  return 0;
}

}  // namespace

void RegisterPackCommand(CLI::App& app, int* exit_code) {
  CLI::App* pack = app.add_subcommand("pack", "Experience packs: build and list them");
  pack->require_subcommand(1);
  auto args = std::make_shared<PackArgs>();
  CLI::App* build =
      pack->add_subcommand("build", "Evaluate a pack source folder's kernels, write a pack file");
  build->add_option("spec", args->spec, "The pack source folder (holding pack.toml)")->required();
  build->add_option("--out", args->out, "The pack file to write")->required();
  build->add_option("--kernel", args->kernels, "Only this kernel (repeatable)");
  build->add_option("--language", args->languages, "Only kernels in this language: cpp, cuda");
  build->add_flag("--quick", args->quick, "Time at the largest check set (checks verdicts fast)");
  build->add_option("--trials", args->trials, "Verification trials per size set")
      ->check(CLI::PositiveNumber);
  build->callback([args, exit_code] { *exit_code = RunBuild(*args); });
  CLI::App* list = pack->add_subcommand("list", "What a pack file holds (checked)");
  list->add_option("file", args->file, "The pack file")->required()->check(CLI::ExistingFile);
  list->callback([args, exit_code] { *exit_code = RunList(*args); });
}

}  // namespace kope::cli
