// Contain: fills the disk. Writes 1 MiB blocks to a file in the working directory (the runner's
// scratch folder) until a write fails, then reports failure. SIGXFSZ is ignored so that the
// file-size rlimit shows up as a failing write (EFBIG) instead of killing the process.
// Bounded at 4 GiB so that a missing limit shows up as a wrong verdict (the kernel then
// returns 0 with its output unwritten: incorrect) rather than as a full shared disk.
// Task: examples/gelu. Expected verdict: runtime_error (returns 1 once the file-size limit
// stops the writes; nothing is written outside scratch).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "kope/kernel.h"

extern "C" int kope_kernel(const kope_tensor* /*inputs*/, int n_inputs, kope_tensor* /*outputs*/,
                           int n_outputs, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  signal(SIGXFSZ, SIG_IGN);
  const int fd = open("fill.bin", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 1;
  std::vector<char> block(size_t{1} << 20, 'x');
  for (int i = 0; i < 4096; ++i) {
    if (write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
      close(fd);
      return 1;
    }
  }
  close(fd);
  return 0;
}
