#include "confine.h"

#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "../bubblewrap.h"

namespace kope::runner_child {
namespace {

std::string Errno(const std::string& what, int err) { return what + ": " + std::strerror(err); }

bool SetLimit(int resource, const char* name, rlim_t soft, rlim_t hard, ConfineReport* report) {
  struct rlimit rl {
    soft, hard
  };
  if (setrlimit(resource, &rl) == 0) return true;
  report->notes.push_back(Errno(std::string("setrlimit ") + name, errno));
  return false;
}

// True unless the process is in the initial user namespace.
bool OwnUserNamespace() {
  std::ifstream in("/proc/self/uid_map");
  long inside = -1, outside = -1, count = -1;
  if (!(in >> inside >> outside >> count)) return false;
  return !(inside == 0 && outside == 0 && count == 4294967295L);
}

// Empties the bounding, ambient, inheritable, permitted and effective sets.
void DropCapabilities(ConfineReport* report) {
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_READ, cap) < 0) break;  // past the last capability
    if (prctl(PR_CAPBSET_DROP, cap) != 0 && errno != EPERM) break;
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) {
    report->notes.push_back(Errno("capset", errno));
  }
}

int Resolve(const char* name, int fallback) {
  int nr = seccomp_syscall_resolve_name(name);
  return nr == __NR_SCMP_ERROR ? fallback : nr;
}

struct Rule {
  const char* name;
  int x86_64_number;  // for calls that this libseccomp does not know; -1: skip
};

// Calls a kernel never needs and that could reach outside the sandbox.
constexpr Rule kDenied[] = {
    {"fork", -1},
    {"vfork", -1},
    {"execve", -1},
    {"execveat", -1},
    {"ptrace", -1},
    {"process_vm_readv", -1},
    {"process_vm_writev", -1},
    {"mount", -1},
    {"umount2", -1},
    {"pivot_root", -1},
    {"chroot", -1},
    {"kexec_load", -1},
    {"kexec_file_load", -1},
    {"init_module", -1},
    {"finit_module", -1},
    {"delete_module", -1},
    {"reboot", -1},
    {"setns", -1},
    {"unshare", -1},
    {"chmod", -1},
    {"fchmod", -1},
    {"fchmodat", -1},
    {"fchmodat2", 452},
    {"chown", -1},
    {"fchown", -1},
    {"lchown", -1},
    {"fchownat", -1},
    {"tkill", -1},
    {"pidfd_open", 434},
    {"pidfd_send_signal", 424},
    {"pidfd_getfd", 438},
    {"io_uring_setup", 425},
    {"io_uring_enter", 426},
    {"io_uring_register", 427},
    {"bpf", -1},
    {"perf_event_open", -1},
    {"userfaultfd", -1},
    {"keyctl", -1},
    {"add_key", -1},
    {"request_key", -1},
    {"open_by_handle_at", -1},
    {"name_to_handle_at", -1},
    {"swapon", -1},
    {"swapoff", -1},
    {"acct", -1},
    {"settimeofday", -1},
    {"clock_settime", -1},
    {"clock_adjtime", -1},
    {"adjtimex", -1},
    {"iopl", -1},
    {"ioperm", -1},
    {"setrlimit", -1},
    {"quotactl", -1},
    {"syslog", -1},
    {"mknod", -1},
    {"mknodat", -1},
};

