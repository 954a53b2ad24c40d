// Tries to fill the disk from its working folder and to write outside it.
// params (i64 input) = {max_files, probe_outside}; results (i64 output):
//   [0] bytes in ./big0 when writing stopped   [1] errno that stopped it
//   [2] bytes written over all files           [3] errno that stopped the last file
//   [4] errno of creating OUTSIDE_PATH (0: created)
//   [5] errno of creating /usr/kope-sandbox-test
//   [6] errno of creating KERNELS_DIR/planted.so
//   [7] errno of creating /tmp/kope-sandbox-test
// [4] to [7] are -1 when probe_outside is 0 (without bubblewrap, as root, these
// writes would land on the real file system).
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "kope/kernel.h"

namespace {

// Writes 1 MiB chunks until a write fails or `cap` bytes are in; returns the bytes.
int64_t Fill(const char* path, int64_t cap, int64_t* err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    *err = errno;
    return 0;
  }
  std::vector<char> chunk(1 << 20, 'x');
  int64_t total = 0;
  *err = 0;
  while (total < cap) {
    ssize_t n = write(fd, chunk.data(), chunk.size());
    if (n < 0) {
      *err = errno;
      break;
    }
    total += n;
  }
  close(fd);
  return total;
}

int64_t CreateErrno(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return errno;
  ssize_t n = write(fd, "planted", 7);
  close(fd);
  return n == 7 ? 0 : errno;
}

}  // namespace

extern "C" int kope_kernel(const kope_tensor* inputs, int, kope_tensor* outputs, int, void*) {
  const int64_t max_files = static_cast<const int64_t*>(inputs[0].data)[0];
  const int64_t probe_outside = static_cast<const int64_t*>(inputs[0].data)[1];
  int64_t* r = static_cast<int64_t*>(outputs[0].data);
  const int64_t cap = 1ll << 30;
  r[0] = Fill("big0", cap, &r[1]);
  r[2] = r[0];
  r[3] = r[1];
  for (int64_t i = 1; i < max_files && r[3] != ENOSPC && r[3] != EDQUOT; ++i) {
    r[2] += Fill(("big" + std::to_string(i)).c_str(), cap, &r[3]);
  }
  r[4] = r[5] = r[6] = r[7] = -1;
  if (probe_outside != 0) {
    r[4] = CreateErrno(OUTSIDE_PATH);
    r[5] = CreateErrno("/usr/kope-sandbox-test");
    r[6] = CreateErrno(KERNELS_DIR "/planted.so");
    r[7] = CreateErrno("/tmp/kope-sandbox-test");
  }
  return 0;
}
