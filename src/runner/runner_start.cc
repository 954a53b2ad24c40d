#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "bubblewrap.h"
#include "kope/base/subprocess.h"
#include "runner_impl.h"

extern char** environ;

// Starting a kope-runner child: its scratch folders, control socket, sandbox and command, and
// its hello.
namespace kope {
namespace runner_internal {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

rp::Deadline DeadlineAfter(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, seconds)));
}

std::string ReadTail(const std::filesystem::path& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                                   ? size - static_cast<std::streamoff>(max_bytes)
                                   : 0;
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  for (char& c : tail) {
    if (c == '\0') c = ' ';
  }
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

std::vector<std::string> ChildEnvironment(const SandboxLimits& limits, bool gpu) {
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  bool wait_policy_set = false;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("OMP_") || entry.starts_with("GOMP_")) env.emplace_back(entry);
    if (entry.starts_with("OMP_WAIT_POLICY=")) wait_policy_set = true;
    // Where the CUDA runtime and driver libraries are, and which GPUs the parent sees.
    if (gpu &&
        (entry.starts_with("LD_LIBRARY_PATH=") || entry.starts_with("CUDA_VISIBLE_DEVICES=") ||
         entry.starts_with("CUDA_DEVICE_ORDER="))) {
      env.emplace_back(entry);
    }
  }
  if (!wait_policy_set) env.emplace_back("OMP_WAIT_POLICY=passive");
  // Heap memory a kernel allocates starts as a non-zero pattern, different in
  // every runner, instead of the zeros of fresh pages: a kernel that reads
  // memory it never wrote gets garbage that varies, and fails verification.
  // Chunks up to glibc's largest mmap threshold come from the heap, where the
  // pattern applies.
  // glibc fills allocations with perturb ^ 0xff; the byte is drawn so that this fill reads as a
  // large float and double (|v| >= 2: exponent bits high), never as a value so tiny that a
  // kernel adding uninitialized memory to its results would still pass the tolerance.
  const int draw = static_cast<int>(std::random_device{}() % 127);  // 0..126
  const int perturb = draw < 63 ? 1 + draw : 0x80 + (draw - 63);    // 0x01-0x3f, 0x80-0xbe
  const int fill = perturb ^ 0xff;                                  // 0xc0-0xfe, 0x41-0x7f
  env.push_back("MALLOC_PERTURB_=" + std::to_string(perturb));
  env.emplace_back("MALLOC_MMAP_THRESHOLD_=33554432");
  // Freed heap memory stays in the process: with the threshold fixed, glibc would otherwise
  // return every free at the heap's top to the kernel, and whether a call's allocations fault
  // in fresh pages would depend on the process's history, not on the kernel.
  env.emplace_back("MALLOC_TRIM_THRESHOLD_=68719476736");
  if (sandbox_internal::kAddressSanitizer && limits.max_address_space_bytes > 0) {
    const uint64_t mb = std::max<uint64_t>(limits.max_address_space_bytes >> 20, 64);
    env.push_back("ASAN_OPTIONS=soft_rss_limit_mb=" + std::to_string(mb) + ":hard_rss_limit_mb=" +
                  std::to_string(mb + mb / 4) + ":allocator_may_return_null=1" +
                  ":max_malloc_fill_size=2147483647:malloc_fill_byte=" + std::to_string(fill));
  }
  return env;
}

int OpenPidfd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

bool Readable(int fd, int timeout_ms) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  int r;
  do {
    r = poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

}  // namespace runner_internal

