// Runner::Impl, private to the runner library: the parent's handle on one kope-runner child.
// runner_start.cc starts the child in its sandbox; runner.cc sends it requests and reads what
// became of it. Not thread-safe: one Runner is used from one thread at a time.
#ifndef KOPE_SRC_RUNNER_RUNNER_IMPL_H_
#define KOPE_SRC_RUNNER_RUNNER_IMPL_H_

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kope/runner/runner.h"
#include "kope/runner/sandbox.h"
#include "protocol.h"

namespace kope {
namespace runner_internal {

namespace rp = runner_protocol;
using Clock = std::chrono::steady_clock;

constexpr size_t kStderrTailBytes = 4096;

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// "what: strerror(errno)".
std::string Errno(const std::string& what);
std::string SignalName(int sig);
rp::Deadline DeadlineAfter(double seconds);
// The last `max_bytes` of a file, NULs as spaces, trailing blank lines dropped.
std::string ReadTail(const std::filesystem::path& path, size_t max_bytes);
int OpenPidfd(pid_t pid);
// Whether `fd` becomes readable within `timeout_ms` (false for -1).
bool Readable(int fd, int timeout_ms);
// The child's whole environment: nothing of the parent's (API keys, tokens)
// except the OpenMP settings. Unless the user chose otherwise, idle OpenMP
// threads sleep instead of spinning: the baseline and the candidate are timed
// interleaved in two processes, and a candidate's spinning pool would steal the
// cores the baseline runs on next.
std::vector<std::string> ChildEnvironment(const SandboxLimits& limits, bool gpu);

}  // namespace runner_internal

class Runner::Impl {
 public:
  using Fd = runner_internal::Fd;
  ~Impl() { Shutdown(); }

  Status Start(const RunnerOptions& options);
  // `received_fd`, when given, takes the first descriptor the reply carries (else -1).
  Result<CallOutcome> Request(runner_protocol::MessageType type, const std::string& payload,
                              int pass_fd, double timeout_seconds, int* received_fd = nullptr);
  Result<CallOutcome> Load(const std::filesystem::path& shared_object, double timeout_seconds);
  // A request about one call: a dead runner's outcome again, an error when no arena is mapped
  // or `call` leaves it; else the call spec, then what `more` writes, is the payload.
  Result<CallOutcome> CallRequest(runner_protocol::MessageType type, const CallSpec& call,
                                  const std::function<void(runner_protocol::Writer*)>& more,
                                  double timeout_seconds);

  uint64_t arena_bytes = 0;
  Protection protection;
  pid_t pid_a = -1;  // the spawned process: bwrap, or kope-runner itself
  pid_t pid_c = -1;  // kope-runner, as this process sees it

  bool dead() const { return dead_; }
  bool ChildExited() const { return reaped_ || runner_internal::Readable(pidfd_a_.get(), 0); }

 private:
  // Start's steps (runner_start.cc).
  Status PrepareScratch();
  Result<Fd> OpenControlSocket();
  Status AwaitHello(const SandboxOptions& sandbox_options);

  void Kill();
  void Reap();
  // The outcome once the child died on its own during a request.
  CallOutcome DiedOutcome(const std::string& context);
  CallOutcome TimeoutOutcome(double timeout_seconds);
  std::string StderrTail() const {
    return runner_internal::ReadTail(log_path_, runner_internal::kStderrTailBytes);
  }
  void Shutdown();

  RunnerOptions options_;
  bool bubblewrap_ = false;
  std::filesystem::path scratch_, kernels_dir_, log_path_;
  Fd sock_, pidfd_a_, pidfd_c_;
  bool reaped_ = false;
  int wait_status_ = 0;
  bool dead_ = false;
  CallOutcome dead_outcome_;
  int loads_ = 0;
};

}  // namespace kope

#endif  // KOPE_SRC_RUNNER_RUNNER_IMPL_H_
