#include "kope/deploy/profiler.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>

#include "kope/base/file.h"
#include "kope/base/subprocess.h"
#include "kope/torch_bridge/bridge.h"

extern char** environ;

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr size_t kLogTailLines = 20;

std::string LastLines(const std::string& text, size_t lines) {
  size_t at = text.size();
  while (at > 0 && (text[at - 1] == '\n' || text[at - 1] == ' ')) --at;
  const size_t end = at;
  for (size_t n = 0; at > 0; --at) {
    if (text[at - 1] == '\n' && ++n == lines) break;
  }
  return text.substr(at, end - at);
}

std::string ErrnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Closes a descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Reads the child's stdout line by line until it closes it; every line is noted in `result`
// and progress goes to `on_progress`.
void ReadEvents(int fd, ProfilerResult* result,
                const std::function<void(const ProfilerEvent&)>& on_progress,
                std::deque<std::string>* text_lines) {
  std::string pending;
  char buffer[4096];
  auto handle = [&](std::string_view line) {
    ProfilerEvent event = ParseProfilerLine(line);
    switch (event.type) {
      case ProfilerEvent::Type::kProgress:
        if (on_progress) on_progress(event);
        break;
      case ProfilerEvent::Type::kDone:
        result->profile = event.profile;
        break;
      case ProfilerEvent::Type::kError:
        result->error = event.message;
        break;
      case ProfilerEvent::Type::kText:
        if (line.empty()) break;
        text_lines->push_back(std::string(line));
        if (text_lines->size() > kLogTailLines) text_lines->pop_front();
        break;
    }
  };
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    for (size_t eol = pending.find('\n'); eol != std::string::npos; eol = pending.find('\n')) {
      handle(std::string_view(pending).substr(0, eol));
      pending.erase(0, eol + 1);
    }
  }
  if (!pending.empty()) handle(pending);
}

// How the child ended, in `result`.
void Conclude(int status, const std::deque<std::string>& text_lines, const fs::path& log,
              ProfilerResult* result) {
  result->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result->ok = result->exit_code == 0 && !result->profile.empty() && result->error.empty();
  if (result->ok) return;
  if (result->error.empty()) {
    if (WIFSIGNALED(status)) {
      result->error = "the profiler was killed by signal " + std::to_string(WTERMSIG(status));
    } else if (result->exit_code != 0) {
      result->error = "the profiler exited with code " + std::to_string(result->exit_code);
    } else {
      result->error = "the profiler ended without reporting its profile";
    }
  }
  std::string tail;
  for (const std::string& line : text_lines) tail += line + "\n";
  Result<std::string> text = ReadFileText(log);
  if (text.ok()) tail += LastLines(*text, kLogTailLines);
  result->log_tail = LastLines(tail, kLogTailLines);
}

}  // namespace

ProfilerEvent ParseProfilerLine(std::string_view line) {
  ProfilerEvent event;
  event.message = std::string(line);
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return event;
  }
  const std::string type = j["type"];
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto integer = [&](const char* key, int64_t fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  if (type == "progress") {
    event.type = ProfilerEvent::Type::kProgress;
    event.step = text("step");
    event.entry = integer("entry", -1);
    event.done = integer("done", 0);
    event.total = integer("total", 0);
    event.message = text("message");
  } else if (type == "done") {
    event.type = ProfilerEvent::Type::kDone;
    event.profile = text("profile");
    event.message.clear();
  } else if (type == "error") {
    event.type = ProfilerEvent::Type::kError;
    event.message = text("message");
    if (event.message.empty()) event.message = "the profiler reported an error without a message";
  }
  return event;
}

std::string ProgressText(const ProfilerEvent& e) {
  std::string out = e.step.empty() ? "working" : e.step;
  if (e.entry >= 0) out += " entry " + std::to_string(e.entry);
  if (e.total > 0) out += " " + std::to_string(e.done) + "/" + std::to_string(e.total);
  if (!e.message.empty()) out += ": " + e.message;
  return out;
}

Result<ProfilerCommand> PythonDeployCommand(const std::string& module,
                                            const std::vector<std::string>& args,
                                            const fs::path& log) {
  Result<TorchBridge> bridge = FindTorchBridge();
  if (!bridge.ok()) {
    return Status::NotFound("the Python side of kope deploy is not set up: " +
                            bridge.status().message());
  }
  ProfilerCommand command;
  command.argv = {bridge->python.string(), "-m", "kope_deploy." + module};
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  std::string python_path = bridge->package_dir.string();
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    const std::string_view assignment(*env);
    if (assignment.rfind("PYTHONPATH=", 0) == 0) {
      if (assignment.size() > 11) python_path += ":" + std::string(assignment.substr(11));
      continue;
    }
    if (assignment.rfind("PYTHONUNBUFFERED=", 0) == 0) continue;
    command.env.emplace_back(assignment);
  }
  command.env.push_back("PYTHONPATH=" + python_path);
  command.env.push_back("PYTHONUNBUFFERED=1");  // progress lines as they are written
  command.log = log;
  return command;
}

Result<ProfilerCommand> PythonProfilerCommand(const fs::path& workload_json,
                                              const fs::path& out_dir) {
  return PythonDeployCommand(
      "profile",
      {"--workload", fs::absolute(workload_json).string(), "--out", fs::absolute(out_dir).string()},
      out_dir / "profile.log");
}

Result<ProfilerResult> RunProfiler(const ProfilerCommand& command,
                                   const std::function<void(const ProfilerEvent&)>& on_progress) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Status::IoError(ErrnoText("pipe2"));
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);
  Fd log(::open(command.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (log.get() < 0) return Status::IoError(ErrnoText(("opening " + command.log.string()).c_str()));
  SpawnOptions options;
  options.env = command.env;
  options.fds = {{1, write_end.get()}, {2, log.get()}};
  Result<int> pid = SpawnProcess(command.argv, options);
  if (!pid.ok()) return pid.status().WithContext("starting the profiler");
  write_end.Reset();  // the child holds the only writer: its exit ends the reads
  log.Reset();
  ProfilerResult result;
  std::deque<std::string> text_lines;
  ReadEvents(read_end.get(), &result, on_progress, &text_lines);
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::IoError(ErrnoText("waitpid"));
  }
  ::kill(-*pid, SIGKILL);  // whatever the child left behind in its process group
  Conclude(status, text_lines, command.log, &result);
  return result;
}

}  // namespace kope::deploy