namespace {

using runner_internal::Errno;
using runner_internal::Fd;

// The runner executable's absolute path (symbolic links kept: a virtual environment's
// interpreter finds its environment through the link's own path).
Result<std::filesystem::path> RunnerExecutable(const RunnerOptions& options) {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::absolute(options.runner_exe, ec).lexically_normal();
  if (ec || access(exe.c_str(), X_OK) != 0) {
    return Status::NotFound("kope-runner executable " + options.runner_exe.string() +
                            " not found or not executable");
  }
  return exe;
}

// The sandbox a runner gets: the caller's, widened for a GPU runner.
SandboxOptions SandboxFor(const RunnerOptions& options) {
  SandboxOptions sandbox_options = options.sandbox;
  if (options.device.empty()) return sandbox_options;
  SandboxLimits& l = sandbox_options.limits;
  if (l.max_address_space_bytes > 0 && l.max_data_bytes == 0) {
    l.max_data_bytes = l.max_address_space_bytes;
  }
  l.max_address_space_bytes = 0;
  // The host thread spins while it waits for the GPU: CPU time runs with wall time.
  l.cpu_seconds = std::max<uint64_t>(l.cpu_seconds, 900);
  const size_t colon = options.device.find(':');
  AddGpuAccess(colon == std::string::npos ? 0 : std::atoi(options.device.c_str() + colon + 1),
               &sandbox_options);
  return sandbox_options;
}

// kope-runner's own command line: serve on descriptor 3, with the sandbox's limits.
std::vector<std::string> ServeCommand(const std::filesystem::path& exe,
                                      const RunnerOptions& options,
                                      const std::filesystem::path& kernels_dir,
                                      const SandboxLimits& limits) {
  std::vector<std::string> command = {exe.string()};
  command.insert(command.end(), options.exe_args.begin(), options.exe_args.end());
  command.insert(command.end(),
                 {"--serve", "--control-fd", "3", "--kernels", kernels_dir.string(),
                  "--cpu-seconds", std::to_string(limits.cpu_seconds), "--max-file-bytes",
                  std::to_string(limits.max_file_bytes), "--max-address-space-bytes",
                  std::to_string(limits.max_address_space_bytes), "--max-processes",
                  std::to_string(limits.max_processes)});
  if (limits.allow_network) command.push_back("--allow-network");
  if (limits.max_data_bytes > 0) {
    command.insert(command.end(), {"--max-data-bytes", std::to_string(limits.max_data_bytes)});
  }
  if (!options.device.empty()) {
    command.insert(command.end(), {"--device", options.device, "--max-device-bytes",
                                   std::to_string(limits.max_device_bytes)});
  }
  return command;
}

// The command under bubblewrap: the executable shown read-only unless a folder shown already
// holds it (an interpreter in its virtual environment is a symbolic link that must stay one),
// and a GPU runner's plugin from beside the executable.
std::vector<std::string> BubblewrapCommand(const std::filesystem::path& bwrap,
                                           SandboxOptions sandbox, const std::filesystem::path& exe,
                                           bool gpu, const std::filesystem::path& scratch,
                                           const std::vector<std::string>& command) {
  const bool shown = std::any_of(sandbox.read_only.begin(), sandbox.read_only.end(),
                                 [&](const std::filesystem::path& dir) {
                                   auto rel = exe.lexically_relative(dir);
                                   return !rel.empty() && *rel.begin() != "..";
                                 });
  if (!shown) sandbox.read_only.push_back(exe);
  std::error_code ec;
  const std::filesystem::path plugin = exe.parent_path() / "libkope-runner-cuda.so";
  if (gpu && std::filesystem::exists(plugin, ec)) sandbox.read_only.push_back(plugin);
  return sandbox_internal::BubblewrapArgv(bwrap, sandbox, scratch,
                                          sandbox_internal::ScratchLayout::kRunnerWork, command);
}

}  // namespace

