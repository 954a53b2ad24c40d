#include "eval_service_location.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/runner/runner.h"

extern char** environ;

namespace kope::cli {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// The environment an evaluation depends on, sorted: what kope, its backends, the bridge and
// the runners read. The warm options themselves are left out.
std::string EnvironmentFingerprint() {
  static const char* const kPrefixes[] = {"KOPE_",    "CUDA_", "NVIDIA_", "OMP_",
                                          "PYTORCH_", "TORCH", "TRITON_", "LD_LIBRARY_PATH=",
                                          "PATH=",    "HOME=", "TMPDIR=", "XDG_CACHE_HOME=",
                                          "CC=",      "CXX="};
  std::vector<std::string> kept;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("KOPE_EVAL_WARM", 0) == 0 || entry.rfind("KOPE_EVAL_SERVICE_DIR=", 0) == 0) {
      continue;
    }
    for (const char* prefix : kPrefixes) {
      if (entry.rfind(prefix, 0) == 0) {
        kept.push_back(entry);
        break;
      }
    }
  }
  std::sort(kept.begin(), kept.end());
  std::string joined;
  for (const auto& e : kept) joined += e + '\n';
  return joined;
}

Status CheckPrivate(const fs::path& folder) {
  struct stat st {};
  if (lstat(folder.c_str(), &st) != 0) {
    return Status::FailedPrecondition("cannot stat " + folder.string() + ": " + strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::FailedPrecondition(folder.string() + " is not a folder");
  }
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    return Status::FailedPrecondition(folder.string() +
                                      " is not private to this user (owner and mode 0700)");
  }
  return Status::Ok();
}

}  // namespace

Result<fs::path> ServiceFolder() {
  fs::path folder;
  if (std::string dir = Env("KOPE_EVAL_SERVICE_DIR"); !dir.empty()) {
    folder = dir;
  } else if (std::string run = Env("XDG_RUNTIME_DIR"); !run.empty() && fs::is_directory(run)) {
    folder = fs::path(run) / "kope-eval";
  } else {
    folder = fs::temp_directory_path() / ("kope-eval-" + std::to_string(geteuid()));
  }
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::FailedPrecondition("cannot make " + folder.string() + ": " + strerror(errno));
  }
  KOPE_RETURN_IF_ERROR(CheckPrivate(folder));
  return folder;
}

Result<fs::path> SelfExecutable() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Status::NotFound("cannot read /proc/self/exe: " + ec.message());
  return self;
}

Result<ServiceLocation> LocateService() {
  KOPE_ASSIGN_OR_RETURN(fs::path folder, ServiceFolder());
  KOPE_ASSIGN_OR_RETURN(fs::path self, SelfExecutable());
  KOPE_ASSIGN_OR_RETURN(std::string kope_bytes, ReadFileText(self));
  std::string runner_bytes;
  if (Result<fs::path> runner = FindRunnerExecutable(); runner.ok()) {
    KOPE_ASSIGN_OR_RETURN(runner_bytes, ReadFileText(*runner));
  }
  const std::string fingerprint = EnvironmentFingerprint();
  ServiceLocation where;
  where.key = ContentHash({kope_bytes, runner_bytes, fingerprint}).substr(0, 16);
  const std::string stem = "eval-" + std::to_string(geteuid()) + "-" + where.key;
  where.folder = folder;
  where.socket = folder / (stem + ".sock");
  where.lock = folder / (stem + ".lock");
  where.log = folder / (stem + ".log");
  // sockaddr_un holds 108 bytes with its terminator.
  if (where.socket.string().size() >= 108) {
    return Status::FailedPrecondition("the service's socket path is too long: " +
                                      where.socket.string());
  }
  return where;
}

std::vector<fs::path> ServiceSockets(const fs::path& folder) {
  std::vector<fs::path> sockets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("eval-", 0) == 0 && entry.path().extension() == ".sock") {
      sockets.push_back(entry.path());
    }
  }
  std::sort(sockets.begin(), sockets.end());
  return sockets;
}

std::string ExecutablesStamp() {
  std::vector<fs::path> files;
  if (Result<fs::path> self = SelfExecutable(); self.ok()) files.push_back(*self);
  if (Result<fs::path> runner = FindRunnerExecutable(); runner.ok()) files.push_back(*runner);
  std::string stamp;
  for (const fs::path& f : files) {
    struct stat st {};
    if (stat(f.c_str(), &st) != 0) {
      stamp += f.string() + " missing;";
      continue;
    }
    stamp += f.string() + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
             std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return stamp;
}

}  // namespace kope::cli
