#include "kope/base/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace kope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxFdMappings = 16;
// How long to keep reading output after the child has exited and its group was
// killed: only a process that left the group can still hold the pipe open.
constexpr auto kDrainGrace = std::chrono::milliseconds(500);

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& other) noexcept : fd_(other.Release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.Release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

std::string ErrnoText(int err) { return std::strerror(err); }

// Where in the child things went wrong before exec, reported through a pipe.
enum class ChildStage : int { kSession = 1, kDeathSignal, kDescriptors, kWorkingDir, kExec };

struct ChildFailure {
  ChildStage stage;
  int error;
};

std::string_view StageText(ChildStage stage) {
  switch (stage) {
    case ChildStage::kSession:
      return "setsid";
    case ChildStage::kDeathSignal:
      return "prctl(PR_SET_PDEATHSIG)";
    case ChildStage::kDescriptors:
      return "setting up file descriptors";
    case ChildStage::kWorkingDir:
      return "chdir";
    case ChildStage::kExec:
      return "exec";
  }
  return "setup";
}

// Everything the child needs, prepared before fork so that the child only makes
// async-signal-safe calls.
struct PreparedSpawn {
  std::string exe;
  std::vector<std::string> argv_store;
  std::vector<std::string> env_store;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string working_dir;
  std::vector<std::pair<int, int>> fds;  // {child_fd, parent_fd}
  int max_child_fd = 2;
  int open_max = 1024;
};

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

Result<std::string> ResolveExecutable(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("empty program name");
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = (path != nullptr && *path != '\0') ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return Status::NotFound("program '" + name + "' not found in PATH");
}

Result<PreparedSpawn> Prepare(const std::vector<std::string>& argv,
                              const std::filesystem::path& working_dir,
                              std::vector<std::string> env, std::vector<std::pair<int, int>> fds) {
  if (argv.empty()) return Status::InvalidArgument("empty argv");
  if (fds.size() > kMaxFdMappings) {
    return Status::InvalidArgument("too many file descriptors for the child");
  }
  PreparedSpawn p;
  KOPE_ASSIGN_OR_RETURN(p.exe, ResolveExecutable(argv[0]));
  p.argv_store = argv;
  p.env_store = std::move(env);
  for (std::string& a : p.argv_store) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  for (std::string& e : p.env_store) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  p.working_dir = working_dir.string();
  for (const auto& [child_fd, parent_fd] : fds) {
    if (child_fd < 0 || parent_fd < 0 || child_fd > 255) {
      return Status::InvalidArgument("bad file descriptor mapping");
    }
    p.max_child_fd = std::max(p.max_child_fd, child_fd);
  }
  p.fds = std::move(fds);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    p.open_max = static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 1 << 20));
  }
  return p;
}

[[noreturn]] void Fail(int report_fd, ChildStage stage) {
  ChildFailure failure{stage, errno};
  ssize_t n = write(report_fd, &failure, sizeof(failure));
  (void)n;
  _exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(const PreparedSpawn& p, int report_fd, pid_t parent) {
  if (setsid() < 0) Fail(report_fd, ChildStage::kSession);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(report_fd, ChildStage::kDeathSignal);
  if (getppid() != parent) _exit(127);  // the parent died before the death signal was armed

  // Move every source above all targets first, so that no dup2 clobbers a
  // source that is still needed, then onto its target.
  const int base = p.max_child_fd + 2;
  int moved[kMaxFdMappings];
  for (size_t i = 0; i < p.fds.size(); ++i) {
    moved[i] = fcntl(p.fds[i].second, F_DUPFD_CLOEXEC, base);
    if (moved[i] < 0) Fail(report_fd, ChildStage::kDescriptors);
  }
  int report = fcntl(report_fd, F_DUPFD_CLOEXEC, base);
  if (report < 0) Fail(report_fd, ChildStage::kDescriptors);
  report_fd = report;
  for (size_t i = 0; i < p.fds.size(); ++i) {
    if (dup2(moved[i], p.fds[i].first) < 0) Fail(report_fd, ChildStage::kDescriptors);
  }
  const int report_target = p.max_child_fd + 1;
  if (dup3(report_fd, report_target, O_CLOEXEC) < 0) Fail(report_fd, ChildStage::kDescriptors);
  report_fd = report_target;
  if (close_range(report_target + 1, ~0U, 0) != 0) {
    for (int fd = report_target + 1; fd < p.open_max; ++fd) close(fd);
  }
  for (int fd = 0; fd <= p.max_child_fd; ++fd) {
    bool mapped = false;
    for (const auto& m : p.fds) mapped = mapped || m.first == fd;
    if (!mapped) close(fd);
  }

  if (!p.working_dir.empty() && chdir(p.working_dir.c_str()) != 0) {
    Fail(report_fd, ChildStage::kWorkingDir);
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &sa, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(p.exe.c_str(), p.argv.data(), p.envp.data());
  Fail(report_fd, ChildStage::kExec);
}

Result<pid_t> ForkExec(const PreparedSpawn& p) {
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return Status::IoError("pipe2: " + ErrnoText(errno));
  Fd read_end(report[0]);
  Fd write_end(report[1]);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return Status::IoError("fork: " + ErrnoText(errno));
  if (pid == 0) ExecChild(p, write_end.get(), parent);
  write_end.Reset();
  ChildFailure failure;
  ssize_t n;
  do {
    n = read(read_end.get(), &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(failure))) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Status::IoError(std::string(StageText(failure.stage)) + " for " + p.exe +
                           " failed: " + ErrnoText(failure.error));
  }
  return pid;
}

int OpenPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// True when the child has exited (it stays a zombie: not reaped).
bool HasExited(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == pid;
}

void Reap(pid_t pid, ProcessResult* result) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return;
  }
  if (WIFEXITED(status)) result->exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result->term_signal = WTERMSIG(status);
}

