#include "kope/runner/sandbox.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bubblewrap.h"
#include "kope/base/subprocess.h"

namespace kope {
namespace sandbox_internal {
namespace {

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

bool IsExecutable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string FindInPath(const std::string& name) {
  const char* env = std::getenv("PATH");
  std::string dirs = env != nullptr ? env : "";
  dirs += ":/usr/bin:/bin";
  std::stringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = dir + "/" + name;
    if (IsExecutable(candidate)) return candidate;
  }
  return "";
}

// The namespaces, the system folders, /proc, /dev and /tmp: everything but scratch.
std::vector<std::string> SystemArgs(const std::string& bwrap, const SandboxOptions& options) {
  const std::string size = std::to_string(options.limits.writable_bytes);
  std::vector<std::string> args = {bwrap,           "--unshare-pid",        "--unshare-ipc",
                                   "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
                                   "--new-session", "--cap-drop",           "ALL",
                                   "--hostname",    "kope-sandbox"};
  if (!options.limits.allow_network) args.push_back("--unshare-net");
  // Merged-/usr systems make /bin, /lib, ... symbolic links into /usr.
  args.insert(args.end(), {"--ro-bind", "/usr", "/usr"});
  for (const char* dir : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    std::error_code ec;
    auto status = std::filesystem::symlink_status(dir, ec);
    if (ec || !std::filesystem::exists(status)) continue;
    if (std::filesystem::is_symlink(status)) {
      args.insert(args.end(), {"--symlink", std::filesystem::read_symlink(dir, ec).string(), dir});
    } else {
      args.insert(args.end(), {"--ro-bind", dir, dir});
    }
  }
  // The dynamic loader's cache and configuration; nothing else of /etc.
  for (const char* file : {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"}) {
    args.insert(args.end(), {"--ro-bind-try", file, file});
  }
  // A fresh /proc for the new PID namespace; /proc/sys read-only (bwrap leaves
  // it writable, and a sandboxed root could otherwise change kernel settings).
  args.insert(args.end(), {"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"});
  args.insert(args.end(), {"--dev", "/dev"});
  for (const auto& device : options.devices) {
    args.insert(args.end(), {"--dev-bind", device.string(), device.string()});
  }
  args.insert(args.end(), {"--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"});
  args.insert(args.end(), {"--size", size, "--tmpfs", "/tmp"});
  return args;
}

}  // namespace

const BubblewrapProbe& ProbeBubblewrap() {
  static const BubblewrapProbe probe = [] {
    BubblewrapProbe p;
    p.path = FindInPath("bwrap");
    if (p.path.empty()) {
      p.why = "bwrap not found in PATH (install the bubblewrap package)";
      return p;
    }
    std::string true_path = FindInPath("true");
    if (true_path.empty()) true_path = "/usr/bin/true";
    std::vector<std::string> argv = SystemArgs(p.path, SandboxOptions{});
    argv.insert(argv.end(), {"--remount-ro", "/", "--", true_path});
    ProcessOptions options;
    options.timeout_seconds = 20;
    options.max_output_bytes = 4096;
    Result<ProcessResult> r = RunProcess(argv, options);
    if (!r.ok()) {
      p.why = "bwrap could not be started: " + r.status().ToString();
    } else if (!r->ok()) {
      std::string output = r->output;
      while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
      p.why = "bwrap does not work here (" +
              (r->timed_out ? std::string("timed out") : "exit " + std::to_string(r->exit_code)) +
              "): " + output;
    } else {
      p.works = true;
    }
    return p;
  }();
  return probe;
}

std::vector<std::string> BubblewrapArgv(const std::string& bwrap, const SandboxOptions& options,
                                        const std::filesystem::path& scratch, ScratchLayout layout,
                                        const std::vector<std::string>& command) {
  std::vector<std::string> args = SystemArgs(bwrap, options);
  const std::string s = scratch.string();
  if (layout == ScratchLayout::kRunnerWork) {
    const std::string work = (scratch / "work").string();
    args.insert(args.end(),
                {"--ro-bind", s, s, "--size", std::to_string(options.limits.writable_bytes),
                 "--tmpfs", work, "--chdir", work});
  } else {
    args.insert(args.end(), {"--bind", s, s, "--chdir", s});
  }
  for (const auto& path : options.read_only) {
    args.insert(args.end(), {"--ro-bind", path.string(), path.string()});
  }
  for (const auto& path : options.writable) {
    args.insert(args.end(), {"--bind", path.string(), path.string()});
  }
  args.insert(args.end(), {"--remount-ro", "/", "--"});
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

bool SeccompSupported(std::string* why) {
  if (prctl(PR_GET_SECCOMP) < 0) {
    *why = std::string("the kernel has no seccomp: ") + std::strerror(errno);
    return false;
  }
  std::ifstream actions("/proc/sys/kernel/seccomp/actions_avail");
  std::string text;
  if (std::getline(actions, text) && text.find("errno") == std::string::npos) {
    *why = "the kernel's seccomp filters cannot return errors";
    return false;
  }
  return true;
}

RlimitPlan PlanRlimits(const SandboxLimits& limits, bool is_root, bool own_user_namespace) {
  RlimitPlan plan;
  if (limits.max_address_space_bytes == 0) {
    plan.address_space = false;
    plan.notes.push_back(limits.max_data_bytes > 0
                             ? "RLIMIT_AS not set: RLIMIT_DATA caps the heap instead (the CUDA "
                               "driver reserves more address space than any useful RLIMIT_AS)"
                             : "RLIMIT_AS not set: unlimited by request");
  } else if (kAddressSanitizer) {
    plan.address_space = false;
    plan.notes.push_back(
        "RLIMIT_AS not set: sanitizer build (ASan reserves terabytes of address space); "
        "ASan's RSS limit caps the runner's memory instead");
  }
  if (limits.max_data_bytes > 0) {
    plan.data = !kAddressSanitizer;
    if (kAddressSanitizer) plan.notes.push_back("RLIMIT_DATA not set: sanitizer build");
  }
  if (is_root) {
    plan.processes = false;
    plan.notes.push_back("RLIMIT_NPROC not set: root is exempt from it (seccomp denies fork)");
  } else if (!own_user_namespace) {
    plan.processes = false;
    plan.notes.push_back(
        "RLIMIT_NPROC not set: without a user namespace of its own it would count all of this "
        "user's processes (seccomp denies fork)");
  }
  return plan;
}

Protection ParentProtection(const SandboxOptions& options, bool bubblewrap_used) {
  Protection p;
  p.bubblewrap = bubblewrap_used;
  p.filesystem_read_only = bubblewrap_used;
  p.rlimits = true;
  std::string why;
  p.seccomp = SeccompSupported(&why);
  if (!p.seccomp) p.notes.push_back("seccomp unavailable: " + why);
  p.network_isolated = !options.limits.allow_network && (bubblewrap_used || p.seccomp);
  if (!bubblewrap_used) {
    if (!options.use_bubblewrap) {
      p.notes.push_back("bubblewrap disabled by the caller");
    } else {
      p.notes.push_back("bubblewrap unavailable: " + ProbeBubblewrap().why);
    }
    if (geteuid() == 0) {
      p.notes.push_back(
          "running as root without bubblewrap: the candidate can read and write every file "
          "root can");
    } else {
      p.notes.push_back("without bubblewrap the candidate can read every file this user can");
    }
  }
  if (options.limits.allow_network) p.notes.push_back("network allowed by the caller");
  return p;
}

}  // namespace sandbox_internal

std::string Protection::Describe() const {
  std::vector<std::string> layers;
  if (bubblewrap) {
    layers.push_back(
        std::string("bubblewrap (") + (network_isolated ? "no network" : "network shared") +
        ", own pid/ipc/uts namespaces, " +
        (filesystem_read_only ? "read-only file system except scratch" : "writable file system") +
        ", no capabilities)");
  }
  if (seccomp) layers.push_back("seccomp");
  if (rlimits) layers.push_back("rlimits");
  layers.push_back("own process group, killed at timeout, dies with parent");
  std::vector<std::string> missing;
  if (!bubblewrap) {
    missing.push_back(std::string("bubblewrap: the file system is visible") +
                      (network_isolated ? ", network blocked by seccomp only" : ", network open"));
  }
  if (!seccomp) missing.push_back("seccomp");
  if (!rlimits) missing.push_back("rlimits");
  std::string line = sandbox_internal::Join(layers, " + ");
  if (!missing.empty()) line += "; MISSING " + sandbox_internal::Join(missing, "; ");
  if (!notes.empty()) line += " [" + sandbox_internal::Join(notes, "; ") + "]";
  return line;
}

bool BubblewrapAvailable() { return sandbox_internal::ProbeBubblewrap().works; }

void AddGpuAccess(int device, SandboxOptions* options) {
  (void)device;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    const bool gpu = name.rfind("nvidia", 0) == 0 &&
                     (name == "nvidiactl" || name == "nvidia-uvm" || name == "nvidia-uvm-tools" ||
                      name == "nvidia-caps" ||
                      (name.size() > 6 && std::isdigit(static_cast<unsigned char>(name[6]))));
    if (gpu) options->devices.push_back(entry.path());
  }
  if (std::filesystem::exists("/sys", ec)) options->read_only.push_back("/sys");
  // The CUDA libraries are often reached through links in /etc/alternatives.
  if (std::filesystem::exists("/etc/alternatives", ec)) {
    options->read_only.push_back("/etc/alternatives");
  }
}

Protection ProbeProtection(const SandboxOptions& options) {
  const bool bwrap = options.use_bubblewrap && BubblewrapAvailable();
  Protection p = sandbox_internal::ParentProtection(options, bwrap);
  const bool root = geteuid() == 0;
  auto plan = sandbox_internal::PlanRlimits(options.limits, root, bwrap && !root);
  p.notes.insert(p.notes.end(), plan.notes.begin(), plan.notes.end());
  return p;
}

Result<std::vector<std::string>> BubblewrapCommand(const SandboxOptions& options,
                                                   const std::vector<std::string>& argv) {
  if (!options.use_bubblewrap) {
    return Status::FailedPrecondition("bubblewrap disabled by the caller");
  }
  const auto& probe = sandbox_internal::ProbeBubblewrap();
  if (!probe.works) return Status::FailedPrecondition("bubblewrap unavailable: " + probe.why);
  if (argv.empty()) return Status::InvalidArgument("empty command");
  std::error_code ec;
  std::filesystem::path scratch = std::filesystem::canonical(options.scratch_dir, ec);
  if (ec || !std::filesystem::is_directory(scratch)) {
    return Status::InvalidArgument("scratch folder " + options.scratch_dir.string() +
                                   " is not a folder");
  }
  return sandbox_internal::BubblewrapArgv(probe.path, options, scratch,
                                          sandbox_internal::ScratchLayout::kReadWrite, argv);
}

}  // namespace kope
