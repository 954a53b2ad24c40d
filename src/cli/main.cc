// kope: experience-driven kernel optimization. Dispatches to subcommands.
#include <sys/prctl.h>

#include <CLI/CLI.hpp>

#include "commands.h"
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
