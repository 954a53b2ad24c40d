// kope: experience-driven kernel optimization. Dispatches to subcommands.
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "commands.h"
#include "deploy_loop.h"
#include "eval_client.h"

int main(int argc, char** argv) {
  // Not dumpable: other processes of this user (a candidate outside bubblewrap)
  // cannot read kope's memory or environment (API keys) through /proc.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  CLI::App app{"kope: optimize compute kernels with LLM agents and an experience graph"};
  app.require_subcommand(1);
  int exit_code = 0;
  kope::cli::RegisterEvalCommand(app, &exit_code);
  kope::cli::RegisterLlmCommand(app, &exit_code);
  kope::cli::RegisterMemoryCommand(app, &exit_code);
  kope::cli::RegisterOptimizeCommand(app, &exit_code);
  kope::cli::RegisterBenchCommand(app, &exit_code);
  kope::cli::RegisterContextCommand(app, &exit_code);
  kope::cli::RegisterImportCommand(app, &exit_code);
  kope::cli::RegisterDeployCommand(app, &exit_code);
  kope::cli::RegisterServeCommand(app, &exit_code);
  kope::cli::RegisterPackCommand(app, &exit_code);
  kope::cli::RegisterWorkerCommand(app, &exit_code);
  kope::cli::RegisterEvalServiceCommand(app, &exit_code);
  std::vector<std::string> args(argv + 1, argv + argc);
  kope::cli::ExpandDeployShorthand(args);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.name(argc > 0 ? argv[0] : "kope");
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
