#include "kope/runner/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>

#include "bubblewrap.h"
#include "kope/base/subprocess.h"
#include "protocol.h"
#include "request_trace.h"

extern char** environ;

namespace kope {
namespace {

namespace rp = runner_protocol;
using Clock = std::chrono::steady_clock;

constexpr size_t kStderrTailBytes = 4096;

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

// The child's whole environment: nothing of the parent's (API keys, tokens)
// except the OpenMP settings. Unless the user chose otherwise, idle OpenMP
// threads sleep instead of spinning: the baseline and the candidate are timed
// interleaved in two processes, and a candidate's spinning pool would steal the
// cores the baseline runs on next (on a 2-core machine it doubled its time).
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

}  // namespace

class Runner::Impl {
 public:
  ~Impl() { Shutdown(); }

  Status Start(const RunnerOptions& options);
  // `received_fd`, when given, takes the first descriptor the reply carries (else -1).
  Result<CallOutcome> Request(rp::MessageType type, const std::string& payload, int pass_fd,
                              double timeout_seconds, int* received_fd = nullptr);
  Result<CallOutcome> Load(const std::filesystem::path& shared_object, double timeout_seconds);
  // A request about one call: a dead runner's outcome again, an error when no arena is mapped
  // or `call` leaves it; else the call spec, then what `more` writes, is the payload.
  Result<CallOutcome> CallRequest(rp::MessageType type, const CallSpec& call,
                                  const std::function<void(rp::Writer*)>& more,
                                  double timeout_seconds);

  uint64_t arena_bytes = 0;
  Protection protection;
  pid_t pid_a = -1;  // the spawned process: bwrap, or kope-runner itself
  pid_t pid_c = -1;  // kope-runner, as this process sees it

  bool dead() const { return dead_; }
  bool ChildExited() const { return reaped_ || Readable(pidfd_a_.get(), 0); }

