// The kope-runner child's own confinement, applied once at startup before any
// kernel is loaded: rlimits, capabilities dropped, no_new_privs and a seccomp
// filter. Whatever cannot be applied is reported, never silently skipped.
#ifndef KOPE_SRC_RUNNER_CHILD_CONFINE_H_
#define KOPE_SRC_RUNNER_CHILD_CONFINE_H_

#include <string>
#include <vector>

#include "kope/runner/sandbox.h"

namespace kope::runner_child {

struct ConfineReport {
  bool rlimits = false;  // every rlimit the plan asked for is set
  bool seccomp = false;  // the filter is loaded
  std::vector<std::string> notes;
};

// Applies `limits` to the calling process. Must run while it has one thread.
ConfineReport Confine(const SandboxLimits& limits);

}  // namespace kope::runner_child

#endif  // KOPE_SRC_RUNNER_CHILD_CONFINE_H_
