// The sandbox that every process running untrusted code starts in.
//
// What is applied, strongest first, and what is reported when a layer is not
// available on this machine (Protection::Describe says it in words):
//  - bubblewrap (bwrap): new mount, PID, IPC, UTS and network namespaces; the
//    file system read-only except the scratch folder; /home, /root, /tmp and
//    the source tree hidden; dies with its parent; all capabilities dropped.
//  - seccomp (libseccomp): no sockets other than AF_UNIX, no fork/vfork and no
//    clone without CLONE_THREAD (threads stay allowed, for OpenMP), no ptrace,
//    process_vm_readv/writev, mount or kexec; no exec, chmod/chown, signals to
//    other processes, io_uring, bpf or perf events. Denied calls fail with
//    EPERM (clone3 with ENOSYS, so that glibc falls back to clone).
//  - rlimits: CPU seconds, file size, address space, core dumps off, process
//    count where it applies.
//  - always: own session and process group, PR_SET_PDEATHSIG, killed with its
//    group at the wall-clock timeout.
// Thread-safe.
#ifndef KOPE_RUNNER_SANDBOX_H_
#define KOPE_RUNNER_SANDBOX_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kope/base/status.h"

namespace kope {

struct SandboxLimits {
  uint64_t cpu_seconds = 120;
  uint64_t max_file_bytes = 64ull << 20;
  uint64_t max_address_space_bytes = 16ull << 30;  // 0: unlimited (CUDA needs large reservations)
  bool allow_network = false;
  // Under bubblewrap the child's writable folders (its working folder inside
  // scratch, /tmp and /dev/shm) are tmpfs mounts of at most this many bytes each, so
  // that a candidate cannot fill the disk with many files of max_file_bytes.
  uint64_t writable_bytes = 256ull << 20;
  // RLIMIT_NPROC (threads count too), applied where it can work: for an
  // unprivileged user inside bubblewrap's user namespace. Root is exempt from it.
  uint64_t max_processes = 512;
  // RLIMIT_DATA (heap and private writable mappings); 0: not set. GPU runners set it
  // instead of RLIMIT_AS, which the CUDA driver's address-space reservations exceed.
  uint64_t max_data_bytes = 0;
  // Device memory a GPU kernel may allocate itself through the CUDA runtime, beyond the
  // tensors kope gives it; 0: no cap.
  uint64_t max_device_bytes = 16ull << 30;
};

struct SandboxOptions {
  std::filesystem::path scratch_dir;  // the only writable folder
  std::vector<std::filesystem::path>
      read_only;  // extra paths to show read-only (the runner binary, ...)
  std::vector<std::filesystem::path> devices;  // device nodes to expose, e.g. /dev/nvidia0
  // Folders shown writable besides scratch: for trusted task processes only (the PyTorch
  // bridge's torch.compile cache), never for a candidate's runner.
  std::vector<std::filesystem::path> writable;
  SandboxLimits limits;
  bool use_bubblewrap = true;  // false: rlimits + seccomp + process group only
};

struct Protection {
  bool bubblewrap = false;
  bool network_isolated = false;
  bool filesystem_read_only = false;
  bool seccomp = false;
  bool rlimits = false;
  std::vector<std::string> notes;  // why a layer is missing
  std::string Describe()
      const;  // one line, e.g. "bubblewrap (net, ro-fs, pid) + seccomp + rlimits"
};

// Makes the GPUs usable inside the sandbox: adds the NVIDIA device nodes that exist
// (/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia<N>, /dev/nvidia-caps)
// to `devices` and /sys (topology the driver reads) to `read_only`. `device` is the CUDA
// ordinal the process will use; every GPU node is bound, since ordinals and device minors
// need not agree (CUDA_VISIBLE_DEVICES in the child selects the GPU).
void AddGpuAccess(int device, SandboxOptions* options);

// Whether bwrap is installed and works here (probed once, cached).
bool BubblewrapAvailable();

// The protection a sandboxed child started with `options` gets on this machine,
// as far as the parent can tell without starting one (Runner::protection() is
// what a started child reports it applied).
Protection ProbeProtection(const SandboxOptions& options);

// The command line that runs `argv` inside bubblewrap with the namespaces and
// the file system view described above: scratch_dir bound read-write at its own
// path and used as the working folder, `read_only` paths and `devices` shown,
// everything else hidden. For tools (compilers) run on untrusted input; it
// applies no seccomp filter and no rlimits. FailedPrecondition when bubblewrap
// is not available or options.use_bubblewrap is false.
Result<std::vector<std::string>> BubblewrapCommand(const SandboxOptions& options,
                                                   const std::vector<std::string>& argv);

}  // namespace kope

#endif  // KOPE_RUNNER_SANDBOX_H_
