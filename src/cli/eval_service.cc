#include "eval_service.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <iostream>
#include <mutex>
#include <thread>

#include "eval_wire.h"
#include "warm_evaluator.h"

namespace kope::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

void Log(const std::string& line) {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%F %T", std::localtime(&now));
  std::cerr << when << " [" << getpid() << "] " << line << std::endl;
}

void SetTimeout(int fd, int option, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

bool SameUser(int fd) {
  ucred peer{};
  socklen_t size = sizeof peer;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0 && peer.uid == geteuid();
}

// Holds `path` locked (flock) until the process ends: waits up to `seconds` for another
// service to let it go.
bool TakeLock(const std::filesystem::path& path, double seconds) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (Clock::now() > until) {
      close(fd);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;  // fd stays open: the lock goes with the process
}

// The log file becomes stdout and stderr; a long one starts again.
void OpenLog(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > (1 << 20)) {
    if (ftruncate(fd, 0) != 0) Log("cannot truncate the log");
  }
  dup2(fd, STDOUT_FILENO);
  dup2(fd, STDERR_FILENO);
  close(fd);
}

struct Pending {
  int fd = -1;
  WarmRequest request;
};

class Service {
 public:
  Service(ServiceLocation where, ServiceOptions options)
      : where_(std::move(where)), options_(options), stamp_(ExecutablesStamp()) {}
  int Run();

 private:
  Status Listen();
  void AcceptLoop();
  void Answer(int fd);
  void Serve(Pending pending);
  std::string WaitForWork(Pending* next);
  void Refuse(int fd, const std::string& message, bool retry);
  void End();
  json StatusMessage();

  ServiceLocation where_;
  ServiceOptions options_;
  std::string stamp_;
  int listen_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;
  bool stop_requested_ = false;
  bool stopping_ = false;
  int served_ = 0;
  Clock::time_point last_activity_ = Clock::now();
  WarmEvaluator evaluator_;  // used on the main thread only
};

Status Service::Listen() {
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::IoError(std::string("socket: ") + strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, where_.socket.c_str(), sizeof addr.sun_path - 1);
  unlink(where_.socket.c_str());  // a dead service's: the lock says none serves it
  const mode_t old_mask = umask(077);
  const int bound = bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old_mask);
  if (bound != 0 || listen(listen_fd_, 16) != 0) {
    return Status::IoError("cannot listen on " + where_.socket.string() + ": " + strerror(errno));
  }
  return Status::Ok();
}

json Service::StatusMessage() {
  std::lock_guard<std::mutex> lock(mu_);
  const double idle = std::chrono::duration<double>(Clock::now() - last_activity_).count();
  return {{"type", "status"},          {"pid", getpid()},
          {"key", where_.key},         {"busy", busy_},
          {"queued", queue_.size()},   {"served", served_},
          {"idle_for", idle},          {"idle_seconds", options_.idle_seconds},
          {"log", where_.log.string()}};
}

void Service::Refuse(int fd, const std::string& message, bool retry) {
  (void)WriteFrame(fd, {{"type", "error"}, {"message", message}, {"retry", retry}});
  close(fd);
}

// One connection, on the acceptor's thread: its first frame says what it wants.
void Service::Answer(int fd) {
  if (!SameUser(fd)) {
    Log("refused a connection from another user");
    return Refuse(fd, "the warm evaluation service serves its own user only", false);
  }
  SetTimeout(fd, SO_RCVTIMEO, 10);
  SetTimeout(fd, SO_SNDTIMEO, 10);
  Result<json> message = ReadFrame(fd);
  if (!message.ok()) {
    Log("a bad request: " + message.status().message());
    return Refuse(fd, "a bad request: " + message.status().message(), false);
  }
  const std::string type = (*message)["type"].get<std::string>();
  if (type == "status") {
    (void)WriteFrame(fd, StatusMessage());
    close(fd);
    return;
  }
  if (type == "stop") {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_requested_ = true;
    }
    cv_.notify_all();
    (void)WriteFrame(fd, {{"type", "stopping"}, {"pid", getpid()}});
    close(fd);
    return;
  }
  if (type != "eval") return Refuse(fd, "unknown request type " + type, false);
  Result<WarmRequest> request = WarmRequestFromJson(*message);
  if (!request.ok()) return Refuse(fd, request.status().message(), false);
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || stop_requested_) {
    lock.unlock();
    return Refuse(fd, "the warm evaluation service is ending", true);
  }
  queue_.push_back({fd, std::move(request).value()});
  const size_t ahead = queue_.size() - 1 + (busy_ ? 1 : 0);
  if (ahead > 0) (void)WriteFrame(fd, {{"type", "queued"}, {"ahead", ahead}});
  lock.unlock();
  cv_.notify_all();
}

