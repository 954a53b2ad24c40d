// Suite files: a named, ordered list of tasks, for suites whose order matters (the memory
// ablation runs the tasks of one graph in this order, and in its reverse).
//
//   name = "norm"                              # required
//   description = "RMSNorm and LayerNorm ..."  # optional
//   tasks = [
//     "../examples/rmsnorm",                   # a task folder or a KernelBench problem file,
//     "norm/rmsnorm_wide",                     #   relative to the suite file's folder
//     "kernelbench:level1/36_RMSNorm_.py",     # a problem under the KernelBench root
//   ]
//
// "kernelbench:PATH" is read in place under the KernelBench root (the `kernelbench_root`
// argument, else $KOPE_KERNELBENCH); a suite that names one without a root is InvalidArgument.
// A task that does not exist, an unknown key, an empty list or a task named twice is
// InvalidArgument naming the file. Loading only reads the file and checks that the paths exist.
#ifndef KOPE_BENCH_SUITE_SUITE_FILE_H_
#define KOPE_BENCH_SUITE_SUITE_FILE_H_

#include <filesystem>
#include <string>
#include <vector>

#include "kope/base/status.h"

namespace kope::bench_suite {

struct SuiteFile {
  std::string name;
  std::string description;
  std::vector<std::filesystem::path> tasks;  // in the file's order, resolved
};

Result<SuiteFile> LoadSuiteFile(const std::filesystem::path& file,
                                const std::filesystem::path& kernelbench_root = {});

// The ordered tasks of SUITE: a suite file (*.toml that is not a task.toml), else a folder as
// FindSuiteTasks (suite.h) reads it, named after the folder. NotFound when it holds no task.
Result<SuiteFile> ResolveSuite(const std::filesystem::path& suite,
                               const std::filesystem::path& kernelbench_root = {});

}  // namespace kope::bench_suite

#endif  // KOPE_BENCH_SUITE_SUITE_FILE_H_