Status Runner::Impl::Start(const RunnerOptions& options) {
  options_ = options;
  KOPE_ASSIGN_OR_RETURN(const std::filesystem::path exe, RunnerExecutable(options));
  KOPE_RETURN_IF_ERROR(PrepareScratch());
  Fd log(open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  if (log.get() < 0) return Status::IoError(Errno("creating " + log_path_.string()));
  KOPE_ASSIGN_OR_RETURN(Fd child_sock, OpenControlSocket());

  const bool gpu = !options.device.empty();
  const SandboxOptions sandbox_options = SandboxFor(options);
  const std::vector<std::string> command =
      ServeCommand(exe, options, kernels_dir_, sandbox_options.limits);
  const auto& probe = sandbox_internal::ProbeBubblewrap();
  bubblewrap_ = sandbox_options.use_bubblewrap && probe.works;
  SpawnOptions spawn;
  spawn.env = runner_internal::ChildEnvironment(sandbox_options.limits, gpu);
  spawn.fds = {{1, log.get()}, {2, log.get()}, {3, child_sock.get()}};
  std::vector<std::string> argv = command;
  if (bubblewrap_) {
    argv = BubblewrapCommand(probe.path, sandbox_options, exe, gpu, scratch_, command);
  } else {
    spawn.working_dir = scratch_ / "work";
  }
  KOPE_ASSIGN_OR_RETURN(pid_a, SpawnProcess(argv, spawn));
  child_sock.Reset();
  log.Reset();
  pidfd_a_ = Fd(runner_internal::OpenPidfd(pid_a));
  return AwaitHello(sandbox_options);
}

// The scratch folder (which must exist and be empty) gets the kernels' folder, the runner's
// working folder and its log.
Status Runner::Impl::PrepareScratch() {
  std::error_code ec;
  scratch_ = std::filesystem::canonical(options_.sandbox.scratch_dir, ec);
  if (ec || !std::filesystem::is_directory(scratch_)) {
    return Status::InvalidArgument("scratch folder " + options_.sandbox.scratch_dir.string() +
                                   " does not exist");
  }
  if (std::filesystem::directory_iterator(scratch_, ec) != std::filesystem::directory_iterator()) {
    return Status::FailedPrecondition("scratch folder " + scratch_.string() + " is not empty");
  }
  kernels_dir_ = scratch_ / "kernels";
  const std::filesystem::path work = scratch_ / "work";
  log_path_ = scratch_ / "runner.log";
  if (mkdir(kernels_dir_.c_str(), 0755) != 0 || mkdir(work.c_str(), 0755) != 0) {
    return Status::IoError(Errno("creating folders in " + scratch_.string()));
  }
  return Status::Ok();
}

// The control socket: this end kept in sock_, the child's end returned.
Result<Runner::Impl::Fd> Runner::Impl::OpenControlSocket() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Status::IoError(Errno("socketpair"));
  }
  sock_ = Fd(sv[0]);
  Fd child_sock(sv[1]);
  const int one = 1;
  // The child's pid arrives with its hello, translated into our PID namespace.
  if (setsockopt(sock_.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
    return Status::IoError(Errno("SO_PASSCRED"));
  }
  return child_sock;
}

// The child's hello: its pid and the protection it set up, with what the parent set up.
Status Runner::Impl::AwaitHello(const SandboxOptions& sandbox_options) {
  namespace rp = runner_protocol;
  Result<rp::Frame> hello = rp::ReadFrame(
      sock_.get(), runner_internal::DeadlineAfter(options_.start_timeout_seconds), pidfd_a_.get());
  Result<rp::Hello> parsed = Status::Internal("no hello");
  if (hello.ok() && hello->type == rp::MessageType::kHello) parsed = rp::ReadHello(hello->payload);
  if (!parsed.ok()) {
    CallOutcome why = hello.ok() || hello.status().code() != StatusCode::kDeadlineExceeded
                          ? DiedOutcome("while starting")
                          : TimeoutOutcome(options_.start_timeout_seconds);
    return Status::Unavailable("kope-runner did not start: " + why.detail);
  }
  pid_c = hello->sender_pid > 0 ? hello->sender_pid : pid_a;
  pidfd_c_ = Fd(pid_c == pid_a ? -1 : runner_internal::OpenPidfd(pid_c));

  const SandboxLimits& limits = sandbox_options.limits;
  protection = sandbox_internal::ParentProtection(sandbox_options, bubblewrap_);
  protection.seccomp = parsed->seccomp;
  protection.rlimits = parsed->rlimits;
  protection.network_isolated = !limits.allow_network && (bubblewrap_ || protection.seccomp);
  protection.notes.insert(protection.notes.end(), parsed->notes.begin(), parsed->notes.end());
  return Status::Ok();
}

}  // namespace kope
