// Probes the walls of the sandbox. Each result (i64 output) is 0 when the
// attempt succeeded and the errno when it failed, unless noted:
//   [0] open SECRET_PATH              [1] open SOURCE_FILE (the source tree)
//   [2] open /etc/passwd              [3] 1 if KOPE_TEST_SECRET is in the environment
//   [4] kill(1, 0)                    [5] chmod /dev/null to 0666 (its usual mode)
//   [6] number of open descriptors    [7] bit mask of open descriptors 0..62
//   [8] execve /bin/true              [9] ptrace(PTRACE_TRACEME)
//   [10] unshare(CLONE_NEWUSER)       [11] mount a tmpfs on the working folder
//   [12] prctl(PR_SET_PDEATHSIG, 0)   [13] raising RLIMIT_FSIZE
//   [14] io_uring_setup               [15] open /proc/sys/kernel/core_pattern for writing
//   [16] kill(getpid(), 0)            [17] 1 if stdin reads as empty (/dev/null)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "kope/kernel.h"

namespace {

int64_t Result(int rc) { return rc < 0 ? errno : 0; }

int64_t OpenErrno(const char* path, int flags) {
  int fd = open(path, flags);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor* outputs, int, void*) {
  int64_t* r = static_cast<int64_t*>(outputs[0].data);
  r[0] = OpenErrno(SECRET_PATH, O_RDONLY);
  r[1] = OpenErrno(SOURCE_FILE, O_RDONLY);
  r[2] = OpenErrno("/etc/passwd", O_RDONLY);
  r[3] = getenv("KOPE_TEST_SECRET") != nullptr ? 1 : 0;
  r[4] = Result(kill(1, 0));
  r[5] = Result(chmod("/dev/null", 0666));
  r[6] = 0;
  r[7] = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir != nullptr) {
    const int own = dirfd(dir);
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      int fd = atoi(e->d_name);
      if (fd == own) continue;
      ++r[6];
      if (fd < 63) r[7] |= int64_t{1} << fd;
    }
    closedir(dir);
  }
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  char* envp[] = {nullptr};
  r[8] = Result(execve("/bin/true", argv, envp));
  r[9] = Result(static_cast<int>(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)));
  r[10] = Result(unshare(CLONE_NEWUSER));
  r[11] = Result(mount("none", ".", "tmpfs", 0, nullptr));
  r[12] = Result(prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0));
  struct rlimit big = {RLIM_INFINITY, RLIM_INFINITY};
  r[13] = Result(setrlimit(RLIMIT_FSIZE, &big));
  r[14] = Result(static_cast<int>(syscall(425 /* io_uring_setup */, 1, nullptr)));
  r[15] = OpenErrno("/proc/sys/kernel/core_pattern", O_WRONLY);
  r[16] = Result(kill(getpid(), 0));
  char c;
  r[17] = read(0, &c, 1) == 0 ? 1 : 0;
  return 0;
}
