#include "kope/runner/runner.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "protocol.h"
#include "request_trace.h"
#include "runner_impl.h"

namespace kope {

using runner_internal::Clock;
using runner_internal::DeadlineAfter;
using runner_internal::Readable;
using runner_internal::SignalName;
namespace rp = runner_protocol;

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
int Runner::process_group() const { return impl_->pid_a; }
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