void Service::AcceptLoop() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) Answer(fd);
  }
}

void Service::Serve(Pending pending) {
  const int fd = pending.fd;
  bool gone = !WriteFrame(fd, {{"type", "started"}}).ok();
  const auto progress = [fd, &gone](std::string_view line) {
    if (!gone) gone = !WriteFrame(fd, {{"type", "progress"}, {"line", line}}).ok();
  };
  const auto t0 = Clock::now();
  WarmResult result;
  try {
    result = evaluator_.Evaluate(pending.request, progress);
  } catch (const std::exception& e) {
    result.exit_code = 2;
    result.err = std::string("kope eval: the warm evaluation service failed: ") + e.what() + "\n";
  }
  if (!gone) {
    gone = !WriteFrame(fd, {{"type", "result"},
                            {"exit_code", result.exit_code},
                            {"stdout", result.out},
                            {"stderr", result.err}})
                .ok();
  }
  close(fd);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  Log("evaluated " + pending.request.candidate + " on " + pending.request.task + ": " +
      (result.verdict.empty() ? "exit " + std::to_string(result.exit_code) : result.verdict) +
      " in " + std::to_string(seconds) + " s" + (gone ? " (the client had gone)" : ""));
}

// The next request (returns ""), or why the service ends.
std::string Service::WaitForWork(Pending* next) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (stop_requested_) return "stopped";
    if (!queue_.empty()) {
      *next = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      return "";
    }
    const auto idle = std::chrono::duration<double>(options_.idle_seconds);
    if (Clock::now() - last_activity_ >= idle) return "idle";
    lock.unlock();
    if (ExecutablesStamp() != stamp_) return "the kope executables changed";
    lock.lock();
    if (!queue_.empty() || stop_requested_) continue;
    const auto until = std::min(last_activity_ + std::chrono::duration_cast<Clock::duration>(idle),
                                Clock::now() + std::chrono::seconds(1));
    cv_.wait_until(lock, until);
  }
}

void Service::End() {
  unlink(where_.socket.c_str());  // new clients start a new service from here on
  std::deque<Pending> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    left.swap(queue_);
  }
  for (Pending& p : left) Refuse(p.fd, "the warm evaluation service is ending", true);
  // Connections that arrived before the socket's name went: told to retry.
  fcntl(listen_fd_, F_SETFL, O_NONBLOCK);
  for (int fd; (fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
    Refuse(fd, "the warm evaluation service is ending", true);
  }
  close(listen_fd_);
}

int Service::Run() {
  if (Status s = Listen(); !s.ok()) {
    Log(s.message());
    return 1;
  }
  Log("serving " + where_.socket.string() + " (idle limit " +
      std::to_string(options_.idle_seconds) + " s)");
  std::thread acceptor([this] { AcceptLoop(); });
  std::string why;
  for (Pending next; (why = WaitForWork(&next)).empty();) {
    Serve(std::move(next));
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
    served_++;
    last_activity_ = Clock::now();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  acceptor.join();
  End();
  Log("ended: " + why + ", after " + std::to_string(served_) + " evaluations");
  return 0;
}

}  // namespace

int RunEvalService(const ServiceLocation& where, const ServiceOptions& options) {
  std::signal(SIGPIPE, SIG_IGN);
  if (!TakeLock(where.lock, 10)) {
    std::cerr << "kope eval-service: another service holds " << where.lock.string() << "\n";
    return 0;
  }
  OpenLog(where.log);
  Service service(where, options);
  return service.Run();
}

}  // namespace kope::cli