 private:
  void Kill();
  void Reap();
  // The outcome once the child died on its own during a request.
  CallOutcome DiedOutcome(const std::string& context);
  CallOutcome TimeoutOutcome(double timeout_seconds);
  std::string StderrTail() const { return ReadTail(log_path_, kStderrTailBytes); }
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

Status Runner::Impl::Start(const RunnerOptions& options) {
  options_ = options;
  std::error_code ec;
  // Absolute, but symbolic links kept: a virtual environment's interpreter finds its
  // environment through the link's own path.
  const std::filesystem::path exe =
      std::filesystem::absolute(options.runner_exe, ec).lexically_normal();
  if (ec || access(exe.c_str(), X_OK) != 0) {
    return Status::NotFound("kope-runner executable " + options.runner_exe.string() +
                            " not found or not executable");
  }
  scratch_ = std::filesystem::canonical(options.sandbox.scratch_dir, ec);
  if (ec || !std::filesystem::is_directory(scratch_)) {
    return Status::InvalidArgument("scratch folder " + options.sandbox.scratch_dir.string() +
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
  Fd log(open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
  if (log.get() < 0) return Status::IoError(Errno("creating " + log_path_.string()));

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

  const bool gpu = !options.device.empty();
  SandboxOptions sandbox_options = options.sandbox;
  if (gpu) {
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
  }
  const SandboxLimits& limits = sandbox_options.limits;
  std::vector<std::string> command = {exe.string()};
  command.insert(command.end(), options.exe_args.begin(), options.exe_args.end());
  command.insert(command.end(),
                 {"--serve", "--control-fd", "3", "--kernels", kernels_dir_.string(),
                  "--cpu-seconds", std::to_string(limits.cpu_seconds), "--max-file-bytes",
                  std::to_string(limits.max_file_bytes), "--max-address-space-bytes",
                  std::to_string(limits.max_address_space_bytes), "--max-processes",
                  std::to_string(limits.max_processes)});
  if (limits.allow_network) command.push_back("--allow-network");
  if (limits.max_data_bytes > 0) {
    command.insert(command.end(), {"--max-data-bytes", std::to_string(limits.max_data_bytes)});
  }
  if (gpu) {
    command.insert(command.end(), {"--device", options.device, "--max-device-bytes",
                                   std::to_string(limits.max_device_bytes)});
  }

  const auto& probe = sandbox_internal::ProbeBubblewrap();
  bubblewrap_ = sandbox_options.use_bubblewrap && probe.works;
  SpawnOptions spawn;
  spawn.env = ChildEnvironment(limits, gpu);
  spawn.fds = {{1, log.get()}, {2, log.get()}, {3, child_sock.get()}};
  std::vector<std::string> argv = command;
  if (bubblewrap_) {
    SandboxOptions sandbox = sandbox_options;
    // The executable, unless a folder shown already holds it (an interpreter in its virtual
    // environment is a symbolic link that must stay one).
    const bool shown = std::any_of(sandbox.read_only.begin(), sandbox.read_only.end(),
                                   [&](const std::filesystem::path& dir) {
                                     auto rel = exe.lexically_relative(dir);
                                     return !rel.empty() && *rel.begin() != "..";
                                   });
    if (!shown) sandbox.read_only.push_back(exe);
    // A GPU runner loads its plugin from beside the executable.
    const std::filesystem::path plugin = exe.parent_path() / "libkope-runner-cuda.so";
    if (gpu && std::filesystem::exists(plugin, ec)) sandbox.read_only.push_back(plugin);
    argv = sandbox_internal::BubblewrapArgv(probe.path, sandbox, scratch_,
                                            sandbox_internal::ScratchLayout::kRunnerWork, command);
  } else {
    spawn.working_dir = work;
  }
  KOPE_ASSIGN_OR_RETURN(pid_a, SpawnProcess(argv, spawn));
  child_sock.Reset();
  log.Reset();
  pidfd_a_ = Fd(OpenPidfd(pid_a));

  Result<rp::Frame> hello =
      rp::ReadFrame(sock_.get(), DeadlineAfter(options.start_timeout_seconds), pidfd_a_.get());
  Result<rp::Hello> parsed = Status::Internal("no hello");
  if (hello.ok() && hello->type == rp::MessageType::kHello) parsed = rp::ReadHello(hello->payload);
  if (!parsed.ok()) {
    CallOutcome why = hello.ok() || hello.status().code() != StatusCode::kDeadlineExceeded
                          ? DiedOutcome("while starting")
                          : TimeoutOutcome(options.start_timeout_seconds);
    return Status::Unavailable("kope-runner did not start: " + why.detail);
  }
  pid_c = hello->sender_pid > 0 ? hello->sender_pid : pid_a;
  pidfd_c_ = Fd(pid_c == pid_a ? -1 : OpenPidfd(pid_c));

  protection = sandbox_internal::ParentProtection(sandbox_options, bubblewrap_);
  protection.seccomp = parsed->seccomp;
  protection.rlimits = parsed->rlimits;
  protection.network_isolated = !limits.allow_network && (bubblewrap_ || protection.seccomp);
  protection.notes.insert(protection.notes.end(), parsed->notes.begin(), parsed->notes.end());
  return Status::Ok();
}

void Runner::Impl::Kill() {
  if (pidfd_c_.get() >= 0) syscall(SYS_pidfd_send_signal, pidfd_c_.get(), SIGKILL, nullptr, 0);
  // Until it is reaped, pid_a cannot be reused, nor can its process group id.
  // Under bubblewrap, its death kills the PID namespace's init (--die-with-parent)
  // and with it every process in the namespace.
  if (!reaped_ && pid_a > 0) killpg(pid_a, SIGKILL);
}

void Runner::Impl::Reap() {
  if (reaped_ || pid_a <= 0) return;
  while (waitpid(pid_a, &wait_status_, 0) < 0) {
    if (errno != EINTR) break;
  }
  reaped_ = true;
}

CallOutcome Runner::Impl::DiedOutcome(const std::string& context) {
  // Let the child finish dying on its own, so that its status is its own.
  Readable(pidfd_a_.get(), 2000);
  Kill();
  Reap();
  CallOutcome out;
  out.kind = CallOutcome::Kind::kCrash;
  int sig = 0, code = -1;
  if (WIFSIGNALED(wait_status_)) sig = WTERMSIG(wait_status_);
  if (WIFEXITED(wait_status_)) code = WEXITSTATUS(wait_status_);
  // bubblewrap exits with 128 + the signal that killed the sandboxed process.
  if (bubblewrap_ && code > 128 && code < 128 + NSIG) {
    sig = code - 128;
    code = -1;
  }
  out.term_signal = sig;
  out.detail =
      sig != 0 ? "killed by " + SignalName(sig) : "exited with code " + std::to_string(code);
  if (sig == SIGXCPU) out.detail += " (CPU time limit)";
  out.detail += " " + context;
  std::string tail = StderrTail();
  if (!tail.empty()) out.detail += "; stderr:\n" + tail;
  dead_ = true;
  dead_outcome_ = out;
  return out;
}

CallOutcome Runner::Impl::TimeoutOutcome(double timeout_seconds) {
  Kill();
  Reap();
  CallOutcome out;
  out.kind = CallOutcome::Kind::kTimeout;
  char text[96];
  std::snprintf(text, sizeof(text), "no reply within %.3g s; the runner was killed",
                timeout_seconds);
  out.detail = text;
  std::string tail = StderrTail();
  if (!tail.empty()) out.detail += "; stderr:\n" + tail;
  dead_ = true;
  dead_outcome_ = out;
  return out;
}

Result<CallOutcome> Runner::Impl::Request(rp::MessageType type, const std::string& payload,
                                          int pass_fd, double timeout_seconds, int* received_fd) {
  if (received_fd != nullptr) *received_fd = -1;
  if (dead_) return dead_outcome_;
  const auto start = Clock::now();
  const rp::Deadline deadline = DeadlineAfter(timeout_seconds);
  auto finish = [this, start, type, &payload](CallOutcome out) {
    out.parent_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    runner_internal::TraceRequest(pid_c, type, payload, arena_bytes, out);
    return out;
  };
  Status sent = rp::WriteFrame(sock_.get(), type, payload, pass_fd, deadline);
  if (sent.code() == StatusCode::kDeadlineExceeded) return finish(TimeoutOutcome(timeout_seconds));
  if (sent.code() == StatusCode::kUnavailable) return finish(DiedOutcome("before the request"));
  KOPE_RETURN_IF_ERROR(sent);

  Result<rp::Frame> frame = rp::ReadFrame(sock_.get(), deadline, pidfd_a_.get());
  if (!frame.ok()) {
    switch (frame.status().code()) {
      case StatusCode::kDeadlineExceeded:
        return finish(TimeoutOutcome(timeout_seconds));
      case StatusCode::kUnavailable:
        return finish(DiedOutcome("during the request"));
      case StatusCode::kCorruption:
        // Candidate code runs in the child and can write to the socket.
        Kill();
        return finish(DiedOutcome("after breaking the control protocol"));
      default:
        return frame.status();
    }
  }
  for (size_t i = 0; i < frame->fds.size(); ++i) {
    if (i == 0 && received_fd != nullptr && frame->type == rp::MessageType::kReply) {
      *received_fd = frame->fds[0];
    } else {
      close(frame->fds[i]);
    }
  }
  Result<rp::Reply> reply = frame->type == rp::MessageType::kReply
                                ? rp::ReadReply(frame->payload)
                                : Result<rp::Reply>(Status::Corruption("not a reply"));
  if (!reply.ok()) {
    Kill();
    return finish(DiedOutcome("after breaking the control protocol"));
  }
  CallOutcome out;
  out.ns = std::move(reply->ns);
  out.rc = reply->rc;
  out.flushed_bytes = reply->flushed_bytes;
  out.copy_seconds = static_cast<double>(reply->copy_ns) * 1e-9;
  switch (reply->status) {
    case rp::ReplyStatus::kOk:
      out.detail = std::move(reply->message);  // a checking request's summary
      break;
    case rp::ReplyStatus::kKernelError:
      out.kind = CallOutcome::Kind::kKernelError;
      out.detail = reply->message.empty() ? "the kernel returned " + std::to_string(reply->rc)
                                          : reply->message;
      break;
    case rp::ReplyStatus::kLoadError:
      out.kind = CallOutcome::Kind::kKernelError;
      out.detail = reply->message;
      break;
    case rp::ReplyStatus::kBadRequest:
      return Status::InvalidArgument("kope-runner rejected the request: " + reply->message);
  }
  return finish(std::move(out));
}

Result<CallOutcome> Runner::Impl::Load(const std::filesystem::path& shared_object,
                                       double timeout_seconds) {
  if (dead_) return dead_outcome_;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(shared_object, ec)) {
    return Status::NotFound("shared object " + shared_object.string() + " not found");
  }
  const std::filesystem::path copy = kernels_dir_ / ("kernel-" + std::to_string(++loads_) + ".so");
  if (!std::filesystem::copy_file(shared_object, copy,
                                  std::filesystem::copy_options::overwrite_existing, ec)) {
    return Status::IoError("copying " + shared_object.string() + " into scratch: " + ec.message());
  }
  std::filesystem::permissions(copy, std::filesystem::perms(0644),
                               std::filesystem::perm_options::replace, ec);
  rp::Writer w;
  w.String(copy.string());
  return Request(rp::MessageType::kLoad, w.payload(), -1, timeout_seconds);
}

Result<CallOutcome> Runner::Impl::CallRequest(rp::MessageType type, const CallSpec& call,
                                              const std::function<void(rp::Writer*)>& more,
                                              double timeout_seconds) {
  if (dead_) return dead_outcome_;
  if (arena_bytes == 0) return Status::FailedPrecondition("no arena mapped");
  KOPE_RETURN_IF_ERROR(runner_protocol::ValidateCall(call, arena_bytes));
  rp::Writer w;
  rp::WriteCallSpec(call, &w);
  if (more) more(&w);
  return Request(type, w.payload(), -1, timeout_seconds);
}

void Runner::Impl::Shutdown() {
  if (pid_a <= 0 || reaped_) return;
  if (!dead_ && sock_.get() >= 0) {
    if (rp::WriteFrame(sock_.get(), rp::MessageType::kQuit, "", -1, DeadlineAfter(1)).ok()) {
      Readable(pidfd_a_.get(), 2000);
    }
  }
  Kill();
  Reap();
}

Runner::Runner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runner::~Runner() = default;

Result<std::unique_ptr<Runner>> Runner::Start(const RunnerOptions& options) {
  auto impl = std::make_unique<Impl>();
  KOPE_RETURN_IF_ERROR(impl->Start(options));
  return std::unique_ptr<Runner>(new Runner(std::move(impl)));
}

Result<CallOutcome> Runner::Load(const std::filesystem::path& shared_object,
                                 double timeout_seconds) {
  return impl_->Load(shared_object, timeout_seconds);
}

Result<CallOutcome> Runner::MapArena(const SharedArena& arena, double timeout_seconds,
                                     bool copies) {
  rp::Writer w;
  w.U64(arena.size());
  if (!copies) w.U8(0);
  Result<CallOutcome> out =
      impl_->Request(rp::MessageType::kMap, w.payload(), arena.fd(), timeout_seconds);
  if (out.ok() && out->ok()) impl_->arena_bytes = arena.size();
  return out;
}

Result<CallOutcome> Runner::Call(const CallSpec& call, double timeout_seconds) {
  return impl_->CallRequest(rp::MessageType::kCall, call, nullptr, timeout_seconds);
}

Result<CallOutcome> Runner::Time(const std::vector<CallSpec>& rotation, int count, bool flush,
                                 double timeout_seconds) {
  if (rotation.empty() || rotation.size() > rp::kMaxRotation) {
    return Status::InvalidArgument("a rotation needs 1 to 64 call specs");
  }
  if (count < 0 || static_cast<uint64_t>(count) > rp::kMaxTimedCalls) {
    return Status::InvalidArgument("bad call count " + std::to_string(count));
  }
  if (impl_->dead()) return impl_->Request(rp::MessageType::kTime, "", -1, 0);
  if (impl_->arena_bytes == 0) return Status::FailedPrecondition("no arena mapped");
  rp::Writer w;
  w.U32(static_cast<uint32_t>(count));
  w.U8(flush ? 1 : 0);
  w.U32(static_cast<uint32_t>(rotation.size()));
  for (const CallSpec& call : rotation) {
    KOPE_RETURN_IF_ERROR(runner_protocol::ValidateCall(call, impl_->arena_bytes));
    rp::WriteCallSpec(call, &w);
  }
  return impl_->Request(rp::MessageType::kTime, w.payload(), -1, timeout_seconds);
}

Result<CallOutcome> Runner::ShareArena(uint64_t bytes, uint64_t token, int* fd,
                                       double timeout_seconds) {
  rp::Writer w;
  w.U64(bytes);
  w.U64(token);
  Result<CallOutcome> out =
      impl_->Request(rp::MessageType::kShare, w.payload(), -1, timeout_seconds, fd);
  if (out.ok() && out->ok() && *fd < 0) {
    return Status::Internal("the runner shared no memory descriptor");
  }
  if ((!out.ok() || !out->ok()) && *fd >= 0) {
    close(*fd);
    *fd = -1;
  }
  return out;
}

Result<CallOutcome> Runner::MapSharedArena(int fd, uint64_t bytes, double timeout_seconds) {
  rp::Writer w;
  w.U64(bytes);
  Result<CallOutcome> out =
      impl_->Request(rp::MessageType::kMapShared, w.payload(), fd, timeout_seconds);
  if (out.ok() && out->ok()) impl_->arena_bytes = bytes;
  return out;
}

Result<CallOutcome> Runner::Draw(const CallSpec& call, uint64_t seed, DrawMode mode,
                                 const std::vector<DrawSpec>& distributions,
                                 double timeout_seconds) {
  if (distributions.size() != call.inputs.size()) {
    return Status::InvalidArgument("one distribution per input");
  }
  auto more = [&](rp::Writer* w) {
    w->U64(seed);
    w->U8(static_cast<uint8_t>(mode));
    for (const DrawSpec& d : distributions) {
      w->U8(d.kind);
      for (double v : {d.mean, d.stddev, d.low, d.high, d.low_exp, d.high_exp}) w->F64(v);
      w->I32(d.num_distinct);
    }
  };
  return impl_->CallRequest(rp::MessageType::kDraw, call, more, timeout_seconds);
}

Result<CallOutcome> Runner::ReferenceCall(const CallSpec& call, bool summarize,
                                          double timeout_seconds) {
  auto more = [summarize](rp::Writer* w) { w->U8(summarize ? 1 : 0); };
  return impl_->CallRequest(rp::MessageType::kReferenceCall, call, more, timeout_seconds);
}

Result<CallOutcome> Runner::Poison(const std::vector<PoisonSpan>& spans, const std::string& guard,
                                   double timeout_seconds) {
  rp::Writer w;
  w.String(guard);
  w.U32(static_cast<uint32_t>(spans.size()));
  for (const PoisonSpan& s : spans) {
    w.U64(s.span.offset);
    w.U64(s.span.bytes);
    w.String(s.element);
  }
  return impl_->Request(rp::MessageType::kPoison, w.payload(), -1, timeout_seconds);
}

Result<CallOutcome> Runner::Check(const CallSpec& call,
                                  const std::vector<std::pair<double, double>>& tolerances,
                                  double timeout_seconds) {
  if (tolerances.size() != call.outputs.size()) {
    return Status::InvalidArgument("one tolerance per output");
  }
  auto more = [&](rp::Writer* w) {
    for (const auto& [rtol, atol] : tolerances) {
      w->F64(rtol);
      w->F64(atol);
    }
  };
  return impl_->CallRequest(rp::MessageType::kCheck, call, more, timeout_seconds);
}

const Protection& Runner::protection() const { return impl_->protection; }
int Runner::pid() const { return impl_->pid_c; }
bool Runner::alive() const { return !impl_->dead() && !impl_->ChildExited(); }

Result<std::filesystem::path> FindRunnerExecutable() {
  if (const char* env = std::getenv("KOPE_RUNNER"); env != nullptr && *env != '\0') {
    if (access(env, X_OK) != 0) {
      return Status::NotFound(std::string("KOPE_RUNNER=") + env + " is not an executable file");
    }
    return std::filesystem::path(env);
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::NotFound("cannot read /proc/self/exe: " + ec.message());
  const std::filesystem::path beside = self.parent_path() / "kope-runner";
  if (access(beside.c_str(), X_OK) == 0) return beside;
  return Status::NotFound("kope-runner not found beside " + self.string() +
                          "; build it or set KOPE_RUNNER to its path");
}

}  // namespace kope
