// A parent for the dies-with-its-parent test: starts a runner, prints the
// runner's pid, then waits for ever (until the test kills it).
//   kope_runner_test_parent RUNNER_EXE SCRATCH_DIR USE_BUBBLEWRAP(0|1)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "kope/runner/runner.h"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  kope::RunnerOptions options;
  options.runner_exe = argv[1];
  options.sandbox.scratch_dir = argv[2];
  options.sandbox.use_bubblewrap = std::atoi(argv[3]) != 0;
  auto runner = kope::Runner::Start(options);
  if (!runner.ok()) {
    std::printf("error %s\n", runner.status().ToString().c_str());
    return 1;
  }
  std::printf("%d\n", (*runner)->pid());
  std::fflush(stdout);
  for (;;) pause();
}
