// `kope import kernelbench PATH... [--out DIR]`: KernelBench problem files (or folders of them)
// become kope task folders, one per problem, named after the file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;

struct ImportArgs {
  std::vector<std::string> paths;
  std::string out = "kernelbench-tasks";
};

int RunImport(const ImportArgs& args) {
  std::vector<fs::path> problems;
  for (const std::string& p : args.paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        if (IsKernelBenchProblem(entry.path())) found.push_back(entry.path());
      }
      std::sort(found.begin(), found.end());
      problems.insert(problems.end(), found.begin(), found.end());
    } else if (IsKernelBenchProblem(p)) {
      problems.emplace_back(p);
    } else {
      std::cerr << "kope import: " << p << " is neither a .py problem file nor a folder\n";
      return 2;
    }
  }
  if (problems.empty()) {
    std::cerr << "kope import: no KernelBench problem (.py) in the given paths\n";
    return 2;
  }
  Result<TorchBridge> bridge = FindTorchBridge();
  if (!bridge.ok()) {
    std::cerr << "kope import: " << bridge.status().message() << "\n";
    return 1;
  }
  int failed = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const fs::path out = fs::path(args.out) / problems[i].stem();
    Result<Task> task = ImportKernelBenchProblem(*bridge, problems[i], out);
    std::cout << "[" << i + 1 << "/" << problems.size() << "] ";
    if (task.ok()) {
      std::cout << problems[i].filename().string() << " -> " << out.string() << " (" << task->family
                << ", " << task->inputs.size() << " inputs of which "
                << task->torch->parameters.size() << " parameters, " << task->checks.size()
                << " check sets)\n";
    } else {
      ++failed;
      std::cout << "FAILED " << task.status().message() << "\n";
    }
    std::cout.flush();
  }
  std::cout << problems.size() - failed << " of " << problems.size() << " problems imported into "
            << args.out << "\n";
  return failed == 0 ? 0 : 1;
}

}  // namespace

void RegisterImportCommand(CLI::App& app, int* exit_code) {
  CLI::App* imp = app.add_subcommand("import", "Turn other benchmarks' problems into kope tasks");
  auto args = std::make_shared<ImportArgs>();
  CLI::App* kb = imp->add_subcommand(
      "kernelbench",
      "KernelBench problem files (Model, get_inputs, get_init_inputs) -> task folders");
  kb->add_option("paths", args->paths, "Problem files (.py) or folders of them")->required();
  kb->add_option("--out", args->out, "Folder to write one task folder per problem into");
  kb->callback([args, exit_code] { *exit_code = RunImport(*args); });
  imp->require_subcommand(1);
}

}  // namespace kope::cli
