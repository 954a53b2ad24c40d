// Running a child program to completion: the compiler, tools.
//
// The child gets its own session and process group, dies with its parent
// (PR_SET_PDEATHSIG), and the whole group is killed with SIGKILL when the
// timeout passes. stdout and stderr are captured together, keeping at most
// `max_output_bytes` (the head; the rest is counted and dropped). Failing to
// start is a Status; everything the child does is a value in the result.
// Thread-safe: concurrent calls do not interfere.
#ifndef KOPE_BASE_SUBPROCESS_H_
#define KOPE_BASE_SUBPROCESS_H_

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "kope/base/status.h"

namespace kope {

struct ProcessOptions {
  double timeout_seconds = 60.0;
  std::filesystem::path working_dir;   // empty: inherit
  std::vector<std::string> extra_env;  // "NAME=value", added to the parent's environment
  size_t max_output_bytes = 1 << 20;
};

struct ProcessResult {
  int exit_code = -1;     // valid when !signaled && !timed_out
  int term_signal = 0;    // the signal that ended the child, if any
  bool timed_out = false;
  std::string output;     // stdout and stderr, interleaved
  double seconds = 0.0;   // wall time
  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
};

// argv[0] is looked up in PATH.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options = {});

}  // namespace kope

#endif  // KOPE_BASE_SUBPROCESS_H_
