// A parent for the dies-with-its-parent test: starts a runner, loads KERNEL
// (which should never return), prints the runner's pid and calls the kernel,
// waiting for ever (until the test kills this process).
//   kope_runner_test_parent RUNNER_EXE SCRATCH_DIR USE_BUBBLEWRAP(0|1) KERNEL
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "kope/runner/runner.h"

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  kope::RunnerOptions options;
  options.runner_exe = argv[1];
  options.sandbox.scratch_dir = argv[2];
  options.sandbox.use_bubblewrap = std::atoi(argv[3]) != 0;
  auto runner = kope::Runner::Start(options);
  if (!runner.ok()) {
    std::printf("error %s\n", runner.status().ToString().c_str());
    return 1;
  }
  auto arena = kope::SharedArena::Create(4096);
  if (!arena.ok()) return 1;
  auto loaded = (*runner)->Load(argv[4], 60);
  auto mapped = (*runner)->MapArena(**arena, 60);
  if (!loaded.ok() || !loaded->ok() || !mapped.ok() || !mapped->ok()) {
    std::printf("error loading %s\n", argv[4]);
    return 1;
  }
  std::printf("%d\n", (*runner)->pid());
  std::fflush(stdout);
  auto out = (*runner)->Call(kope::CallSpec{}, 3600);
  (void)out;
  for (;;) pause();
}
