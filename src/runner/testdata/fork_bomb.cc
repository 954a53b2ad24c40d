// Tries every way to start another process, and starting a thread. Writes
// (i64) to outputs[0]:
//   [0] forks that succeeded (of 32)   [1] errno of the last failed fork
//   [2] vforks that succeeded          [3] clone(SIGCHLD) successes
//   [4] posix_spawn's error number     [5] system("true")'s result
//   [6] 1 when a thread ran            [7] errno of clone3
// A child that does get created waits for ever, so that a test can find it.
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "kope/kernel.h"

extern char** environ;

extern "C" int kope_kernel(const kope_tensor*, int, kope_tensor* outputs, int, void*) {
  int64_t* r = static_cast<int64_t*>(outputs[0].data);
  for (int i = 0; i < 8; ++i) r[i] = -1;
  r[0] = 0;
  for (int i = 0; i < 32; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      for (;;) pause();
    }
    if (pid > 0) {
      ++r[0];
    } else {
      r[1] = errno;
    }
  }
  r[2] = 0;
  pid_t v = vfork();
  if (v == 0) _exit(0);
  if (v > 0) ++r[2];
  r[3] = 0;
  long c = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (c == 0) {
    for (;;) pause();
  }
  if (c > 0) ++r[3];
  pid_t spawned;
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  r[4] = posix_spawn(&spawned, "/bin/true", nullptr, nullptr, argv, environ);
  r[5] = std::system("true");
  r[6] = 0;
  std::thread t([r] { r[6] = 1; });
  t.join();
  long c3 = syscall(435 /* clone3 */, nullptr, 0);
  r[7] = c3 < 0 ? errno : 0;
  return 0;
}
