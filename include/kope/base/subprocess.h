// Running a child program to completion: the compiler, tools.
//
// The child gets its own session and process group, dies with its parent
// (PR_SET_PDEATHSIG), and the whole group is killed with SIGKILL when the
// timeout passes. stdout and stderr are captured together, keeping at most
// `max_output_bytes` (the head; the rest is counted and dropped). Failing to
// start is a Status; everything the child does is a value in the result.
// Thread-safe: concurrent calls do not interfere.
//
// The child inherits no file descriptor other than 0, 1 and 2 (stdin is
// /dev/null), whether or not the parent's descriptors carry O_CLOEXEC, and
// starts with default signal dispositions and an empty signal mask. When the
// child itself exits, whatever is left of its process group is killed too, so
// a program cannot leave background processes behind.
//
// PR_SET_PDEATHSIG follows the thread that started the child: a child started
// from a thread that exits before the child does is killed at that moment.
#ifndef KOPE_BASE_SUBPROCESS_H_
#define KOPE_BASE_SUBPROCESS_H_

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
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
  int exit_code = -1;   // valid when !signaled && !timed_out
  int term_signal = 0;  // the signal that ended the child, if any
  bool timed_out = false;
  std::string output;        // stdout and stderr, interleaved
  size_t dropped_bytes = 0;  // output beyond max_output_bytes, counted and not kept
  double seconds = 0.0;      // wall time
  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
};

// argv[0] is looked up in PATH.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options = {});

// Starting a long-lived child that the caller supervises itself (the runner).
struct SpawnOptions {
  std::filesystem::path working_dir;  // empty: inherit
  // The child's whole environment ("NAME=value"); nothing else is inherited.
  std::vector<std::string> env;
  // Descriptors the child gets: {child_fd, parent_fd}, at most 16. Each
  // parent_fd is duplicated onto child_fd; every other descriptor is closed in
  // the child. 0, 1 and 2 that are not listed are /dev/null.
  std::vector<std::pair<int, int>> fds;
};

// Starts argv (argv[0] looked up in PATH) in its own session and process
// group, with PR_SET_PDEATHSIG(SIGKILL), default signal dispositions and an
// empty signal mask, and returns its pid, which is also its process group id.
// Failing to fork, to set the child up or to exec is a Status (the child is
// reaped then). Otherwise the caller owns the child: it must kill and reap it
// (waitpid). Thread-safe.
Result<int> SpawnProcess(const std::vector<std::string>& argv, const SpawnOptions& options);

}  // namespace kope

#endif  // KOPE_BASE_SUBPROCESS_H_
