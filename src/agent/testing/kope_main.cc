// A `kope` with only the optimize and bench commands, built beside kope-runner for the tests that
// run the commands as child processes (and kill them): the same command code as `kope`.
#include <CLI/CLI.hpp>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kope (optimize and bench only, for tests)"};
  app.require_subcommand(1);
  int exit_code = 0;
  kope::cli::RegisterOptimizeCommand(app, &exit_code);
  kope::cli::RegisterBenchCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
