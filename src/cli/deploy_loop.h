// `kope deploy WORKLOAD --out DIR`: the closed deployment loop (docs/commands/deploy.md).
#ifndef KOPE_SRC_CLI_DEPLOY_LOOP_H_
#define KOPE_SRC_CLI_DEPLOY_LOOP_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace kope::cli {

// Adds `run` to `kope deploy` (`kope deploy WORKLOAD.toml` is the same: main.cc).
CLI::App* RegisterDeployRun(CLI::App& deploy, int* exit_code);

// `kope deploy WORKLOAD ...` is `kope deploy run WORKLOAD ...`: inserts "run" into the
// arguments (after the program's name) when the word after "deploy" names a workload file (ends
// in .toml, or is a file).
void ExpandDeployShorthand(std::vector<std::string>& args);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_DEPLOY_LOOP_H_
