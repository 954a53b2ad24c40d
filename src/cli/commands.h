// The `kope` subcommands. Each Register* function adds one subcommand to the
// app; when the subcommand runs it stores the process exit code in `*exit_code`
// (0 success, 1 the operation failed, 2 bad usage or input).
#ifndef KOPE_CLI_COMMANDS_H_
#define KOPE_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace kope::cli {

void RegisterEvalCommand(CLI::App& app, int* exit_code);
void RegisterMemoryCommand(CLI::App& app, int* exit_code);
void RegisterLlmCommand(CLI::App& app, int* exit_code);
void RegisterOptimizeCommand(CLI::App& app, int* exit_code);
void RegisterBenchCommand(CLI::App& app, int* exit_code);
void RegisterContextCommand(CLI::App& app, int* exit_code);
void RegisterImportCommand(CLI::App& app, int* exit_code);
void RegisterDeployCommand(CLI::App& app, int* exit_code);
void RegisterServeCommand(CLI::App& app, int* exit_code);
void RegisterPackCommand(CLI::App& app, int* exit_code);
void RegisterWorkerCommand(CLI::App& app, int* exit_code);

}  // namespace kope::cli

#endif  // KOPE_CLI_COMMANDS_H_