std::vector<std::string> MergedEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    const std::string name = name_of(entry);
    bool overridden = std::any_of(extra.begin(), extra.end(),
                                  [&](const std::string& x) { return name_of(x) == name; });
    if (!overridden) env.push_back(std::move(entry));
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

class OutputCollector {
 public:
  OutputCollector(ProcessResult* result, size_t limit) : result_(result), limit_(limit) {}
  // Reads what is available; false at end of file.
  bool ReadFrom(int fd) {
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    if (n == 0) return false;
    size_t keep = std::min(static_cast<size_t>(n), limit_ - result_->output.size());
    result_->output.append(buf, keep);
    result_->dropped_bytes += static_cast<size_t>(n) - keep;
    return true;
  }

 private:
  ProcessResult* result_;
  size_t limit_;
};

}  // namespace

Result<int> SpawnProcess(const std::vector<std::string>& argv, const SpawnOptions& options) {
  std::vector<std::pair<int, int>> fds = options.fds;
  Fd devnull;
  for (int std_fd = 0; std_fd <= 2; ++std_fd) {
    bool mapped = std::any_of(fds.begin(), fds.end(), [&](auto& m) { return m.first == std_fd; });
    if (mapped) continue;
    if (devnull.get() < 0) {
      devnull = Fd(open("/dev/null", O_RDWR | O_CLOEXEC));
      if (devnull.get() < 0) return Status::IoError("open /dev/null: " + ErrnoText(errno));
    }
    fds.emplace_back(std_fd, devnull.get());
  }
  KOPE_ASSIGN_OR_RETURN(PreparedSpawn prepared,
                        Prepare(argv, options.working_dir, options.env, std::move(fds)));
  KOPE_ASSIGN_OR_RETURN(pid_t pid, ForkExec(prepared));
  return static_cast<int>(pid);
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options) {
  const auto start = Clock::now();
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Status::IoError("pipe2: " + ErrnoText(errno));
  Fd out_read(out[0]);
  Fd out_write(out[1]);
  Fd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (devnull.get() < 0) return Status::IoError("open /dev/null: " + ErrnoText(errno));
  KOPE_ASSIGN_OR_RETURN(PreparedSpawn prepared,
                        Prepare(argv, options.working_dir, MergedEnvironment(options.extra_env),
                                {{0, devnull.get()}, {1, out_write.get()}, {2, out_write.get()}}));
  KOPE_ASSIGN_OR_RETURN(pid_t pid, ForkExec(prepared));
  out_write.Reset();
  devnull.Reset();
  Fd pidfd(OpenPidfd(pid));

  ProcessResult result;
  OutputCollector collector(&result, options.max_output_bytes);
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(std::max(0.0, options.timeout_seconds)));
  bool output_open = true;
  bool exited = false;
  Clock::time_point drain_until;
  while (output_open || !exited) {
    const auto now = Clock::now();
    if (!exited && (now >= deadline || HasExited(pid))) {
      // The leader is a zombie or about to be killed: its pid, and so its
      // group id, cannot be reused until it is reaped.
      if (now >= deadline && !HasExited(pid)) result.timed_out = true;
      killpg(pid, SIGKILL);
      Reap(pid, &result);
      exited = true;
      drain_until = Clock::now() + kDrainGrace;
      continue;
    }
    if (exited && now >= drain_until) break;
    const auto until = exited ? drain_until : deadline;
    auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
    if (!exited && pidfd.get() < 0) wait_ms = std::min<decltype(wait_ms)>(wait_ms, 20);
    pollfd fds[2];
    int nfds = 0;
    if (output_open) fds[nfds++] = {out_read.get(), POLLIN, 0};
    if (!exited && pidfd.get() >= 0) fds[nfds++] = {pidfd.get(), POLLIN, 0};
    int ready = poll(fds, static_cast<nfds_t>(nfds), static_cast<int>(std::max<long>(wait_ms, 0)));
    if (ready < 0 && errno != EINTR) {
      killpg(pid, SIGKILL);
      Reap(pid, &result);
      return Status::IoError("poll: " + ErrnoText(errno));
    }
    if (ready > 0 && output_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      output_open = collector.ReadFrom(out_read.get());
    }
  }
  if (result.timed_out) result.exit_code = -1;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace kope
