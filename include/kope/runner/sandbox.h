// The sandbox that every process running untrusted code starts in.
//
// What is applied, strongest first, and what is reported when a layer is not
// available on this machine (Protection::Describe says it in words):
//  - bubblewrap (bwrap): new mount, PID, IPC, UTS and network namespaces; the
//    file system read-only except the scratch folder; /home, /root, /tmp and
//    the source tree hidden; dies with its parent; all capabilities dropped.
//  - seccomp (libseccomp): no sockets other than AF_UNIX, no fork/vfork and no
//    clone without CLONE_THREAD (threads stay allowed, for OpenMP), no ptrace,
//    process_vm_readv/writev, mount or kexec.
//  - rlimits: CPU seconds, file size, address space, core dumps off.
//  - always: own session and process group, PR_SET_PDEATHSIG, killed with its
//    group at the wall-clock timeout.
// Thread-safe.
#ifndef KOPE_RUNNER_SANDBOX_H_
#define KOPE_RUNNER_SANDBOX_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kope {

struct SandboxLimits {
  uint64_t cpu_seconds = 120;
  uint64_t max_file_bytes = 64ull << 20;
  uint64_t max_address_space_bytes = 16ull << 30;  // 0: unlimited (CUDA needs large reservations)
  bool allow_network = false;
};

struct SandboxOptions {
  std::filesystem::path scratch_dir;              // the only writable folder
  std::vector<std::filesystem::path> read_only;   // extra paths to show read-only (the runner binary, ...)
  std::vector<std::filesystem::path> devices;     // device nodes to expose, e.g. /dev/nvidia0
  SandboxLimits limits;
  bool use_bubblewrap = true;                     // false: rlimits + seccomp + process group only
};

struct Protection {
  bool bubblewrap = false;
  bool network_isolated = false;
  bool filesystem_read_only = false;
  bool seccomp = false;
  bool rlimits = false;
  std::vector<std::string> notes;  // why a layer is missing
  std::string Describe() const;    // one line, e.g. "bubblewrap (net, ro-fs, pid) + seccomp + rlimits"
};

// Whether bwrap is installed and works here (probed once, cached).
bool BubblewrapAvailable();

// The protection a sandboxed child started with `options` gets on this machine.
Protection ProbeProtection(const SandboxOptions& options);

}  // namespace kope

#endif  // KOPE_RUNNER_SANDBOX_H_
