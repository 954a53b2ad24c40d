// `kope bench SUITE --ablation FACTOR`: the suite's arms for one factor (bench_suite/ablation.h),
// each graph in the report folder, the report beside them. Internal to the kope command.
#ifndef KOPE_SRC_CLI_BENCH_ABLATION_H_
#define KOPE_SRC_CLI_BENCH_ABLATION_H_

#include <string>
#include <vector>

#include "episode_flags.h"

namespace kope::cli {

struct AblationArgs {
  std::string suite;   // a suite file or a folder of tasks
  std::string factor;  // memory, context, transfer
  std::string name;    // "": the suite's
  std::string out;     // "": kope-ablation-NAME-FACTOR
  int repeat = 3;
  std::vector<std::string> imports;
  std::string kernelbench;
  int64_t context_budget = 8000;
  std::string from_report;  // judge this ablation.json's runs again instead of running
  EpisodeFlags episode;
};

// The exit status: 0, 1 (the ablation could not run, or a task failed), 2 (bad input), 130
// (interrupted).
int RunBenchAblation(const AblationArgs& args);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_BENCH_ABLATION_H_