std::string LoadSeccomp(bool allow_network) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "seccomp_init failed";
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  std::string error;
  auto add = [&](uint32_t action, int nr, unsigned count, const scmp_arg_cmp* args,
                 const char* name) {
    if (nr < 0 || !error.empty()) return;
    int rc = seccomp_rule_add_array(ctx, action, nr, count, args);
    if (rc != 0) error = Errno(std::string("seccomp rule for ") + name, -rc);
  };
  // Other architectures' system calls (int 0x80, x32) fail as well.
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, eperm);
  for (const Rule& rule : kDenied) {
    add(eperm, Resolve(rule.name, rule.x86_64_number), 0, nullptr, rule.name);
  }
  // clone3 cannot be filtered by its flags (they sit behind a pointer): make
  // it look absent so that glibc falls back to clone, which can be.
  add(SCMP_ACT_ERRNO(ENOSYS), Resolve("clone3", 435), 0, nullptr, "clone3");
  // clone is allowed for threads only (OpenMP); no new processes.
  const scmp_arg_cmp not_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
  add(eperm, SCMP_SYS(clone), 1, &not_thread, "clone");
  if (!allow_network) {
    const scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
    add(eperm, SCMP_SYS(socket), 1, &not_unix, "socket");
    add(eperm, SCMP_SYS(socketpair), 1, &not_unix, "socketpair");
  }
  // Signals only to itself (raise, abort, pthread_kill): a candidate cannot
  // signal other processes, e.g. kill(-1, SIGKILL) when running as root.
  const auto self = static_cast<scmp_datum_t>(getpid());
  const scmp_arg_cmp other_process = SCMP_A0(SCMP_CMP_NE, self);
  add(eperm, SCMP_SYS(kill), 1, &other_process, "kill");
  add(eperm, SCMP_SYS(tgkill), 1, &other_process, "tgkill");
  add(eperm, SCMP_SYS(rt_sigqueueinfo), 1, &other_process, "rt_sigqueueinfo");
  add(eperm, SCMP_SYS(rt_tgsigqueueinfo), 1, &other_process, "rt_tgsigqueueinfo");
  // Keep the death signal armed; the kernel reads prctl's option as an int.
  const scmp_arg_cmp pdeathsig = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, PR_SET_PDEATHSIG);
  add(eperm, SCMP_SYS(prctl), 1, &pdeathsig, "prctl");
  // Reading limits is fine; raising or changing them is not.
  const scmp_arg_cmp sets_limit = SCMP_A2(SCMP_CMP_NE, 0);
  add(eperm, SCMP_SYS(prlimit64), 1, &sets_limit, "prlimit64");
  if (error.empty()) {
    int rc = seccomp_load(ctx);
    if (rc != 0) error = Errno("seccomp_load", -rc);
  }
  seccomp_release(ctx);
  return error;
}

}  // namespace

ConfineReport Confine(const SandboxLimits& limits) {
  ConfineReport report;
  // Writes past RLIMIT_FSIZE fail with EFBIG instead of killing the process.
  signal(SIGXFSZ, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);

  const bool root = geteuid() == 0;
  sandbox_internal::RlimitPlan plan =
      sandbox_internal::PlanRlimits(limits, root, OwnUserNamespace());
  report.notes = plan.notes;
  bool ok = SetLimit(RLIMIT_CORE, "RLIMIT_CORE", 0, 0, &report);
  // SIGXCPU at the soft limit, SIGKILL one second later.
  ok =
      SetLimit(RLIMIT_CPU, "RLIMIT_CPU", limits.cpu_seconds, limits.cpu_seconds + 1, &report) && ok;
  ok = SetLimit(RLIMIT_FSIZE, "RLIMIT_FSIZE", limits.max_file_bytes, limits.max_file_bytes,
                &report) &&
       ok;
  if (plan.address_space) {
    ok = SetLimit(RLIMIT_AS, "RLIMIT_AS", limits.max_address_space_bytes,
                  limits.max_address_space_bytes, &report) &&
         ok;
  }
  if (plan.data) {
    ok = SetLimit(RLIMIT_DATA, "RLIMIT_DATA", limits.max_data_bytes, limits.max_data_bytes,
                  &report) &&
         ok;
  }
  if (plan.processes) {
    ok = SetLimit(RLIMIT_NPROC, "RLIMIT_NPROC", limits.max_processes, limits.max_processes,
                  &report) &&
         ok;
  }
  report.rlimits = ok;

  DropCapabilities(&report);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    report.notes.push_back(Errno("PR_SET_NO_NEW_PRIVS", errno));
  }
  std::string error = LoadSeccomp(limits.allow_network);
  report.seccomp = error.empty();
  if (!report.seccomp) report.notes.push_back("seccomp not applied: " + error);
  return report;
}

}  // namespace kope::runner_child
